package dsl_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/testdriver"
)

// The tests of this file are Kafka Streams' tests of versioned tables
// (KIP-914) and stream-table joins with a grace period (KIP-923),
// transcribed: each names its Kafka Streams class and method. Keys are
// Kafka Streams' ANY_UNIQUE_KEY 0, as the string "0"; a missing side
// prints "null" as Java's string concatenation does (the table values
// are pointers, nil for none).

// vtInput is AbstractJoinIntegrationTest's main input: "l" is
// INPUT_TOPIC_LEFT, "r" INPUT_TOPIC_RIGHT, an empty value a null.
var vtInput = []tjIn{
	vtRec("l", "", 1), vtRec("r", "", 2), vtRec("l", "A", 3), vtRec("r", "a", 4),
	vtRec("l", "B", 5), vtRec("r", "b", 6), vtRec("l", "", 7), vtRec("r", "", 8),
	vtRec("l", "C", 9), vtRec("r", "c", 10), vtRec("r", "", 11), vtRec("l", "", 12),
	vtRec("r", "", 13),
	vtRec("r", "d", 7), // out-of-order data with null as latest
	vtRec("l", "D", 6), vtRec("l", "", 2), vtRec("r", "", 3), vtRec("r", "e", 14),
	vtRec("l", "E", 15),
	vtRec("l", "", 10), // out-of-order data with non-null as latest
	vtRec("r", "", 9), vtRec("l", "F", 4), vtRec("r", "f", 3),
}

func vtRec(topic, v string, ts int64) tjIn {
	if v == "" {
		return tjDel(topic, "0", ts)
	}
	return tjPut(topic, "0", v, ts)
}

// vtJoiner is Kafka Streams' valueJoiner, value1 + "-" + value2.
func vtJoiner(_ string, v string, vt *string) string { return v + "-" + vtShow(vt) }

func vtShow(v *string) string {
	if v == nil {
		return "null"
	}
	return *v
}

// vtPlan is what each of vtInput's records makes the topology write:
// "" for nothing, else a value, "<null>" for a tombstone, at a timestamp.
type vtOut struct {
	v  string
	ts int64
}

// vtRun pipes vtInput one record at a time and checks the output after
// each against want (24 entries; zero for nothing).
func vtRun(t *testing.T, d *testdriver.Driver, want []vtOut) {
	t.Helper()
	if len(want) != len(vtInput) {
		t.Fatalf("%d expectations for %d inputs", len(want), len(vtInput))
	}
	for i, in := range vtInput {
		tjPipe(t, d, in)
		var w []tjRec
		switch {
		case want[i] == vtOut{}:
		case want[i].v == "<null>":
			w = []tjRec{tjNull("0", want[i].ts)}
		default:
			w = []tjRec{tjVal("0", want[i].v, want[i].ts)}
		}
		if got := tjRead(t, d, "out"); !slices.Equal(got, w) {
			t.Fatalf("input %d (%s %+v): got %v, want %v", i, in.topic, in, got, w)
		}
	}
}

// vtStreamTableJoin builds leftStream.join(rightTable) with the table
// versioned for 5 minutes, as the Kafka Streams tests do.
func vtStreamTableJoin(t *testing.T, left bool, joined ...dsl.Joined[string, string, *string]) *testdriver.Driver {
	t.Helper()
	str, ptr := serde.String(), serde.Pointer(serde.String())
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "l")
	tb := dsl.Table(b, "r", dsl.ConsumedWith(str, ptr),
		dsl.MaterializedAs[string, *string]("table-store").WithStoreSupplier(state.PersistentVersionedKeyValueStore(5*time.Minute)))
	if left {
		dsl.LeftJoinTable(s, tb, vtJoiner, joined...).To("out", dsl.ProducedWith(str, str))
	} else {
		dsl.JoinTable(s, tb, vtJoiner, joined...).To("out", dsl.ProducedWith(str, str))
	}
	return tjDriver(t, b)
}

