package testdriver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

var (
	str = serde.String()
	i64 = serde.Int64()
)

// router sends even numbers to "even" and the rest to "odd", and stamps
// where each record came from into its value.
type router struct{ processor.Base[string, string] }

func (p *router) Process(r processor.Record[string, int64]) error {
	meta, ok := p.Ctx.RecordMetadata()
	if !ok {
		return errors.New("no metadata for a piped record")
	}
	h, _ := r.Headers.Last("h")
	v := fmt.Sprintf("%d@%s/%d/%d ts=%d h=%s", r.Value, meta.Topic, meta.Partition, meta.Offset, r.Timestamp, h)
	child := "odd"
	if r.Value%2 == 0 {
		child = "even"
	}
	p.Ctx.ForwardTo(processor.WithValue(r, v), child)
	return nil
}

func TestForwardToChildAndMetadata(t *testing.T) {
	topo := topology.New().
		AddSource("src", topology.ConsumedWith(str, i64).Spec(), "in").
		AddProcessor("route", processor.Supply(func() processor.Processor[string, int64, string, string] { return &router{} }), "src").
		AddSink("even", topology.ProducedWith(str, str).Spec("evens"), "evens", "route").
		AddSink("odd", topology.ProducedWith(str, str).Spec("odds"), "odds", "route")
	d, err := testdriver.New(topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, i64, testdriver.StartAt(1000), testdriver.AutoAdvance(5))
	in.PipeRecord(testdriver.TestRecord[string, int64]{Key: "a", Value: 1, Timestamp: 7, Headers: processor.Headers{}.Add("h", []byte("x"))})
	in.PipeInput("b", 2)
	in.PipeInput("c", 4)
	evens, _ := testdriver.CreateOutputTopic(d, "evens", str, str).ReadValuesToList()
	odds, _ := testdriver.CreateOutputTopic(d, "odds", str, str).ReadValuesToList()
	if got, want := fmt.Sprint(evens), "[2@in/0/1 ts=1000 h= 4@in/0/2 ts=1000 h=]"; got != want {
		t.Errorf("evens %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(odds), "[1@in/0/0 ts=7 h=x]"; got != want {
		t.Errorf("odds %s, want %s", got, want)
	}
}

// counter keeps a count per key in a store and forwards it.
type counter struct {
	processor.Base[string, int64]
	store state.KeyValueStore[string, int64]
}

func (p *counter) Init(ctx processor.Context[string, int64]) error {
	p.Ctx = ctx
	s, err := processor.KeyValueStore[string, int64](ctx, "counts")
	p.store = s
	return err
}

func (p *counter) Process(r processor.Record[string, string]) error {
	n, _, err := p.store.Get(r.Key)
	if err != nil {
		return err
	}
	n++
	if err := p.store.Put(r.Key, n); err != nil {
		return err
	}
	p.Ctx.Forward(processor.WithValue(r, n))
	return nil
}

func counterTopology() *topology.Topology {
	return topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddProcessor("count", processor.Supply(func() processor.Processor[string, string, string, int64] { return &counter{} }), "src").
		AddStateStore(state.KeyValueStoreBuilder("counts", str, i64, state.InMemory()), "count").
		AddSink("out", topology.ProducedWith(str, i64).Spec("counts-out"), "counts-out", "count")
}

func TestStoreAndChangelog(t *testing.T) {
	d, err := testdriver.New(counterTopology(), map[string]string{"application.id": "app"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "x", 10)
	in.PipeInputAt("b", "x", 20)
	in.PipeInputAt("a", "x", 30)
	got, _ := testdriver.ReadKeyValuesToMap(testdriver.CreateOutputTopic(d, "counts-out", str, i64))
	if fmt.Sprint(got) != "map[a:2 b:1]" {
		t.Fatalf("output %v", got)
	}
	store, err := testdriver.KeyValueStore[string, int64](d, "counts")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, _ := store.Get("a"); !ok || n != 2 {
		t.Fatalf("store a = %d, %v", n, ok)
	}
	// The changelog is Kafka Streams' layout: key bytes, 8-byte big-endian
	// value, the record's timestamp.
	log := testdriver.CreateOutputTopic(d, "app-counts-changelog", serde.Bytes(), serde.Bytes())
	recs, _ := log.ReadRecordsToList()
	var lines []string
	for _, r := range recs {
		lines = append(lines, fmt.Sprintf("%x=%x@%d", r.Key, r.Value, r.Timestamp))
	}
	want := "61=0000000000000001@10 62=0000000000000001@20 61=0000000000000002@30"
	if strings.Join(lines, " ") != want {
		t.Fatalf("changelog %s\nwant      %s", strings.Join(lines, " "), want)
	}
	if names := fmt.Sprint(d.ProducedTopicNames()); names != "[app-counts-changelog counts-out]" {
		t.Fatalf("produced topics %s", names)
	}
}

func TestDeserializationHandlers(t *testing.T) {
	bad := []byte{1, 2, 3} // not an int64
	topo := func() *topology.Topology {
		return topology.New().
			AddSource("src", topology.ConsumedWith(str, i64).Spec(), "in").
			AddSink("out", topology.ProducedWith(str, i64).Spec("out"), "out", "src")
	}
	t.Run("fail names the record", func(t *testing.T) {
		d, err := testdriver.New(topo(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		raw := testdriver.CreateInputTopic(d, "in", str, serde.Bytes())
		raw.PipeInputAt("k", []byte{0, 0, 0, 0, 0, 0, 0, 1}, 1)
		err = raw.PipeInputAt("k", bad, 2)
		if err == nil {
			t.Fatal("want an error")
		}
		for _, want := range []string{"source src", "serde int64", "topic in partition 0 offset 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("continue counts the drop", func(t *testing.T) {
		d, err := testdriver.New(topo(), map[string]string{"default.deserialization.exception.handler": "continue"})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		raw := testdriver.CreateInputTopic(d, "in", str, serde.Bytes())
		if err := raw.PipeInputAt("k", bad, 2); err != nil {
			t.Fatal(err)
		}
		if n := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonDeserialization); n != 1 {
			t.Fatalf("dropped = %d, want 1", n)
		}
	})
	t.Run("dead letter keeps the bytes", func(t *testing.T) {
		d, err := testdriver.New(topo(), map[string]string{
			"default.deserialization.exception.handler": "dead-letter",
			"errors.dead.letter.queue.topic.name":       "dlq",
		})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		raw := testdriver.CreateInputTopic(d, "in", str, serde.Bytes())
		if err := raw.PipeInputAt("k", bad, 2); err != nil {
			t.Fatal(err)
		}
		r, err := testdriver.CreateOutputTopic(d, "dlq", str, serde.Bytes()).ReadRecord()
		if err != nil {
			t.Fatal(err)
		}
		topic, _ := r.Headers.Last("__streams.errors.topic")
		offset, _ := r.Headers.Last("__streams.errors.offset")
		msg, _ := r.Headers.Last("__streams.errors.message")
		if r.Key != "k" || string(r.Value) != string(bad) || string(topic) != "in" || string(offset) != "0" || !strings.Contains(string(msg), "int64") {
			t.Fatalf("dead letter %+v", r)
		}
	})
	t.Run("dead letter needs a topic", func(t *testing.T) {
		_, err := testdriver.New(topo(), map[string]string{"default.deserialization.exception.handler": "dead-letter"})
		if err == nil || !strings.Contains(err.Error(), "errors.dead.letter.queue.topic.name is not set") {
			t.Fatalf("error %v", err)
		}
	})
}

// failing fails on the value "boom": with an error, or with a panic, as a
// processor with a bug does.
type failing struct {
	processor.Base[string, string]
	panics bool
}

func (p *failing) Process(r processor.Record[string, string]) error {
	if r.Value == "boom" {
		if p.panics {
			panic("boom")
		}
		return errors.New("boom")
	}
	p.Ctx.Forward(r)
	return nil
}

// TestProcessingHandler: a processor's error, or its panic, fails the
// record under fail, naming the processor and the record, and is skipped
// and counted under continue.
func TestProcessingHandler(t *testing.T) {
	for _, tc := range []struct {
		name   string
		panics bool
		want   string
	}{
		{"error", false, "processor pass: topic in partition 0 offset 0: boom"},
		{"panic", true, "processor pass: topic in partition 0 offset 0: panic: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := func() *topology.Topology {
				return topology.New().
					AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
					AddProcessor("pass", processor.Supply(func() processor.Processor[string, string, string, string] { return &failing{panics: tc.panics} }), "src").
					AddProcessor("fail", processor.Supply(func() processor.Processor[string, string, string, string] { return &failing{panics: tc.panics} }), "pass").
					AddSink("out", topology.ProducedWith(str, str).Spec("out"), "out", "fail")
			}
			d, err := testdriver.New(topo(), nil)
			if err != nil {
				t.Fatal(err)
			}
			in := testdriver.CreateInputTopic(d, "in", str, str)
			err = in.PipeInputAt("k", "boom", 1)
			var pe *topology.Error
			if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			d.Close()

			d, err = testdriver.New(topo(), map[string]string{"processing.exception.handler": "continue"})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			in = testdriver.CreateInputTopic(d, "in", str, str)
			if err := in.PipeInputAt("k", "boom", 1); err != nil {
				t.Fatal(err)
			}
			if err := in.PipeInputAt("k", "fine", 2); err != nil {
				t.Fatal(err)
			}
			vs, _ := testdriver.CreateOutputTopic(d, "out", str, str).ReadValuesToList()
			if fmt.Sprint(vs) != "[fine]" || d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonProcessing) != 1 {
				t.Fatalf("values %v, dropped %d", vs, d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonProcessing))
			}
		})
	}
}

