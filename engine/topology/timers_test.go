package topology_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// timerProc receives timers on keys of type K.
type timerProc[K any] struct {
	processor.Base[K, string]
	eventTime bool
}

func (p *timerProc[K]) Process(processor.Record[K, string]) error { return nil }
func (p *timerProc[K]) OnTimer(processor.Timer[K]) error          { return nil }
func (p *timerProc[K]) UsesEventTimeTimers() bool                 { return p.eventTime }

func timerSupplier[K any]() processor.Supplier {
	return processor.Supply(func() processor.Processor[K, string, K, string] { return &timerProc[K]{eventTime: true} })
}

// keep is a fixed-key processor: the resolution looks through it.
type keep struct {
	ctx processor.FixedKeyContext[string, string]
}

func (p *keep) Init(ctx processor.FixedKeyContext[string, string]) error { p.ctx = ctx; return nil }
func (p *keep) Process(r processor.Record[string, string]) error         { p.ctx.Forward(r); return nil }
func (p *keep) Close() error                                             { return nil }

func keepSupplier() processor.Supplier {
	return processor.SupplyFixedKey(func() processor.FixedKeyProcessor[string, string, string] { return &keep{} })
}

// eventTimeOnly declares event-time timers but cannot receive them.
type eventTimeOnly struct{ processor.Base[string, string] }

func (p *eventTimeOnly) Process(processor.Record[string, string]) error { return nil }
func (p *eventTimeOnly) UsesEventTimeTimers() bool                      { return true }