// TestVersionedStreamTableJoin is Kafka Streams'
// StreamTableJoinIntegrationTest.testInnerWithVersionedStore and
// testLeftWithVersionedStore: each stream record joins the table's
// version as of its own timestamp, out-of-order records of either side
// included.
func TestVersionedStreamTableJoin(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[4] = vtOut{"B-a", 5}
		want[14] = vtOut{"D-b", 6}
		want[18] = vtOut{"E-e", 15}
		want[21] = vtOut{"F-a", 4}
		vtRun(t, vtStreamTableJoin(t, false), want)
	})
	t.Run("left", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[2] = vtOut{"A-null", 3}
		want[4] = vtOut{"B-a", 5}
		want[8] = vtOut{"C-null", 9}
		want[14] = vtOut{"D-b", 6}
		want[18] = vtOut{"E-e", 15}
		want[21] = vtOut{"F-a", 4}
		vtRun(t, vtStreamTableJoin(t, true), want)
	})
}

// graceJoined is StreamTableJoinWithGraceIntegrationTest's JOINED: named
// "Grace", grace 2 ms.
func graceJoined() dsl.Joined[string, string, *string] {
	return dsl.JoinedWith(serde.String(), serde.String(), serde.Pointer(serde.String())).WithName("Grace").WithGracePeriod(2 * time.Millisecond)
}

// TestVersionedStreamTableJoinWithGrace is Kafka Streams'
// StreamTableJoinWithGraceIntegrationTest.testInnerWithVersionedStore and
// testLeftWithVersionedStore: a stream record waits until the buffer's
// stream time passes it by the grace, then joins as of its timestamp; one
// already older joins at once; a null value releases nothing.
func TestVersionedStreamTableJoinWithGrace(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[8] = vtOut{"B-a", 5}
		want[14] = vtOut{"D-b", 6}
		want[21] = vtOut{"F-a", 4}
		vtRun(t, vtStreamTableJoin(t, false, graceJoined()), want)
	})
	t.Run("left", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[4] = vtOut{"A-null", 3}
		want[8] = vtOut{"B-a", 5}
		want[14] = vtOut{"D-b", 6}
		want[18] = vtOut{"C-null", 9}
		want[21] = vtOut{"F-a", 4}
		vtRun(t, vtStreamTableJoin(t, true, graceJoined()), want)
	})
}

// kstJoin is KStreamKTableJoinTest.makeJoin(grace): integer keys 0..3 as
// strings, the table versioned for 5 minutes in "V-grace", the join
// named "Grace", Kafka Streams' TOSTRING_JOINER (value1 + "+" + value2).
func kstJoin(t *testing.T, grace time.Duration) *testdriver.Driver {
	t.Helper()
	str := serde.String()
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "streamTopic")
	tb := dsl.Table(b, "tableTopic2", dsl.ConsumedWith(str, str),
		dsl.MaterializedAs[string, string]("V-grace").WithStoreSupplier(state.PersistentVersionedKeyValueStore(5*time.Minute)))
	dsl.JoinTable(s, tb, plusJoiner, dsl.JoinedWith(str, str, str).WithName("Grace").WithGracePeriod(grace)).To("out")
	return tjDriver(t, b)
}

func kstPushTable(prefix string) []tjIn {
	var in []tjIn
	for i := range 4 {
		k := string(rune('0' + i))
		in = append(in, tjPut("tableTopic2", k, prefix+k, 0))
	}
	return in
}

func kstPushStream(n int, prefix string) []tjIn {
	var in []tjIn
	for i := range n {
		k := string(rune('0' + i))
		in = append(in, tjPut("streamTopic", k, prefix+k, int64(i)))
	}
	return in
}

// TestStreamTableJoinDelayedByGrace is Kafka Streams'
// KStreamKTableJoinTest.shouldDelayJoinByGracePeriod and
// shouldHandleLateJoinsWithGracePeriod.
func TestStreamTableJoinDelayedByGrace(t *testing.T) {
	t.Run("shouldDelayJoinByGracePeriod", func(t *testing.T) {
		d := kstJoin(t, 2*time.Millisecond)
		tjRun(t, d, []tjStep{
			{in: kstPushTable("Y")},
			{in: kstPushStream(4, "X"), want: []tjRec{tjVal("0", "X0+Y0", 0), tjVal("1", "X1+Y1", 1)}},
			// The table's versions at 0 are replaced: the held records
			// join the new ones.
			{in: kstPushTable("YY")},
			{in: kstPushStream(4, "X"), want: []tjRec{tjVal("0", "X0+YY0", 0), tjVal("1", "X1+YY1", 1)}},
			{in: []tjIn{tjPut("streamTopic", "5", "test", 7)}, want: []tjRec{
				tjVal("2", "X2+YY2", 2), tjVal("2", "X2+YY2", 2), tjVal("3", "X3+YY3", 3), tjVal("3", "X3+YY3", 3)}},
			{in: kstPushTable("YYY")},
		})
	})
	t.Run("shouldHandleLateJoinsWithGracePeriod", func(t *testing.T) {
		d := kstJoin(t, 2*time.Millisecond)
		tjRun(t, d, []tjStep{
			{in: kstPushTable("Y")},
			{in: kstPushStream(4, "X"), want: []tjRec{tjVal("0", "X0+Y0", 0), tjVal("1", "X1+Y1", 1)}},
			// Joined at once, releasing nothing.
			{in: kstPushStream(1, "X"), want: []tjRec{tjVal("0", "X0+Y0", 0)}},
		})
	})
}

