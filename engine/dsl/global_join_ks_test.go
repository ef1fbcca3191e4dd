package dsl_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// ksGlobalInputs pipes the inputs of Kafka Streams'
// KStreamGlobalKTableJoinTest and KStreamGlobalKTableLeftJoinTest: stream
// records keyed 0..3 whose value is "<prefix><i>", followed by
// ",FKey<i>" (the global table's key) when they carry a foreign key, and
// global table records keyed FKey<i>. Stream timestamps advance by one
// from 0 for each record, as the tests' input topic does; global records
// take the global topic's own count (their time joins nothing).
type ksGlobalInputs struct{ streamTS, globalTS int64 }

// stream is the tests' pushToStream(n, prefix, withForeignKey, nullKey):
// with nullKey the first record has a null key.
func (g *ksGlobalInputs) stream(n int, prefix string, withForeignKey, nullKey bool) []tjIn {
	var in []tjIn
	for i := range n {
		k := strconv.Itoa(i)
		v := prefix + k
		if withForeignKey {
			v += ",FKey" + k
		}
		r := tjPut("s", k, v, g.streamTS)
		if nullKey && i == 0 {
			r = tjNoKey("s", v, g.streamTS)
		}
		in = append(in, r)
		g.streamTS++
	}
	return in
}

// global is pushToGlobalTable(n, prefix).
func (g *ksGlobalInputs) global(n int, prefix string) []tjIn {
	var in []tjIn
	for i := range n {
		k := strconv.Itoa(i)
		in = append(in, tjPut("g", "FKey"+k, prefix+k, g.globalTS))
		g.globalTS++
	}
	return in
}

// globalDeletes is pushNullValueToGlobalTable(n).
func (g *ksGlobalInputs) globalDeletes(n int) []tjIn {
	var in []tjIn
	for i := range n {
		in = append(in, tjDel("g", "FKey"+strconv.Itoa(i), g.globalTS))
		g.globalTS++
	}
	return in
}

