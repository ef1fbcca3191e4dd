package state

import (
	"math"
	"testing"
)

// TestEpochTimesSince: the epoch a fetch from a time may start reading
// at, as writes move through epochs (a store that skips an epoch, an
// abort's epoch that never wrote again, a restore's writes, which go
// below every epoch).
func TestEpochTimesSince(t *testing.T) {
	var e epochTimes
	e.init(&segmentSet{interval: 100})
	type want struct {
		t     int64
		since int64
		ok    bool
	}
	steps := []struct {
		what   string
		do     func()
		epoch  int64
		checks []want
	}{
		{"nothing written", func() {}, 1, []want{{math.MinInt64 + 1, 1, true}, {0, 1, true}}},
		{"epoch 1 writes up to 50", func() { e.wrote(1, true, 10); e.wrote(1, true, 50) }, 1,
			[]want{{51, 1, true}, {50, 1, true}, {-5, 1, true}}},
		{"epoch 2 writes up to 90", func() { e.wrote(2, true, 60); e.wrote(2, true, 90) }, 2,
			[]want{{91, 2, true}, {51, 2, true}, {50, 1, true}, {11, 1, true}}},
		{"epoch 4 writes up to 120", func() { e.wrote(4, true, 120) }, 4,
			[]want{{121, 4, true}, {91, 4, true}, {90, 2, true}, {51, 2, true}, {50, 0, false}}},
		{"a restore writes 200", func() { e.wrote(0, false, 200) }, 4,
			[]want{{201, 4, true}, {200, 0, false}, {121, 0, false}}},
		{"epoch 5 asks before writing", func() {}, 5,
			[]want{{201, 5, true}, {121, 0, false}}},
	}
	for _, s := range steps {
		s.do()
		for _, w := range s.checks {
			got, ok := e.since(s.epoch, true, w.t)
			if got != w.since || ok != w.ok {
				t.Errorf("%s: since(%d, %d) = %d %v, want %d %v", s.what, s.epoch, w.t, got, ok, w.since, w.ok)
			}
			if only := e.onlyEpoch(s.epoch, true, w.t); only != (w.ok && w.since == s.epoch) {
				t.Errorf("%s: onlyEpoch(%d, %d) = %v", s.what, s.epoch, w.t, only)
			}
		}
	}
	if _, ok := e.since(5, false, math.MaxInt64); ok {
		t.Errorf("since without epochs said ok")
	}
}