// TestStreamTableJoinGraceChecks is Kafka Streams' KStreamKTableJoinTest
// shouldNotFailIfTableIsVersionedButMaterializationIsInherited,
// shouldFailIfGracePeriodIsLongerThanHistoryRetention and
// shouldFailIfGracePeriodIsLongerThanHistoryRetentionAndInheritedStore.
func TestStreamTableJoinGraceChecks(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name      string
		retention time.Duration
		grace     time.Duration
		inherited bool
		err       string
	}{
		{"shouldNotFailIfTableIsVersionedButMaterializationIsInherited", 5 * time.Minute, 6 * time.Millisecond, true, ""},
		{"shouldFailIfGracePeriodIsLongerThanHistoryRetention", 5 * time.Minute, 6 * time.Minute, false, "history retention must be at least the grace period"},
		{"shouldFailIfGracePeriodIsLongerThanHistoryRetentionAndInheritedStore", 0, 6 * time.Millisecond, true, "history retention must be at least the grace period"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tb := dsl.Table(b, "topic2", dsl.ConsumedWith(str, str),
				dsl.MaterializedAs[string, string]("tableB").WithStoreSupplier(state.PersistentVersionedKeyValueStore(tc.retention)))
			if tc.inherited {
				tb = tb.Filter(func(string, string) bool { return true })
			}
			dsl.JoinTable(dsl.Stream(b, dsl.ConsumedWith(str, str), "topic"), tb, plusJoiner,
				dsl.JoinedWith(str, str, str).WithName("first-join").WithGracePeriod(tc.grace)).To("out-one")
			_, err := b.Topology().Build(config.New(map[string]string{"application.id": "grace", "default.key.serde": "string", "default.value.serde": "string"}))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("build: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("build error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// vtTableTableJoin builds leftTable.<join>(rightTable, materialized) with
// both tables versioned (logging off, as in the Kafka Streams test).
func vtTableTableJoin(t *testing.T, join func(l, r dsl.KTable[string, *string], j func(a, b *string) *string, opts ...dsl.TableOption) dsl.KTable[string, *string]) *testdriver.Driver {
	t.Helper()
	str, ptr := serde.String(), serde.Pointer(serde.String())
	b := dsl.NewBuilder()
	versioned := func(name string) dsl.Materialized[string, *string] {
		return dsl.MaterializedAs[string, *string](name).WithStoreSupplier(state.PersistentVersionedKeyValueStore(5 * time.Minute)).WithLoggingDisabled()
	}
	l := dsl.Table(b, "l", dsl.ConsumedWith(str, ptr), versioned("left"))
	r := dsl.Table(b, "r", dsl.ConsumedWith(str, ptr), versioned("right"))
	joiner := func(a, b *string) *string { s := vtShow(a) + "-" + vtShow(b); return &s }
	join(l, r, joiner, dsl.MaterializedAs[string, *string]("anyQueryableStoreName").WithValueSerde(ptr)).ToStream().To("out", dsl.ProducedWith(str, ptr))
	return tjDriver(t, b)
}

// TestVersionedTableTableJoin is Kafka Streams'
// TableTableJoinIntegrationTest.testInnerWithVersionedStores,
// testLeftWithVersionedStores and testOuterWithVersionedStores:
// out-of-order updates of either side change no row.
func TestVersionedTableTableJoin(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[3], want[4], want[5], want[6] = vtOut{"A-a", 4}, vtOut{"B-a", 5}, vtOut{"B-b", 6}, vtOut{"<null>", 7}
		want[9], want[10], want[18] = vtOut{"C-c", 10}, vtOut{"<null>", 11}, vtOut{"E-e", 15}
		vtRun(t, vtTableTableJoin(t, dsl.TableJoin[string, *string, *string, *string]), want)
	})
	t.Run("left", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[2], want[3], want[4], want[5], want[6] = vtOut{"A-null", 3}, vtOut{"A-a", 4}, vtOut{"B-a", 5}, vtOut{"B-b", 6}, vtOut{"<null>", 7}
		want[8], want[9], want[10], want[11] = vtOut{"C-null", 9}, vtOut{"C-c", 10}, vtOut{"C-null", 11}, vtOut{"<null>", 12}
		want[18] = vtOut{"E-e", 15}
		vtRun(t, vtTableTableJoin(t, dsl.TableLeftJoin[string, *string, *string, *string]), want)
	})
	t.Run("outer", func(t *testing.T) {
		want := make([]vtOut, 23)
		want[2], want[3], want[4], want[5], want[6] = vtOut{"A-null", 3}, vtOut{"A-a", 4}, vtOut{"B-a", 5}, vtOut{"B-b", 6}, vtOut{"null-b", 7}
		want[7], want[8], want[9], want[10], want[11] = vtOut{"<null>", 8}, vtOut{"C-null", 9}, vtOut{"C-c", 10}, vtOut{"C-null", 11}, vtOut{"<null>", 12}
		want[17], want[18] = vtOut{"null-e", 14}, vtOut{"E-e", 15}
		vtRun(t, vtTableTableJoin(t, dsl.TableOuterJoin[string, *string, *string, *string]), want)
	})
}