// TestGlobalTableJoinKafkaStreams transcribes Kafka Streams'
// KStreamGlobalKTableJoinTest (inner) and KStreamGlobalKTableLeftJoinTest
// (left), method by method, through the test driver. The key mapper reads
// the value's second comma-separated token and returns null when there is
// none; the joiner is MockValueJoiner.TOSTRING_JOINER ("<left>+<right>",
// a missing right side printed as "null", which a pointer value type lets
// ours print too).
//
// For the left join with a null mapped key, Kafka Streams 4.4 follows
// KAFKA-19208 (apache/kafka#19580, Kafka 4.1): KStreamKTableJoinProcessor
// keeps a left-join record whose mapped key is null (whatever its stream
// key) and joins it with null, where 2.7 to 4.0 dropped it (their
// KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnNullKeyMapperValues
// expected nothing). The left "null mapped key" rows below hold 4.4's
// rule, read from that processor's source; the inner join still drops
// such records and counts them.
func TestGlobalTableJoinKafkaStreams(t *testing.T) {
	type scenario func(in *ksGlobalInputs) []tjStep
	tests := []struct {
		name string // Kafka Streams' test class and method
		left bool
		run  scenario
		// dropped is the null-key drop count (Kafka Streams'
		// dropped-records sensor) after the scenario.
		dropped int64
	}{
		{"KStreamGlobalKTableJoinTest/shouldNotJoinWithEmptyGlobalTableOnStreamUpdates", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{{in: in.stream(2, "X", true, false)}}
		}, 0},
		{"KStreamGlobalKTableLeftJoinTest/shouldNotJoinWithEmptyGlobalTableOnStreamUpdates", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{{in: in.stream(2, "X", true, false),
				want: []tjRec{tjVal("0", "X0,FKey0+null", 0), tjVal("1", "X1,FKey1+null", 1)}}}
		}, 0},
		{"KStreamGlobalKTableJoinTest/shouldNotJoinOnGlobalTableUpdates", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.stream(2, "X", true, false)},
				{in: in.global(2, "Y")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+Y0", 2), tjVal("1", "X1,FKey1+Y1", 3)}},
				{in: in.global(4, "YY")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+YY0", 6), tjVal("1", "X1,FKey1+YY1", 7),
					tjVal("2", "X2,FKey2+YY2", 8), tjVal("3", "X3,FKey3+YY3", 9)}},
				{in: in.global(4, "YYY")},
			}
		}, 0},
		{"KStreamGlobalKTableLeftJoinTest/shouldNotJoinOnGlobalTableUpdates", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.stream(2, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+null", 0), tjVal("1", "X1,FKey1+null", 1)}},
				{in: in.global(2, "Y")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+Y0", 2), tjVal("1", "X1,FKey1+Y1", 3),
					tjVal("2", "X2,FKey2+null", 4), tjVal("3", "X3,FKey3+null", 5)}},
				{in: in.global(4, "YY")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+YY0", 6), tjVal("1", "X1,FKey1+YY1", 7),
					tjVal("2", "X2,FKey2+YY2", 8), tjVal("3", "X3,FKey3+YY3", 9)}},
				{in: in.global(4, "YYY")},
			}
		}, 0},
		{"KStreamGlobalKTableJoinTest/shouldJoinOnlyIfMatchFoundOnStreamUpdates", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(2, "Y")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+Y0", 0), tjVal("1", "X1,FKey1+Y1", 1)}},
			}
		}, 0},
		{"KStreamGlobalKTableLeftJoinTest/shouldJoinRegardlessIfMatchFoundOnStreamUpdates", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(2, "Y")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+Y0", 0), tjVal("1", "X1,FKey1+Y1", 1),
					tjVal("2", "X2,FKey2+null", 2), tjVal("3", "X3,FKey3+null", 3)}},
			}
		}, 0},
		{"KStreamGlobalKTableJoinTest/shouldClearGlobalTableEntryOnNullValueUpdates", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+Y0", 0), tjVal("1", "X1,FKey1+Y1", 1),
					tjVal("2", "X2,FKey2+Y2", 2), tjVal("3", "X3,FKey3+Y3", 3)}},
				{in: in.globalDeletes(2)},
				{in: in.stream(4, "XX", true, false), want: []tjRec{tjVal("2", "XX2,FKey2+Y2", 6), tjVal("3", "XX3,FKey3+Y3", 7)}},
			}
		}, 0},
		{"KStreamGlobalKTableLeftJoinTest/shouldClearGlobalTableEntryOnNullValueUpdates", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(4, "X", true, false), want: []tjRec{tjVal("0", "X0,FKey0+Y0", 0), tjVal("1", "X1,FKey1+Y1", 1),
					tjVal("2", "X2,FKey2+Y2", 2), tjVal("3", "X3,FKey3+Y3", 3)}},
				{in: in.globalDeletes(2)},
				{in: in.stream(4, "XX", true, false), want: []tjRec{tjVal("0", "XX0,FKey0+null", 4), tjVal("1", "XX1,FKey1+null", 5),
					tjVal("2", "XX2,FKey2+Y2", 6), tjVal("3", "XX3,FKey3+Y3", 7)}},
			}
		}, 0},
		{"KStreamGlobalKTableJoinTest/shouldNotJoinOnNullKeyMapperValues", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(4, "XXX", false, false)},
			}
		}, 4},
		// Kafka Streams 4.4 (KAFKA-19208): joined with null, not dropped.
		{"KStreamGlobalKTableLeftJoinTest/shouldNotJoinOnNullKeyMapperValues, as KAFKA-19208 changed it", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(4, "XXX", false, false), want: []tjRec{tjVal("0", "XXX0+null", 0), tjVal("1", "XXX1+null", 1),
					tjVal("2", "XXX2+null", 2), tjVal("3", "XXX3+null", 3)}},
			}
		}, 0},
		{"KStreamGlobalKTableJoinTest/shouldJoinOnNullKeyWithNonNullKeyMapperValues", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(2, "Y")},
				{in: in.stream(4, "X", true, true), want: []tjRec{{NullKey: true, Value: "X0,FKey0+Y0", TS: 0}, tjVal("1", "X1,FKey1+Y1", 1)}},
			}
		}, 0},
		{"KStreamGlobalKTableLeftJoinTest/shouldJoinOnNullKeyWithNonNullKeyMapperValues", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(4, "X", true, true), want: []tjRec{{NullKey: true, Value: "X0,FKey0+Y0", TS: 0}, tjVal("1", "X1,FKey1+Y1", 1),
					tjVal("2", "X2,FKey2+Y2", 2), tjVal("3", "X3,FKey3+Y3", 3)}},
			}
		}, 0},
		// No Kafka Streams test has a null stream key and a null mapped key
		// together; these rows follow KStreamKTableJoinProcessor's
		// maybeDropRecord in 4.4: the inner join drops and counts the
		// record, the left join joins it with null, its key still null.
		{"inner, null stream key and null mapped key", false, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(2, "XXX", false, true)},
			}
		}, 2},
		{"left, null stream key and null mapped key", true, func(in *ksGlobalInputs) []tjStep {
			return []tjStep{
				{in: in.global(4, "Y")},
				{in: in.stream(2, "XXX", false, true), want: []tjRec{{NullKey: true, Value: "XXX0+null", TS: 0}, tjVal("1", "XXX1+null", 1)}},
			}
		}, 0},
	}
	str := serde.String()
	keyMapper := func(_, v string) *string {
		tokens := strings.Split(v, ",")
		if len(tokens) > 1 {
			return &tokens[1]
		}
		return nil
	}
	toStringJoiner := func(_, v string, g *string) string {
		if g == nil {
			return v + "+null"
		}
		return v + "+" + *g
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			g := dsl.GlobalTable(b, "g", dsl.ConsumedWith(serde.Pointer(str), serde.Pointer(str)))
			s := dsl.Stream(b, dsl.ConsumedWith(str, str), "s")
			if tc.left {
				dsl.LeftJoinGlobal(s, g, keyMapper, toStringJoiner).To("out")
			} else {
				dsl.JoinGlobal(s, g, keyMapper, toStringJoiner).To("out")
			}
			d := tjDriver(t, b)
			tjRun(t, d, tc.run(&ksGlobalInputs{}))
			if got := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != tc.dropped {
				t.Fatalf("dropped for a null key: %d, want %d", got, tc.dropped)
			}
		})
	}
}

