package watermark

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGenerators(t *testing.T) {
	tests := []struct {
		name   string
		s      Strategy
		events []int64
		want   int64
	}{
		{"default bound is 10s", Strategy{}, []int64{50_000, 40_000}, 40_000},
		{"bounded 30s", ForBoundedOutOfOrderness(30 * time.Second), []int64{600_000, 590_000}, 570_000},
		{"monotonous", ForMonotonousTimestamps(), []int64{5, 9, 7}, 9},
		{"none", NoWatermarks(), []int64{5, 9}, Unset},
		{"unset before events", ForMonotonousTimestamps(), nil, Unset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.s.NewGenerator()
			for _, e := range tc.events {
				g.OnEvent(e)
			}
			if got := g.Current(); got != tc.want {
				t.Fatalf("watermark %d, want %d", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		s    Strategy
		want string
	}{
		{ForBoundedOutOfOrderness(-time.Second), "source clicks: invalid watermark strategy: negative out-of-orderness bound -1s"},
		{ForGenerator(nil), "custom strategy without a generator"},
		{Strategy{}.WithIdleness(-time.Second), "negative idleness timeout"},
		{Strategy{}.WithWatermarkAlignment("g", 0, time.Second), "alignment group g: maximum drift 0s must be positive"},
		{NoWatermarks().WithWatermarkAlignment("g", time.Second, 0), "a source without watermarks cannot be aligned"},
		{Strategy{}.WithWatermarkAlignment("", time.Second, 0), "alignment group has no name"},
	}
	for _, tc := range tests {
		err := tc.s.Validate("clicks")
		if err == nil || !errors.Is(err, ErrInvalidStrategy) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	if err := ForMonotonousTimestamps().WithIdleness(time.Minute).Validate("x"); err != nil {
		t.Fatal(err)
	}
}

func TestTrackerMinimumAndIdleness(t *testing.T) {
	tr := NewTracker(5 * time.Minute)
	p0, p1 := Partition{"orders", 0}, Partition{"orders", 1}
	tr.Register(p0, ForMonotonousTimestamps(), 0)
	tr.Register(p1, ForMonotonousTimestamps().WithIdleness(2*time.Minute), 0)

	tr.Observe(p0, 1000, 10)
	if w, moved := tr.Advance(10); w != Unset || moved {
		t.Fatalf("one partition without events holds the minimum: %d %v", w, moved)
	}
	tr.Observe(p1, 500, 20)
	if w, moved := tr.Advance(20); w != 500 || !moved {
		t.Fatalf("minimum %d %v, want 500", w, moved)
	}
	tr.Observe(p0, 3000, 60_000)
	// p1 idles out after its own two minutes, and stops holding p0 back.
	if w, _ := tr.Advance(100_000); w != 500 {
		t.Fatalf("before idleness %d", w)
	}
	if w, moved := tr.Advance(120_020); w != 3000 || !moved {
		t.Fatalf("after idleness %d %v, want 3000", w, moved)
	}
	// Everything idle: the watermark stays.
	if w, moved := tr.Advance(10_000_000); w != 3000 || moved {
		t.Fatalf("all idle %d %v", w, moved)
	}
	// A record wakes p1 up; its old watermark must not move the global back.
	tr.Observe(p1, 700, 10_000_001)
	if w, moved := tr.Advance(10_000_001); w != 3000 || moved {
		t.Fatalf("never backwards: %d %v", w, moved)
	}
	snap := tr.Snapshot()
	if len(snap) != 2 || snap[1].IdlenessTimeout != 2*time.Minute || snap[0].IdlenessTimeout != 5*time.Minute || snap[1].LastEventTime != 700 {
		t.Fatalf("snapshot %+v", snap)
	}
}

func TestTrackerSeed(t *testing.T) {
	tr := NewTracker(0)
	p := Partition{"t", 0}
	tr.Register(p, ForBoundedOutOfOrderness(time.Second), 0)
	tr.Seed(p, 10_000)
	if w, _ := tr.Advance(0); w != 9_000 {
		t.Fatalf("seeded watermark %d, want 9000", w)
	}
}

// TestTrackerActiveKeepsOldTimestampsLive: a partition delivering records
// no newer than its largest event time stays live and holds the minimum;
// only silence idles it.
func TestTrackerActiveKeepsOldTimestampsLive(t *testing.T) {
	tr := NewTracker(time.Second)
	a, b := Partition{Topic: "in", Partition: 0}, Partition{Topic: "in", Partition: 1}
	tr.Register(a, ForMonotonousTimestamps(), 0)
	tr.Register(b, ForMonotonousTimestamps(), 0)
	tr.Observe(a, 100, 0)
	tr.Observe(b, 500, 0)
	for now := int64(200); now <= 3000; now += 200 {
		tr.Active(a, now) // old timestamps: activity, no new event time
		tr.Observe(b, 500+now, now)
		if w, _ := tr.Advance(now); w != 100 {
			t.Fatalf("at %d the watermark is %d, want 100: the live partition was idled out", now, w)
		}
	}
	tr.Observe(b, 4100, 4100)
	if w, _ := tr.Advance(4100); w != 4100 {
		t.Fatalf("after a silence past the timeout the watermark is %d, want 4100", w)
	}
}

// TestTrackerLastAdvanceAndIdleSince: a snapshot says when each
// partition's watermark last moved and since when it is idle, in the
// tracker's wall clock, so that a reader needs one look to tell a stall's
// length.
func TestTrackerLastAdvanceAndIdleSince(t *testing.T) {
	tr := NewTracker(time.Second)
	p := Partition{Topic: "in", Partition: 0}
	tr.Register(p, ForMonotonousTimestamps(), 0)
	tr.Seed(p, 5_000)
	steps := []struct {
		name        string
		do          func()
		lastAdvance int64
		idleSince   int64
	}{
		{"seeded: resumed, not moved", func() { tr.Advance(10) }, 0, 0},
		{"a record behind the watermark moves nothing", func() { tr.Observe(p, 4_000, 100) }, 0, 0},
		{"a newer record moves it", func() { tr.Observe(p, 6_000, 200) }, 200, 0},
		{"the same event time again does not", func() { tr.Observe(p, 6_000, 300) }, 200, 0},
		{"old timestamps keep it live, not moving", func() { tr.Active(p, 900) }, 200, 0},
		{"silence past the timeout idles it", func() { tr.Advance(1_900) }, 200, 1_900},
		{"idle again later keeps the start", func() { tr.Advance(5_000) }, 200, 1_900},
		{"a record wakes it and moves it", func() { tr.Observe(p, 7_000, 6_000) }, 6_000, 0},
	}
	for _, s := range steps {
		s.do()
		got := tr.Snapshot()[0]
		if got.LastAdvance != s.lastAdvance || got.IdleSince != s.idleSince {
			t.Fatalf("%s: last advance %d, idle since %d; want %d, %d", s.name, got.LastAdvance, got.IdleSince, s.lastAdvance, s.idleSince)
		}
	}
}
