package watermark

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestTrackerAlign walks the alignment rule step by step: two members of
// group g (drift 10 s, checked at most once a second) and one source in
// no group. Each step observes event times at a wall-clock time, then
// runs Advance and Align, and checks what is held back and let go.
func TestTrackerAlign(t *testing.T) {
	tr := NewTracker(time.Minute)
	slow, fast, other := Partition{"slow", 0}, Partition{"fast", 0}, Partition{"other", 0}
	aligned := ForMonotonousTimestamps().WithWatermarkAlignment("g", 10*time.Second, time.Second)
	tr.Register(slow, aligned, 0)
	tr.Register(fast, aligned, 0)
	tr.Register(other, ForMonotonousTimestamps(), 0)
	show := func(ps []Partition) string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.Topic)
		}
		return fmt.Sprint(out)
	}
	for _, step := range []struct {
		name          string
		now           int64
		observe       map[Partition]int64
		hold, release string
		held          string
		global        int64
		fastIdle      bool
	}{
		{name: "fast alone has a watermark: no minimum to drift from", now: 1000,
			observe: map[Partition]int64{fast: 100_000, other: 500_000}, hold: "[]", release: "[]", held: "[]", global: Unset},
		{name: "slow's first record: fast is 90 s ahead", now: 2000,
			observe: map[Partition]int64{slow: 10_000}, hold: "[fast]", release: "[]", held: "[fast]", global: 10_000},
		{name: "within the update interval nothing is decided", now: 2500,
			observe: map[Partition]int64{slow: 95_000}, hold: "[]", release: "[]", held: "[fast]", global: 95_000},
		{name: "slow back within the drift: fast goes", now: 3000,
			hold: "[]", release: "[fast]", held: "[]", global: 95_000},
		{name: "exactly the drift ahead is within it", now: 4000,
			observe: map[Partition]int64{slow: 100_000, fast: 110_000}, hold: "[]", release: "[]", held: "[]", global: 100_000},
		{name: "one millisecond more is not", now: 5000,
			observe: map[Partition]int64{fast: 110_001}, hold: "[fast]", release: "[]", held: "[fast]", global: 100_000},
		// slow goes quiet; fast, held, is quiet too but does not idle.
		{name: "slow idles out: no minimum, fast goes", now: 66_000,
			hold: "[]", release: "[fast]", held: "[]", global: 110_001},
		{name: "fast's idleness clock restarted when it was let go", now: 125_000,
			hold: "[]", release: "[]", held: "[]", global: 110_001},
		{name: "then it idles as any quiet partition; all idle, the watermark stays", now: 126_001,
			hold: "[]", release: "[]", held: "[]", global: 110_001, fastIdle: true},
	} {
		for p, ts := range step.observe {
			tr.Observe(p, ts, step.now)
		}
		tr.Advance(step.now)
		hold, release := tr.Align(step.now)
		if got := show(hold); got != step.hold {
			t.Fatalf("%s: held back %s, want %s", step.name, got, step.hold)
		}
		if got := show(release); got != step.release {
			t.Fatalf("%s: let go %s, want %s", step.name, got, step.release)
		}
		if got := show(tr.Held()); got != step.held {
			t.Fatalf("%s: held %s, want %s", step.name, got, step.held)
		}
		if g := tr.Global(); g != step.global {
			t.Fatalf("%s: global %d, want %d", step.name, g, step.global)
		}
		snap := tr.Snapshot()
		i := slices.IndexFunc(snap, func(s PartitionState) bool { return s.Partition == fast })
		if snap[i].Idle != step.fastIdle || snap[i].AlignmentHeld != (step.held == "[fast]") {
			t.Fatalf("%s: fast %+v", step.name, snap[i])
		}
	}
	if g, d, ok := tr.AlignmentGroup(fast); !ok || g != "g" || d != 10*time.Second {
		t.Fatalf("fast's group %q %s %v", g, d, ok)
	}
	if _, _, ok := tr.AlignmentGroup(other); ok {
		t.Fatal("other is in no group")
	}
}
