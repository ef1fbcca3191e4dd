package dsl_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
	"time"
)

// fkNull stands for a tombstone in the maps below, as Kafka Streams'
// tests write mkEntry("lhs1", null).
const fkNull = "<null>"

// fkStep pipes records, then expects the output's records collapsed to
// the last per key (Kafka Streams' readKeyValuesToMap) and, when the
// join is materialized, the result store's contents (its asMap(store)).
type fkStep struct {
	in    []tjIn
	out   map[string]string
	store map[string]string
}

// fkPick is Kafka Streams' `leftJoin ? a : b`.
func fkPick[T any](left bool, a, b T) T {
	if left {
		return a
	}
	return b
}

// fkKV builds a map from key, value pairs.
func fkKV(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// fkTopology is KTableKTableForeignKeyJoinIntegrationTest.getTopology:
// tables "left" and "right" of strings, the foreign key the part of the
// left value after "|", the joiner "(" + left + "," + right + ")" with a
// missing right side printed as "null", the result to "out" and, when
// store is set, materialized in it. The rejoin variant is left out: it is
// a plain table-table join of the result, covered by the table join
// tests. Versioned tables are fkVersionedTopology's.
func fkTopology(left bool, store string) *dsl.Builder {
	return fkVersionedTopology(left, store, false, false)
}

// fkVersionedTopology is getTopology with leftVersioned and
// rightVersioned: each table versioned for 5 minutes when asked.
func fkVersionedTopology(left bool, store string, leftVersioned, rightVersioned bool) *dsl.Builder {
	str := serde.String()
	ptr := serde.Pointer(str)
	b := dsl.NewBuilder()
	var lm []dsl.Materialized[string, string]
	if leftVersioned {
		lm = append(lm, dsl.MaterializedAs[string, string]("left").WithStoreSupplier(state.PersistentVersionedKeyValueStore(5*time.Minute)))
	}
	var rm []dsl.Materialized[string, *string]
	if rightVersioned {
		rm = append(rm, dsl.MaterializedAs[string, *string]("right").WithStoreSupplier(state.PersistentVersionedKeyValueStore(5*time.Minute)))
	}
	lt := dsl.Table(b, "left", dsl.ConsumedWith(str, str), lm...)
	rt := dsl.Table(b, "right", dsl.ConsumedWith(str, ptr), rm...)
	extract := func(v string) string { return strings.Split(v, "|")[1] }
	joiner := func(l string, r *string) string {
		if r == nil {
			return "(" + l + ",null)"
		}
		return "(" + l + "," + *r + ")"
	}
	var opts []dsl.TableOption
	if store != "" {
		opts = append(opts, dsl.MaterializedAs[string, string](store))
	}
	var j dsl.KTable[string, string]
	if left {
		j = dsl.TableLeftJoinForeignKey(lt, rt, extract, joiner, opts...)
	} else {
		j = dsl.TableJoinForeignKey(lt, rt, extract, joiner, opts...)
	}
	j.ToStream().To("out", dsl.ProducedWith(str, str))
	return b
}

// fkRun plays steps through the driver, for the left and the inner join,
// materialized and not, as the Kafka Streams tests are parameterized.
func fkRun(t *testing.T, steps func(left bool) []fkStep) {
	t.Helper()
	fkRunOn(t, fkTopology, steps)
}

// fkRunOn is fkRun over the topologies build makes.
func fkRunOn(t *testing.T, build func(left bool, store string) *dsl.Builder, steps func(left bool) []fkStep) {
	t.Helper()
	for _, left := range []bool{true, false} {
		for _, materialized := range []bool{true, false} {
			t.Run(fmt.Sprintf("left=%v/materialized=%v", left, materialized), func(t *testing.T) {
				store := ""
				if materialized {
					store = "store"
				}
				d := tjDriver(t, build(left, store))
				for i, s := range steps(left) {
					for _, in := range s.in {
						tjPipe(t, d, in)
					}
					got := map[string]string{}
					for _, r := range tjRead(t, d, "out") {
						got[r.Key] = r.Value
						if r.NullValue {
							got[r.Key] = fkNull
						}
					}
					if !maps.Equal(got, s.out) {
						t.Fatalf("step %d: output %v, want %v", i+1, got, s.out)
					}
					if materialized {
						if got := fkStore(t, d, store); !maps.Equal(got, s.store) {
							t.Fatalf("step %d: store %v, want %v", i+1, got, s.store)
						}
					}
				}
			})
		}
	}
}

func fkStore(t *testing.T, d *testdriver.Driver, name string) map[string]string {
	t.Helper()
	s, err := testdriver.TimestampedKeyValueStore[string, string](d, name)
	if err != nil {
		t.Fatal(err)
	}
	it, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for it.Next() {
		out[it.Key()] = it.Value().Value
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestForeignKeyJoinKafkaStreams transcribes Kafka Streams'
// KTableKTableForeignKeyJoinIntegrationTest, method by method, through the
// test driver: each step's records, the output collapsed per key and the
// materialized store, for the left and the inner join. baseTimestamp is 0.
func TestForeignKeyJoinKafkaStreams(t *testing.T) {
	l := func(k, v string, ts int64) tjIn { return tjPut("left", k, v, ts) }
	r := func(k, v string, ts int64) tjIn { return tjPut("right", k, v, ts) }
	empty := map[string]string{}

	t.Run("doJoinFromLeftThenDeleteLeftEntity", func(t *testing.T) {
		fkRun(t, func(bool) []fkStep {
			both := fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs2", "(lhsValue2|rhs2,rhsValue2)")
			all := fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs2", "(lhsValue2|rhs2,rhsValue2)", "lhs3", "(lhsValue3|rhs1,rhsValue1)")
			return []fkStep{
				// Pre-populate the RHS records; rhs3 is never referenced.
				{in: []tjIn{r("rhs1", "rhsValue1", 0), r("rhs2", "rhsValue2", 1), r("rhs3", "rhsValue3", 2)}, out: empty, store: empty},
				{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 3), l("lhs2", "lhsValue2|rhs2", 4)}, out: both, store: both},
				// Another reference to an existing foreign key.
				{in: []tjIn{l("lhs3", "lhsValue3|rhs1", 5)}, out: fkKV("lhs3", "(lhsValue3|rhs1,rhsValue1)"), store: all},
				// Deleting a left entity propagates a delete.
				{in: []tjIn{tjDel("left", "lhs1", 6)}, out: fkKV("lhs1", fkNull), store: fkKV("lhs2", "(lhsValue2|rhs2,rhsValue2)", "lhs3", "(lhsValue3|rhs1,rhsValue1)")},
			}
		})
	})

	t.Run("doJoinFromRightThenDeleteRightEntity", func(t *testing.T) {
		fkRun(t, func(left bool) []fkStep {
			halves := fkKV("lhs1", "(lhsValue1|rhs1,null)", "lhs2", "(lhsValue2|rhs2,null)", "lhs3", "(lhsValue3|rhs1,null)")
			all := fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs2", "(lhsValue2|rhs2,rhsValue2)", "lhs3", "(lhsValue3|rhs1,rhsValue1)")
			return []fkStep{
				// Pre-populate the LHS records.
				{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 0), l("lhs2", "lhsValue2|rhs2", 1), l("lhs3", "lhsValue3|rhs1", 2)},
					out: fkPick(left, halves, empty), store: fkPick(left, halves, empty)},
				{in: []tjIn{r("rhs1", "rhsValue1", 3)},
					out: fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs3", "(lhsValue3|rhs1,rhsValue1)"),
					store: fkPick(left,
						fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs2", "(lhsValue2|rhs2,null)", "lhs3", "(lhsValue3|rhs1,rhsValue1)"),
						fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs3", "(lhsValue3|rhs1,rhsValue1)"))},
				{in: []tjIn{r("rhs2", "rhsValue2", 4)}, out: fkKV("lhs2", "(lhsValue2|rhs2,rhsValue2)"), store: all},
				// An unreferenced foreign key shows up in no result.
				{in: []tjIn{r("rhs3", "rhsValue3", 5)}, out: empty, store: all},
				// Deleting the right entity propagates to every key
				// referring to it.
				{in: []tjIn{tjDel("right", "rhs1", 6)},
					out: fkKV("lhs1", fkPick(left, "(lhsValue1|rhs1,null)", fkNull), "lhs3", fkPick(left, "(lhsValue3|rhs1,null)", fkNull)),
					store: fkPick(left,
						fkKV("lhs1", "(lhsValue1|rhs1,null)", "lhs2", "(lhsValue2|rhs2,rhsValue2)", "lhs3", "(lhsValue3|rhs1,null)"),
						fkKV("lhs2", "(lhsValue2|rhs2,rhsValue2)"))},
			}
		})
	})

	t.Run("shouldEmitTombstoneWhenDeletingNonJoiningRecords", func(t *testing.T) {
		fkRun(t, func(left bool) []fkStep {
			first := fkPick(left, fkKV("lhs1", "(lhsValue1|rhs1,null)"), empty)
			return []fkStep{
				{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 0)}, out: first, store: first},
				// An unnecessary tombstone for the inner join: it cannot
				// know whether a result was emitted.
				{in: []tjIn{tjDel("left", "lhs1", 1)}, out: fkKV("lhs1", fkNull), store: empty},
				// Deleting a non-existing record is idempotent.
				{in: []tjIn{tjDel("left", "lhs1", 2)}, out: empty, store: empty},
			}
		})
	})

	t.Run("shouldNotEmitTombstonesWhenDeletingNonExistingRecords", func(t *testing.T) {
		fkRun(t, func(bool) []fkStep {
			return []fkStep{{in: []tjIn{tjDel("left", "lhs1", 0)}, out: empty, store: empty}}
		})
	})

	t.Run("joinShouldProduceNullsWhenValueHasNonMatchingForeignKey", func(t *testing.T) {
		fkRun(t, func(left bool) []fkStep {
			half := func(fk string) map[string]string { return fkPick(left, fkKV("lhs1", "(lhsValue1|"+fk+",null)"), empty) }
			moved := func(fk string) map[string]string {
				return fkKV("lhs1", fkPick(left, "(lhsValue1|"+fk+",null)", fkNull))
			}
			joined := fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)")
			return []fkStep{
				// No output for a new inner join on a non-existent foreign
				// key; the left join emits the half-joined row.
				{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 0)}, out: half("rhs1"), store: half("rhs1")},
				// Moving to another non-existent foreign key: an
				// unnecessary tombstone for the inner join.
				{in: []tjIn{l("lhs1", "lhsValue1|rhs2", 1)}, out: moved("rhs2"), store: half("rhs2")},
				{in: []tjIn{l("lhs1", "lhsValue1|rhs3", 2)}, out: moved("rhs3"), store: half("rhs3")},
				// rhs1 is no longer referenced: no change.
				{in: []tjIn{r("rhs1", "rhsValue1", 3)}, out: empty, store: half("rhs3")},
				// Moving to a foreign key that exists completes the join.
				{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 4)}, out: joined, store: joined},
				// Moving again to a non-existent one.
				{in: []tjIn{l("lhs1", "lhsValue1|rhs2", 5)}, out: moved("rhs2"), store: half("rhs2")},
			}
		})
	})

	t.Run("shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated", func(t *testing.T) {
		fkRun(t, func(bool) []fkStep {
			one := fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)")
			two := fkKV("lhs1", "(lhsValue1|rhs2,rhsValue2)")
			return []fkStep{
				{in: []tjIn{r("rhs1", "rhsValue1", 0), r("rhs2", "rhsValue2", 1)}, out: empty, store: empty},
				{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 2)}, out: one, store: one},
				// Change the left foreign key reference.
				{in: []tjIn{l("lhs1", "lhsValue1|rhs2", 3)}, out: two, store: two},
				// An update on the old foreign key reaches nobody.
				{in: []tjIn{r("rhs1", "rhsValue1Delta", 4)}, out: empty, store: two},
			}
		})
	})
}

