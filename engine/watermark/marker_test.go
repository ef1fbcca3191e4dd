package watermark

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestMarkerRoundTrip(t *testing.T) {
	for _, marks := range [][]Mark{
		{},
		{{Task: 0, Watermark: Unset}},
		{{Task: 3, Watermark: 1_700_000_000_000, Idle: true}, {Task: 0, Watermark: 0}, {Task: math.MaxInt32, Watermark: math.MaxInt64}},
	} {
		got, err := DecodeMarker(MarkerVersion, EncodeMarks(marks))
		if err != nil {
			t.Fatalf("%v: %v", marks, err)
		}
		if !slices.Equal(got, marks) {
			t.Fatalf("round trip of %v gave %v", marks, got)
		}
	}
}

func TestMarkerRefused(t *testing.T) {
	good := EncodeMarks([]Mark{{Task: 1, Watermark: 5}})
	negative := EncodeMarks([]Mark{{Task: -1, Watermark: 5}})
	idle2 := slices.Clone(good)
	idle2[len(idle2)-1] = 2
	for _, c := range []struct {
		name           string
		version, value []byte
	}{
		{"newer version", []byte{2}, good},
		{"no version", nil, good},
		{"short", MarkerVersion, good[:3]},
		{"count too large", MarkerVersion, good[:len(good)-1]},
		{"trailing bytes", MarkerVersion, append(slices.Clone(good), 0)},
		{"negative task", MarkerVersion, negative},
		{"idle byte", MarkerVersion, idle2},
	} {
		if _, err := DecodeMarker(c.version, c.value); !errors.Is(err, ErrBadMarker) {
			t.Errorf("%s: got %v, want ErrBadMarker", c.name, err)
		}
	}
}

func FuzzDecodeMarker(f *testing.F) {
	f.Add(MarkerVersion, EncodeMarks([]Mark{{Task: 1, Watermark: 5, Idle: true}}))
	f.Add(MarkerVersion, []byte{0, 0, 0, 0})
	f.Add([]byte{9}, []byte{})
	f.Fuzz(func(t *testing.T, version, value []byte) {
		marks, err := DecodeMarker(version, value)
		if err != nil {
			return
		}
		again, err := DecodeMarker(MarkerVersion, EncodeMarks(marks))
		if err != nil || !slices.Equal(again, marks) {
			t.Fatalf("decoded %v does not encode back (%v)", marks, err)
		}
	})
}

// TestExternalPartition: a partition told its watermark holds the
// minimum back until told, ignores its records' event time and the
// idleness timeout, never goes back, and leaves the minimum when told it
// is idle.
func TestExternalPartition(t *testing.T) {
	tr := NewTracker(time.Second)
	src := Partition{Topic: "in", Partition: 0}
	rep := Partition{Topic: "app-x-repartition", Partition: 0}
	tr.Register(src, ForBoundedOutOfOrderness(0), 0)
	tr.RegisterExternal(rep, 0)
	tr.Observe(src, 5_000, 0)
	tr.Observe(rep, 9_000, 0)
	all := func(Partition) bool { return true }
	step := func(now int64, want int64) {
		t.Helper()
		tr.Advance(now)
		if got, _ := tr.Minimum(all); got != want {
			t.Fatalf("at %d: minimum %d, want %d", now, got, want)
		}
	}
	step(10, Unset)
	tr.SetExternal(rep, 3_000, false, 20)
	step(20, 3_000)
	tr.SetExternal(rep, 2_000, false, 30) // never back
	step(30, 3_000)
	step(60_000, 3_000) // the source idles; the told partition does not
	tr.Observe(src, 5_000, 60_001)
	tr.SetExternal(rep, 4_000, true, 60_001)
	step(60_001, 5_000)
	if !tr.Idle(rep) {
		t.Fatal("told idle, not idle")
	}
	if got, ok := tr.Minimum(func(p Partition) bool { return p == rep }); ok {
		t.Fatalf("an idle partition counted: %d", got)
	}
}
