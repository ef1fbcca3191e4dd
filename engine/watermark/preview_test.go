package watermark

import (
	"testing"
	"time"
)

// TestTrackerHeads: a partition whose next record waits behind older
// records has a preview, its watermark once that record is processed,
// which the global watermark counts; the preview goes when nothing
// waits, a custom generator has none, and HeadHeldSince stays while the
// same record waits.
func TestTrackerHeads(t *testing.T) {
	tr := NewTracker(time.Hour)
	old, future, custom := Partition{"in", 0}, Partition{"in", 1}, Partition{"custom", 0}
	tr.Register(old, ForBoundedOutOfOrderness(10*time.Second), 0)
	tr.Register(future, ForBoundedOutOfOrderness(10*time.Second), 0)
	// Even a custom generator that could tell has no preview: the
	// engine does not know what it does.
	tr.Register(custom, ForGenerator(func() Generator { return &bounded{max: Unset} }), 0)
	tr.Observe(old, 20_000, 1)
	tr.Observe(custom, 90_000, 1)
	if w, _ := tr.Advance(1); w != Unset {
		t.Fatalf("global %d before any preview: future has no watermark", w)
	}
	preview := func(p Partition) (int64, int64) {
		for _, s := range tr.Snapshot() {
			if s.Partition == p {
				return s.Preview, s.HeadHeldSince
			}
		}
		t.Fatalf("%v not tracked", p)
		return 0, 0
	}
	for _, step := range []struct {
		name           string
		now            int64
		heads          []Head
		changed        bool
		preview, since int64
		global         int64
	}{
		{"future's head waits: its preview counts", 100, []Head{{future, 3_600_000, 7}}, true, 3_590_000, 100, 10_000},
		{"the same head still waits: nothing changes", 200, []Head{{future, 3_600_000, 7}}, false, 3_590_000, 100, 10_000},
		{"the next head waits: held since now", 300, []Head{{future, 3_700_000, 8}}, true, 3_690_000, 300, 10_000},
		{"nothing waits: the preview goes", 400, nil, true, Unset, 0, 10_000},
	} {
		if got := tr.Heads(append(step.heads, Head{custom, 99_000, 1}), step.now); got != step.changed {
			t.Fatalf("%s: changed %v, want %v", step.name, got, step.changed)
		}
		tr.Advance(step.now)
		if p, since := preview(future); p != step.preview || since != step.since {
			t.Fatalf("%s: preview %d since %d, want %d since %d", step.name, p, since, step.preview, step.since)
		}
		if p, _ := preview(custom); p != Unset {
			t.Fatalf("%s: a custom generator has a preview %d", step.name, p)
		}
		if g := tr.Global(); g != step.global {
			t.Fatalf("%s: global %d, want %d", step.name, g, step.global)
		}
	}
}
