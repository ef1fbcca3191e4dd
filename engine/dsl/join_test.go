package dsl_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

func plusJoiner(_ string, v, vt string) string { return v + "+" + vt }

// tjTableSteps is the sequence of Kafka Streams' KTableKTable*JoinTest
// (testJoin), with keys 0..3 as strings, topic1 as "t1" and topic2 as "t2",
// plus a ninth step that deletes a key only the right side still has.
// Kafka Streams' joiner prints a missing side as "null"; here the joiner
// gets "", the zero value, so "X0+null" reads "X0+".
func tjTableSteps(want [9][]tjRec) []tjStep {
	each := func(topic, prefix string, ts func(i int64) int64) []tjIn {
		var in []tjIn
		for i := range int64(4) {
			k := string(rune('0' + i))
			in = append(in, tjPut(topic, k, prefix+k, ts(i)))
		}
		return in
	}
	in := [9][]tjIn{
		{tjPut("t1", "0", "X0", 5), tjPut("t1", "1", "X1", 6), tjNoKey("t1", "SomeVal", 42)},
		{tjPut("t2", "0", "Y0", 0), tjPut("t2", "1", "Y1", 10), tjNoKey("t2", "AnotherVal", 73)},
		each("t1", "XX", func(int64) int64 { return 7 }),
		each("t2", "YY", func(i int64) int64 { return i * 5 }),
		each("t1", "XXX", func(int64) int64 { return 6 }),
		{tjDel("t2", "0", 5), tjDel("t2", "1", 7)},
		each("t1", "XXXX", func(int64) int64 { return 13 }),
		{tjDel("t1", "0", 0), tjDel("t1", "1", 42), tjDel("t1", "2", 5), tjDel("t1", "3", 20)},
		{tjDel("t2", "2", 30)},
	}
	steps := make([]tjStep, len(in))
	for i := range in {
		steps[i] = tjStep{in: in[i], want: want[i]}
	}
	return steps
}