// TestVersionedTableSource checks what a versioned table forwards, as
// Kafka Streams' KTableSource does over a versioned store (KIP-914): an
// out-of-order update is stored as a version and forwarded, so ToStream
// emits it, but the latest value stays; an update older than the history
// retention is dropped, counted as expired_version, and not forwarded.
func TestVersionedTableSource(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	tb := dsl.Table(b, "t", dsl.ConsumedWith(str, str),
		dsl.MaterializedAs[string, string]("vt").WithStoreSupplier(state.PersistentVersionedKeyValueStore(10*time.Millisecond)))
	tb.ToStream().To("out")
	d := tjDriver(t, b)
	tjRun(t, d, []tjStep{
		{in: []tjIn{tjPut("t", "k", "v20", 20)}, want: []tjRec{tjVal("k", "v20", 20)}},
		{in: []tjIn{tjPut("t", "k", "v15", 15)}, want: []tjRec{tjVal("k", "v15", 15)}},
		{in: []tjIn{tjDel("t", "k", 12)}, want: []tjRec{tjNull("k", 12)}},
		// 9 is older than 20 less the retention of 10: dropped.
		{in: []tjIn{tjPut("t", "k", "v9", 9)}},
		{in: []tjIn{tjPut("t", "k", "v10", 10)}, want: []tjRec{tjVal("k", "v10", 10)}},
	})
	s, ok := d.StateStore("vt")
	if !ok {
		t.Fatal("no store vt")
	}
	vs := s.(state.VersionedKeyValueStore[string, string])
	for _, c := range []struct {
		asOf  int64
		want  string
		found bool
	}{{25, "v20", true}, {16, "v15", true}, {13, "", false}, {10, "v10", true}, {9, "", false}} {
		r, found, err := vs.GetAsOf("k", c.asOf)
		if err != nil || found != c.found || r.Value != c.want {
			t.Errorf("get(k, %d) = %q, %v, %v; want %q, %v", c.asOf, r.Value, found, err, c.want, c.found)
		}
	}
	if n := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonExpiredVersion); n != 1 {
		t.Errorf("%d expired versions counted, want 1", n)
	}
}

// FuzzGraceBufferEntry decodes entries of a stream-table join's grace
// buffer, which come back from its changelog: the decoders must refuse
// what they cannot read, never panic, and read back what was written.
func FuzzGraceBufferEntry(f *testing.F) {
	f.Add(dsl.EncodeGraceBufferKey(7, []byte("k"), 3), dsl.EncodeGraceBufferValue(processor.Headers{{Key: "h", Value: []byte("v")}, {Key: "n"}}, []byte("value")))
	f.Add([]byte{1, 2, 3}, []byte{1, 5})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if ts, k, seq, err := dsl.DecodeGraceBufferKey(key); err == nil {
			if again := dsl.EncodeGraceBufferKey(ts, k, seq); string(again) != string(key) {
				t.Fatalf("key %x reads back as %x", key, again)
			}
		}
		hs, v, err := dsl.DecodeGraceBufferValue(value)
		if err != nil {
			return
		}
		again := dsl.EncodeGraceBufferValue(hs, v)
		hs2, v2, err := dsl.DecodeGraceBufferValue(again)
		if err != nil || string(v2) != string(v) || len(hs2) != len(hs) {
			t.Fatalf("value %x: decoded %v %x, re-encoded %x decodes to %v %x (%v)", value, hs, v, again, hs2, v2, err)
		}
		for i := range hs {
			if hs[i].Key != hs2[i].Key || string(hs[i].Value) != string(hs2[i].Value) || (hs[i].Value == nil) != (hs2[i].Value == nil) {
				t.Fatalf("value %x: header %d %v became %v", value, i, hs[i], hs2[i])
			}
		}
	})
}

