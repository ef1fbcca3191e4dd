package dsl_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// Helpers of the table and join tests carry a tj prefix, to keep clear of
// the helpers of the package's other test files.

// tjRec is an output record as these tests compare them.
type tjRec struct {
	Key       string
	Value     string
	NullKey   bool
	NullValue bool
	TS        int64
}

func (r tjRec) String() string {
	k, v := r.Key, r.Value
	if r.NullKey {
		k = "<null>"
	}
	if r.NullValue {
		v = "<null>"
	}
	return fmt.Sprintf("%s=%s@%d", k, v, r.TS)
}

// tjVal and tjNull build expected records: a value, a tombstone.
func tjVal(k, v string, ts int64) tjRec { return tjRec{Key: k, Value: v, TS: ts} }
func tjNull(k string, ts int64) tjRec   { return tjRec{Key: k, NullValue: true, TS: ts} }

// tjIn is a record to pipe: a tombstone when null, a null key when nullKey.
type tjIn struct {
	topic   string
	key     string
	value   string
	null    bool
	nullKey bool
	ts      int64
}

func tjPut(topic, k, v string, ts int64) tjIn { return tjIn{topic: topic, key: k, value: v, ts: ts} }
func tjDel(topic, k string, ts int64) tjIn    { return tjIn{topic: topic, key: k, null: true, ts: ts} }
func tjNoKey(topic, v string, ts int64) tjIn {
	return tjIn{topic: topic, value: v, nullKey: true, ts: ts}
}

// tjStep pipes records and expects exactly want on the output topic.
type tjStep struct {
	in   []tjIn
	want []tjRec
}

