package dsl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// ksPairJoiner is SuppressScenarioTest's joiner,
// String.format("(%s,%s)", l, r), a missing side printed as "null": the
// sides are pointers, nil for Java's null.
func ksPairJoiner(l, r *string) string {
	s := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	return "(" + s(l) + "," + s(r) + ")"
}

// ksSuppressJoinTables builds SuppressScenarioTest's two tables, "left"
// and "right", with the one named by suppressed under
// untilTimeLimit(10 ms, unbounded()), and outer-joins them into "out".
func ksSuppressJoinTables(suppressed string) *dsl.Builder {
	str := serde.String()
	ptr := serde.Pointer(str)
	b := dsl.NewBuilder()
	table := func(topic string) dsl.KTable[string, *string] {
		t := dsl.Table(b, topic, dsl.ConsumedWith(str, ptr))
		if topic == suppressed {
			t = t.Suppress(dsl.UntilTimeLimit(10*time.Millisecond, dsl.Unbounded()))
		}
		return t
	}
	left, right := table("left"), table("right")
	dsl.TableOuterJoin(left, right, ksPairJoiner).ToStream().To("out", dsl.ProducedWith(str, str))
	return b
}

// TestSuppressedTableJoinKafkaStreams transcribes Kafka Streams'
// SuppressScenarioTest.shouldWorkBeforeJoinRight and
// shouldWorkBeforeJoinLeft: one side of an outer table-table join is
// suppressed for 10 ms of event time, and the join reads it through the
// buffer (KTableSuppressProcessorSupplier.view): a buffered key reads what
// the suppression last let through, a released key reads the table. The
// driver's watermark is the largest timestamp piped, as Kafka Streams'
// stream time is, so the releases fall on the same records.
func TestSuppressedTableJoinKafkaStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		// suppressed is the suppressed side; the other is "fed".
		suppressed, fed string
		// pair prints a joined row with the suppressed side's value s and
		// the other's o.
		pair func(s, o string) string
	}{
		{"shouldWorkBeforeJoinRight", "right", "left", func(s, o string) string { return "(" + o + "," + s + ")" }},
		{"shouldWorkBeforeJoinLeft", "left", "right", func(s, o string) string { return "(" + s + "," + o + ")" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tjDriver(t, ksSuppressJoinTables(tc.suppressed))
			sup, fed, pair := tc.suppressed, tc.fed, tc.pair
			tjRun(t, d, []tjStep{
				// Buffered, no output.
				{in: []tjIn{tjPut(sup, "B", "1", 0), tjPut(sup, "A", "1", 0)}},
				// Flushes the buffer, in buffer-time then key order.
				{in: []tjIn{tjPut(sup, "tick", "tick", 10)}, want: []tjRec{tjVal("A", pair("1", "null"), 0), tjVal("B", pair("1", "null"), 0)}},
				// Buffered, no output.
				{in: []tjIn{tjPut(sup, "A", "2", 11)}},
				// Joins with the previously emitted suppressed side.
				{in: []tjIn{tjPut(fed, "A", "a", 12)}, want: []tjRec{tjVal("A", pair("1", "a"), 12)}},
				// Views through to the parent table: B is no longer buffered.
				{in: []tjIn{tjPut(fed, "B", "b", 12)}, want: []tjRec{tjVal("B", pair("1", "b"), 12)}},
				{in: []tjIn{tjPut(fed, "A", "b", 13)}, want: []tjRec{tjVal("A", pair("1", "b"), 13)}},
				// "tick" (buffered at 10) and A (at 11) are released; "tick"
				// is "just a testing artifact" in Kafka Streams' words.
				{in: []tjIn{tjPut(sup, "tick", "tick1", 21)}, want: []tjRec{tjVal("tick", pair("tick1", "null"), 21), tjVal("A", pair("2", "b"), 13)}},
			})
		})
	}
}

