package engine_test

import (
	"sync/atomic"
	"testing"
	"time"

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

// TestWallClockPunctuatorFiresOnIdleInput: wall-clock punctuators fire at
// barriers, so barriers keep coming with no input at all, and what the
// punctuator forwards is committed.
func TestWallClockPunctuatorFiresOnIdleInput(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	var fired atomic.Int64
	topo := topology.New().
		AddSource("source", topology.ConsumedWith(serde.String(), serde.String()).Spec(), "in").
		AddProcessor("tick", processor.Supply(func() processor.Processor[string, string, string, string] {
			return &ticker{fired: &fired}
		}), "source").
		AddSink("sink", topology.ProducedWith(serde.String(), serde.String()).Spec("out"), "out", "tick")
	_, stop := runEngine(t, topo, cfg(addr, "ticks", "num.stream.threads", "1"))
	got := readCommitted(t, addr, "out", 1, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "tick" || got[0].Value != "tock" {
		t.Fatalf("output %v, want one tick", got)
	}
}