func TestTableTableJoins(t *testing.T) {
	str := serde.String()
	join := func(a, b string) string { return a + "+" + b }
	inner := [9][]tjRec{
		nil,
		{tjVal("0", "X0+Y0", 5), tjVal("1", "X1+Y1", 10)},
		{tjVal("0", "XX0+Y0", 7), tjVal("1", "XX1+Y1", 10)},
		{tjVal("0", "XX0+YY0", 7), tjVal("1", "XX1+YY1", 7), tjVal("2", "XX2+YY2", 10), tjVal("3", "XX3+YY3", 15)},
		{tjVal("0", "XXX0+YY0", 6), tjVal("1", "XXX1+YY1", 6), tjVal("2", "XXX2+YY2", 10), tjVal("3", "XXX3+YY3", 15)},
		{tjNull("0", 6), tjNull("1", 7)},
		{tjVal("2", "XXXX2+YY2", 13), tjVal("3", "XXXX3+YY3", 15)},
		{tjNull("2", 10), tjNull("3", 20)},
		nil,
	}
	left := [9][]tjRec{
		{tjVal("0", "X0+", 5), tjVal("1", "X1+", 6)},
		{tjVal("0", "X0+Y0", 5), tjVal("1", "X1+Y1", 10)},
		{tjVal("0", "XX0+Y0", 7), tjVal("1", "XX1+Y1", 10), tjVal("2", "XX2+", 7), tjVal("3", "XX3+", 7)},
		inner[3],
		inner[4],
		{tjVal("0", "XXX0+", 6), tjVal("1", "XXX1+", 7)},
		{tjVal("0", "XXXX0+", 13), tjVal("1", "XXXX1+", 13), tjVal("2", "XXXX2+YY2", 13), tjVal("3", "XXXX3+YY3", 15)},
		{tjNull("0", 0), tjNull("1", 42), tjNull("2", 10), tjNull("3", 20)},
		nil,
	}
	outer := left
	outer[7] = []tjRec{tjNull("0", 0), tjNull("1", 42), tjVal("2", "+YY2", 10), tjVal("3", "+YY3", 20)}
	outer[8] = []tjRec{tjNull("2", 30)}

	tests := []struct {
		name  string
		join  func(a, b dsl.KTable[string, string]) dsl.KTable[string, string]
		want  [9][]tjRec
		store string
	}{
		{"inner", func(a, b dsl.KTable[string, string]) dsl.KTable[string, string] {
			return dsl.TableJoin(a, b, join)
		}, inner, ""},
		{"inner materialized", func(a, b dsl.KTable[string, string]) dsl.KTable[string, string] {
			return dsl.TableJoin(a, b, join, dsl.MaterializedWith(str, str))
		}, inner, "KTABLE-MERGE-STATE-STORE-0000000006"},
		{"left", func(a, b dsl.KTable[string, string]) dsl.KTable[string, string] {
			return dsl.TableLeftJoin(a, b, join)
		}, left, ""},
		{"outer", func(a, b dsl.KTable[string, string]) dsl.KTable[string, string] {
			return dsl.TableOuterJoin(a, b, join, dsl.Name("both"), dsl.MaterializedAs[string, string]("both-store"))
		}, outer, "both-store"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			a, o := dsl.Table(b, "t1", dsl.ConsumedWith(str, str)), dsl.Table(b, "t2", dsl.ConsumedWith(str, str))
			joined := tc.join(a, o)
			joined.ToStream().To("out")
			if joined.StoreName() != tc.store {
				t.Fatalf("store %q, want %q", joined.StoreName(), tc.store)
			}
			d := tjDriver(t, b)
			tjRun(t, d, tjTableSteps(tc.want))
			if got := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != 2 {
				t.Fatalf("dropped null keys: %d, want 2", got)
			}
			if tc.store == "" {
				return
			}
			s, err := testdriver.TimestampedKeyValueStore[string, string](d, tc.store)
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.ApproximateNumEntries()
			if err != nil {
				t.Fatal(err)
			}
			v, found, err := s.Get("3")
			if tc.name == "outer" && (err != nil || !found || v.Value != "+YY3" || v.Timestamp != 20 || n != 1) {
				t.Fatalf("store %s: 3 = %+v, %v, %v; %d entries; want +YY3 at 20, alone", tc.store, v, found, err, n)
			}
			if tc.name != "outer" && (err != nil || found || n != 0) {
				t.Fatalf("store %s: 3 = %+v, %v, %v; %d entries; want an empty store", tc.store, v, found, err, n)
			}
		})
	}
}

// TestTableJoinOfFilteredTable checks that a left join sees old values: a
// key that never passed the filter produces nothing, one that leaves it
// produces a delete.
func TestTableJoinOfFilteredTable(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	evens := dsl.Table(b, "t1", dsl.ConsumedWith(str, str)).Filter(even)
	dsl.TableLeftJoin(evens, dsl.Table(b, "t2", dsl.ConsumedWith(str, str)), func(a, b string) string { return a + "+" + b }).ToStream().To("out")
	tjRun(t, tjDriver(t, b), []tjStep{
		{in: []tjIn{tjPut("t1", "A", "3", 1)}},
		{in: []tjIn{tjPut("t2", "A", "x", 2)}},
		{in: []tjIn{tjPut("t1", "A", "2", 3)}, want: []tjRec{tjVal("A", "2+x", 3)}},
		{in: []tjIn{tjPut("t2", "A", "y", 4)}, want: []tjRec{tjVal("A", "2+y", 4)}},
		{in: []tjIn{tjPut("t1", "A", "5", 5)}, want: []tjRec{tjNull("A", 5)}},
		{in: []tjIn{tjDel("t2", "A", 6)}},
	})
}