// TestGraceBufferRestores checks that what the grace buffer holds survives
// a restart: a new driver restored from the buffer's changelog (and the
// table's) joins the held records when a later record releases them, with
// their timestamps and headers.
func TestGraceBufferRestores(t *testing.T) {
	d1 := kstJoin(t, 2*time.Millisecond)
	tjRun(t, d1, []tjStep{
		{in: kstPushTable("Y")},
		{in: kstPushStream(4, "X"), want: []tjRec{tjVal("0", "X0+Y0", 0), tjVal("1", "X1+Y1", 1)}},
	})
	d2 := kstJoin(t, 2*time.Millisecond)
	for _, store := range []string{"V-grace", "Grace-Buffer"} {
		var recs []state.ChangelogRecord
		topic := "test-driver-" + store + "-changelog"
		for _, r := range d1.ReadRaw(topic) {
			recs = append(recs, state.ChangelogRecord{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
		}
		if len(recs) == 0 {
			t.Fatalf("no changelog records on %s (topics: %v)", topic, d1.ProducedTopicNames())
		}
		s, ok := d2.StateStore(store)
		if !ok {
			t.Fatalf("no store %s", store)
		}
		if err := s.(state.Restorer).Restore(recs); err != nil {
			t.Fatalf("restore %s: %v", store, err)
		}
	}
	tjRun(t, d2, []tjStep{
		{in: []tjIn{tjPut("streamTopic", "9", "late", 1)}},
		{in: []tjIn{tjPut("streamTopic", "5", "test", 7)}, want: []tjRec{tjVal("2", "X2+Y2", 2), tjVal("3", "X3+Y3", 3)}},
	})
}

// TestVersionedTableCount is Kafka Streams'
// KTableAggregateTest.testCountOfVersionedStore: a grouping of a
// versioned table ignores an out-of-order update (KIP-914), so the counts
// are those of the latest values.
func TestVersionedTableCount(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	tb := dsl.Table(b, "count-test-input", dsl.ConsumedWith(str, str),
		dsl.MaterializedAs[string, string]("versioned").WithStoreSupplier(state.PersistentVersionedKeyValueStore(5*time.Minute)))
	dsl.GroupTableBy(tb, func(_, v string) (string, string) { return v, v }, dsl.GroupedWith(str, str)).
		Count().ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
	d := tjDriver(t, b)
	for _, in := range []tjIn{
		tjPut("count-test-input", "A", "green", 10),
		tjPut("count-test-input", "B", "green", 9),
		tjPut("count-test-input", "A", "blue", 12),
		tjPut("count-test-input", "A", "blue", 11), // out-of-order record will be ignored
		tjPut("count-test-input", "C", "yellow", 15),
		tjPut("count-test-input", "D", "green", 11),
	} {
		tjPipe(t, d, in)
	}
	rs, err := testdriver.CreateOutputTopic(d, "out", str, serde.Int64()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s=%d@%d", r.Key, r.Value, r.Timestamp))
	}
	want := []string{"green=1@10", "green=2@10", "green=1@12", "blue=1@12", "yellow=1@15", "green=2@12"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestVersionedSupplierOnlyOnSourceTables: a versioned supplier given to
// a global table or an aggregation is refused at build, naming the store,
// rather than giving an unversioned store.
func TestVersionedSupplierOnlyOnSourceTables(t *testing.T) {
	str := serde.String()
	sup := state.PersistentVersionedKeyValueStore(time.Minute)
	tests := []struct {
		name  string
		build func(b *dsl.Builder)
	}{
		{"global table", func(b *dsl.Builder) {
			g := dsl.GlobalTable(b, "g", dsl.ConsumedWith(str, str), dsl.MaterializedAs[string, string]("vstore").WithStoreSupplier(sup))
			dsl.JoinGlobal(dsl.Stream(b, dsl.ConsumedWith(str, str), "s"), g, func(k, _ string) string { return k }, plusJoiner).To("out")
		}},
		{"count", func(b *dsl.Builder) {
			dsl.Stream(b, dsl.ConsumedWith(str, str), "s").GroupByKey().Count(dsl.MaterializedAs[string, int64]("vstore").WithStoreSupplier(sup))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
			_, err := b.Topology().Build(config.New(map[string]string{"application.id": "v", "default.key.serde": "string", "default.value.serde": "string"}))
			if err == nil || !strings.Contains(err.Error(), "vstore") || !strings.Contains(err.Error(), "a versioned store materializes a table (dsl.Table), a Filter or MapTableValues result or a table-table join result only") {
				t.Fatalf("build error %v, want the versioned store vstore refused", err)
			}
		})
	}
}

// TestVersionedTableResults materializes a MapTableValues result and a
// table-table join result in versioned stores: a result older than the
// key's latest is kept as history and forwarded as such (ToStream emits
// it), as Kafka Streams' KTableMapValues and KTableKTableJoinMerger
// forward what their store's put says, and a stream-table join reads the
// result as of each stream record's timestamp.
func TestVersionedTableResults(t *testing.T) {
	str := serde.String()
	sup := state.PersistentVersionedKeyValueStore(time.Minute)
	b := dsl.NewBuilder()
	tb := dsl.Table(b, "t", dsl.ConsumedWith(str, str))
	upper := dsl.MapTableValues(tb, func(_, v string) string { return strings.ToUpper(v) },
		dsl.MaterializedAs[string, string]("upper").WithStoreSupplier(sup).WithValueSerde(str))
	if _, ok := upper.Versioned(); !ok {
		t.Fatal("a result materialized as versioned is not versioned")
	}
	upper.ToStream().To("changes")
	other := dsl.Table(b, "o", dsl.ConsumedWith(str, str))
	joined := dsl.TableJoin(upper, other, func(a, b string) string { return a + "&" + b },
		dsl.MaterializedAs[string, string]("joined").WithStoreSupplier(sup).WithValueSerde(str))
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "s")
	dsl.JoinTable(s, upper, plusJoiner).To("out")
	dsl.JoinTable(s, joined, plusJoiner).To("out-joined")
	d := tjDriver(t, b)
	tjRun(t, d, []tjStep{
		{in: []tjIn{tjPut("t", "k", "a", 10), tjPut("o", "k", "x", 5)}},
		{in: []tjIn{tjPut("t", "k", "b", 20)}},
		// Out of order: history of the versioned result, forwarded.
		{in: []tjIn{tjPut("t", "k", "c", 15)}},
		{in: []tjIn{tjPut("s", "k", "s12", 12), tjPut("s", "k", "s17", 17), tjPut("s", "k", "s25", 25)},
			want: []tjRec{tjVal("k", "s12+A", 12), tjVal("k", "s17+C", 17), tjVal("k", "s25+B", 25)}},
	})
	if got, want := tjRead(t, d, "changes"), []tjRec{tjVal("k", "A", 10), tjVal("k", "B", 20), tjVal("k", "C", 15)}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	// The join result: A&x from 10, B&x from 20; the stale C does not
	// reach it (a join side drops it).
	if got, want := tjRead(t, d, "out-joined"), []tjRec{tjVal("k", "s12+A&x", 12), tjVal("k", "s17+A&x", 17), tjVal("k", "s25+B&x", 25)}; !slices.Equal(got, want) {
		t.Errorf("joined %v, want %v", got, want)
	}
}

// TestGraceJoinNullKey: a left join with a grace period joins a record
// with a null key at once, with no table value (there is nothing to hold
// it by, nor to look up), and holds the others.
func TestGraceJoinNullKey(t *testing.T) {
	d := vtStreamTableJoin(t, true, graceJoined())
	tjRun(t, d, []tjStep{
		{in: []tjIn{tjPut("l", "0", "held", 10)}},
		{in: []tjIn{tjNoKey("l", "nokey", 11)}, want: []tjRec{{NullKey: true, Value: "nokey-null", TS: 11}}},
		{in: []tjIn{tjPut("l", "0", "later", 20)}, want: []tjRec{tjVal("0", "held-null", 10)}},
	})
}
