package dsl_test

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// aggConfig is the configuration of the aggregation tests: string defaults
// so that stores and boundaries left to them work, and a short app id for
// the changelog names.
var aggConfig = map[string]string{
	"application.id":      "app",
	"default.key.serde":   "string",
	"default.value.serde": "string",
}

// aggIn is a record piped into a test topology.
type aggIn struct {
	key, value string
	ts         int64
}

func aggPipe(t *testing.T, d *testdriver.Driver, topic string, in []aggIn) {
	t.Helper()
	str := serde.String()
	input := testdriver.CreateInputTopic(d, topic, str, str)
	for _, r := range in {
		if err := input.PipeInputAt(r.key, r.value, r.ts); err != nil {
			t.Fatalf("pipe %v: %v", r, err)
		}
	}
}

// aggShow prints a key or value, dereferencing pointers.
func aggShow(x any, null bool) string {
	if null {
		return "<null>"
	}
	if v := reflect.ValueOf(x); v.Kind() == reflect.Pointer && !v.IsNil() {
		return fmt.Sprint(v.Elem().Interface())
	}
	return fmt.Sprint(x)
}

// aggRead reads every record of topic as "key:value@timestamp".
func aggRead[K, V any](t *testing.T, d *testdriver.Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) []string {
	t.Helper()
	rs, err := testdriver.CreateOutputTopic(d, topic, ks, vs).ReadRecordsToList()
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s:%s@%d", aggShow(r.Key, r.KeyNull), aggShow(r.Value, r.ValueNull), r.Timestamp))
	}
	return out
}