// fkNullableTopology is fkTopology's join (left or inner) with a nullable
// foreign key (the right table keyed by *string), extract giving it,
// materialized in "store".
func fkNullableTopology(left bool, extract func(string) *string) *dsl.Builder {
	str := serde.String()
	ptr := serde.Pointer(str)
	b := dsl.NewBuilder()
	lt := dsl.Table(b, "left", dsl.ConsumedWith(str, str))
	rt := dsl.Table(b, "right", dsl.ConsumedWith(ptr, ptr))
	joiner := func(l string, r *string) string {
		if r == nil {
			return "(" + l + ",null)"
		}
		return "(" + l + "," + *r + ")"
	}
	join := dsl.TableJoinForeignKey[string, string, *string, *string, string]
	if left {
		join = dsl.TableLeftJoinForeignKey[string, string, *string, *string, string]
	}
	join(lt, rt, extract, joiner, dsl.MaterializedAs[string, string]("store")).ToStream().To("out", dsl.ProducedWith(str, str))
	return b
}

// fkSplitNull is the extractor of shouldEmitRecordWhenOldAndNewFkDiffer:
// the part after "|", null for "returnNull".
func fkSplitNull(v string) *string {
	if fk := strings.Split(v, "|")[1]; fk != "returnNull" {
		return &fk
	}
	return nil
}