func TestUnknownTopicAndChild(t *testing.T) {
	d, err := testdriver.New(counterTopology(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = testdriver.CreateInputTopic(d, "nope", str, str).PipeInput("a", "b")
	if !errors.Is(err, testdriver.ErrUnknownTopic) {
		t.Fatalf("error %v", err)
	}
	if _, err := testdriver.CreateOutputTopic(d, "counts-out", str, i64).ReadValue(); !errors.Is(err, testdriver.ErrNoRecord) {
		t.Fatalf("read of empty topic: %v", err)
	}
}

// globalReader looks values up in a global store.
type globalReader struct {
	processor.Base[string, string]
	store state.TimestampedKeyValueStore[string, string]
}

func (p *globalReader) Init(ctx processor.Context[string, string]) error {
	p.Ctx = ctx
	s, err := processor.TimestampedKeyValueStore[string, string](ctx, "names")
	p.store = s
	return err
}

func (p *globalReader) Process(r processor.Record[string, string]) error {
	v, _, err := p.store.Get(r.Value)
	if err != nil {
		return err
	}
	p.Ctx.Forward(processor.WithValue(r, v.Value))
	return nil
}

// globalWriter keeps the global store up to date.
type globalWriter struct {
	processor.Base[string, string]
	store state.TimestampedKeyValueStore[string, string]
}

func (p *globalWriter) Init(ctx processor.Context[string, string]) error {
	s, err := processor.TimestampedKeyValueStore[string, string](ctx, "names")
	p.store = s
	return err
}

func (p *globalWriter) Process(r processor.Record[string, string]) error {
	return p.store.Put(r.Key, state.ValueAndTimestamp[string]{Value: r.Value, Timestamp: r.Timestamp})
}

func TestGlobalStore(t *testing.T) {
	topo := topology.New().
		AddGlobalStore(state.TimestampedKeyValueStoreBuilder("names", str, str, state.InMemory()).WithLoggingDisabled(),
			"names-src", topology.ConsumedWith(str, str).Spec(), "names",
			"names-update", processor.Supply(func() processor.Processor[string, string, string, string] { return &globalWriter{} })).
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddProcessor("lookup", processor.Supply(func() processor.Processor[string, string, string, string] { return &globalReader{} }), "src").
		AddSink("out", topology.ProducedWith(str, str).Spec("out"), "out", "lookup")
	d, err := testdriver.New(topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	testdriver.CreateInputTopic(d, "names", str, str).PipeInputAt("1", "one", 1)
	testdriver.CreateInputTopic(d, "in", str, str).PipeInputAt("k", "1", 2)
	v, err := testdriver.CreateOutputTopic(d, "out", str, str).ReadValue()
	if err != nil || v != "one" {
		t.Fatalf("value %q, %v", v, err)
	}
	if !strings.Contains(topo.Describe().String(), "Sub-topology: 1 for global store (will not generate tasks)") {
		t.Fatalf("describe:\n%s", topo.Describe())
	}
}