func tjDriver(t *testing.T, b *dsl.Builder) *testdriver.Driver {
	t.Helper()
	d, err := testdriver.New(b.Topology(), map[string]string{"default.key.serde": "string", "default.value.serde": "string"})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func tjPipe(t *testing.T, d *testdriver.Driver, in tjIn) {
	t.Helper()
	str := serde.String()
	r := testdriver.TestRecord[string, string]{Key: in.key, Value: in.value, KeyNull: in.nullKey, ValueNull: in.null, Timestamp: in.ts}
	if err := testdriver.CreateInputTopic(d, in.topic, str, str).PipeRecord(r); err != nil {
		t.Fatalf("pipe %+v: %v", in, err)
	}
}

func tjRead(t *testing.T, d *testdriver.Driver, topic string) []tjRec {
	t.Helper()
	str := serde.String()
	rs, err := testdriver.CreateOutputTopic(d, topic, str, str).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var out []tjRec
	for _, r := range rs {
		out = append(out, tjRec{Key: r.Key, Value: r.Value, NullKey: r.KeyNull, NullValue: r.ValueNull, TS: r.Timestamp})
	}
	return out
}

// tjRun plays steps against d, checking the output topic "out" after each.
func tjRun(t *testing.T, d *testdriver.Driver, steps []tjStep) {
	t.Helper()
	for i, s := range steps {
		for _, in := range s.in {
			tjPipe(t, d, in)
		}
		if got := tjRead(t, d, "out"); !slices.Equal(got, s.want) {
			t.Fatalf("step %d: got %v, want %v", i+1, got, s.want)
		}
	}
}

func even(_ string, v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n%2 == 0
}

// TestTableFilterAndMapValuesOutput mirrors Kafka Streams' KTableFilterTest
// and KTableMapValuesTest: what the table's changes look like downstream.
func TestTableFilterAndMapValuesOutput(t *testing.T) {
	str := serde.String()
	in := []tjIn{tjPut("t", "A", "1", 10), tjPut("t", "B", "2", 5), tjPut("t", "C", "3", 8), tjPut("t", "D", "4", 14), tjDel("t", "A", 18), tjDel("t", "B", 15)}
	tests := []struct {
		name  string
		build func(dsl.KTable[string, string])
		want  []tjRec
	}{
		{"filter", func(tb dsl.KTable[string, string]) {
			tb.Filter(even).ToStream().To("out")
		}, []tjRec{tjNull("A", 10), tjVal("B", "2", 5), tjNull("C", 8), tjVal("D", "4", 14), tjNull("A", 18), tjNull("B", 15)}},
		{"filter materialized", func(tb dsl.KTable[string, string]) {
			tb.Filter(even, dsl.MaterializedAs[string, string]("evens")).ToStream().To("out")
		}, []tjRec{tjNull("A", 10), tjVal("B", "2", 5), tjNull("C", 8), tjVal("D", "4", 14), tjNull("A", 18), tjNull("B", 15)}},
		{"filterNot", func(tb dsl.KTable[string, string]) {
			tb.FilterNot(even).ToStream().To("out")
		}, []tjRec{tjVal("A", "1", 10), tjNull("B", 5), tjVal("C", "3", 8), tjNull("D", 14), tjNull("A", 18), tjNull("B", 15)}},
		{"mapValues", func(tb dsl.KTable[string, string]) {
			dsl.MapTableValues(tb, func(k, v string) string { return k + v }).ToStream().To("out")
		}, []tjRec{tjVal("A", "A1", 10), tjVal("B", "B2", 5), tjVal("C", "C3", 8), tjVal("D", "D4", 14), tjNull("A", 18), tjNull("B", 15)}},
		{"mapValues to nil is a delete", func(tb dsl.KTable[string, string]) {
			odd := dsl.MapTableValues(tb, func(_, v string) *string {
				if even("", v) {
					return nil
				}
				return &v
			}, dsl.MaterializedWith(str, serde.Pointer(str)))
			odd.ToStream().To("out", dsl.ProducedWith(str, serde.Pointer(str)))
		}, []tjRec{tjVal("A", "1", 10), tjNull("B", 5), tjVal("C", "3", 8), tjNull("D", 14), tjNull("A", 18), tjNull("B", 15)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(dsl.Table(b, "t", dsl.ConsumedWith(str, str)))
			tjRun(t, tjDriver(t, b), []tjStep{{in: in, want: tc.want}})
		})
	}
}

// changeCapture records the changes a table node forwards, printed with
// %+v, as Kafka Streams' tests check Change(new, old) pairs.
type changeCapture struct {
	ctx processor.Context[any, any]
	got *[]string
}

func (c *changeCapture) Init(ctx processor.Context[any, any]) error { c.ctx = ctx; return nil }
func (c *changeCapture) Close() error                               { return nil }
func (c *changeCapture) Process(rec processor.Erased) error {
	*c.got = append(*c.got, fmt.Sprintf("%v %+v @%d", rec.Key, rec.Value, rec.Timestamp))
	return nil
}

func tjCapture(b *dsl.Builder, node string) *[]string {
	var got []string
	b.Topology().AddProcessor("capture", func() processor.Untyped { return &changeCapture{got: &got} }, node)
	return &got
}

// TestTableChangesCarryOldValues checks the new and old values table
// operations forward, a key leaving the filter among them. Kafka Streams
// forwards the same pairs once old values are enabled, except that it
// skips a change with neither (a key failing the filter that never passed
// it); here that change is forwarded, so that ToStream emits the tombstone
// Kafka Streams emits without old values, and joins and aggregations skip
// it as Kafka Streams' do.
func TestTableChangesCarryOldValues(t *testing.T) {
	str := serde.String()
	in := []tjIn{
		tjPut("t", "A", "2", 1), tjPut("t", "A", "4", 2), tjPut("t", "A", "3", 3), tjPut("t", "A", "5", 4),
		tjDel("t", "A", 5), tjPut("t", "B", "6", 6), tjDel("t", "B", 7), tjPut("t", "C", "8", 8),
	}
	filterWant := []string{
		"A {New:2 Old:<nil>} @1", "A {New:4 Old:2} @2", "A {New:<nil> Old:4} @3", "A {New:<nil> Old:<nil>} @4",
		"A {New:<nil> Old:<nil>} @5", "B {New:6 Old:<nil>} @6", "B {New:<nil> Old:6} @7", "C {New:8 Old:<nil>} @8",
	}
	tests := []struct {
		name  string
		store string
		build func(dsl.KTable[string, string]) string
		want  []string
	}{
		{"filter", "", func(tb dsl.KTable[string, string]) string {
			return tb.Filter(even).Node()
		}, filterWant},
		{"filter materialized", "evens", func(tb dsl.KTable[string, string]) string {
			return tb.Filter(even, dsl.Name("keep-evens"), dsl.MaterializedAs[string, string]("evens")).Node()
		}, filterWant},
		// Without a value serde, the store uses the configured default.
		{"mapValues materialized", "mapped", func(tb dsl.KTable[string, string]) string {
			return dsl.MapTableValues(tb, func(_, v string) string { return v + "!" }, dsl.MaterializedAs[string, string]("mapped")).Node()
		}, []string{
			"A {New:2! Old:<nil>} @1", "A {New:4! Old:2!} @2", "A {New:3! Old:4!} @3", "A {New:5! Old:3!} @4",
			"A {New:<nil> Old:5!} @5", "B {New:6! Old:<nil>} @6", "B {New:<nil> Old:6!} @7", "C {New:8! Old:<nil>} @8",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			got := tjCapture(b, tc.build(dsl.Table(b, "t", dsl.ConsumedWith(str, str))))
			d := tjDriver(t, b)
			for _, r := range in {
				tjPipe(t, d, r)
			}
			if !slices.Equal(*got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(*got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.store == "" {
				return
			}
			// The store holds what the table holds, with the timestamps of
			// the records that wrote it.
			s, err := testdriver.TimestampedKeyValueStore[string, string](d, tc.store)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"A", "B"} {
				if v, found, err := s.Get(k); err != nil || found {
					t.Fatalf("store %s: %s = %v, %v, %v; want no value", tc.store, k, v, found, err)
				}
			}
			if v, found, err := s.Get("C"); err != nil || !found || v.Timestamp != 8 || !strings.HasPrefix(v.Value, "8") {
				t.Fatalf("store %s: C = %+v, %v, %v; want 8 at 8", tc.store, v, found, err)
			}
			if !slices.Contains(d.ProducedTopicNames(), "test-driver-"+tc.store+"-changelog") {
				t.Fatalf("no changelog for %s in %v", tc.store, d.ProducedTopicNames())
			}
		})
	}
}

// TestTableOperationNames checks generated and given names and stores, and
// that a Materialized of the wrong types is refused naming the node.
func TestTableOperationNames(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name    string
		build   func(dsl.KTable[string, string])
		want    []string
		wantErr string
	}{
		{"generated", func(tb dsl.KTable[string, string]) {
			dsl.MapTableValues(tb.Filter(even), func(_, v string) string { return v }).ToStream().To("out")
		}, []string{
			"Processor: KTABLE-FILTER-0000000003 (stores: [])",
			"Processor: KTABLE-MAPVALUES-0000000004 (stores: [])",
			"Processor: KTABLE-TOSTREAM-0000000005 (stores: [])",
		}, ""},
		{"unnamed materialized uses up an index but no store", func(tb dsl.KTable[string, string]) {
			tb.FilterNot(even, dsl.MaterializedWith(str, str)).ToStream().To("out")
		}, []string{"Processor: KTABLE-FILTER-0000000004 (stores: [])", "Processor: KTABLE-TOSTREAM-0000000005 (stores: [])"}, ""},
		{"named and materialized", func(tb dsl.KTable[string, string]) {
			tb.Filter(even, dsl.MaterializedAs[string, string]("evens"), dsl.Name("keep-evens")).ToStream().To("out")
		}, []string{"Processor: keep-evens (stores: [evens])", "Store: evens (timestamped-key-value, default.dsl.store; key serde: string, value serde: string; changelog: <application.id>-evens-changelog)"}, ""},
		{"materialized of the wrong types", func(tb dsl.KTable[string, string]) {
			dsl.MapTableValues(tb, func(_, v string) int { return len(v) }, dsl.MaterializedAs[string, string]("lengths")).ToStream().To("out")
		}, nil, "node KTABLE-MAPVALUES-0000000003: materialized is a dsl.Materialized[string,string], but the result table needs a dsl.Materialized[string,int]"},
		{"materialized without a serde or a default", func(tb dsl.KTable[string, string]) {
			lengths := dsl.MapTableValues(tb, func(_, v string) int64 { return int64(len(v)) }, dsl.MaterializedAs[string, int64]("lengths"))
			lengths.ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
		}, nil, "node KTABLE-MAPVALUES-0000000003: init: serdes of state store lengths: no serde given and config default.value.serde is not set"},
		{"nil predicate", func(tb dsl.KTable[string, string]) {
			tb.Filter(nil).ToStream().To("out")
		}, nil, "node KTABLE-FILTER-0000000003: nil predicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(dsl.Table(b, "t", dsl.ConsumedWith(str, str)))
			if tc.wantErr != "" {
				_, err := testdriver.New(b.Topology(), nil)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			desc := b.Topology().Describe().String()
			for _, w := range tc.want {
				if !strings.Contains(desc, w) {
					t.Fatalf("describe lacks %q:\n%s", w, desc)
				}
			}
			tjDriver(t, b)
		})
	}
}
