package dsl_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// lengths re-keys each record by its value's length, counting per new key
// in a store the test adds.
type lengths struct {
	processor.Base[int64, string]
	store state.KeyValueStore[int64, int64]
}

func (p *lengths) Init(ctx processor.Context[int64, string]) error {
	p.Ctx = ctx
	s, err := processor.KeyValueStore[int64, int64](ctx, "seen")
	p.store = s
	return err
}

func (p *lengths) Process(r processor.Record[string, string]) error {
	k := int64(len(r.Value))
	n, _, err := p.store.Get(k)
	if err != nil {
		return err
	}
	if err := p.store.Put(k, n+1); err != nil {
		return err
	}
	p.Ctx.Forward(processor.Record[int64, string]{Key: k, Value: fmt.Sprintf("%s#%d", r.Value, n+1), Timestamp: r.Timestamp})
	return nil
}

// shout upper-cases values and keeps keys.
type shout struct {
	ctx processor.FixedKeyContext[string, string]
}

func (p *shout) Init(ctx processor.FixedKeyContext[string, string]) error { p.ctx = ctx; return nil }
func (p *shout) Process(r processor.Record[string, string]) error {
	p.ctx.Forward(processor.WithValue(r, strings.ToUpper(r.Value)))
	return nil
}
func (p *shout) Close() error { return nil }

func TestProcessAndProcessValues(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	b := dsl.NewBuilder()
	b.Topology().AddStateStore(state.KeyValueStoreBuilder("seen", i64, i64, state.InMemory()))
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
	up := dsl.ProcessValues(s, func() processor.FixedKeyProcessor[string, string, string] { return &shout{} }, dsl.Name("shout"))
	rekeyed := dsl.Process(up, func() processor.Processor[string, string, int64, string] { return &lengths{} }, dsl.Name("lengths"), "seen")
	rekeyed.To("out", dsl.ProducedWith(i64, str))

	d := run(t, b, nil)
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "ab", 1)
	in.PipeInputAt("b", "cd", 2)
	in.PipeInputAt("c", "xyz", 3)
	got, _ := testdriver.CreateOutputTopic(d, "out", i64, str).ReadRecordsToList()
	var lines []string
	for _, r := range got {
		lines = append(lines, fmt.Sprintf("%d=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	if want := "2=AB#1@1 2=CD#2@2 3=XYZ#1@3"; strings.Join(lines, " ") != want {
		t.Fatalf("got %s, want %s", strings.Join(lines, " "), want)
	}
	desc := b.Topology().Describe().String()
	for _, want := range []string{"Processor: shout (stores: [])", "Processor: lengths (stores: [seen])"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
}

func TestForeachNamedChooserAndPattern(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	var seen []string
	s := dsl.StreamPattern(b, dsl.ConsumedWith(str, str).WithName("all-events"), regexp.MustCompile(`^events-.*`))
	s.Foreach(func(k, v string) { seen = append(seen, k+"="+v) }, dsl.Name("remember"))
	s.ToChooser(func(k, v string, rc topology.RecordContext) string { return "copy-" + rc.Topic })

	d := run(t, b, nil)
	testdriver.CreateInputTopic(d, "events-a", str, str).PipeInputAt("1", "x", 5)
	testdriver.CreateInputTopic(d, "events-b", str, str).PipeInputAt("2", "y", 6)
	if want := []string{"1=x", "2=y"}; !slices.Equal(seen, want) {
		t.Fatalf("foreach saw %v, want %v", seen, want)
	}
	if names := d.ProducedTopicNames(); !slices.Equal(names, []string{"copy-events-a", "copy-events-b"}) {
		t.Fatalf("produced %v", names)
	}
	desc := b.Topology().Describe().String()
	for _, want := range []string{"Source: all-events (topics: [^events-.*])", "Processor: remember (stores: [])", "Sink: KSTREAM-SINK-0000000000 (extractor: topic chooser)"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
}

func TestGeneratedNamesAreDeterministic(t *testing.T) {
	build := func() string {
		str := serde.String()
		b := dsl.NewBuilder()
		s := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
		dsl.MapValues(s.Filter(func(k, v string) bool { return true }), func(k, v string) string { return v }).To("out")
		return b.Topology().Describe().String()
	}
	first := build()
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-MAPVALUES-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-FILTER-0000000001
    Sink: KSTREAM-SINK-0000000003 (topic: out)
      <-- KSTREAM-MAPVALUES-0000000002

`
	if first != want || build() != first {
		t.Fatalf("describe:\n%s\nwant:\n%s", first, want)
	}
}

func TestRepartitionIsABoundary(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Stream(b, dsl.ConsumedWith(str, str), "in").
		Repartition(dsl.RepartitionedAs[string, string]("by-key").WithNumberOfPartitions(3)).
		To("out")
	desc := b.Topology().Describe().String()
	for _, want := range []string{
		"Sink: by-key-repartition-sink (topic: by-key-repartition)",
		"~~> by-key-repartition-source in sub-topology 1 (in-memory boundary, laned by key serde string)",
		"Sub-topology: 1\n    Source: by-key-repartition-source (topics: [by-key-repartition])",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
	d := run(t, b, nil)
	testdriver.CreateInputTopic(d, "in", str, str).PipeInputAt("k", "v", 1)
	if names := d.ProducedTopicNames(); !slices.Equal(names, []string{"by-key-repartition", "out"}) {
		t.Fatalf("produced %v", names)
	}
}