// TestForeignKeyLeftJoinNullForeignKeyKafkaStreams transcribes Kafka
// Streams' KTableKTableForeignKeyJoinIntegrationTest
// .shouldEmitRecordOnNullForeignKeyForLeftJoins and
// .shouldEmitRecordWhenOldAndNewFkDiffer: a left join emits the left value
// joined with null for a null foreign key, and a change to a null foreign
// key unsubscribes the old one (its subscription store entry, Kafka
// Streams' CombinedKeySchema layout, is gone).
func TestForeignKeyLeftJoinNullForeignKeyKafkaStreams(t *testing.T) {
	const subscriptions = "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010"
	t.Run("shouldEmitRecordOnNullForeignKeyForLeftJoins", func(t *testing.T) {
		d := tjDriver(t, fkNullableTopology(true, func(string) *string { return nil }))
		tjPipe(t, d, tjPut("left", "lhs1", "lhsValue1|rhs1", 0))
		want := fkKV("lhs1", "(lhsValue1|rhs1,null)")
		if got := tjRead(t, d, "out"); len(got) != 1 || got[0].Value != want["lhs1"] {
			t.Fatalf("output %v, want %v", got, want)
		}
		if got := fkStore(t, d, "store"); !maps.Equal(got, want) {
			t.Fatalf("store %v, want %v", got, want)
		}
	})
	t.Run("shouldEmitRecordWhenOldAndNewFkDiffer", func(t *testing.T) {
		d := tjDriver(t, fkNullableTopology(true, fkSplitNull))
		subs, err := testdriver.KeyValueStore[[]byte, []byte](d, subscriptions)
		if err != nil {
			t.Fatal(err)
		}
		// Kafka Streams' subscriptionStoreKey("lhs1", "rhs1").
		key := append([]byte{0, 0, 0, 4}, "rhs1lhs1"...)
		for _, step := range []struct {
			value      string
			subscribed bool
		}{
			{"lhsValue1|rhs1", true},
			{"lhsValue1|returnNull", false},
		} {
			tjPipe(t, d, tjPut("left", "lhs1", step.value, 0))
			want := fkKV("lhs1", "("+step.value+",null)")
			got := map[string]string{}
			for _, r := range tjRead(t, d, "out") {
				got[r.Key] = r.Value
			}
			if !maps.Equal(got, want) {
				t.Fatalf("%s: output %v, want %v", step.value, got, want)
			}
			if got := fkStore(t, d, "store"); !maps.Equal(got, want) {
				t.Fatalf("%s: store %v, want %v", step.value, got, want)
			}
			if _, found, err := subs.Get(key); err != nil || found != step.subscribed {
				t.Fatalf("%s: subscription of lhs1 to rhs1 stored: %v (%v), want %v", step.value, found, err, step.subscribed)
			}
		}
	})
}