func TestStreamTableJoins(t *testing.T) {
	str := serde.String()
	steps := func(inner bool) []tjStep {
		pick := func(innerWant, leftWant []tjRec) []tjRec {
			if inner {
				return innerWant
			}
			return leftWant
		}
		return []tjStep{
			// The table is empty.
			{in: []tjIn{tjPut("s", "0", "X0", 0), tjPut("s", "1", "X1", 1)},
				want: pick(nil, []tjRec{tjVal("0", "X0+", 0), tjVal("1", "X1+", 1)})},
			// Table updates only update the table.
			{in: []tjIn{tjPut("t", "0", "Y0", 10), tjPut("t", "1", "Y1", 11)}},
			{in: []tjIn{tjPut("s", "0", "X0", 20), tjPut("s", "1", "X1", 21), tjPut("s", "2", "X2", 22)},
				want: pick([]tjRec{tjVal("0", "X0+Y0", 20), tjVal("1", "X1+Y1", 21)},
					[]tjRec{tjVal("0", "X0+Y0", 20), tjVal("1", "X1+Y1", 21), tjVal("2", "X2+", 22)})},
			// A tombstone removes the key from the table.
			{in: []tjIn{tjDel("t", "0", 30), tjPut("t", "2", "Y2", 31)}},
			{in: []tjIn{tjPut("s", "0", "X0", 5), tjPut("s", "1", "X1", 41), tjPut("s", "2", "X2", 42)},
				want: pick([]tjRec{tjVal("1", "X1+Y1", 41), tjVal("2", "X2+Y2", 42)},
					[]tjRec{tjVal("0", "X0+", 5), tjVal("1", "X1+Y1", 41), tjVal("2", "X2+Y2", 42)})},
			// A null key is dropped by the inner join; the left join keeps
			// it, unjoined, as Kafka Streams does since KIP-962. A null
			// value is dropped by both.
			{in: []tjIn{tjNoKey("s", "XN", 50), tjDel("s", "1", 51)},
				want: pick(nil, []tjRec{{NullKey: true, Value: "XN+", TS: 50}})},
		}
	}
	tests := []struct {
		name         string
		join         func(dsl.KStream[string, string], dsl.KTable[string, string]) dsl.KStream[string, string]
		steps        []tjStep
		nullKeyDrops int64
	}{
		{"inner", func(s dsl.KStream[string, string], tb dsl.KTable[string, string]) dsl.KStream[string, string] {
			return dsl.JoinTable(s, tb, plusJoiner)
		}, steps(true), 1},
		{"left", func(s dsl.KStream[string, string], tb dsl.KTable[string, string]) dsl.KStream[string, string] {
			return dsl.LeftJoinTable(s, tb, plusJoiner)
		}, steps(false), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.join(dsl.Stream(b, dsl.ConsumedWith(str, str), "s"), dsl.Table(b, "t", dsl.ConsumedWith(str, str))).To("out")
			d := tjDriver(t, b)
			tjRun(t, d, tc.steps)
			m := d.Metrics()
			if got := m.Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != tc.nullKeyDrops {
				t.Fatalf("dropped null keys: %d, want %d", got, tc.nullKeyDrops)
			}
			if got := m.Value(metrics.DroppedRecords, "reason", "null_value"); got != 1 {
				t.Fatalf("dropped null values: %d, want 1", got)
			}
		})
	}
}

