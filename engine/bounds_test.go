package engine_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/lane"
)

// keysOfLane returns n keys the dispatcher hands to lane idx of lanes.
func keysOfLane(n, idx, lanes int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := "k" + strconv.Itoa(i)
		if lane.For([]byte(k), lanes) == idx {
			out = append(out, k)
		}
	}
	return out
}

// holdAt returns a probe hook that, once armed, holds sub-topology 0's
// lane 0 at the next barrier it crosses until cond holds (or 20 s pass),
// and a channel closed when the hold begins.
func holdAt(armed *atomic.Bool, cond func() bool) (func(sub, idx int, barrier bool), <-chan struct{}) {
	held := make(chan struct{})
	var once atomic.Bool
	return func(sub, idx int, barrier bool) {
		if sub != 0 || idx != 0 || !barrier || !armed.Load() || once.Swap(true) {
			return
		}
		close(held)
		waitUntil(20*time.Second, cond)
	}, held
}

// TestAlignmentHoldsProducerAhead: across an in-memory re-key, a
// downstream lane waits at barrier N for the marker of an upstream lane
// held back, while the other upstream lane, past the barrier, sends it
// the next epoch's records. That lane's records are stashed up to the
// queue size (4 here), then it waits for credit instead of the stash
// growing; the held lane's marker still gets through, and the counts are
// exact.
func TestAlignmentHoldsProducerAhead(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	keys := keysOfLane(20, 1, 2)
	batch := func(from, n int) []kv {
		var out []kv
		for i := from; i < from+n; i++ {
			out = append(out, kv{Key: keys[i%len(keys)], Value: "v" + strconv.Itoa(i%10)})
		}
		return out
	}
	probe := &engine.Probe{}
	var armed atomic.Bool
	// Held until lane 1 filled its share of a downstream stash (its
	// queue size), and a moment more, in which it must wait.
	slow, held := holdAt(&armed, func() bool {
		if peak, _ := probe.Live(); peak < 4 {
			return false
		}
		time.Sleep(100 * time.Millisecond)
		return true
	})
	e, stop := runEngine(t, rekeyedCounts(), cfg(addr, "bounded-align", "num.stream.threads", "2", engine.LaneQueueSize, "4"),
		engine.WithProbe(probe, slow))
	produce(t, addr, "in", batch(0, 100))
	eventually(t, 30*time.Second, func() string { return "the first records did not commit" }, func() bool { return e.Stats().Records >= 100 })
	armed.Store(true)
	// A barrier for lane 0 to be held at, then the next epoch's records
	// for lane 1, all sent while lane 0 is held.
	produce(t, addr, "in", batch(100, 10))
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("lane 0 crossed no barrier")
	}
	produce(t, addr, "in", batch(110, 290))
	got := readCommitted(t, addr, "out", 400, 60*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, got, 10, 40)
	b := probe.Bounds()
	t.Logf("bounds: %+v", b)
	if b.UpstreamWaits == 0 {
		t.Errorf("the upstream lane past the barrier never waited for credit (stash peak %d)", b.StashPeak)
	}
	// Three producers per downstream lane, each held to the bound.
	if b.StashBound != 5 || b.StashPeak < 4 || b.StashPeak > 3*b.StashBound {
		t.Errorf("stash peak %d, bound %d per producer: want 4..%d", b.StashPeak, b.StashBound, 3*b.StashBound)
	}
}

// TestCommitterHoldsLaneAhead: while a lane is held before its report of
// epoch N, another lane goes on into N+1; the committer holds at most
// stoatflow.commit.held-records (8 here) of its records, and the lane
// waits for the rest; the counts are exact.
func TestCommitterHoldsLaneAhead(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	keys := keysOfLane(10, 1, 2)
	batch := func(from, n int) []kv {
		var out []kv
		for i := from; i < from+n; i++ {
			out = append(out, kv{Key: keys[i%len(keys)], Value: "x"})
		}
		return out
	}
	probe := &engine.Probe{}
	var armed atomic.Bool
	slow, held := holdAt(&armed, func() bool { _, h := probe.Live(); return h > 0 })
	// Every changelog write logged, so that each input makes two
	// records to hand over (see below).
	e, stop := runEngine(t, counts(), cfg(addr, "bounded-commit", "num.stream.threads", "2", engine.CommitHeldRecords, "8",
		engine.ChangelogCoalesceBytes, "0"),
		engine.WithProbe(probe, slow))
	produce(t, addr, "in", batch(0, 100))
	eventually(t, 30*time.Second, func() string { return "the first records did not commit" }, func() bool { return e.Stats().Records >= 100 })
	armed.Store(true)
	produce(t, addr, "in", batch(100, 10))
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("lane 0 crossed no barrier")
	}
	// Over two reports' worth (512 records each, a record and its
	// changelog write per input) for lane 1 in the next epoch.
	produce(t, addr, "in", batch(110, 590))
	got := readCommitted(t, addr, "out", 700, 60*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, got, 10, 70)
	if b := probe.Bounds(); b.HeldWaits == 0 {
		t.Errorf("no report waited for the committer's budget: %+v", b)
	}
}