// TestForeignKeyJoinRecords pins every record a foreign-key join forwards,
// with its timestamp, where the Kafka Streams tests above compare only the
// last value per key. The rules are Kafka Streams' (foreignkeyjoin
// package, 4.x): a left change is stamped with the larger of its own and
// the right value's timestamps (SubscriptionJoinProcessorSupplier), a
// right change with its own (ForeignTableJoinProcessorSupplier); a key
// moving to another foreign key is answered once, by the new one (since
// apache/kafka#20605; before it a left join answered from the old one
// too); an inner join deletes a key that moves to a foreign key without a
// match.
func TestForeignKeyJoinRecords(t *testing.T) {
	l := func(k, v string, ts int64) tjIn { return tjPut("left", k, v, ts) }
	r := func(k, v string, ts int64) tjIn { return tjPut("right", k, v, ts) }
	in := []tjStep{
		{in: []tjIn{r("rhs1", "R1", 5), l("lhs1", "a|rhs1", 3)}},
		{in: []tjIn{l("lhs1", "b|rhs1", 7)}},
		{in: []tjIn{r("rhs1", "R1b", 6)}},
		{in: []tjIn{l("lhs1", "c|rhs2", 8)}},
		{in: []tjIn{r("rhs2", "R2", 9)}},
		{in: []tjIn{tjDel("right", "rhs2", 10)}},
		{in: []tjIn{tjDel("left", "lhs1", 11)}},
	}
	want := map[bool][][]tjRec{
		true: {
			{tjVal("lhs1", "(a|rhs1,R1)", 5)},
			{tjVal("lhs1", "(b|rhs1,R1)", 7)},
			{tjVal("lhs1", "(b|rhs1,R1b)", 6)},
			{tjVal("lhs1", "(c|rhs2,null)", 8)},
			{tjVal("lhs1", "(c|rhs2,R2)", 9)},
			{tjVal("lhs1", "(c|rhs2,null)", 10)},
			{tjNull("lhs1", 11)},
		},
		false: {
			{tjVal("lhs1", "(a|rhs1,R1)", 5)},
			{tjVal("lhs1", "(b|rhs1,R1)", 7)},
			{tjVal("lhs1", "(b|rhs1,R1b)", 6)},
			{tjNull("lhs1", 8)},
			{tjVal("lhs1", "(c|rhs2,R2)", 9)},
			{tjNull("lhs1", 10)},
			{tjNull("lhs1", 11)},
		},
	}
	for _, left := range []bool{true, false} {
		t.Run(fmt.Sprintf("left=%v", left), func(t *testing.T) {
			steps := make([]tjStep, len(in))
			for i := range in {
				steps[i] = tjStep{in: in[i].in, want: want[left][i]}
			}
			tjRun(t, tjDriver(t, fkTopology(left, "")), steps)
		})
	}
}

