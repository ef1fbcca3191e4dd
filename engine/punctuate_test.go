package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// ticker forwards one "tick" record from a wall-clock punctuator.
type ticker struct {
	processor.Base[string, string]
	fired *atomic.Int64
}

func (p *ticker) Init(ctx processor.Context[string, string]) error {
	p.Ctx = ctx
	_, err := ctx.Schedule(100*time.Millisecond, processor.WallClockTime, func(ts int64) error {
		if p.fired.Add(1) == 1 {
			ctx.Forward(processor.Record[string, string]{Key: "tick", Value: "tock", Timestamp: ts})
		}
		return nil
	})
	return err
}

func (p *ticker) Process(processor.Record[string, string]) error { return nil }

// tickerTopology reads "in" and writes what a ticker forwards to "out".
func tickerTopology() *topology.Topology {
	var fired atomic.Int64
	return topology.New().
		AddSource("source", topology.ConsumedWith(serde.String(), serde.String()).Spec(), "in").
		AddProcessor("tick", processor.Supply(func() processor.Processor[string, string, string, string] {
			return &ticker{fired: &fired}
		}), "source").
		AddSink("sink", topology.ProducedWith(serde.String(), serde.String()).Spec("out"), "out", "tick")
}

// TestWallClockPunctuatorFiresOnIdleInput: wall-clock punctuators fire at
// barriers, so barriers keep coming with no input at all, and what the
// punctuator forwards is committed.
func TestWallClockPunctuatorFiresOnIdleInput(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	topo := tickerTopology()
	_, stop := runEngine(t, topo, cfg(addr, "ticks", "num.stream.threads", "1"))
	got := readCommitted(t, addr, "out", 1, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "tick" || got[0].Value != "tock" {
		t.Fatalf("output %v, want one tick", got)
	}
}

// TestInjectedWallClockDrivesPunctuators: with WithWallClock, the lanes'
// wall clock is the injected one; a punctuator sees its time, not the
// system's.
func TestInjectedWallClockDrivesPunctuators(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	topo := tickerTopology()
	// A clock in 2001 that moves 50 ms per reading.
	const start = int64(1_000_000_000_000)
	var now atomic.Int64
	now.Store(start)
	clock := func() int64 { return now.Add(50) }
	e := engine.New(topo, cfg(addr, "ticks-injected", "num.stream.threads", "1"), engine.WithLogger(testLogger(t)), engine.WithWallClock(clock))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	got := readCommitted(t, addr, "out", 1, 20*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "tick" {
		t.Fatalf("output %v, want one tick", got)
	}
	if ts := got[0].Timestamp; ts < start || ts > now.Load() {
		t.Fatalf("tick stamped %d, want the injected clock's time in [%d, %d]", ts, start, now.Load())
	}
}
