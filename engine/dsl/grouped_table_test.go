package dsl

// These tests are internal to reach the change serde; the rest goes through
// the exported API and the test driver. Expected outputs mirror Kafka
// Streams' KTableAggregateTest (the KIP-904 behaviour: one record when a
// row keeps its group).

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

var gtConfig = map[string]string{
	"application.id":      "app",
	"default.key.serde":   "string",
	"default.value.serde": "string",
}

func gtDriver(t *testing.T, b *Builder, cfg map[string]string) *testdriver.Driver {
	t.Helper()
	d, err := testdriver.New(b.Topology(), cfg)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// gtIn is a table update; tombstone pipes a null value.
type gtIn struct {
	key, value string
	ts         int64
	tombstone  bool
}

func gtPipe(t *testing.T, d *testdriver.Driver, topic string, in []gtIn) {
	t.Helper()
	str := serde.String()
	input := testdriver.CreateInputTopic(d, topic, str, str)
	for _, r := range in {
		rec := testdriver.TestRecord[string, string]{Key: r.key, Value: r.value, Timestamp: r.ts, ValueNull: r.tombstone}
		if err := input.PipeRecord(rec); err != nil {
			t.Fatalf("pipe %v: %v", r, err)
		}
	}
}

func gtShow(x any, null bool) string {
	if null {
		return "<null>"
	}
	if v := reflect.ValueOf(x); v.Kind() == reflect.Pointer && !v.IsNil() {
		return fmt.Sprint(v.Elem().Interface())
	}
	return fmt.Sprint(x)
}

// gtRead reads every record of topic as "key:value@timestamp".
func gtRead[K, V any](t *testing.T, d *testdriver.Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) []string {
	t.Helper()
	rs, err := testdriver.CreateOutputTopic(d, topic, ks, vs).ReadRecordsToList()
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s:%s@%d", gtShow(r.Key, r.KeyNull), gtShow(r.Value, r.ValueNull), r.Timestamp))
	}
	return out
}

