package topology_test

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
)

var str = serde.String()

func strings2() topology.SourceSpec { return topology.ConsumedWith(str, str).Spec() }

// pass forwards every record; storeUser reads a store in Init.
type pass struct{ processor.Base[any, any] }

func (p *pass) Process(r processor.Record[any, any]) error { p.Ctx.Forward(r); return nil }

type storeUser struct {
	processor.Base[string, string]
	store string
}

func (p *storeUser) Init(ctx processor.Context[string, string]) error {
	_, err := processor.KeyValueStore[string, string](ctx, p.store)
	return err
}
func (p *storeUser) Process(processor.Record[string, string]) error { return nil }

func passSupplier() processor.Supplier {
	return func() processor.Untyped { return &pass{} }
}

func useStore(name string) processor.Supplier {
	return processor.Supply(func() processor.Processor[string, string, string, string] { return &storeUser{store: name} })
}

func cfg() config.Config { return config.New(map[string]string{config.ApplicationID: "app"}) }

func TestBuildRefusals(t *testing.T) {
	kv := func(name string) state.StoreBuilder {
		return state.KeyValueStoreBuilder(name, str, str, state.InMemory())
	}
	tests := []struct {
		name  string
		topo  func() *topology.Topology
		cfg   config.Config
		wants []string
	}{
		{
			name: "cycle",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", strings2(), "in").
					AddProcessor("a", passSupplier(), "src", "c").
					AddProcessor("b", passSupplier(), "a").
					AddProcessor("c", passSupplier(), "b")
			},
			wants: []string{"node a: topology has a cycle: a -> b -> c -> a"},
		},
		{
			name: "sink without serdes and no default",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", strings2(), "in").
					AddSink("out", topology.SinkSpec{}, "out-topic", "src")
			},
			wants: []string{
				"node out: sink has no key serde and config default.key.serde is not set",
				"node out: sink has no value serde and config default.value.serde is not set",
			},
		},
		{
			name: "store used but not connected",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", strings2(), "in").
					AddProcessor("user", useStore("counts"), "src").
					AddProcessor("owner", passSupplier(), "src").
					AddStateStore(kv("counts"), "owner")
			},
			wants: []string{"node user: uses state store counts but is not connected to it"},
		},
		{
			name: "unknown parent",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", strings2(), "in").
					AddProcessor("p", passSupplier(), "nope")
			},
			wants: []string{"node p: parent nope does not exist"},
		},
		{
			name: "duplicate name",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", strings2(), "in").
					AddProcessor("src", passSupplier(), "src")
			},
			wants: []string{"node src: a node with this name already exists"},
		},
		{
			name: "topic read twice",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("a", strings2(), "in").
					AddSource("b", strings2(), "in").
					AddProcessor("p", passSupplier(), "a", "b")
			},
			wants: []string{"node b: topic in is already read by source a"},
		},
		{
			name: "not co-partitioned by key serde",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("a", strings2(), "left").
					AddSource("b", topology.ConsumedWith(serde.JSON[string](), str).Spec(), "right").
					AddProcessor("join", passSupplier(), "a", "b").
					Copartition("join", "a", "b")
			},
			wants: []string{"node join: inputs are not co-partitioned: a is keyed by serde string and b by serde json"},
		},
		{
			name: "connected to a store never added",
			topo: func() *topology.Topology {
				return topology.New().
					AddSource("src", strings2(), "in").
					AddProcessor("p", passSupplier(), "src").
					ConnectProcessorAndStateStores("p", "ghost")
			},
			wants: []string{"node p: connected to state store ghost, which was never added"},
		},
		{
			name: "no application id",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", strings2(), "in").AddProcessor("p", passSupplier(), "src")
			},
			cfg:   config.New(nil),
			wants: []string{"config application.id is not set"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			if tc.cfg.Keys() == nil && tc.name != "no application id" {
				c = cfg()
			}
			_, err := tc.topo().Build(c)
			if err == nil {
				t.Fatal("built, want a refusal")
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
		})
	}
}

func TestDefaultsApply(t *testing.T) {
	topo := topology.New().
		AddSource("src", topology.SourceSpec{}, "in").
		AddSink("out", topology.SinkSpec{}, "out-topic", "src")
	b, err := topo.Build(config.New(map[string]string{
		config.ApplicationID: "app", config.DefaultKeySerde: "string", config.DefaultValueSerde: "long",
	}))
	if err != nil {
		t.Fatal(err)
	}
	sink := b.Nodes["out"].Sink
	if sink.KeySerde.Name() != "string" || sink.ValueSerde.Name() != "int64" {
		t.Fatalf("sink serdes %s/%s, want string/int64", sink.KeySerde.Name(), sink.ValueSerde.Name())
	}
	if b.Nodes["src"].Source.Extractor != topology.RecordTimestamp {
		t.Fatal("default extractor not applied")
	}
}

func TestSubtopologiesSplitAtBoundariesAndSharedStores(t *testing.T) {
	topo := topology.New().
		AddSource("a", strings2(), "in-a").
		AddProcessor("pa", passSupplier(), "a").
		AddSource("b", strings2(), "in-b").
		AddProcessor("pb", passSupplier(), "b").
		AddStateStore(state.KeyValueStoreBuilder("shared", str, str, state.InMemory()), "pa", "pb").
		AddSource("c", strings2(), "in-c")
	topo.AddBoundary("c-sink", "c-source", "c-repartition", serde.Erase(str), serde.Erase(str), "c")
	topo.AddProcessor("after", passSupplier(), "c-source")
	b, err := topo.Build(cfg())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range b.Subtopologies {
		var names []string
		for _, n := range st.Nodes {
			names = append(names, n.Name)
		}
		got = append(got, strings.Join(names, ","))
	}
	want := []string{"a,pa,b,pb", "c,c-sink", "c-source,after"}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("sub-topologies %v, want %v", got, want)
	}
	if b.Stores["shared"].ChangelogTopic != "app-shared-changelog" {
		t.Fatalf("changelog topic %q", b.Stores["shared"].ChangelogTopic)
	}
}

func TestDescribe(t *testing.T) {
	topo := topology.New().
		AddSource("src", strings2(), "in").
		AddProcessor("p", passSupplier(), "src").
		AddStateStore(state.KeyValueStoreBuilder("store", str, str, state.InMemory()), "p").
		AddSink("sink", topology.ProducedWith(str, str).Spec("out"), "out", "p")
	topo.AddBoundary("x-sink", "x-source", "x-repartition", serde.Erase(str), nil, "p")
	topo.AddSink("sink2", topology.SinkSpec{}, "out2", "x-source")
	want := `Topologies:
   Sub-topology: 0
    Source: src (topics: [in])
      --> p
    Processor: p (stores: [store])
      --> sink, x-sink
      <-- src
    Sink: sink (topic: out)
      <-- p
    Sink: x-sink (topic: x-repartition)
      ~~> x-source in sub-topology 1 (in-memory boundary, laned by key serde string)
      <-- p

   Sub-topology: 1
    Source: x-source (topics: [x-repartition])
      --> sink2
      <~~ x-sink in sub-topology 0 (in-memory boundary)
    Sink: sink2 (topic: out2)
      <-- x-source

Stores:
    Store: store (key-value, in-memory; key serde: string, value serde: string; changelog: <application.id>-store-changelog)
`
	if got := topo.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}
