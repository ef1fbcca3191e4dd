package dsl_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// kv is a local pair so that table rows can use unkeyed literals.
type kv struct{ Key, Value string }

func run(t *testing.T, b *dsl.Builder, cfg map[string]string) *testdriver.Driver {
	t.Helper()
	if cfg == nil {
		cfg = map[string]string{"default.key.serde": "string", "default.value.serde": "string"}
	}
	d, err := testdriver.New(b.Topology(), cfg)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestStatelessOperations(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name  string
		build func(s dsl.KStream[string, string])
		in    []kv
		want  []kv
	}{
		{"filter", func(s dsl.KStream[string, string]) {
			s.Filter(func(k, v string) bool { return strings.HasPrefix(v, "a") }).To("out")
		}, []kv{{"1", "apple"}, {"2", "pear"}, {"3", "avocado"}}, []kv{{"1", "apple"}, {"3", "avocado"}}},
		{"filterNot", func(s dsl.KStream[string, string]) {
			s.FilterNot(func(k, v string) bool { return strings.HasPrefix(v, "a") }).To("out")
		}, []kv{{"1", "apple"}, {"2", "pear"}}, []kv{{"2", "pear"}}},
		{"map", func(s dsl.KStream[string, string]) {
			dsl.Map(s, func(k, v string) (string, string) { return v, k }).To("out")
		}, []kv{{"1", "a"}}, []kv{{"a", "1"}}},
		{"mapValues", func(s dsl.KStream[string, string]) {
			dsl.MapValues(s, func(k, v string) string { return strings.ToUpper(v) }).To("out")
		}, []kv{{"1", "a"}, {"2", "b"}}, []kv{{"1", "A"}, {"2", "B"}}},
		{"selectKey", func(s dsl.KStream[string, string]) {
			dsl.SelectKey(s, func(k, v string) string { return k + v }).To("out")
		}, []kv{{"1", "a"}}, []kv{{"1a", "a"}}},
		{"flatMap", func(s dsl.KStream[string, string]) {
			dsl.FlatMap(s, func(k, v string) []dsl.KeyValue[string, string] {
				return []dsl.KeyValue[string, string]{dsl.KV(k+"x", v), dsl.KV(k+"y", v)}
			}).To("out")
		}, []kv{{"1", "a"}}, []kv{{"1x", "a"}, {"1y", "a"}}},
		{"flatMapValues", func(s dsl.KStream[string, string]) {
			dsl.FlatMapValues(s, func(k, v string) []string { return strings.Split(v, " ") }).To("out")
		}, []kv{{"1", "a b"}, {"2", ""}}, []kv{{"1", "a"}, {"1", "b"}, {"2", ""}}},
		{"peek", func(s dsl.KStream[string, string]) {
			s.Peek(func(k, v string) {}).To("out")
		}, []kv{{"1", "a"}}, []kv{{"1", "a"}}},
		{"merge", func(s dsl.KStream[string, string]) {
			a := s.Filter(func(k, v string) bool { return k == "1" })
			b := dsl.MapValues(s.Filter(func(k, v string) bool { return k == "2" }), func(k, v string) string { return v + "!" })
			a.Merge(b).To("out")
		}, []kv{{"1", "a"}, {"2", "b"}, {"3", "c"}}, []kv{{"1", "a"}, {"2", "b!"}}},
		{"repartition", func(s dsl.KStream[string, string]) {
			s.Repartition().To("out")
		}, []kv{{"1", "a"}, {"2", "b"}}, []kv{{"1", "a"}, {"2", "b"}}},
		{"split", func(s dsl.KStream[string, string]) {
			br := s.Split(dsl.Name("split-")).
				Branch(func(k, v string) bool { return v == "a" }, dsl.BranchAs("a")).
				Branch(func(k, v string) bool { return v == "b" }).
				DefaultBranch()
			dsl.MapValues(br["split-a"], func(k, v string) string { return "A" }).To("out")
			dsl.MapValues(br["split-2"], func(k, v string) string { return "B" }).To("out")
			dsl.MapValues(br["split-0"], func(k, v string) string { return "other" }).To("out")
		}, []kv{{"1", "a"}, {"2", "b"}, {"3", "c"}, {"4", "a"}}, []kv{{"1", "A"}, {"2", "B"}, {"3", "other"}, {"4", "A"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"))
			d := run(t, b, nil)
			in := testdriver.CreateInputTopic(d, "in", str, str)
			for _, r := range tc.in {
				if err := in.PipeInput(r.Key, r.Value); err != nil {
					t.Fatal(err)
				}
			}
			read, err := testdriver.CreateOutputTopic(d, "out", str, str).ReadKeyValuesToList()
			if err != nil {
				t.Fatal(err)
			}
			got := []kv{}
			for _, r := range read {
				got = append(got, kv{r.Key, r.Value})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTableSourceAndToStream(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Table(b, "in", dsl.ConsumedWith(str, str)).ToStream().To("out")
	d := run(t, b, nil)
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "1", 10)
	in.PipeInputAt("a", "2", 20)
	in.PipeTombstoneAt("a", 30)
	out := testdriver.CreateOutputTopic(d, "out", str, str)
	rs, err := out.ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(rs)
	want := "[{a 1 10 [] false false} {a 2 20 [] false false} {a  30 [] false true}]"
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if names := d.ProducedTopicNames(); !slices.Equal(names, []string{"out", "test-driver-in-STATE-STORE-0000000000-changelog"}) {
		t.Fatalf("produced topics %v", names)
	}
	if desc := b.Topology().Describe().String(); !strings.Contains(desc, "Processor: KTABLE-SOURCE-0000000002 (stores: [in-STATE-STORE-0000000000])") {
		t.Fatalf("describe:\n%s", desc)
	}
}