func gtCheck(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func gtPtr[T any](v T) *T { return &v }

func TestTableGroupByAggregations(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	grouped := GroupedWith(str, str)
	toString := func(_, v, agg string) string { return agg + "+" + v }
	fromString := func(_, v, agg string) string { return agg + "-" + v }
	init := func() string { return "0" }
	tests := []struct {
		name  string
		build func(tbl KTable[string, string]) func(*testing.T, *testdriver.Driver) []string
		in    []gtIn
		want  []string
	}{
		{
			// KTableAggregateTest.testAggBasic: the key never moves, so
			// each update is one subtract-then-add.
			name: "aggregate, same key",
			build: func(tbl KTable[string, string]) func(*testing.T, *testdriver.Driver) []string {
				g := GroupTableBy(tbl, func(k, v string) (string, string) { return k, v }, grouped)
				AggregateTable(g, init, toString, fromString, MaterializedAs[string, string]("topic1-Canonized").WithValueSerde(str)).ToStream().To("out")
				return func(t *testing.T, d *testdriver.Driver) []string { return gtRead(t, d, "out", str, str) }
			},
			in: []gtIn{{"A", "1", 10, false}, {"B", "2", 15, false}, {"A", "3", 20, false}, {"B", "4", 18, false},
				{"C", "5", 5, false}, {"D", "6", 25, false}, {"B", "7", 15, false}, {"C", "8", 10, false}},
			want: []string{"A:0+1@10", "B:0+2@15", "A:0+1-1+3@20", "B:0+2-2+4@18", "C:0+5@5", "D:0+6@25", "B:0+2-2+4-4+7@18", "C:0+5-5+8@10"},
		},
		{
			// KTableAggregateTest.testCountHelper, then a row leaving its
			// group: the count drops to 0 and stays.
			name: "count, key moves",
			build: func(tbl KTable[string, string]) func(*testing.T, *testdriver.Driver) []string {
				GroupTableBy(tbl, func(_, v string) (string, string) { return v, v }, grouped).Count().ToStream().To("out", ProducedWith(str, i64))
				return func(t *testing.T, d *testdriver.Driver) []string { return gtRead(t, d, "out", str, i64) }
			},
			in: []gtIn{{"A", "green", 10, false}, {"B", "green", 9, false}, {"A", "blue", 12, false},
				{"C", "yellow", 15, false}, {"D", "green", 11, false}, {"C", "", 20, true}},
			want: []string{"green:1@10", "green:2@10", "green:1@12", "blue:1@12", "yellow:1@15", "green:2@12", "yellow:0@20"},
		},
		{
			// KTableAggregateTest.testRemoveOldBeforeAddNew.
			name: "aggregate removes before adding",
			build: func(tbl KTable[string, string]) func(*testing.T, *testdriver.Driver) []string {
				g := GroupTableBy(tbl, func(k, _ string) (string, string) { return k[:1], k[1:2] }, grouped)
				AggregateTable(g, func() string { return "" },
					func(_, v, agg string) string { return agg + v },
					func(_, v, agg string) string { return strings.ReplaceAll(agg, v, "") },
					MaterializedAs[string, string]("someStore").WithValueSerde(str)).ToStream().To("out")
				return func(t *testing.T, d *testdriver.Driver) []string { return gtRead(t, d, "out", str, str) }
			},
			in:   []gtIn{{"11", "A", 10, false}, {"12", "B", 8, false}, {"11", "", 12, true}, {"12", "C", 6, false}},
			want: []string{"1:1@10", "1:12@10", "1:2@12", "1:2@12"},
		},
		{
			// KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading:
			// an update that keeps its key is one record, never a
			// transient 0.
			name: "count, no transient state",
			build: func(tbl KTable[string, string]) func(*testing.T, *testdriver.Driver) []string {
				GroupTableBy(tbl, func(k, v string) (string, string) { return k, v }, grouped).Count().ToStream().To("out", ProducedWith(str, i64))
				return func(t *testing.T, d *testdriver.Driver) []string { return gtRead(t, d, "out", str, i64) }
			},
			in:   []gtIn{{"1", "", 8, false}, {"1", "", 9, false}},
			want: []string{"1:1@8", "1:1@9"},
		},
		{
			// A reduce whose subtractor returns null deletes the group and
			// forwards a delete; a new row then starts it again from its
			// own value.
			name: "reduce, key moves and group empties",
			build: func(tbl KTable[string, string]) func(*testing.T, *testdriver.Driver) []string {
				p64 := serde.Pointer(i64)
				g := GroupTableBy(tbl, func(_, region string) (string, *int64) { return region, gtPtr[int64](1) }, GroupedWith(str, p64))
				g.Reduce(
					func(agg, v *int64) *int64 { return gtPtr(*agg + *v) },
					func(agg, v *int64) *int64 {
						if *agg == *v {
							return nil
						}
						return gtPtr(*agg - *v)
					}).ToStream().To("out", ProducedWith(str, p64))
				return func(t *testing.T, d *testdriver.Driver) []string { return gtRead(t, d, "out", str, p64) }
			},
			in: []gtIn{{"u1", "eu", 1, false}, {"u2", "eu", 2, false}, {"u1", "us", 3, false},
				{"u2", "", 4, true}, {"u3", "eu", 5, false}},
			want: []string{"eu:1@1", "eu:2@2", "eu:1@3", "us:1@3", "eu:<null>@4", "eu:1@5"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			read := tc.build(Table(b, "in", ConsumedWith(str, str)))
			d := gtDriver(t, b, gtConfig)
			gtPipe(t, d, "in", tc.in)
			gtCheck(t, "output", read(t, d), tc.want)
		})
	}
}

// TestTableGroupByNullSelections mirrors KTableAggregateTest.testAggRepartition:
// a selection with a null key (or no selection) contributes nothing, a
// deleted row is subtracted, and a row moving groups is subtracted from
// the old group before it is added to the new one.
func TestTableGroupByNullSelections(t *testing.T) {
	str := serde.String()
	pstr := serde.Pointer(str)
	b := NewBuilder()
	tbl := Table(b, "in", ConsumedWith(str, str))
	g := GroupTableBy(tbl, func(k, v string) (*string, string) {
		switch k {
		case "null":
			return nil, v
		case "NULL":
			return nil, ""
		}
		return &v, v
	}, GroupedWith(pstr, str))
	AggregateTable(g, func() string { return "0" },
		func(_ *string, v, agg string) string { return agg + "+" + v },
		func(_ *string, v, agg string) string { return agg + "-" + v },
		MaterializedAs[*string, string]("topic1-Canonized").WithValueSerde(str)).ToStream().To("out")
	d := gtDriver(t, b, gtConfig)
	gtPipe(t, d, "in", []gtIn{{"A", "1", 10, false}, {"A", "", 15, true}, {"A", "1", 12, false}, {"B", "2", 20, false},
		{"null", "3", 25, false}, {"B", "4", 23, false}, {"NULL", "5", 24, false}, {"B", "7", 22, false}})
	gtCheck(t, "output", gtRead(t, d, "out", pstr, str), []string{
		"1:0+1@10", "1:0+1-1@15", "1:0+1-1+1@15", "2:0+2@20", "2:0+2-2@23", "4:0+4@23", "4:0+4-4@23", "7:0+7@22",
	})
}

// TestTableGroupByBoundary checks the names Kafka Streams gives a table
// grouping, the topics written, the change layout on the boundary topic
// and a reduce's tombstone in its changelog.
func TestTableGroupByBoundary(t *testing.T) {
	str := serde.String()
	b := NewBuilder()
	tbl := Table(b, "in", ConsumedWith(str, str))
	// No serdes: the grouping, the boundary and the store use the
	// configured defaults.
	g := GroupTableBy(tbl, func(user, region string) (string, string) { return region, user })
	g.Reduce(func(agg, v string) string {
		if agg == "" {
			return v
		}
		return agg + "," + v
	}, func(agg, v string) string {
		return strings.Trim(strings.ReplaceAll(","+agg+",", ","+v+",", ","), ",")
	}).ToStream().To("out")

	desc := b.Topology().Describe().String()
	for _, line := range []string{
		"Processor: KTABLE-SELECT-0000000003 (stores: [])",
		"Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)",
		"Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])",
		"Processor: KTABLE-REDUCE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])",
		"Processor: KTABLE-TOSTREAM-0000000008 (stores: [])",
	} {
		if !strings.Contains(desc, line) {
			t.Fatalf("description lacks %q:\n%s", line, desc)
		}
	}

	d := gtDriver(t, b, gtConfig)
	gtPipe(t, d, "in", []gtIn{{"u1", "eu", 1, false}, {"u2", "eu", 2, false}, {"u1", "us", 3, false},
		{"u1", "us", 4, false}, {"u2", "", 5, true}})
	gtCheck(t, "output", gtRead(t, d, "out", str, str), []string{
		"eu:u1@1", "eu:u1,u2@2", "eu:u2@3", "us:u1@3", "us:u1@4", "eu:@5",
	})
	gtCheck(t, "produced topics", d.ProducedTopicNames(), []string{
		"KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition",
		"app-KTABLE-AGGREGATE-STATE-STORE-0000000004-changelog",
		"app-in-STATE-STORE-0000000000-changelog",
		"out",
	})

	// The boundary carries Kafka Streams' ChangedSerializer layout.
	rs, err := testdriver.CreateOutputTopic(d, "KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s:%q@%d", r.Key, r.Value, r.Timestamp))
	}
	gtCheck(t, "boundary records", got, []string{
		`eu:"u1\x01"@1`,
		`eu:"u2\x01"@2`,
		`eu:"u1\x00"@3`,
		`us:"u1\x01"@3`,
		`us:"\x04u1u1\x02"@4`,
		`eu:"u2\x00"@5`,
	})
}