// TestForeignKeyInnerJoinInstructions pins the inner join's instructions
// as Kafka Streams' SubscriptionSendProcessorSupplier has them since
// KAFKA-16407 (4.1) and apache/kafka#20605: a value whose foreign key
// becomes null deletes the row it had (and is dropped, counted as
// null_key); one whose foreign key was null and now names a row joins it;
// an update keeping a foreign key that has no match forwards nothing, not
// even a tombstone (the old value had no row either).
func TestForeignKeyInnerJoinInstructions(t *testing.T) {
	d := tjDriver(t, fkNullableTopology(false, fkSplitNull))
	tjRun(t, d, []tjStep{
		{in: []tjIn{tjPut("right", "rhs1", "R1", 0), tjPut("left", "lhs1", "a|rhs1", 1)}, want: []tjRec{tjVal("lhs1", "(a|rhs1,R1)", 1)}},
		{in: []tjIn{tjPut("left", "lhs1", "b|returnNull", 2)}, want: []tjRec{tjNull("lhs1", 2)}},
		{in: []tjIn{tjPut("left", "lhs1", "c|rhs1", 3)}, want: []tjRec{tjVal("lhs1", "(c|rhs1,R1)", 3)}},
		{in: []tjIn{tjPut("left", "lhs2", "x|rhs9", 4), tjPut("left", "lhs2", "y|rhs9", 5)}},
		// Moving to another foreign key without a match: a tombstone,
		// since the old one may have joined.
		{in: []tjIn{tjPut("left", "lhs2", "z|rhs8", 6)}, want: []tjRec{tjNull("lhs2", 6)}},
	})
	if got := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != 1 {
		t.Fatalf("null_key drops %v, want 1", got)
	}
}

