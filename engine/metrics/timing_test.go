package metrics

import (
	"testing"
	"time"
)

// TestTimingWindows: counts and sums accumulate for ever; the extremes
// cover the window in progress and the one before, and are gone once a
// whole window passed without a sample.
func TestTimingWindows(t *testing.T) {
	var tm Timing
	t0 := time.Unix(1_700_000_010, 0) // a window boundary falls every 30 s
	tm.Observe(5*time.Millisecond, t0)
	tm.Observe(time.Millisecond, t0.Add(time.Second))
	for _, tc := range []struct {
		at       time.Duration
		extremes bool
		lo, hi   time.Duration
	}{
		{0, true, time.Millisecond, 5 * time.Millisecond},
		{Window, true, time.Millisecond, 5 * time.Millisecond},
		{2*Window + time.Second, false, 0, 0},
	} {
		s := tm.Snapshot(t0.Add(tc.at))
		if s.Count != 2 || s.Sum != 6*time.Millisecond || s.Extremes != tc.extremes || s.Min != tc.lo || s.Max != tc.hi {
			t.Errorf("at +%s: %+v, want 2 samples of 6ms, extremes %v [%s, %s]", tc.at, s, tc.extremes, tc.lo, tc.hi)
		}
	}
	// A new window's sample: the old extremes stay for one more window.
	tm.Observe(9*time.Millisecond, t0.Add(Window))
	if s := tm.Snapshot(t0.Add(Window)); s.Min != time.Millisecond || s.Max != 9*time.Millisecond {
		t.Errorf("two windows: %+v, want [1ms, 9ms]", s)
	}
	if s := tm.Snapshot(t0.Add(2 * Window)); s.Min != 9*time.Millisecond || s.Max != 9*time.Millisecond {
		t.Errorf("the first window aged out: %+v, want [9ms, 9ms]", s)
	}
	var sum TimingSnapshot
	sum.Add(tm.Snapshot(t0.Add(Window)))
	sum.Add(TimingSnapshot{Count: 1, Sum: time.Second})
	if sum.Count != 4 || sum.Max != 9*time.Millisecond || !sum.Extremes {
		t.Errorf("sum %+v", sum)
	}
}

// TestClaimsAreReused: an instance released is the next claimant's, so
// counts continue across rebalances; one in use is never shared.
func TestClaimsAreReused(t *testing.T) {
	r := NewRegistry()
	nodes := []NodeSpec{{"src", KindSource}, {"sink", KindSink}}
	a := r.ClaimTask("0_1", 0, nodes)
	b := r.ClaimTask("0_1", 0, nodes)
	if a == b {
		t.Fatal("two instances in use share their meters")
	}
	a.Process.Events.Add(3)
	r.ReleaseTask(a)
	if c := r.ClaimTask("0_1", 0, nodes); c != a || c.Process.Events.Load() != 3 {
		t.Fatal("a released instance was not reused")
	}
	if c := r.ClaimTask("0_1", 0, nodes[:1]); c == a || c == b {
		t.Fatal("an instance with other nodes was reused")
	}
	n := 0
	r.EachTask(func(*TaskMeter) { n++ })
	s := r.ClaimStore("counts")
	r.ReleaseStore(s)
	if n != 3 || r.ClaimStore("counts") != s {
		t.Errorf("%d task instances, store reuse %v", n, r.ClaimStore("counts") == s)
	}
}

// TestMetersReadWhileWritten: the scrape reads meters while a lane writes
// them (run with -race); the totals it ends with are the writer's.
func TestMetersReadWhileWritten(t *testing.T) {
	r := NewRegistry()
	m := r.ClaimTask("0_0", 0, []NodeSpec{{"src", KindSource}})
	const n = 20_000
	done := make(chan struct{})
	go func() {
		defer close(done)
		now := time.Now()
		for i := range n {
			m.Process.Events.Add(1)
			m.Nodes[0].E2E.Observe(time.Duration(i), now)
		}
	}()
	reads := 0
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		r.EachTask(func(tm *TaskMeter) {
			s := tm.Process.Snapshot(time.Now())
			e := tm.Nodes[0].E2E.Snapshot(time.Now())
			if s.Events < 0 || e.Count > n {
				t.Errorf("read %+v %+v", s, e)
			}
		})
	}
	e := m.Nodes[0].E2E.Snapshot(time.Now())
	if m.Process.Events.Load() != n || e.Count != n || e.Max != n-1 || e.Min != 0 {
		t.Errorf("after %d reads: %d events, %+v", reads, m.Process.Events.Load(), e)
	}
}