// TestStreamTableJoinOfDerivedTables joins tables without stores of their
// own: a filtered and mapped table, and an unmaterialized table-table join.
// Their values are computed from the source tables' stores on lookup.
func TestStreamTableJoinOfDerivedTables(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "s")
	t1, t2 := dsl.Table(b, "t1", dsl.ConsumedWith(str, str)), dsl.Table(b, "t2", dsl.ConsumedWith(str, str))
	shouted := dsl.MapTableValues(t1.Filter(even), func(_, v string) string { return v + "!" })
	dsl.JoinTable(s, shouted, plusJoiner).To("out")
	pair := dsl.TableOuterJoin(t1, t2, func(a, b string) string { return a + "&" + b })
	dsl.JoinTable(s, pair, plusJoiner).To("out")
	tjRun(t, tjDriver(t, b), []tjStep{
		{in: []tjIn{tjPut("t1", "A", "2", 1), tjPut("t1", "B", "3", 2), tjPut("t2", "C", "c", 3)}},
		{in: []tjIn{tjPut("s", "A", "a", 10), tjPut("s", "B", "b", 11), tjPut("s", "C", "c", 12), tjPut("s", "D", "d", 13)},
			want: []tjRec{tjVal("A", "a+2!", 10), tjVal("A", "a+2&", 10), tjVal("B", "b+3&", 11), tjVal("C", "c+&c", 12)}},
		{in: []tjIn{tjPut("t1", "A", "7", 20), tjDel("t2", "C", 21), tjPut("s", "A", "a", 22), tjPut("s", "C", "c", 23)},
			want: []tjRec{tjVal("A", "a+7&", 22)}},
	})
	desc := b.Topology().Describe().String()
	for _, w := range []string{
		"Processor: KSTREAM-JOIN-0000000009 (stores: [t1-STATE-STORE-0000000001])",
		"Processor: KSTREAM-JOIN-0000000014 (stores: [t1-STATE-STORE-0000000001, t2-STATE-STORE-0000000004])",
	} {
		if !strings.Contains(desc, w) {
			t.Fatalf("describe lacks %q:\n%s", w, desc)
		}
	}
}

// TestStreamTableJoinRekeyed joins a re-keyed stream: the records cross a
// boundary named as Kafka Streams names the join's repartition topic.
func TestStreamTableJoinRekeyed(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name   string
		joined []dsl.Joined[string, string, string]
		topic  string
	}{
		{"generated", nil, "KSTREAM-KEY-SELECT-0000000001-repartition"},
		{"named", []dsl.Joined[string, string, string]{dsl.JoinedWith(str, str, str).WithName("enrich")}, "enrich-repartition"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			s := dsl.SelectKey(dsl.Stream(b, dsl.ConsumedWith(str, str), "s"), func(_, v string) string {
				k, _, _ := strings.Cut(v, "|")
				return k
			})
			dsl.JoinTable(s, dsl.Table(b, "t", dsl.ConsumedWith(str, str)), plusJoiner, tc.joined...).To("out")
			d := tjDriver(t, b)
			tjRun(t, d, []tjStep{
				{in: []tjIn{tjPut("t", "p1", "apple", 1)}},
				{in: []tjIn{tjPut("s", "o1", "p1|2", 10), tjPut("s", "o2", "p2|1", 11), tjNoKey("s", "p1|3", 12)},
					want: []tjRec{tjVal("p1", "p1|2+apple", 10), tjVal("p1", "p1|3+apple", 12)}},
			})
			if !slices.Contains(d.ProducedTopicNames(), tc.topic) {
				t.Fatalf("no boundary %s among %v", tc.topic, d.ProducedTopicNames())
			}
		})
	}
}

// TestJoinRefusesDifferentKeySerdes checks that Build refuses a join whose
// inputs are keyed by different serdes, naming the join node.
func TestJoinRefusesDifferentKeySerdes(t *testing.T) {
	str, js := serde.String(), serde.JSON[string]()
	tests := []struct {
		name  string
		build func(b *dsl.Builder)
		node  string
	}{
		{"stream-table", func(b *dsl.Builder) {
			s := dsl.Stream(b, dsl.ConsumedWith(str, str), "s")
			dsl.JoinTable(s, dsl.Table(b, "t", dsl.ConsumedWith(js, str)), plusJoiner).To("out")
		}, "KSTREAM-JOIN-0000000004"},
		{"table-table", func(b *dsl.Builder) {
			t1, t2 := dsl.Table(b, "t1", dsl.ConsumedWith(str, str)), dsl.Table(b, "t2", dsl.ConsumedWith(js, str))
			dsl.TableLeftJoin(t1, t2, func(a, b string) string { return a + b }, dsl.Name("pair")).ToStream().To("out")
		}, "pair"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
			_, err := testdriver.New(b.Topology(), nil)
			if err == nil || !strings.Contains(err.Error(), "node "+tc.node+": inputs are not co-partitioned") {
				t.Fatalf("got error %v, want one naming %s", err, tc.node)
			}
		})
	}
}