// TestTableReduceDeletesGroup checks that a reduce whose aggregate becomes
// null deletes the group from its store and changelogs a tombstone.
func TestTableReduceDeletesGroup(t *testing.T) {
	str := serde.String()
	b := NewBuilder()
	g := GroupTableBy(Table(b, "in", ConsumedWith(str, str)), func(user, region string) (string, *string) { return region, &user },
		GroupedWith(str, serde.Pointer(str)))
	g.Reduce(func(agg, v *string) *string { return gtPtr(*agg + "," + *v) }, func(agg, v *string) *string {
		if *agg == *v {
			return nil
		}
		return gtPtr(strings.Trim(strings.ReplaceAll(","+*agg+",", ","+*v+",", ","), ","))
	}, MaterializedAs[string, *string]("by-region"))
	d := gtDriver(t, b, gtConfig)
	gtPipe(t, d, "in", []gtIn{{"u1", "eu", 1, false}, {"u1", "", 2, true}})
	gtCheck(t, "changelog", gtRead(t, d, "app-by-region-changelog", str, str), []string{"eu:u1@1", "eu:<null>@2"})
	store, err := testdriver.TimestampedKeyValueStore[string, *string](d, "by-region")
	if err != nil {
		t.Fatal(err)
	}
	if v, found, err := store.Get("eu"); err != nil || found {
		t.Fatalf("eu = %v %v %v, want deleted", v, found, err)
	}
}