// TestForeignKeyJoinOfDerivedTables: both sides may be tables without a
// store of their own. The right side is looked up through the table it
// derives from (a filter: a row that no longer passes is a delete); the
// left side's changes carry their old values, from which the
// subscriptions are worked out.
func TestForeignKeyJoinOfDerivedTables(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	lt := dsl.MapTableValues(dsl.Table(b, "left", dsl.ConsumedWith(str, str)), func(_, v string) string { return strings.ToUpper(v) })
	rt := dsl.Table(b, "right", dsl.ConsumedWith(str, str)).Filter(func(_, v string) bool { return !strings.HasPrefix(v, "hidden") })
	extract := func(v string) string { return strings.ToLower(strings.Split(v, "|")[1]) }
	dsl.TableJoinForeignKey(lt, rt, extract, func(l, r string) string { return "(" + l + "," + r + ")" }).ToStream().To("out", dsl.ProducedWith(str, str))
	tjRun(t, tjDriver(t, b), []tjStep{
		{in: []tjIn{tjPut("right", "rhs1", "R1", 0), tjPut("left", "lhs1", "a|rhs1", 1)}, want: []tjRec{tjVal("lhs1", "(A|RHS1,R1)", 1)}},
		// The filter turns the right row into a delete: the row goes.
		{in: []tjIn{tjPut("right", "rhs1", "hidden", 2)}, want: []tjRec{tjNull("lhs1", 2)}},
		// A left update looks the right row up through the filter: none.
		{in: []tjIn{tjPut("left", "lhs1", "b|rhs1", 3)}},
		{in: []tjIn{tjPut("right", "rhs1", "R1b", 4)}, want: []tjRec{tjVal("lhs1", "(B|RHS1,R1b)", 4)}},
	})
}

// TestForeignKeyJoinWithKey: the extractor of the WithKey forms sees the
// left key too (Kafka Streams' ForeignKeyExtractor.fromBiFunction,
// KIP-1104): here an order's customer is named by its key's prefix.
func TestForeignKeyJoinWithKey(t *testing.T) {
	str := serde.String()
	ptr := serde.Pointer(str)
	b := dsl.NewBuilder()
	lt := dsl.Table(b, "left", dsl.ConsumedWith(str, str))
	rt := dsl.Table(b, "right", dsl.ConsumedWith(str, ptr))
	extract := func(k, _ string) string { return strings.Split(k, "/")[0] }
	joiner := func(l string, r *string) string {
		if r == nil {
			return l + "+null"
		}
		return l + "+" + *r
	}
	dsl.TableLeftJoinForeignKeyWithKey(lt, rt, extract, joiner).ToStream().To("out", dsl.ProducedWith(str, str))
	tjRun(t, tjDriver(t, b), []tjStep{
		{in: []tjIn{tjPut("right", "c1", "Alice", 0), tjPut("left", "c1/o1", "coffee", 1), tjPut("left", "c2/o2", "tea", 2)},
			want: []tjRec{tjVal("c1/o1", "coffee+Alice", 1), tjVal("c2/o2", "tea+null", 2)}},
		{in: []tjIn{tjPut("right", "c2", "Bob", 3)}, want: []tjRec{tjVal("c2/o2", "tea+Bob", 3)}},
	})
}