func aggCheck(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestStreamAggregations(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	concat := func(agg, v string) string { return agg + "+" + v }
	// The third record is older than the aggregate: the aggregate keeps
	// the larger timestamp.
	in := []aggIn{{"A", "1", 10}, {"B", "2", 15}, {"A", "3", 5}, {"A", "4", 20}}
	tests := []struct {
		name  string
		build func(g dsl.KGroupedStream[string, string]) func(*testing.T, *testdriver.Driver) []string
		want  []string
	}{
		{"count", func(g dsl.KGroupedStream[string, string]) func(*testing.T, *testdriver.Driver) []string {
			g.Count().ToStream().To("out")
			return func(t *testing.T, d *testdriver.Driver) []string { return aggRead(t, d, "out", str, i64) }
		}, []string{"A:1@10", "B:1@15", "A:2@10", "A:3@20"}},
		{"reduce", func(g dsl.KGroupedStream[string, string]) func(*testing.T, *testdriver.Driver) []string {
			g.Reduce(concat).ToStream().To("out")
			return func(t *testing.T, d *testdriver.Driver) []string { return aggRead(t, d, "out", str, str) }
		}, []string{"A:1@10", "B:2@15", "A:1+3@10", "A:1+3+4@20"}},
		{"aggregate", func(g dsl.KGroupedStream[string, string]) func(*testing.T, *testdriver.Driver) []string {
			dsl.Aggregate(g, func() string { return "0" }, func(_, v, agg string) string { return concat(agg, v) },
				dsl.MaterializedWith(str, str)).ToStream().To("out")
			return func(t *testing.T, d *testdriver.Driver) []string { return aggRead(t, d, "out", str, str) }
		}, []string{"A:0+1@10", "B:0+2@15", "A:0+1+3@10", "A:0+1+3+4@20"}},
		{"aggregate to a length", func(g dsl.KGroupedStream[string, string]) func(*testing.T, *testdriver.Driver) []string {
			dsl.Aggregate(g, func() int64 { return 0 }, func(_, v string, agg int64) int64 { return agg + int64(len(v)) },
				dsl.MaterializedWith(str, i64)).ToStream().To("out", dsl.ProducedWith(str, i64))
			return func(t *testing.T, d *testdriver.Driver) []string { return aggRead(t, d, "out", str, i64) }
		}, []string{"A:1@10", "B:1@15", "A:2@10", "A:3@20"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			read := tc.build(dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey())
			d := run(t, b, aggConfig)
			aggPipe(t, d, "in", in)
			aggCheck(t, "output", read(t, d), tc.want)
			// groupByKey on a stream that was not re-keyed crosses no
			// boundary: only the output and the changelog are written.
			topics := d.ProducedTopicNames()
			if len(topics) != 2 || topics[1] != "out" {
				t.Fatalf("produced topics %v", topics)
			}
		})
	}
}

func TestStreamGroupByRekeys(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	words := func(_, v string) string { return v }
	in := []aggIn{{"1", "a", 1}, {"2", "b", 2}, {"3", "a", 3}}
	want := []string{"a:1@1", "b:1@2", "a:2@3"}
	tests := []struct {
		name   string
		build  func(s dsl.KStream[string, string])
		store  string
		topics []string
	}{
		{"groupBy", func(s dsl.KStream[string, string]) {
			dsl.GroupBy(s, words).Count().ToStream().To("out", dsl.ProducedWith(str, i64))
		}, "KSTREAM-AGGREGATE-STATE-STORE-0000000002", []string{
			"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
			"app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
			"out",
		}},
		{"groupBy with grouped name", func(s dsl.KStream[string, string]) {
			dsl.GroupBy(s, words, dsl.GroupedAs[string, string]("words")).Count().ToStream().To("out", dsl.ProducedWith(str, i64))
		}, "KSTREAM-AGGREGATE-STATE-STORE-0000000001", []string{
			// The grouped name names the select node too, which so takes
			// no index.
			"app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog",
			"out",
			"words-repartition",
		}},
		{"groupBy with materialized name", func(s dsl.KStream[string, string]) {
			dsl.GroupBy(s, words).Count(dsl.MaterializedAs[string, int64]("counts")).ToStream().To("out", dsl.ProducedWith(str, i64))
		}, "counts", []string{"app-counts-changelog", "counts-repartition", "out"}},
		{"groupByKey after selectKey", func(s dsl.KStream[string, string]) {
			dsl.SelectKey(s, words).GroupByKey().Count().ToStream().To("out", dsl.ProducedWith(str, i64))
		}, "KSTREAM-AGGREGATE-STATE-STORE-0000000002", []string{
			"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
			"app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
			"out",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"))
			d := run(t, b, aggConfig)
			aggPipe(t, d, "in", in)
			aggCheck(t, "output", aggRead(t, d, "out", str, i64), want)
			aggCheck(t, "produced topics", d.ProducedTopicNames(), tc.topics)
			store, err := testdriver.TimestampedKeyValueStore[string, int64](d, tc.store)
			if err != nil {
				t.Fatal(err)
			}
			got, found, err := store.Get("a")
			if err != nil || !found || got.Value != 2 || got.Timestamp != 3 {
				t.Fatalf("store %s: a = %+v %v %v, want 2 at 3", tc.store, got, found, err)
			}
		})
	}
}

func TestStreamAggregationDropsNulls(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	t.Run("groupByKey", func(t *testing.T) {
		b := dsl.NewBuilder()
		dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey().Count().ToStream().To("out", dsl.ProducedWith(str, i64))
		d := run(t, b, aggConfig)
		in := testdriver.CreateInputTopic(d, "in", str, str)
		for _, r := range []testdriver.TestRecord[string, string]{
			{Key: "A", Value: "1", Timestamp: 1},
			{Value: "2", KeyNull: true, Timestamp: 2},
			{Key: "A", ValueNull: true, Timestamp: 3},
			{Key: "A", Value: "4", Timestamp: 4},
		} {
			if err := in.PipeRecord(r); err != nil {
				t.Fatal(err)
			}
		}
		aggCheck(t, "output", aggRead(t, d, "out", str, i64), []string{"A:1@1", "A:2@4"})
		aggDropped(t, d, 1, 1)
	})
	t.Run("groupBy to a null key", func(t *testing.T) {
		// The boundary drops (and counts) records whose selected key is
		// null: they cannot be laned.
		b := dsl.NewBuilder()
		s := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
		sel := func(_, v string) *string {
			if v == "" {
				return nil
			}
			return &v
		}
		dsl.GroupBy(s, sel, dsl.GroupedWith(serde.Pointer(str), str)).Count().ToStream().
			To("out", dsl.ProducedWith(serde.Pointer(str), i64))
		d := run(t, b, aggConfig)
		aggPipe(t, d, "in", []aggIn{{"1", "a", 1}, {"2", "", 2}, {"3", "a", 3}})
		aggCheck(t, "output", aggRead(t, d, "out", serde.Pointer(str), i64), []string{"a:1@1", "a:2@3"})
		aggDropped(t, d, 1, 0)
	})
}

func aggDropped(t *testing.T, d *testdriver.Driver, nullKeys, nullValues int64) {
	t.Helper()
	m := d.Metrics()
	if got := m.Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != nullKeys {
		t.Errorf("dropped null keys = %d, want %d (%v)", got, nullKeys, m.Snapshot())
	}
	if got := m.Value(metrics.DroppedRecords, "reason", "null_value"); got != nullValues {
		t.Errorf("dropped null values = %d, want %d (%v)", got, nullValues, m.Snapshot())
	}
}

func TestStreamAggregationMaterialized(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	tests := []struct {
		name   string
		m      dsl.Materialized[string, int64]
		topics []string
	}{
		{"named", dsl.MaterializedAs[string, int64]("counts"), []string{"app-counts-changelog", "out"}},
		{"named without logging", dsl.MaterializedAs[string, int64]("counts").WithLoggingDisabled(), []string{"out"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tbl := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey().Count(tc.m)
			if tbl.StoreName() != "counts" {
				t.Fatalf("store name %q", tbl.StoreName())
			}
			tbl.ToStream().To("out", dsl.ProducedWith(str, i64))
			d := run(t, b, aggConfig)
			aggPipe(t, d, "in", []aggIn{{"a", "x", 7}})
			aggCheck(t, "produced topics", d.ProducedTopicNames(), tc.topics)
			if _, ok := d.StateStore("counts"); !ok {
				t.Fatal("store counts missing")
			}
		})
	}
}

// TestCountChangelogBytes checks a count store's changelog byte for byte:
// the key's bytes, the count as 8 big-endian bytes (no timestamp prefix:
// that is only in the store) and the aggregate's timestamp as the record's.
func TestCountChangelogBytes(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey().Count()
	d := run(t, b, aggConfig)
	aggPipe(t, d, "in", []aggIn{{"A", "x", 5}, {"A", "y", 3}, {"B", "z", 7}})
	rs, err := testdriver.CreateOutputTopic(d, "app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	count := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	want := []testdriver.TestRecord[[]byte, []byte]{
		{Key: []byte("A"), Value: count(1), Timestamp: 5},
		{Key: []byte("A"), Value: count(2), Timestamp: 5},
		{Key: []byte("B"), Value: count(1), Timestamp: 7},
	}
	if len(rs) != len(want) {
		t.Fatalf("got %d changelog records, want %d: %v", len(rs), len(want), rs)
	}
	for i, r := range rs {
		w := want[i]
		if string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) || r.Timestamp != w.Timestamp || r.KeyNull || r.ValueNull {
			t.Errorf("record %d: got key %x value %x at %d, want key %x value %x at %d", i, r.Key, r.Value, r.Timestamp, w.Key, w.Value, w.Timestamp)
		}
	}
}