// TestTableGroupByDefaultSerdes checks that a serde left to the
// configuration is resolved when the topology is built, and that a
// missing default is reported then, not at the first record.
func TestTableGroupByDefaultSerdes(t *testing.T) {
	str := serde.String()
	build := func() *Builder {
		b := NewBuilder()
		GroupTableBy(Table(b, "in", ConsumedWith(str, str)), func(k, v string) (string, string) { return v, k }).
			Count().ToStream().To("out", ProducedWith(str, serde.Int64()))
		return b
	}
	if _, err := testdriver.New(build().Topology(), map[string]string{"application.id": "app"}); err == nil ||
		!strings.Contains(err.Error(), "default.key.serde") {
		t.Fatalf("build without default serdes: %v, want an error naming default.key.serde", err)
	}
	if _, err := testdriver.New(build().Topology(), map[string]string{
		"application.id": "app", "default.key.serde": "int64", "default.value.serde": "string",
	}); err == nil || !strings.Contains(err.Error(), "cannot hold string values") {
		t.Fatalf("build with an int64 default key serde: %v, want a type mismatch", err)
	}
	d := gtDriver(t, build(), gtConfig)
	gtPipe(t, d, "in", []gtIn{{"a", "x", 1, false}})
	gtCheck(t, "output", gtRead(t, d, "out", str, serde.Int64()), []string{"x:1@1"})
}

func TestChangeSerde(t *testing.T) {
	cs := newChangeSerde(serde.Erase(serde.String()))
	tests := []struct {
		name  string
		c     change
		bytes []byte
	}{
		{"addition", change{New: "new"}, []byte("new\x01")},
		{"subtraction", change{Old: "old"}, []byte("old\x00")},
		{"both", change{New: "new", Old: "old"}, []byte("\x06newold\x02")},
		{"empty values", change{New: "", Old: ""}, []byte("\x00\x02")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cs.SerializeAny("topic", tc.c)
			if err != nil || !bytes.Equal(got, tc.bytes) {
				t.Fatalf("serialize %+v = %q, %v; want %q", tc.c, got, err, tc.bytes)
			}
			back, err := cs.DeserializeAny("topic", got)
			if err != nil || back != tc.c {
				t.Fatalf("deserialize %q = %+v, %v; want %+v", got, back, err, tc.c)
			}
		})
	}
	// A 200-byte new value takes a two-byte varint (zig-zag 400).
	long := strings.Repeat("n", 200)
	got, err := cs.SerializeAny("topic", change{New: long, Old: "o"})
	if err != nil || !bytes.Equal(got[:2], []byte{0x90, 0x03}) || len(got) != 2+200+1+1 {
		t.Fatalf("long change = %q, %v", got, err)
	}
	if back, err := cs.DeserializeAny("topic", got); err != nil || back != (change{New: long, Old: "o"}) {
		t.Fatalf("long change read back as %+v, %v", back, err)
	}
}

// TestChangeSerdeReads checks the layouts Kafka Streams' ChangedDeserializer
// accepts, the versioned ones (an is-latest byte before flags 3 to 5)
// included, and the malformed ones it refuses.
func TestChangeSerdeReads(t *testing.T) {
	cs := newChangeSerde(serde.Erase(serde.String()))
	tests := []struct {
		data []byte
		want change
		err  bool
	}{
		{data: []byte("old\x01\x03"), want: change{Old: "old"}},
		{data: []byte("new\x00\x04"), want: change{New: "new"}},
		{data: []byte("\x06newold\x01\x05"), want: change{New: "new", Old: "old"}},
		{data: []byte("\x01"), want: change{New: ""}},
		{data: []byte{}, err: true},
		{data: []byte("x\x06"), err: true},
		{data: []byte("x\x02\x03"), err: true},
		{data: []byte("\x04"), err: true},
		{data: []byte("\x0anew\x02"), err: true},
		{data: []byte("\x05new\x02"), err: true},
	}
	for _, tc := range tests {
		got, err := cs.DeserializeAny("topic", tc.data)
		if tc.err {
			if !errors.Is(err, errChangeEncoding) {
				t.Errorf("deserialize %q = %+v, %v; want a malformed-change error", tc.data, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("deserialize %q = %+v, %v; want %+v", tc.data, got, err, tc.want)
		}
	}
	if _, err := cs.SerializeAny("topic", change{}); !errors.Is(err, errChangeBothNull) {
		t.Errorf("serialize an empty change: %v", err)
	}
	if got, err := cs.DeserializeAny("topic", nil); got != nil || err != nil {
		t.Errorf("deserialize null = %v, %v", got, err)
	}
}