// TestGlobalTableRecordKeepsTime checks that a global table's record
// does not move event time, as in Kafka Streams, whose global thread never
// touches a task's stream time: a stream record behind a later-stamped
// global update is still counted into its window ([0, 10), count 2), not
// dropped as late. Under an engine.EventTime the live engine's watermark
// ignores global records too (engine/eventtime.go), so a fixture's
// `replay --engine` run agrees with the driver here.
func TestGlobalTableRecordKeepsTime(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.GlobalTable(b, "g", dsl.ConsumedWith(str, str))
	dsl.CountWindowed(dsl.Stream(b, dsl.ConsumedWith(str, str), "s").GroupByKey().
		WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Millisecond, 0)))
	d := tjDriver(t, b)
	for i, s := range []struct {
		in        tjIn
		watermark int64
	}{
		{tjPut("s", "a", "x", 5), 5},
		{tjPut("g", "k", "v", 100), 5},
		{tjPut("s", "a", "y", 6), 6},
	} {
		tjPipe(t, d, s.in)
		if got := d.Watermark(); got != s.watermark {
			t.Fatalf("step %d: watermark %d, want %d", i, got, s.watermark)
		}
		if got := d.Metrics().Value(metrics.DroppedRecords, "reason", metrics.ReasonLateWindow); got != 0 {
			t.Fatalf("step %d: %d late drops, want none", i, got)
		}
	}
}