// TestForeignKeyJoinThroughRepartitionTopics: under
// stoatflow.topology.rekey=topic a foreign-key join crosses two topics,
// named as Kafka Streams names them: the subscription topic, and the
// response topic, which the left table's copy joins (written by the
// left table's sub-topology and the right table's, read by the
// resolver's), so that the copy and the answers of a key keep their
// order in one partition. The copy's own source reads nothing.
func TestForeignKeyJoinThroughRepartitionTopics(t *testing.T) {
	c := map[string]string{"application.id": "fk", "default.key.serde": "string", "default.value.serde": "string"}
	if _, err := fkTopology(true, "").Topology().Build(config.New(c)); err != nil {
		t.Fatalf("in memory: %v", err)
	}
	c[config.TopologyRekey] = config.RekeyTopic
	built, err := fkTopology(true, "").Topology().Build(config.New(c))
	if err != nil {
		t.Fatalf("through topics: %v", err)
	}
	var topics []string
	for _, rp := range built.Repartitions {
		topics = append(topics, rp.Topic)
	}
	want := []string{"fk-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", "fk-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"}
	if !slices.Equal(topics, want) {
		t.Fatalf("repartition topics %v, want %v", topics, want)
	}
	resp := built.Repartitions[1]
	if len(resp.SinkNodes) != 2 {
		t.Fatalf("response topic written by %v, want the response sink and the copy's", resp.SinkNodes)
	}
	subs := map[int]bool{}
	for _, s := range resp.SinkNodes {
		n := built.Nodes[s]
		if n.Sink.Topic != resp.Topic || n.Boundary != nil {
			t.Errorf("sink %s writes %q (boundary %v), want %s", s, n.Sink.Topic, n.Boundary, resp.Topic)
		}
		subs[n.Subtopology] = true
	}
	if len(subs) != 2 {
		t.Errorf("the response topic's writers sit in sub-topologies %v, want two", subs)
	}
	if got := built.SourceTopics[resp.Topic]; got != resp.SourceNode {
		t.Errorf("response topic read by %q, want %s", got, resp.SourceNode)
	}
	for name, n := range built.Nodes {
		if n.Kind == topology.SourceNode && strings.HasSuffix(name, "-primary-source") && len(n.Source.Topics) != 0 {
			t.Errorf("the copy's source %s reads %v, want nothing", name, n.Source.Topics)
		}
	}
}