// TestGroupByCountDescribe compares the description of Kafka Streams'
// word-count shape with a golden text: the node names and their order are
// Kafka Streams' (a Kafka Streams application describes the same nodes),
// the boundary lines and the store list are this engine's.
func TestGroupByCountDescribe(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
	dsl.GroupBy(s, func(_, v string) string { return v }, dsl.GroupedWith(str, str)).
		Count().ToStream().To("out", dsl.ProducedWith(str, i64))
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)
      ~~> KSTREAM-SOURCE-0000000006 in sub-topology 1 (in-memory boundary, laned by key serde string)
      <-- KSTREAM-FILTER-0000000005

   Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition])
      --> KSTREAM-AGGREGATE-0000000003
      <~~ KSTREAM-SINK-0000000004 in sub-topology 0 (in-memory boundary)
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-TOSTREAM-0000000007
      <-- KSTREAM-SOURCE-0000000006
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: out)
      <-- KTABLE-TOSTREAM-0000000007

Stores:
    Store: KSTREAM-AGGREGATE-STATE-STORE-0000000002 (timestamped-key-value, default.dsl.store; key serde: string, value serde: int64; changelog: <application.id>-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog)
`
	if got := b.Topology().Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// TestGroupedBoundarySharing checks Kafka Streams' rule for several
// aggregations of one re-keying grouping: a named grouping's aggregations
// share its boundary, an unnamed one's each get a boundary named after
// their store.
func TestGroupedBoundarySharing(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	words := func(_, v string) string { return v }
	tests := []struct {
		name    string
		grouped []dsl.Grouped[string, string]
		topics  []string
	}{
		{"named", []dsl.Grouped[string, string]{dsl.GroupedAs[string, string]("words")}, []string{
			"app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog",
			"app-KSTREAM-REDUCE-STATE-STORE-0000000008-changelog",
			"count", "longest", "words-repartition",
		}},
		{"unnamed", nil, []string{
			"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
			"KSTREAM-REDUCE-STATE-STORE-0000000009-repartition",
			"app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog",
			"app-KSTREAM-REDUCE-STATE-STORE-0000000009-changelog",
			"count", "longest",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			g := dsl.GroupBy(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), words, tc.grouped...)
			g.Count().ToStream().To("count", dsl.ProducedWith(str, i64))
			g.Reduce(func(agg, v string) string { return agg + v }).ToStream().To("longest", dsl.ProducedWith(str, str))
			d := run(t, b, aggConfig)
			aggPipe(t, d, "in", []aggIn{{"1", "a", 1}, {"2", "a", 2}})
			aggCheck(t, "counts", aggRead(t, d, "count", str, i64), []string{"a:1@1", "a:2@2"})
			aggCheck(t, "reductions", aggRead(t, d, "longest", str, str), []string{"a:a@1", "a:aa@2"})
			aggCheck(t, "produced topics", d.ProducedTopicNames(), tc.topics)
		})
	}
}