func TestTimerKeySerdeResolution(t *testing.T) {
	json := serde.JSON[string]()
	deserOnly := topology.ConsumedWithDeserializers[string, string](str, str).Spec()
	withDefault := cfg().With(config.DefaultKeySerde, "string").With(config.DefaultValueSerde, "string")
	tests := []struct {
		name     string
		topo     func() *topology.Topology
		cfg      config.Config
		serde    string
		from     string
		warnings []string
	}{
		{
			name: "declared source",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", strings2(), "in").AddProcessor("timed", timerSupplier[string](), "src")
			},
			cfg:   cfg(),
			serde: "string", from: "source src",
		},
		{
			name: "deserializer-only source falls back to the default",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", deserOnly, "in").AddProcessor("timed", timerSupplier[string](), "src")
			},
			cfg:   withDefault,
			serde: "string", from: "config default.key.serde",
			warnings: []string{"source src declares its key with deserializer string only, so its timer key serde is string (from config default.key.serde)"},
		},
		{
			name: "undeclared source falls back to the default",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", topology.SourceSpec{}, "in").AddProcessor("timed", timerSupplier[string](), "src")
			},
			cfg:   withDefault,
			serde: "string", from: "config default.key.serde",
			warnings: []string{"source src declares no key serde, so its timer key serde is string"},
		},
		{
			name: "deserializer-only source, declared sink downstream",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", deserOnly, "in").
					AddProcessor("timed", timerSupplier[string](), "src").
					AddProcessor("keep", keepSupplier(), "timed").
					AddSink("out", topology.ProducedWith(json, str).Spec("out"), "out", "keep")
			},
			cfg:   withDefault,
			serde: "json", from: "sink out",
			warnings: []string{"source src declares its key with deserializer string only, so its timer key serde is json (from sink out)"},
		},
		{
			name: "a Processor API node upstream is a key change",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", topology.ConsumedWith(json, str).Spec(), "in").
					AddProcessor("rekey", passSupplier(), "src").
					AddProcessor("timed", timerSupplier[string](), "rekey")
			},
			cfg:   withDefault,
			serde: "string", from: "config default.key.serde",
			warnings: []string{"source src is keyed by serde json, but its timer key serde is string (from config default.key.serde)"},
		},
		{
			name: "a Processor API node downstream is a key change",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", deserOnly, "in").
					AddProcessor("timed", timerSupplier[string](), "src").
					AddProcessor("rekey", passSupplier(), "timed").
					AddSink("out", topology.ProducedWith(json, str).Spec("out"), "out", "rekey")
			},
			cfg:   withDefault,
			serde: "string", from: "config default.key.serde",
			warnings: []string{"source src declares its key with deserializer string only"},
		},
		{
			name: "fixed-key processors are looked through",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", topology.ConsumedWith(json, str).Spec(), "in").
					AddProcessor("keep", keepSupplier(), "src").
					AddProcessor("timed", timerSupplier[string](), "keep")
			},
			cfg:   withDefault,
			serde: "json", from: "source src",
		},
		{
			name: "a bytes deserializer declares bytes",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", topology.ConsumedWithDeserializers[[]byte, string](serde.Bytes(), str).Spec(), "in").
					AddProcessor("timed", timerSupplier[[]byte](), "src")
			},
			cfg:   withDefault,
			serde: "bytes", from: "source src",
		},
		{
			name: "a boundary's key serde, declared or not",
			topo: func() *topology.Topology {
				t := topology.New().AddSource("src", strings2(), "in")
				t.AddBoundary("b-sink", "b-source", "b-repartition", nil, nil, "src")
				return t.AddProcessor("timed", timerSupplier[string](), "b-source")
			},
			cfg:   withDefault,
			serde: "string", from: "boundary b-repartition",
		},
		{
			name: "across a boundary laned by another key serde",
			topo: func() *topology.Topology {
				t := topology.New().AddSource("src", strings2(), "in")
				t.AddBoundary("b-sink", "b-source", "b-repartition", serde.Erase(json), serde.Erase(str), "src")
				return t.AddProcessor("rekey", passSupplier(), "b-source").
					AddProcessor("timed", timerSupplier[string](), "rekey").
					AddSink("out", topology.ProducedWith(str, str).Spec("out"), "out", "timed")
			},
			cfg:   withDefault,
			serde: "string", from: "sink out",
			warnings: []string{"its records cross boundary b-repartition, laned by key serde json, but its timer key serde is string (from sink out)"},
		},
		{
			name: "a custom partitioner is outside the contract",
			topo: func() *topology.Topology {
				t := topology.New().AddSource("src", strings2(), "in")
				b := t.AddBoundary("b-sink", "b-source", "b-repartition", serde.Erase(json), serde.Erase(str), "src")
				b.Partitioner = func(string, any, any, int32) (int32, bool) { return 0, true }
				return t.AddProcessor("rekey", passSupplier(), "b-source").
					AddProcessor("timed", timerSupplier[string](), "rekey")
			},
			cfg:   withDefault,
			serde: "string", from: "config default.key.serde",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.topo().Build(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			spec := b.Nodes["timed"].Timers
			if spec == nil {
				t.Fatal("timed has no timer spec")
			}
			if spec.KeySerde.Name() != tc.serde || spec.KeySerdeFrom != tc.from {
				t.Fatalf("timer key serde %s from %s, want %s from %s", spec.KeySerde.Name(), spec.KeySerdeFrom, tc.serde, tc.from)
			}
			if len(b.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %v, want %d", b.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if got := b.Warnings[i]; got.Node != "timed" || !strings.Contains(got.Reason, w) {
					t.Errorf("warning %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

func TestTimerStoreAndEventTime(t *testing.T) {
	b, err := topology.New().AddSource("src", strings2(), "in").AddProcessor("timed", timerSupplier[string](), "src").Build(cfg())
	if err != nil {
		t.Fatal(err)
	}
	info, ok := b.Stores["timed-timers"]
	if !ok || info.ChangelogTopic != "app-timed-timers-changelog" || !info.Builder.LoggingEnabled() || !slices.Equal(info.Processors, []string{"timed"}) {
		t.Fatalf("timer store %+v, %v", info, ok)
	}
	if st := b.Subtopologies[0]; !slices.Contains(st.Stores, "timed-timers") || info.Subtopology != st.ID {
		t.Fatalf("timer store not in sub-topology 0: %v", st.Stores)
	}
	if n := b.Nodes["timed"]; n.EventTime != "event-time timer" || !n.Timers.EventTime {
		t.Fatalf("event time %q, timers %+v", n.EventTime, n.Timers)
	}
	// Build never mutates the topology: a plain node stays plain.
	if b.Nodes["src"].Timers != nil {
		t.Fatal("source has a timer spec")
	}
}

func TestTimerBuildRefusals(t *testing.T) {
	deserOnly := topology.ConsumedWithDeserializers[string, string](str, str).Spec()
	tests := []struct {
		name string
		topo func() *topology.Topology
		cfg  config.Config
		want string
	}{
		{
			name: "rule set to error",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", deserOnly, "in").AddProcessor("timed", timerSupplier[string](), "src")
			},
			cfg:  cfg().With(config.DefaultKeySerde, "string").With(config.TimerKeyLaneAffinityRule, "error"),
			want: "topology: node timed: source src declares its key with deserializer string only",
		},
		{
			name: "no timer key serde at all",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", deserOnly, "in").AddProcessor("timed", timerSupplier[string](), "src")
			},
			cfg:  cfg(),
			want: "topology: node timed: receives timers but has no timer key serde: declare the key serde of its source (topology.ConsumedWith) or of a sink after it, or set config default.key.serde",
		},
		{
			name: "bad rule value",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", strings2(), "in").AddProcessor("timed", timerSupplier[string](), "src")
			},
			cfg:  cfg().With(config.TimerKeyLaneAffinityRule, "loud"),
			want: `config stoatflow.topology.validation.timer-key-lane-affinity: "loud" is not one of off, warn, error`,
		},
		{
			name: "store name taken",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", strings2(), "in").AddProcessor("timed", timerSupplier[string](), "src").
					AddStateStore(state.KeyValueStoreBuilder("timed-timers", str, str, state.InMemory()))
			},
			cfg:  cfg(),
			want: "node timed: timer store timed-timers: a state store with this name already exists",
		},
		{
			name: "event-time timers without OnTimer",
			topo: func() *topology.Topology {
				return topology.New().AddSource("src", strings2(), "in").
					AddProcessor("p", processor.Supply(func() processor.Processor[string, string, string, string] { return &eventTimeOnly{} }), "src")
			},
			cfg:  cfg(),
			want: "node p: declares event-time timers but cannot receive them",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.topo().Build(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDeserializerOnlySourceReadsButCannotWrite(t *testing.T) {
	spec := topology.ConsumedWithDeserializers[string, string](str, str).Spec("in")
	if !spec.KeyDeserializerOnly {
		t.Fatal("a key deserializer is not marked deserializer-only")
	}
	if k, err := spec.KeySerde.DeserializeAny("in", []byte("k")); err != nil || k != "k" {
		t.Fatalf("deserialize: %v %v", k, err)
	}
	if _, err := spec.KeySerde.SerializeAny("in", "k"); err == nil || !strings.Contains(err.Error(), "serde string: declared as a deserializer only") {
		t.Fatalf("serialize: %v", err)
	}
	if spec := topology.ConsumedWithDeserializers[string, string](nil, str).Spec("in"); spec.KeySerde != nil || spec.KeyDeserializerOnly {
		t.Fatalf("nil key deserializer: %+v", spec)
	}
}