// TestForeignKeyJoinVersionedKafkaStreams is Kafka Streams'
// KTableKTableForeignKeyJoinIntegrationTest.shouldIgnoreOutOfOrderRecordsIffVersioned:
// an out-of-order update of a versioned side, a tombstone included,
// changes no row; of a side that is not versioned, it does; a newer
// update always does.
func TestForeignKeyJoinVersionedKafkaStreams(t *testing.T) {
	l := func(k, v string, ts int64) tjIn { return tjPut("left", k, v, ts) }
	r := func(k, v string, ts int64) tjIn { return tjPut("right", k, v, ts) }
	for _, lv := range []bool{true, false} {
		for _, rv := range []bool{true, false} {
			t.Run(fmt.Sprintf("leftVersioned=%v/rightVersioned=%v", lv, rv), func(t *testing.T) {
				build := func(left bool, store string) *dsl.Builder { return fkVersionedTopology(left, store, lv, rv) }
				fkRunOn(t, build, func(left bool) []fkStep {
					first := fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)", "lhs2", "(lhsValue2|rhs1,rhsValue1)")
					steps := []fkStep{
						{in: []tjIn{r("rhs1", "rhsValue1", 4)}, out: map[string]string{}, store: map[string]string{}},
						{in: []tjIn{l("lhs1", "lhsValue1|rhs1", 3), l("lhs2", "lhsValue2|rhs1", 5)}, out: first, store: first},
						{in: []tjIn{tjDel("left", "lhs2", 6)}, out: fkKV("lhs2", fkNull), store: fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)")},
					}
					ooo := []tjIn{l("lhs1", "lhsValue1_ooo|rhs1", 2), l("lhs2", "lhsValue2_ooo|rhs1", 2)}
					if lv {
						steps = append(steps,
							fkStep{in: ooo, out: map[string]string{}, store: fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)")},
							fkStep{in: []tjIn{tjDel("left", "lhs1", 2)}, out: map[string]string{}, store: fkKV("lhs1", "(lhsValue1|rhs1,rhsValue1)")})
					} else {
						both := fkKV("lhs1", "(lhsValue1_ooo|rhs1,rhsValue1)", "lhs2", "(lhsValue2_ooo|rhs1,rhsValue1)")
						steps = append(steps,
							fkStep{in: ooo, out: both, store: both},
							fkStep{in: []tjIn{tjDel("left", "lhs1", 2)}, out: fkKV("lhs1", fkNull), store: fkKV("lhs2", "(lhsValue2_ooo|rhs1,rhsValue1)")})
					}
					newer := fkKV("lhs1", "(lhsValue1_new|rhs1,rhsValue1)", "lhs2", "(lhsValue2_new|rhs1,rhsValue1)")
					steps = append(steps, fkStep{in: []tjIn{l("lhs1", "lhsValue1_new|rhs1", 8), l("lhs2", "lhsValue2_new|rhs1", 8)}, out: newer, store: newer})
					if rv {
						steps = append(steps,
							fkStep{in: []tjIn{r("rhs1", "rhsValue1_ooo", 1)}, out: map[string]string{}, store: newer},
							fkStep{in: []tjIn{tjDel("right", "rhs1", 1)}, out: map[string]string{}, store: newer})
					} else {
						ooo := fkKV("lhs1", "(lhsValue1_new|rhs1,rhsValue1_ooo)", "lhs2", "(lhsValue2_new|rhs1,rhsValue1_ooo)")
						steps = append(steps, fkStep{in: []tjIn{r("rhs1", "rhsValue1_ooo", 1)}, out: ooo, store: ooo})
						if left {
							nulls := fkKV("lhs1", "(lhsValue1_new|rhs1,null)", "lhs2", "(lhsValue2_new|rhs1,null)")
							steps = append(steps, fkStep{in: []tjIn{tjDel("right", "rhs1", 1)}, out: nulls, store: nulls})
						} else {
							steps = append(steps, fkStep{in: []tjIn{tjDel("right", "rhs1", 1)}, out: fkKV("lhs1", fkNull, "lhs2", fkNull), store: map[string]string{}})
						}
					}
					last := fkKV("lhs1", "(lhsValue1_new|rhs1,rhsValue1_new)", "lhs2", "(lhsValue2_new|rhs1,rhsValue1_new)")
					return append(steps, fkStep{in: []tjIn{r("rhs1", "rhsValue1_new", 6)}, out: last, store: last})
				})
			})
		}
	}
}

// TestDescribeThroughRepartitionTopics: under rekey=topic the description
// shows each boundary as Kafka Streams' TopologyDescription does, a sink
// and a source of its topic (named without the application id), the
// copy's sink writing the response topic; in memory it shows the
// boundaries. A value of the key that is neither is an error.
func TestDescribeThroughRepartitionTopics(t *testing.T) {
	top := fkTopology(true, "").Topology()
	d, err := top.DescribeWith(config.New(map[string]string{config.TopologyRekey: config.RekeyTopic}))
	if err != nil {
		t.Fatal(err)
	}
	const resp = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"
	writers, readers := 0, 0
	for _, st := range d.Data().Subtopologies {
		for _, n := range st.Nodes {
			if n.Boundary != nil {
				t.Errorf("node %s described with an in-memory boundary under rekey=topic", n.Name)
			}
			if n.Topic == resp {
				writers++
			}
			if slices.Contains(n.Topics, resp) {
				readers++
			}
		}
	}
	if writers != 2 || readers != 1 {
		t.Errorf("%s written by %d sinks and read by %d sources, want 2 and 1:\n%s", resp, writers, readers, d)
	}
	if !strings.Contains(d.String(), "(topic: KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic)") {
		t.Errorf("no sink of the subscription topic:\n%s", d)
	}
	if mem := top.Describe(); !strings.Contains(mem.String(), "in-memory boundary") {
		t.Errorf("the default description lost its boundaries:\n%s", mem)
	}
	if _, err := top.DescribeWith(config.New(map[string]string{config.TopologyRekey: "kafka"})); err == nil || !strings.Contains(err.Error(), config.TopologyRekey) {
		t.Errorf("rekey=kafka: %v, want an error naming %s", err, config.TopologyRekey)
	}
}