func TestJoinNames(t *testing.T) {
	str := serde.String()
	join := func(a, b string) string { return a + b }
	tables := func(b *dsl.Builder) (dsl.KTable[string, string], dsl.KTable[string, string]) {
		return dsl.Table(b, "t1", dsl.ConsumedWith(str, str)), dsl.Table(b, "t2", dsl.ConsumedWith(str, str))
	}
	tests := []struct {
		name  string
		build func(b *dsl.Builder)
		want  []string
	}{
		// The generated names of a table-table join follow Kafka Streams:
		// the merge node first, then this side and the other.
		{"table-table generated", func(b *dsl.Builder) {
			t1, t2 := tables(b)
			dsl.TableJoin(t1, t2, join).ToStream().To("out")
		}, []string{
			"Processor: KTABLE-JOINTHIS-0000000007 (stores: [t2-STATE-STORE-0000000003])\n      --> KTABLE-MERGE-0000000006",
			"Processor: KTABLE-JOINOTHER-0000000008 (stores: [t1-STATE-STORE-0000000000])\n      --> KTABLE-MERGE-0000000006",
			"Processor: KTABLE-MERGE-0000000006 (stores: [])\n      --> KTABLE-TOSTREAM-0000000009",
		}},
		{"table-table named", func(b *dsl.Builder) {
			t1, t2 := tables(b)
			dsl.TableOuterJoin(t1, t2, join, dsl.Name("pair"), dsl.MaterializedAs[string, string]("pairs").WithValueSerde(str)).ToStream().To("out")
		}, []string{
			"Processor: KTABLE-SOURCE-0000000002 (stores: [t1-STATE-STORE-0000000000])\n      --> pair-join-this",
			"Processor: pair-join-this (stores: [t2-STATE-STORE-0000000003])\n      --> pair",
			"Processor: pair-join-other (stores: [t1-STATE-STORE-0000000000])\n      --> pair",
			"Processor: pair (stores: [pairs])\n      --> KTABLE-TOSTREAM-0000000006\n      <-- pair-join-this, pair-join-other",
		}},
		{"stream-table", func(b *dsl.Builder) {
			s := dsl.Stream(b, dsl.ConsumedWith(str, str), "s")
			t1, _ := tables(b)
			dsl.LeftJoinTable(dsl.JoinTable(s, t1, plusJoiner), t1, plusJoiner, dsl.JoinedWith(str, str, str).WithName("again")).To("out")
		}, []string{
			"Processor: KSTREAM-JOIN-0000000007 (stores: [t1-STATE-STORE-0000000001])",
			"Processor: again (stores: [t1-STATE-STORE-0000000001])",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
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

func TestGlobalTableJoins(t *testing.T) {
	str := serde.String()
	product := func(_, v string) string {
		p, _, _ := strings.Cut(v, "|")
		return p
	}
	line := func(_, v, name string) string {
		_, qty, _ := strings.Cut(v, "|")
		return qty + " x " + name
	}
	steps := func(inner bool) []tjStep {
		pick := func(innerWant, leftWant []tjRec) []tjRec {
			if inner {
				return innerWant
			}
			return leftWant
		}
		return []tjStep{
			{in: []tjIn{tjPut("g", "p1", "apple", 0), tjPut("g", "p2", "pear", 0)}},
			{in: []tjIn{tjPut("s", "o1", "p1|2", 10), tjPut("s", "o2", "p3|1", 11)},
				want: pick([]tjRec{tjVal("o1", "2 x apple", 10)}, []tjRec{tjVal("o1", "2 x apple", 10), tjVal("o2", "1 x ", 11)})},
			// Global table updates trigger nothing.
			{in: []tjIn{tjPut("g", "p1", "green apple", 20), tjDel("g", "p2", 21)}},
			{in: []tjIn{tjPut("s", "o3", "p1|5", 22), tjPut("s", "o4", "p2|1", 23)},
				want: pick([]tjRec{tjVal("o3", "5 x green apple", 22)}, []tjRec{tjVal("o3", "5 x green apple", 22), tjVal("o4", "1 x ", 23)})},
			// A null value is dropped.
			{in: []tjIn{tjDel("s", "o5", 31)}},
		}
	}
	tests := []struct {
		name  string
		join  func(dsl.KStream[string, string], dsl.GlobalKTable[string, string]) dsl.KStream[string, string]
		steps []tjStep
	}{
		{"inner", func(s dsl.KStream[string, string], g dsl.GlobalKTable[string, string]) dsl.KStream[string, string] {
			return dsl.JoinGlobal(s, g, product, line)
		}, steps(true)},
		{"left", func(s dsl.KStream[string, string], g dsl.GlobalKTable[string, string]) dsl.KStream[string, string] {
			return dsl.LeftJoinGlobal(s, g, product, line, dsl.Name("lines"))
		}, steps(false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			g := dsl.GlobalTable(b, "g", dsl.ConsumedWith(str, str))
			// A rekeyed stream joins a global table without a boundary.
			s := dsl.SelectKey(dsl.Stream(b, dsl.ConsumedWith(str, str), "s"), func(k, _ string) string { return k })
			tc.join(s, g).To("out")
			d := tjDriver(t, b)
			tjRun(t, d, tc.steps)
			if got := d.Metrics().Value(metrics.DroppedRecords, "reason", "null_value"); got != 1 {
				t.Fatalf("dropped null values: %d, want 1", got)
			}
			desc := b.Topology().Describe().String()
			for _, w := range []string{
				"Sub-topology: 1 for global store (will not generate tasks)\n    Source: KSTREAM-SOURCE-0000000001 (topics: [g])\n      --> KTABLE-SOURCE-0000000002",
				"Processor: KTABLE-SOURCE-0000000002 (stores: [g-STATE-STORE-0000000000])",
				"Store: g-STATE-STORE-0000000000 (timestamped-key-value, in-memory; key serde: string, value serde: string; changelog: none)",
			} {
				if !strings.Contains(desc, w) {
					t.Fatalf("describe lacks %q:\n%s", w, desc)
				}
			}
			if strings.Contains(desc, "repartition") {
				t.Fatalf("describe has a boundary:\n%s", desc)
			}
		})
	}
}

// TestGlobalTableJoinNullSelectedKey checks Kafka Streams' rules for null
// keys: the stream key plays no part, so a null one joins; a selected key
// that is null makes the inner join drop the record and the left join join
// it with the zero value.
func TestGlobalTableJoinNullSelectedKey(t *testing.T) {
	str := serde.String()
	product := func(_, v string) *string {
		p, _, ok := strings.Cut(v, "|")
		if !ok {
			return nil
		}
		return &p
	}
	line := func(_, v, name string) string { return v + "=" + name }
	for _, left := range []bool{false, true} {
		b := dsl.NewBuilder()
		g := dsl.GlobalTable(b, "g", dsl.ConsumedWith(serde.Pointer(str), str), dsl.MaterializedAs[*string, string]("products"))
		s := dsl.Stream(b, dsl.ConsumedWith(str, str), "s")
		if left {
			dsl.LeftJoinGlobal(s, g, product, line).To("out")
		} else {
			dsl.JoinGlobal(s, g, product, line).To("out")
		}
		if g.StoreName() != "products" {
			t.Fatalf("store %q", g.StoreName())
		}
		d := tjDriver(t, b)
		want := []tjRec{tjVal("o1", "p1|1=apple", 2), {NullKey: true, Value: "p1|2=apple", TS: 3}}
		if left {
			want = append(want, tjVal("o2", "nothing=", 4))
		}
		tjRun(t, d, []tjStep{{
			in:   []tjIn{tjPut("g", "p1", "apple", 1), tjPut("s", "o1", "p1|1", 2), tjNoKey("s", "p1|2", 3), tjPut("s", "o2", "nothing", 4)},
			want: want,
		}})
		wantDrops := int64(1)
		if left {
			wantDrops = 0
		}
		if got := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != wantDrops {
			t.Fatalf("left %v: dropped null keys: %d, want %d", left, got, wantDrops)
		}
	}
}
