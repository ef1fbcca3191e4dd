package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestBarrierClockPacesBarriers: with WithBarrierClock standing still, no
// barrier is cut however long the real interval has passed, so nothing
// commits; moving the clock past the interval cuts one.
func TestBarrierClockPacesBarriers(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	var now atomic.Int64
	now.Store(1_000_000)
	e, stop := runEngine(t, uppercase(), cfg(addr, "barrier-clock", "num.stream.threads", "1"), engine.WithBarrierClock(now.Load))
	produce(t, addr, "in", []kv{{Key: "a", Value: "x", Timestamp: 1000}})
	// Ten times the interval on the system clock: a wait that must time
	// out.
	if waitUntil(time.Second, func() bool { return e.Stats().Committed > 0 }) {
		t.Fatalf("%d barriers committed while the barrier clock stood still", e.Stats().Committed)
	}
	now.Add(1000)
	eventually(t, 20*time.Second, func() string { return "no barrier after the barrier clock moved" }, func() bool { return e.Stats().Committed > 0 })
	if got := readCommitted(t, addr, "out", 1, 10*time.Second); len(got) != 1 || got[0].Value != "<x>" {
		t.Fatalf("output %v, want one <x>", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestEventTimeSettle: Settle returns once the records before the ends are
// committed, the watermark is the driver's (the largest event time seen,
// or the largest Advance, never the minimum over partitions), and a
// control refuses a second engine and a settle when no engine runs.
func TestEventTimeSettle(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	et := engine.NewEventTime()
	ctx := context.Background()
	if err := et.Settle(ctx, nil); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("settle before the engine runs: %v, want ErrNotRunning", err)
	}
	// The barrier clock stands still: every barrier is a settle's.
	var frozen atomic.Int64
	e, stop := runEngine(t, uppercase(), cfg(addr, "event-time", "num.stream.threads", "4"), engine.WithEventTime(et), engine.WithBarrierClock(frozen.Load))
	eventually(t, 30*time.Second, func() string { return "not running" }, func() bool { return e.State() == engine.Running })
	second := engine.New(uppercase(), cfg(addr, "event-time-2"), engine.WithEventTime(et))
	if err := second.Run(ctx); err == nil {
		t.Fatal("a second engine ran with a control held by the first")
	}
	// One record in one partition of four: the tracker would hold the
	// watermark back at the three empty ones.
	produce(t, addr, "in", []kv{{Key: "a", Value: "x", Timestamp: 5000}})
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := et.Settle(sctx, endOffsets(t, addr, "in")); err != nil {
		t.Fatal(err)
	}
	if w := et.Watermark(); w != 5000 {
		t.Fatalf("watermark %d after a record stamped 5000, want 5000", w)
	}
	if n := e.Stats().Records; n != 1 {
		t.Fatalf("%d records committed when the settle returned, want 1", n)
	}
	et.Advance(9000)
	et.Advance(7000) // behind: nothing
	if err := et.Settle(sctx, nil); err != nil {
		t.Fatal(err)
	}
	if w := et.Watermark(); w != 9000 {
		t.Fatalf("watermark %d after advancing to 9000, want 9000", w)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := et.Settle(ctx, nil); !errors.Is(err, engine.ErrNotRunning) {
		t.Fatalf("settle after the engine stopped: %v, want ErrNotRunning", err)
	}
}

// endOffsets are topic's partitions' end offsets, for a settle.
func endOffsets(t *testing.T, addr, topic string) map[string]map[int32]int64 {
	t.Helper()
	ends, err := kafkatest.Admin(t, addr).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[int32]int64{topic: {}}
	ends.Each(func(o kadm.ListedOffset) { out[topic][o.Partition] = o.Offset })
	return out
}
