package testdriver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/testdriver"
)

// clockWatcher logs what the runtime tells it about event time.
type clockWatcher struct {
	processor.Base[string, string]
	log *[]string
}

func (p *clockWatcher) Process(r processor.Record[string, string]) error {
	*p.log = append(*p.log, fmt.Sprintf("process ts=%d floor=%d wm=%d late=%v", r.Timestamp, p.Ctx.Floor(), p.Ctx.Watermark(), p.Ctx.IsLate()))
	return nil
}

func (p *clockWatcher) OnWatermark(frontier int64) error {
	*p.log = append(*p.log, fmt.Sprintf("watermark %d floor=%d", frontier, p.Ctx.Floor()))
	return nil
}

func (p *clockWatcher) OnBarrier() error {
	*p.log = append(*p.log, fmt.Sprintf("barrier floor=%d", p.Ctx.Floor()))
	return nil
}

func watcherTopology(log *[]string) *topology.Topology {
	return topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddProcessor("watch", processor.Supply(func() processor.Processor[string, string, string, string] {
			return &clockWatcher{log: log}
		}), "src")
}

func TestDriverTimeSurface(t *testing.T) {
	var log []string
	d, err := testdriver.New(watcherTopology(&log), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "x", 10)
	in.PipeInputAt("a", "x", 5) // behind the watermark: late, but judged by its window
	if err := d.AdvanceWatermark(30); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWatermark(20); err != nil { // lenient: a no-op
		t.Fatal(err)
	}
	want := []string{
		"process ts=10 floor=10 wm=10 late=false",
		"watermark 10 floor=-1",
		"barrier floor=-1",
		"process ts=5 floor=10 wm=10 late=true",
		"barrier floor=10",
		"watermark 30 floor=10",
		"barrier floor=10",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if d.Watermark() != 30 {
		t.Fatalf("watermark %d", d.Watermark())
	}
}

func TestManualCommitMode(t *testing.T) {
	var log []string
	d, err := testdriver.New(watcherTopology(&log), map[string]string{"test.driver.commit-per-pipe": "false"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "x", 10)
	in.PipeInputAt("a", "x", 11)
	if err := d.CommitBarrier(); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWatermark(5); !errors.Is(err, testdriver.ErrWatermarkBackwards) {
		t.Fatalf("backward advance in manual mode: %v", err)
	}
	barriers := 0
	for _, l := range log {
		if strings.HasPrefix(l, "barrier") {
			barriers++
		}
	}
	if barriers != 1 {
		t.Fatalf("%d barriers, want 1:\n%s", barriers, strings.Join(log, "\n"))
	}
}

// ticker schedules a stream-time punctuator, which makes it need event time.
type ticker struct{ processor.Base[string, string] }

func (p *ticker) Init(ctx processor.Context[string, string]) error {
	_, err := ctx.Schedule(time.Second, processor.StreamTime, func(int64) error { return nil })
	return err
}
func (p *ticker) Process(processor.Record[string, string]) error { return nil }

func TestEventTimeRefusals(t *testing.T) {
	tick := processor.Supply(func() processor.Processor[string, string, string, string] { return &ticker{} })
	tests := []struct {
		name string
		topo func() *topology.Topology
		cfg  map[string]string
		want string
	}{
		{
			name: "noWatermarks source beside a stream-time punctuator",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("frozen", topology.ConsumedWith(str, str).WithWatermarkStrategy(watermark.NoWatermarks()).Spec(), "a").
					AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
					AddProcessor("tick", tick, "src").
					AddProcessor("other", passThrough(), "frozen")
			},
			want: "node tick: stream-time punctuator needs event time, but source frozen declares noWatermarks()",
		},
		{
			name: "disabled coordination",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").AddProcessor("tick", tick, "src")
			},
			cfg:  map[string]string{"stoatflow.processing.timestamp-coordination-mode": "DISABLED"},
			want: "node tick: stream-time punctuator needs event time, but stoatflow.processing.timestamp-coordination-mode is DISABLED",
		},
		{
			name: "no kafka topic",
			topo: func() *topology.Topology {
				return topology.New().
					AddGlobalStore(state.TimestampedKeyValueStoreBuilder("g", str, str, state.InMemory()).WithLoggingDisabled(),
						"g-src", topology.ConsumedWith(str, str).Spec(), "g-topic", "g-update", passThrough()).
					RequireEventTime("g-update", "event-time timer").
					AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
					AddProcessor("p", passThrough(), "src")
			},
			want: "node g-update: event-time timer needs event time, but no Kafka topic feeds it",
		},
		{
			name: "invalid strategy",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", topology.ConsumedWith(str, str).WithWatermarkStrategy(watermark.ForBoundedOutOfOrderness(-time.Second)).Spec(), "in").
					AddProcessor("p", passThrough(), "src")
			},
			want: "node src: source src: invalid watermark strategy: negative out-of-orderness bound",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testdriver.New(tc.topo(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func passThrough() processor.Supplier {
	return func() processor.Untyped { return &forwarder{} }
}

type forwarder struct{ processor.Base[any, any] }

func (p *forwarder) Process(r processor.Record[any, any]) error { p.Ctx.Forward(r); return nil }

func TestEventTimeDerivation(t *testing.T) {
	plain := topology.New().AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").AddProcessor("p", passThrough(), "src")
	b, err := plain.Build(config.New(map[string]string{"application.id": "a"}))
	if err != nil || b.EventTime {
		t.Fatalf("a stateless topology tracks no event time: %v %v", b.EventTime, err)
	}
	b, err = plain.Build(config.New(map[string]string{"application.id": "a", "stoatflow.processing.timestamp-coordination-mode": "ENABLED"}))
	if err != nil || !b.EventTime {
		t.Fatalf("ENABLED forces tracking: %v %v", b.EventTime, err)
	}
	declared := topology.New().
		AddSource("src", topology.ConsumedWith(str, str).WithWatermarkStrategy(watermark.ForMonotonousTimestamps()).Spec(), "in").
		AddProcessor("p", passThrough(), "src")
	b, err = declared.Build(config.New(map[string]string{"application.id": "a"}))
	if err != nil || !b.EventTime {
		t.Fatalf("a declared strategy turns tracking on under AUTO: %v %v", b.EventTime, err)
	}
	if got := b.DefaultWatermark.Bound(); got != 10*time.Second {
		t.Fatalf("default bound %s", got)
	}
}

func TestAssignerAndNoEventTime(t *testing.T) {
	assigned := topology.ConsumedWith(str, i64).WithWatermarkStrategy(watermark.ForMonotonousTimestamps().
		WithTimestampAssigner(func(_, value any, _ int64) (int64, error) { return value.(int64), nil }))
	topo := topology.New().
		AddSource("src", assigned.Spec(), "in").
		AddSink("out", topology.ProducedWith(str, i64).Spec("out"), "out", "src").
		AddSource("lenient", topology.ConsumedWith(str, i64).WithTimestampExtractor(topology.LogAndSkipOnInvalidTimestamp).Spec(), "in2").
		AddSink("out2", topology.ProducedWith(str, i64).Spec("out2"), "out2", "lenient").
		AddSource("strict", topology.ConsumedWith(str, i64).Spec(), "in3").
		AddSink("out3", topology.ProducedWith(str, i64).Spec("out3"), "out3", "strict")
	d, err := testdriver.New(topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	testdriver.CreateInputTopic(d, "in", str, i64).PipeInputAt("k", 777, 1)
	r, _ := testdriver.CreateOutputTopic(d, "out", str, i64).ReadRecord()
	if r.Timestamp != 777 || d.Watermark() != 777 {
		t.Fatalf("assigned timestamp %d, watermark %d, want 777", r.Timestamp, d.Watermark())
	}
	if err := testdriver.CreateInputTopic(d, "in2", str, i64).PipeInputAt("k", 1, -5); err != nil {
		t.Fatal(err)
	}
	if n := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonNoEventTime); n != 1 {
		t.Fatalf("no_event_time drops %d, want 1", n)
	}
	err = testdriver.CreateInputTopic(d, "in3", str, i64).PipeInputAt("k", 1, -5)
	if err == nil || !strings.Contains(err.Error(), "source strict: timestamp extractor record: topic in3 partition 0 offset 0: invalid (negative) timestamp -5") {
		t.Fatalf("strict extractor error %v", err)
	}
}

func TestAlignmentGroupsMustAgree(t *testing.T) {
	a := watermark.ForMonotonousTimestamps().WithWatermarkAlignment("orders", time.Minute, time.Second)
	b := watermark.ForMonotonousTimestamps().WithWatermarkAlignment("orders", 2*time.Minute, time.Second)
	topo := topology.New().
		AddSource("a", topology.ConsumedWith(str, str).WithWatermarkStrategy(a).Spec(), "in-a").
		AddSource("b", topology.ConsumedWith(str, str).WithWatermarkStrategy(b).Spec(), "in-b").
		AddProcessor("p", passThrough(), "a", "b")
	_, err := testdriver.New(topo, nil)
	want := "node b: alignment group orders: maximum drift 2m0s and update interval 1s differ from source a's 1m0s and 1s"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %q", err, want)
	}
	same := topology.New().
		AddSource("a", topology.ConsumedWith(str, str).WithWatermarkStrategy(a).Spec(), "in-a").
		AddSource("b", topology.ConsumedWith(str, str).WithWatermarkStrategy(a).Spec(), "in-b").
		AddProcessor("p", passThrough(), "a", "b")
	if _, err := testdriver.New(same, nil); err != nil {
		t.Fatal(err)
	}
}
