package testdriver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// backdating forwards its records, and on each stream-time punctuation
// forwards one more, stamped 10 ms before the punctuation.
type backdating struct {
	processor.Base[string, string]
}

func (p *backdating) Init(ctx processor.Context[string, string]) error {
	p.Ctx = ctx
	_, err := ctx.Schedule(10*time.Millisecond, processor.StreamTime, func(ts int64) error {
		if ts >= 10 {
			ctx.Forward(processor.Record[string, string]{Key: "p", Value: "x", Timestamp: ts - 10})
		}
		return nil
	})
	return err
}

func (p *backdating) Process(processor.Record[string, string]) error { return nil }

// A stream-time punctuator runs after the emission pass its watermark
// made and is judged against that pass's frontier (barrier.Lane.Advance,
// the order the live lanes run too): what it forwards into a window the
// pass has just emitted is a counted late drop, not a count lost in a
// window already closed.
func TestPunctuatorAfterEmissionPass(t *testing.T) {
	b := dsl.NewBuilder()
	tumbling := window.TimeWindowsOfSizeWithNoGrace(10 * time.Millisecond)
	s := dsl.Process(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"),
		func() processor.Processor[string, string, string, string] { return &backdating{} }, dsl.Named{})
	dsl.CountWindowed(s.GroupByKey(dsl.GroupedWith(str, str)).WindowedBy(tumbling).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("counts")).
		ToStream().
		To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10), i64))

	d, err := testdriver.New(b.Topology(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	for _, ts := range []int64{1, 25, 50, 75} {
		if err := in.PipeInputAt("a", "x", ts); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := testdriver.CreateOutputTopic(d, "out", window.TimeWindowedSerde(str, 10), i64).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s@[%d,%d)=%d", r.Key.Key, r.Key.Window.Start, r.Key.Window.End, r.Value))
	}
	// Each punctuation at 25, 50 and 75 lands in the window its own pass
	// just closed: [10,20), [40,50), [60,70). Judged against the previous
	// pass's frontier (as the driver once did) they were admitted into
	// windows already emitted and vanished without a count.
	if len(got) != 0 {
		t.Errorf("emitted %v, want nothing", got)
	}
	if n := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonLateWindow); n != 3 {
		t.Errorf("%d late drops, want 3", n)
	}
}

// emitting forwards, at each emission pass, one record stamped with the
// pass's frontier.
type emitting struct {
	processor.Base[string, string]
}

func (p *emitting) Process(processor.Record[string, string]) error { return nil }

func (p *emitting) OnWatermark(frontier int64) error {
	p.Ctx.Forward(processor.Record[string, string]{Key: "k", Value: "x", Timestamp: frontier})
	return nil
}

// arming is a timed processor that arms an event-time timer at each
// emission pass's frontier.
type arming struct{ *timed }

func (p arming) OnWatermark(frontier int64) error {
	return p.timers.Register(processor.Timer[string]{Key: "t", Time: frontier, Domain: processor.EventTime})
}

// The emission pass drains what it re-queues, and (committing per pipe)
// each drained record crosses a barrier, so the lane's floor moves during
// the pass. Timers due after the pass are judged against the floor the
// lane has then, the stamp of the last barrier crossed, not the one it had
// when the watermark moved: the driver asks the protocol again for the
// rest of the work.
func TestTimersAfterPassThatCrossedBarriers(t *testing.T) {
	topo := topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddProcessor("emit", processor.Supply(func() processor.Processor[string, string, string, string] { return &emitting{} }), "src").
		AddSink("to-mid", topology.ProducedWith(str, str).Spec("mid"), "mid", "emit").
		AddSource("z-mid", topology.ConsumedWith(str, str).Spec(), "mid").
		AddProcessor("timed", processor.Supply(func() processor.Processor[string, string, string, string] {
			return arming{&timed{eventTime: true}}
		}), "z-mid").
		AddSink("out", topology.ProducedWith(str, str).Spec("out"), "out", "timed")
	d, err := testdriver.New(topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := testdriver.CreateInputTopic(d, "in", str, str).PipeInputAt("a", "x", 10); err != nil {
		t.Fatal(err)
	}
	// Sub-topologies flush in the order of their source names: "src"
	// (emit) before "z-mid" (timed).
	// The pass at 10 sends k@10 to "mid"; processing it crosses the
	// barrier stamped 10. Then the pass reaches "timed", which arms t@10:
	// due now, judged against floor 10 (it was -1 when the record came).
	expectOut(t, d, "t=EVENT_TIME@10 floor=10 meta=false @10")
}