// TestSuppressedTableLookups: the other joins that read a suppressed
// table through its buffer. Kafka Streams has no test of its own for
// these; they hold the rule its view implements (KTableSuppressProcessor
// Supplier.view, InMemoryTimeOrderedKeyValueChangeBuffer
// .priorValueForBuffered): a key first buffered with no prior value reads
// as absent until released, so an inner join has no row for it and a
// stream-table join drops, or left-joins with null, a record meeting it.
func TestSuppressedTableLookups(t *testing.T) {
	str := serde.String()
	ptr := serde.Pointer(str)
	held := func(b *dsl.Builder) dsl.KTable[string, *string] {
		return dsl.Table(b, "right", dsl.ConsumedWith(str, ptr)).Suppress(dsl.UntilTimeLimit(10*time.Millisecond, dsl.Unbounded()))
	}
	for _, tc := range []struct {
		name  string
		build func(b *dsl.Builder)
		steps []tjStep
	}{
		{"table inner join", func(b *dsl.Builder) {
			left := dsl.Table(b, "left", dsl.ConsumedWith(str, ptr))
			dsl.TableJoin(left, held(b), ksPairJoiner).ToStream().To("out", dsl.ProducedWith(str, str))
		}, []tjStep{
			{in: []tjIn{tjPut("right", "A", "1", 0), tjPut("left", "A", "a", 1)}},
			// Released: the join's other side sees it.
			{in: []tjIn{tjPut("left", "x", "x", 10)}, want: []tjRec{tjVal("A", "(a,1)", 1)}},
			// A buffered update of A reads the released value, then a
			// buffered delete does too, until the release forwards it.
			{in: []tjIn{tjPut("right", "A", "2", 11), tjPut("left", "A", "b", 12)}, want: []tjRec{tjVal("A", "(b,1)", 12)}},
			{in: []tjIn{tjDel("right", "A", 13), tjPut("left", "A", "c", 14)}, want: []tjRec{tjVal("A", "(c,1)", 14)}},
			{in: []tjIn{tjPut("left", "x", "y", 21)}, want: []tjRec{tjNull("A", 14)}},
			{in: []tjIn{tjPut("left", "A", "d", 22)}},
		}},
		{"stream join", func(b *dsl.Builder) {
			s := dsl.Stream(b, dsl.ConsumedWith(str, str), "orders")
			dsl.JoinTable(s, held(b), func(_ string, v string, r *string) string { return v + "+" + *r }).To("out", dsl.ProducedWith(str, str))
		}, []tjStep{
			// A is buffered with no prior value: absent.
			{in: []tjIn{tjPut("right", "A", "1", 0), tjPut("orders", "A", "o1", 1)}},
			// Released by the watermark of x's pipe; then buffered
			// again, reading the released value.
			{in: []tjIn{tjPut("orders", "x", "o2", 10)}},
			{in: []tjIn{tjPut("right", "A", "2", 11), tjPut("orders", "A", "o3", 12)}, want: []tjRec{tjVal("A", "o3+1", 12)}},
			{in: []tjIn{tjPut("orders", "x", "o4", 21), tjPut("orders", "A", "o5", 22)}, want: []tjRec{tjVal("A", "o5+2", 22)}},
		}},
		{"stream left join", func(b *dsl.Builder) {
			s := dsl.Stream(b, dsl.ConsumedWith(str, str), "orders")
			dsl.LeftJoinTable(s, held(b), func(_ string, v string, r *string) string { return ksPairJoiner(&v, r) }).To("out", dsl.ProducedWith(str, str))
		}, []tjStep{
			{in: []tjIn{tjPut("right", "A", "1", 0), tjPut("orders", "A", "o1", 1)}, want: []tjRec{tjVal("A", "(o1,null)", 1)}},
			// The record whose pipe moves the watermark to A's release
			// is joined first: the release follows the record.
			{in: []tjIn{tjPut("orders", "A", "o2", 10)}, want: []tjRec{tjVal("A", "(o2,null)", 10)}},
			{in: []tjIn{tjPut("orders", "A", "o3", 11)}, want: []tjRec{tjVal("A", "(o3,1)", 11)}},
		}},
		{"filtered suppressed table", func(b *dsl.Builder) {
			left := dsl.Table(b, "left", dsl.ConsumedWith(str, ptr))
			odd := held(b).Filter(func(_ string, v *string) bool { return *v != "2" })
			dsl.TableLeftJoin(left, odd, ksPairJoiner).ToStream().To("out", dsl.ProducedWith(str, str))
		}, []tjStep{
			{in: []tjIn{tjPut("right", "A", "1", 0), tjPut("left", "A", "a", 1)}, want: []tjRec{tjVal("A", "(a,null)", 1)}},
			{in: []tjIn{tjPut("left", "x", "x", 10)}, want: []tjRec{tjVal("x", "(x,null)", 10), tjVal("A", "(a,1)", 1)}},
			// Buffered: the filter sees the prior value, 1, and keeps it.
			{in: []tjIn{tjPut("right", "A", "2", 11), tjPut("left", "A", "b", 12)}, want: []tjRec{tjVal("A", "(b,1)", 12)}},
			// Released: 2 leaves the filter, a delete of A on the right.
			{in: []tjIn{tjPut("left", "x", "y", 21)}, want: []tjRec{tjVal("x", "(y,null)", 21), tjVal("A", "(b,null)", 12)}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
			tjRun(t, tjDriver(t, b), tc.steps)
		})
	}
}

// TestSuppressedUntilBarrierRefusesJoins: a table suppressed until the
// barrier keeps its buffer in memory, where no join can read it, so Build
// refuses the join, naming the suppress node, and a join of a table
// derived from it too.
func TestSuppressedUntilBarrierRefusesJoins(t *testing.T) {
	str := serde.String()
	for _, derived := range []bool{false, true} {
		b := dsl.NewBuilder()
		held := dsl.Table(b, "right", dsl.ConsumedWith(str, str)).Suppress(dsl.UntilBarrier(dsl.Unbounded()), dsl.Name("held"))
		if derived {
			held = held.Filter(func(string, string) bool { return true })
		}
		left := dsl.Table(b, "left", dsl.ConsumedWith(str, str))
		dsl.TableJoin(left, held, func(a, b string) string { return a + b }).ToStream().To("out")
		_, err := testdriver.New(b.Topology(), map[string]string{"default.key.serde": "string", "default.value.serde": "string"})
		if err == nil || !strings.Contains(err.Error(), "reads held, suppressed until the barrier") {
			t.Errorf("derived=%v: build: %v, want the barrier refusal naming held", derived, err)
		}
	}
}
