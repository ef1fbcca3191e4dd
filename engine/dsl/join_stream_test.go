package dsl_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// Stream-stream join tests reuse the tj helpers of the table tests; their
// own carry an sj prefix. Inputs are topics "a" (this side) and "b" (the
// other side), output "out"; plusJoiner prints a missing side as "".

const sjTick = time.Millisecond

// sjStep pipes records, then, when advance is set, moves the watermark to
// it, and expects exactly want on "out".
type sjStep struct {
	in      []tjIn
	advance int64
	want    []tjRec
}

func sjRun(t *testing.T, d *testdriver.Driver, steps []sjStep) {
	t.Helper()
	for i, s := range steps {
		for _, in := range s.in {
			tjPipe(t, d, in)
		}
		if s.advance != 0 {
			if err := d.AdvanceWatermark(s.advance); err != nil {
				t.Fatalf("step %d: advance watermark to %d: %v", i+1, s.advance, err)
			}
		}
		if got := tjRead(t, d, "out"); !slices.Equal(got, s.want) {
			t.Fatalf("step %d: got %v, want %v", i+1, got, s.want)
		}
	}
}

// sjBuild joins streams "a" and "b" with join, writing the result to "out".
func sjBuild(t *testing.T, join func(a, b dsl.KStream[string, string]) dsl.KStream[string, string]) *testdriver.Driver {
	t.Helper()
	str := serde.String()
	b := dsl.NewBuilder()
	join(dsl.Stream(b, dsl.ConsumedWith(str, str), "a"), dsl.Stream(b, dsl.ConsumedWith(str, str), "b")).To("out")
	return tjDriver(t, b)
}

func sjLate(d *testdriver.Driver) int64 {
	return d.Metrics().Value(metrics.DroppedRecords, "reason", "late_window")
}

// TestStreamJoinInnerWindow checks the bounds of an asymmetric window: a
// record of a at t pairs with records of b in [t - 5, t + 10], a record of
// b at t' with records of a in [t' - 10, t' + 5], each pair once, stamped
// with the later of the two timestamps.
func TestStreamJoinInnerWindow(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceAndGrace(0, 100*sjTick).Before(5 * sjTick).After(10 * sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.JoinStream(a, b, plusJoiner, w)
	})
	sjRun(t, d, []sjStep{
		{in: []tjIn{tjPut("a", "k", "a100", 100)}},
		// 90 and 111 lie outside [95, 110]; 95 and 110 are its ends.
		{in: []tjIn{tjPut("b", "k", "b90", 90)}},
		{in: []tjIn{tjPut("b", "k", "b95", 95)}, want: []tjRec{tjVal("k", "a100+b95", 100)}},
		{in: []tjIn{tjPut("b", "k", "b110", 110)}, want: []tjRec{tjVal("k", "a100+b110", 110)}},
		{in: []tjIn{tjPut("b", "k", "b111", 111)}},
		// A record of a looks at b in [100, 115], in timestamp order.
		{in: []tjIn{tjPut("a", "k", "a105", 105)}, want: []tjRec{tjVal("k", "a105+b110", 110), tjVal("k", "a105+b111", 111)}},
		// Other keys never pair.
		{in: []tjIn{tjPut("a", "other", "x", 100), tjPut("b", "k2", "y", 100)}},
	})
	if n := sjLate(d); n != 0 {
		t.Fatalf("late drops: %d, want 0", n)
	}
}

// TestStreamJoinLeft checks the null side of a left join: an unmatched
// record of a is emitted with b's zero value and its own timestamp on the
// advance (or pipe) that carries the watermark to its close, t + after +
// 1 + grace, and not before; a record matched in time never is; records
// of b are never emitted unmatched.
func TestStreamJoinLeft(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.LeftJoinStream(a, b, plusJoiner, w)
	})
	sjRun(t, d, []sjStep{
		{in: []tjIn{tjPut("a", "A", "a0", 0), tjPut("a", "B", "b0", 2)}},
		{in: []tjIn{tjPut("b", "B", "y", 5)}, want: []tjRec{tjVal("B", "b0+y", 5)}},
		// A's window closes at 0 + 10 + 1 + 0.
		{advance: 10},
		{advance: 11, want: []tjRec{tjVal("A", "a0+", 0)}},
		{in: []tjIn{tjPut("a", "C", "c", 12)}},
		// The pipe that moves the watermark past C's close (23) emits it
		// after the record's own processing; the unmatched record of b
		// is not kept.
		{in: []tjIn{tjPut("b", "D", "d", 30)}, want: []tjRec{tjVal("C", "c+", 12)}},
		{advance: 1000},
	})
}

// TestStreamJoinOuter checks that both sides' unmatched records are
// emitted, in timestamp order, the other side first at equal timestamps
// (the outer store's (timestamp, side, key) order, as in Kafka Streams).
func TestStreamJoinOuter(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.OuterJoinStream(a, b, plusJoiner, w)
	})
	sjRun(t, d, []sjStep{
		{in: []tjIn{tjPut("a", "A", "a", 0), tjPut("b", "B", "b", 0)}},
		{in: []tjIn{tjPut("b", "A", "x", 4)}, want: []tjRec{tjVal("A", "a+x", 4)}},
		{advance: 11, want: []tjRec{tjVal("B", "+b", 0)}},
		{in: []tjIn{tjPut("a", "E", "e", 15), tjPut("b", "C", "c", 20), tjPut("a", "D", "d", 20)}},
		{advance: 30, want: []tjRec{tjVal("E", "e+", 15)}},
		{advance: 31, want: []tjRec{tjVal("C", "+c", 20), tjVal("D", "d+", 20)}},
		{advance: 1000},
	})
}

// TestStreamJoinLateBoundary checks the one late rule on both sides of an
// asymmetric window (before 20, after 10, grace 5): a record of a at t is
// late when t + 10 + 1 + 5 is at or before the floor, one of b at t' when
// t' + 20 + 1 + 5 is. A record one tick inside is admitted and joins.
func TestStreamJoinLateBoundary(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceAndGrace(10*sjTick, 5*sjTick).Before(20 * sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.LeftJoinStream(a, b, plusJoiner, w)
	})
	sjRun(t, d, []sjStep{
		{advance: 100},
		{in: []tjIn{tjPut("a", "A", "a84", 84)}},
		{in: []tjIn{tjPut("a", "A", "a85", 85)}},
		{in: []tjIn{tjPut("b", "B", "b74", 74)}},
		{in: []tjIn{tjPut("b", "B", "b75", 75)}},
		// a90 looks at b in [70, 100]: only the admitted b75 is there.
		{in: []tjIn{tjPut("a", "B", "a90", 90)}, want: []tjRec{tjVal("B", "a90+b75", 90)}},
		// The admitted, unmatched a85 closes at 101; the dropped a84
		// never appears.
		{advance: 101, want: []tjRec{tjVal("A", "a85+", 85)}},
		{advance: 1000},
	})
	if n := sjLate(d); n != 2 {
		t.Fatalf("late drops: %d, want 2", n)
	}
}

// TestStreamJoinLateRecordsJoined is TestStreamJoinLateBoundary under
// stoatflow.join.late-records=join, Kafka Streams' behaviour (its
// KStreamKStreamJoin drops no record for its window having closed): the
// late a84 finds no partner and, its window closed, is emitted unmatched
// at once; the late b74 is kept and pairs with a90 as b75 does; nothing
// is counted late.
func TestStreamJoinLateRecordsJoined(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceAndGrace(10*sjTick, 5*sjTick).Before(20 * sjTick)
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.LeftJoinStream(dsl.Stream(b, dsl.ConsumedWith(str, str), "a"), dsl.Stream(b, dsl.ConsumedWith(str, str), "b"), plusJoiner, w).To("out")
	d, err := testdriver.New(b.Topology(), map[string]string{"default.key.serde": "string", "default.value.serde": "string", config.JoinLateRecords: config.JoinLateJoin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	sjRun(t, d, []sjStep{
		{advance: 100},
		{in: []tjIn{tjPut("a", "A", "a84", 84)}, want: []tjRec{tjVal("A", "a84+", 84)}},
		{in: []tjIn{tjPut("a", "A", "a85", 85)}},
		{in: []tjIn{tjPut("b", "B", "b74", 74)}},
		{in: []tjIn{tjPut("b", "B", "b75", 75)}},
		{in: []tjIn{tjPut("a", "B", "a90", 90)}, want: []tjRec{tjVal("B", "a90+b74", 90), tjVal("B", "a90+b75", 90)}},
		{advance: 101, want: []tjRec{tjVal("A", "a85+", 85)}},
		{advance: 1000},
	})
	if n := sjLate(d); n != 0 {
		t.Fatalf("late drops: %d, want 0", n)
	}
}

// TestStreamJoinLateRecordsSetting: a value of stoatflow.join.late-records
// that is neither drop nor join fails the join's start, naming the key.
func TestStreamJoinLateRecordsSetting(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.JoinStream(dsl.Stream(b, dsl.ConsumedWith(str, str), "a"), dsl.Stream(b, dsl.ConsumedWith(str, str), "b"), plusJoiner,
		window.JoinWindowsOfTimeDifferenceWithNoGrace(10*sjTick)).To("out")
	_, err := testdriver.New(b.Topology(), map[string]string{"default.key.serde": "string", "default.value.serde": "string", config.JoinLateRecords: "keep"})
	if err == nil || !strings.Contains(err.Error(), config.JoinLateRecords) {
		t.Fatalf("error %v, want one naming %s", err, config.JoinLateRecords)
	}
}

// TestStreamJoinDuplicates checks that N identical unmatched records emit N
// results: the outer store keeps every one.
func TestStreamJoinDuplicates(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.LeftJoinStream(a, b, plusJoiner, w)
	})
	x := tjPut("a", "A", "x", 0)
	sjRun(t, d, []sjStep{
		{in: []tjIn{x, x, x}},
		{advance: 11, want: []tjRec{tjVal("A", "x+", 0), tjVal("A", "x+", 0), tjVal("A", "x+", 0)}},
		{advance: 100},
	})
}

// TestStreamJoinSelfJoin checks that the side of a record is the edge it
// arrives on: joining a stream with itself over two records of one key
// emits four results, as Kafka Streams does: each record pairs with
// itself, and with the other on both sides.
func TestStreamJoinSelfJoin(t *testing.T) {
	str := serde.String()
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	want := []tjRec{tjVal("k", "1+1", 1), tjVal("k", "2+1", 2), tjVal("k", "1+2", 2), tjVal("k", "2+2", 2)}
	tests := []struct {
		name   string
		input  func(b *dsl.Builder) dsl.KStream[string, string]
		joined []dsl.StreamJoined[string, string, string]
		topics []string
	}{
		{"source", func(b *dsl.Builder) dsl.KStream[string, string] {
			return dsl.Stream(b, dsl.ConsumedWith(str, str), "a")
		}, nil, nil},
		// A re-keyed stream crosses one boundary, shared by both sides.
		{"re-keyed", func(b *dsl.Builder) dsl.KStream[string, string] {
			return dsl.SelectKey(dsl.Stream(b, dsl.ConsumedWith(str, str), "a"), func(k, _ string) string { return k })
		}, nil, []string{"KSTREAM-KEY-SELECT-0000000001-repartition"}},
		// Named, each side crosses its own.
		{"re-keyed named", func(b *dsl.Builder) dsl.KStream[string, string] {
			return dsl.SelectKey(dsl.Stream(b, dsl.ConsumedWith(str, str), "a"), func(k, _ string) string { return k })
		}, []dsl.StreamJoined[string, string, string]{dsl.StreamJoinedWith(str, str, str).WithName("self")},
			[]string{"self-left-repartition", "self-right-repartition"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			s := tc.input(b)
			dsl.JoinStream(s, s, plusJoiner, w, tc.joined...).To("out")
			d := tjDriver(t, b)
			sjRun(t, d, []sjStep{{in: []tjIn{tjPut("a", "k", "1", 1), tjPut("a", "k", "2", 2)}, want: want}})
			var repartitions []string
			for _, topic := range d.ProducedTopicNames() {
				if strings.HasSuffix(topic, "-repartition") {
					repartitions = append(repartitions, topic)
				}
			}
			if !slices.Equal(repartitions, tc.topics) {
				t.Fatalf("boundaries %v, want %v", repartitions, tc.topics)
			}
		})
	}
}

// TestStreamJoinChainedAndMerged checks shapes that once lost records when
// a join told its sides apart by source: a join of a join, including the
// null side flushed from the first into the second in one advance, and a
// join whose first input merges in the second's source.
func TestStreamJoinChainedAndMerged(t *testing.T) {
	str := serde.String()
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	three := func(b *dsl.Builder) (dsl.KStream[string, string], dsl.KStream[string, string], dsl.KStream[string, string]) {
		c := dsl.ConsumedWith(str, str)
		return dsl.Stream(b, c, "a"), dsl.Stream(b, c, "b"), dsl.Stream(b, c, "c")
	}
	tests := []struct {
		name  string
		build func(b *dsl.Builder)
		steps []sjStep
	}{
		{"inner chain", func(b *dsl.Builder) {
			a, bs, c := three(b)
			dsl.JoinStream(dsl.JoinStream(a, bs, plusJoiner, w), c, plusJoiner, w).To("out")
		}, []sjStep{
			{in: []tjIn{tjPut("a", "k", "a", 1), tjPut("b", "k", "b", 2)}},
			{in: []tjIn{tjPut("c", "k", "c", 3)}, want: []tjRec{tjVal("k", "a+b+c", 3)}},
			{in: []tjIn{tjPut("c", "j", "c", 4), tjPut("a", "j", "a", 5), tjPut("b", "j", "b", 6)}, want: []tjRec{tjVal("j", "a+b+c", 6)}},
		}},
		{"left chain", func(b *dsl.Builder) {
			a, bs, c := three(b)
			dsl.LeftJoinStream(dsl.LeftJoinStream(a, bs, plusJoiner, w), c, plusJoiner, w).To("out")
		}, []sjStep{
			{in: []tjIn{tjPut("a", "k", "a", 0)}},
			// The first join's null side reaches the second, whose own
			// null side closes at the same frontier.
			{advance: 11, want: []tjRec{tjVal("k", "a++", 0)}},
			{in: []tjIn{tjPut("a", "j", "a", 20), tjPut("b", "j", "b", 21)}},
			{in: []tjIn{tjPut("c", "j", "c", 22)}, want: []tjRec{tjVal("j", "a+b+c", 22)}},
			{advance: 1000},
		}},
		{"merged leg", func(b *dsl.Builder) {
			c := dsl.ConsumedWith(str, str)
			a, bs := dsl.Stream(b, c, "a"), dsl.Stream(b, c, "b")
			dsl.JoinStream(a.Merge(bs), bs, plusJoiner, w).To("out")
		}, []sjStep{
			// b reaches both sides: through the merge, and directly.
			{in: []tjIn{tjPut("a", "k", "a", 1)}},
			{in: []tjIn{tjPut("b", "k", "b", 2)}, want: []tjRec{tjVal("k", "a+b", 2), tjVal("k", "b+b", 2)}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
			sjRun(t, tjDriver(t, b), tc.steps)
		})
	}
}

// TestStreamJoinExpiry checks that the window stores keep a record exactly
// as long as an admissible partner can still come: with before = after =
// 10 and grace 5, a record of a at 0 is needed by a record of b at 10,
// admitted while the floor is below 10 + 10 + 1 + 5.
func TestStreamJoinExpiry(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceAndGrace(10*sjTick, 5*sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.JoinStream(a, b, plusJoiner, w)
	})
	held := func(store string, ts int64) int {
		t.Helper()
		s, ok := d.StateStore(store)
		if !ok {
			t.Fatalf("no store %s", store)
		}
		ws, ok := s.(state.WindowStore[string, string])
		if !ok {
			t.Fatalf("store %s is a %T", store, s)
		}
		it, err := ws.FetchRange("k", ts, ts)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for it.Next() {
			n++
		}
		return n
	}
	const this, other = "KSTREAM-JOINTHIS-0000000004-store", "KSTREAM-JOINOTHER-0000000005-store"
	sjRun(t, d, []sjStep{
		{in: []tjIn{tjPut("a", "k", "l", 0)}, advance: 25},
		{in: []tjIn{tjPut("b", "k", "r", 10)}, want: []tjRec{tjVal("k", "l+r", 10)}},
	})
	if held(this, 0) != 1 || held(other, 10) != 1 {
		t.Fatalf("at 25: this store holds %d at 0, other %d at 10; want 1 and 1", held(this, 0), held(other, 10))
	}
	sjRun(t, d, []sjStep{
		{advance: 26},
		// Its partner's window has closed too: it is dropped, not
		// joined with an expired record.
		{in: []tjIn{tjPut("b", "k", "r2", 10)}},
	})
	if held(this, 0) != 0 || held(other, 10) != 1 {
		t.Fatalf("at 26: this store holds %d at 0, other %d at 10; want 0 and 1", held(this, 0), held(other, 10))
	}
	if n := sjLate(d); n != 1 {
		t.Fatalf("late drops: %d, want 1", n)
	}
	sjRun(t, d, []sjStep{{advance: 36}})
	if held(other, 10) != 0 {
		t.Fatalf("at 36: other store still holds its record at 10")
	}
}

// TestStreamJoinNulls checks Kafka Streams' rules: null values are dropped
// by every join; null keys by the inner join, while a left join emits one
// at once, unjoined (KIP-962), since nothing can ever pair with it.
func TestStreamJoinNulls(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	nulls := []tjIn{tjNoKey("a", "n", 1), tjDel("a", "k", 2), tjNoKey("b", "m", 3), tjDel("b", "k", 4)}
	tests := []struct {
		name              string
		join              func(a, b dsl.KStream[string, string]) dsl.KStream[string, string]
		want              []tjRec
		nullKeys, nullVal int64
	}{
		{"inner", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.JoinStream(a, b, plusJoiner, w)
		}, nil, 2, 2},
		{"left", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.LeftJoinStream(a, b, plusJoiner, w)
		}, []tjRec{{NullKey: true, Value: "n+", TS: 1}}, 1, 2},
		{"outer", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.OuterJoinStream(a, b, plusJoiner, w)
		}, []tjRec{{NullKey: true, Value: "n+", TS: 1}, {NullKey: true, Value: "+m", TS: 3}}, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := sjBuild(t, tc.join)
			sjRun(t, d, []sjStep{{in: nulls, want: tc.want}, {advance: 1000}})
			m := d.Metrics()
			if got := m.Value(metrics.DroppedRecords, "reason", metrics.ReasonNullKey); got != tc.nullKeys {
				t.Fatalf("dropped null keys: %d, want %d", got, tc.nullKeys)
			}
			if got := m.Value(metrics.DroppedRecords, "reason", metrics.ReasonNullValue); got != tc.nullVal {
				t.Fatalf("dropped null values: %d, want %d", got, tc.nullVal)
			}
		})
	}
}

// TestStreamJoinPointerMissingSide shows how to tell a missing side from a
// zero value: a pointer value type, nil when absent.
func TestStreamJoinPointerMissingSide(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	a := dsl.Stream(b, dsl.ConsumedWith(str, str), "a")
	o := dsl.Stream(b, dsl.ConsumedWith(str, serde.Pointer(str)), "b")
	dsl.LeftJoinStream(a, o, func(_ string, v string, ov *string) string {
		if ov == nil {
			return v + " alone"
		}
		return v + " with " + *ov
	}, window.JoinWindowsOfTimeDifferenceWithNoGrace(10*sjTick)).To("out", dsl.ProducedWith(str, str))
	sjRun(t, tjDriver(t, b), []sjStep{
		{in: []tjIn{tjPut("a", "A", "x", 0), tjPut("a", "B", "y", 0), tjPut("b", "B", "", 1)}, want: []tjRec{tjVal("B", "y with ", 1)}},
		{advance: 11, want: []tjRec{tjVal("A", "x alone", 0)}},
	})
}

// TestStreamJoinOuterStoreChangelog pins the outer store's changelog to
// Kafka Streams' layout: TimestampedKeyAndJoinSide keys and ListValueStore
// values of LeftOrRightValue elements, so that migration can read it.
func TestStreamJoinOuterStoreChangelog(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
		return dsl.LeftJoinStream(a, b, plusJoiner, w)
	})
	tjPipe(t, d, tjPut("a", "A", "x", 7))
	tjPipe(t, d, tjPut("a", "A", "yz", 7))
	rs, err := testdriver.CreateOutputTopic(d, "test-driver-KSTREAM-OUTERSHARED-0000000004-store-changelog", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	key := append(binary.BigEndian.AppendUint64(nil, 7), 1, 'A')
	one := []byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 1, 'x'}
	two := []byte{1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 'x', 0, 0, 0, 3, 1, 'y', 'z'}
	if len(rs) != 2 || !bytes.Equal(rs[0].Key, key) || !bytes.Equal(rs[0].Value, one) || !bytes.Equal(rs[1].Key, key) || !bytes.Equal(rs[1].Value, two) {
		t.Fatalf("changelog %+v, want %x => %x, then %x", rs, key, one, two)
	}
	if err := d.AdvanceWatermark(18); err != nil {
		t.Fatal(err)
	}
	rs, err = testdriver.CreateOutputTopic(d, "test-driver-KSTREAM-OUTERSHARED-0000000004-store-changelog", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !bytes.Equal(rs[0].Key, key) || !rs[0].ValueNull {
		t.Fatalf("after emission: changelog %+v, want a tombstone for %x", rs, key)
	}
}

// TestStreamJoinNames pins Kafka Streams' names: five generated names
// whether or not the join is named, stores named after the join
// processors (or the store name), the outer store after JOINTHIS's index.
func TestStreamJoinNames(t *testing.T) {
	str := serde.String()
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	join := func(_, a, b string) string { return a + b }
	tests := []struct {
		name  string
		build func(a, b dsl.KStream[string, string]) dsl.KStream[string, string]
		want  []string
	}{
		{"inner", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.JoinStream(a, b, join, w)
		}, []string{
			"Source: KSTREAM-SOURCE-0000000000 (topics: [a])\n      --> KSTREAM-WINDOWED-0000000002",
			"Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n      --> KSTREAM-JOINTHIS-0000000004",
			"Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-JOINOTHER-0000000005-store])\n      --> KSTREAM-MERGE-0000000006",
			"Processor: KSTREAM-JOINOTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store])\n      --> KSTREAM-MERGE-0000000006",
			"Processor: KSTREAM-MERGE-0000000006 (stores: [])\n      --> KSTREAM-SINK-0000000007\n      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005",
			"Store: KSTREAM-JOINTHIS-0000000004-store (window, default.dsl.store; key serde: string, value serde: string; changelog: <application.id>-KSTREAM-JOINTHIS-0000000004-store-changelog)",
		}},
		{"left", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.LeftJoinStream(a, b, join, w)
		}, []string{
			"Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store])",
			"Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store, KSTREAM-OUTERSHARED-0000000004-store])",
			"Store: KSTREAM-OUTERSHARED-0000000004-store (key-value, default.dsl.store; key serde: timestamped-key-and-join-side(string), value serde: list(left-or-right(string, string))",
		}},
		{"outer", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.OuterJoinStream(a, b, join, w)
		}, []string{
			"Processor: KSTREAM-OUTERTHIS-0000000004 (stores: [KSTREAM-OUTEROTHER-0000000005-store, KSTREAM-OUTERSHARED-0000000004-store])",
			"Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [KSTREAM-OUTERTHIS-0000000004-store, KSTREAM-OUTERSHARED-0000000004-store])",
		}},
		{"named", func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
			return dsl.LeftJoinStream(a, b, join, w, dsl.StreamJoinedAs[string, string, string]("pairs").WithName("orders").WithLoggingDisabled())
		}, []string{
			"Processor: orders-this-windowed (stores: [pairs-this-join-store])\n      --> orders-this-join",
			"Processor: orders-other-windowed (stores: [pairs-outer-other-join-store])\n      --> orders-outer-other-join",
			"Processor: orders-this-join (stores: [pairs-outer-other-join-store, pairs-left-shared-join-store])\n      --> orders-merge",
			"Processor: orders-merge (stores: [])\n      --> KSTREAM-SINK-0000000007",
			"Store: pairs-left-shared-join-store (key-value, default.dsl.store; key serde: timestamped-key-and-join-side(string), value serde: list(left-or-right(string, string)); changelog: none)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			c := dsl.ConsumedWith(str, str)
			tc.build(dsl.Stream(b, c, "a"), dsl.Stream(b, c, "b")).To("out")
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

// TestStreamJoinRefusals checks what Build refuses, naming the join: a
// join beside a noWatermarks() source, whose watermark would never move,
// invalid windows, and inputs keyed by different serdes.
func TestStreamJoinRefusals(t *testing.T) {
	str := serde.String()
	join := func(_, a, b string) string { return a + b }
	ok := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	tests := []struct {
		name  string
		build func(b *dsl.Builder)
		want  string
	}{
		{"noWatermarks", func(b *dsl.Builder) {
			a := dsl.Stream(b, dsl.ConsumedWith(str, str).WithWatermarkStrategy(watermark.NoWatermarks()), "a")
			dsl.JoinStream(a, dsl.Stream(b, dsl.ConsumedWith(str, str), "b"), join, ok).To("out")
		}, "node KSTREAM-MERGE-0000000006: stream-stream join needs event time, but source KSTREAM-SOURCE-0000000000 declares noWatermarks()"},
		{"negative size", func(b *dsl.Builder) {
			c := dsl.ConsumedWith(str, str)
			dsl.JoinStream(dsl.Stream(b, c, "a"), dsl.Stream(b, c, "b"), join, ok.After(-11*sjTick)).To("out")
		}, "node KSTREAM-MERGE-0000000006: stream-stream join: invalid join windows [before 10ms, after -11ms, grace 0ms]: before + after must not be negative"},
		{"negative grace, named", func(b *dsl.Builder) {
			c := dsl.ConsumedWith(str, str)
			dsl.OuterJoinStream(dsl.Stream(b, c, "a"), dsl.Stream(b, c, "b"), join, window.JoinWindowsOfTimeDifferenceAndGrace(sjTick, -sjTick),
				dsl.StreamJoinedWith(str, str, str).WithName("pairs")).To("out")
		}, "node pairs-merge: stream-stream join: invalid join windows [before 1ms, after 1ms, grace -1ms]: grace must not be negative"},
		{"key serdes", func(b *dsl.Builder) {
			a := dsl.Stream(b, dsl.ConsumedWith(str, str), "a")
			o := dsl.Stream(b, dsl.ConsumedWith(serde.JSON[string](), str), "b")
			dsl.JoinStream(a, o, join, ok).To("out")
		}, "node KSTREAM-MERGE-0000000006: inputs are not co-partitioned"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
			_, err := testdriver.New(b.Topology(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestStreamJoinRekeyed joins re-keyed inputs: each crosses a boundary
// named after its node, or after the join.
func TestStreamJoinRekeyed(t *testing.T) {
	str := serde.String()
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	byValue := func(_, v string) string { k, _, _ := strings.Cut(v, "|"); return k }
	tests := []struct {
		name   string
		joined []dsl.StreamJoined[string, string, string]
		topics []string
	}{
		{"generated", nil, []string{"KSTREAM-KEY-SELECT-0000000001-repartition", "KSTREAM-KEY-SELECT-0000000003-repartition"}},
		{"named", []dsl.StreamJoined[string, string, string]{dsl.StreamJoinedWith(str, str, str).WithName("j")}, []string{"j-left-repartition", "j-right-repartition"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			c := dsl.ConsumedWith(str, str)
			a := dsl.SelectKey(dsl.Stream(b, c, "a"), byValue)
			o := dsl.SelectKey(dsl.Stream(b, c, "b"), byValue)
			dsl.JoinStream(a, o, plusJoiner, w, tc.joined...).To("out")
			d := tjDriver(t, b)
			sjRun(t, d, []sjStep{
				{in: []tjIn{tjPut("a", "x", "p|1", 1), tjPut("b", "y", "p|2", 2), tjPut("b", "z", "q|3", 3)}, want: []tjRec{tjVal("p", "p|1+p|2", 2)}},
			})
			var got []string
			for _, topic := range d.ProducedTopicNames() {
				if strings.HasSuffix(topic, "-repartition") {
					got = append(got, topic)
				}
			}
			if !slices.Equal(got, tc.topics) {
				t.Fatalf("boundaries %v, want %v", got, tc.topics)
			}
		})
	}
}

// TestStreamJoinTableGraceNeedsVersionedTable is Kafka Streams'
// KStreamKTableJoinTest.shouldFailIfTableIsNotVersioned and
// shouldFailIfTableIsNotVersionedButMaterializationIsInherited: a grace
// period on a join with a table that is not versioned is refused at
// build. Joined still reads back the grace it was given.
func TestStreamJoinTableGraceNeedsVersionedTable(t *testing.T) {
	str := serde.String()
	joined := dsl.JoinedWith(str, str, str).WithGracePeriod(6 * time.Millisecond)
	if got := joined.GracePeriod(); got != 6*time.Millisecond {
		t.Fatalf("GracePeriod() = %s, want 6ms", got)
	}
	for _, inherited := range []bool{false, true} {
		b := dsl.NewBuilder()
		tb := dsl.Table(b, "topic2", dsl.ConsumedWith(str, str))
		if inherited {
			tb = tb.Filter(func(string, string) bool { return true })
		}
		dsl.JoinTable(dsl.Stream(b, dsl.ConsumedWith(str, str), "topic"), tb, plusJoiner, joined).To("out-one")
		_, err := b.Topology().Build(config.New(map[string]string{"application.id": "grace"}))
		if err == nil || !strings.Contains(err.Error(), "must be versioned to use a grace period") {
			t.Errorf("inherited %v: build error %v, want the table must be versioned", inherited, err)
		}
	}
}

// TestStreamJoinOuterStoreRestore restores the outer store from records in
// Kafka Streams' layout, as a migration would, and checks that the
// restored record is emitted when its window closes, and that a corrupt
// value fails the emission naming the store rather than being skipped.
func TestStreamJoinOuterStoreRestore(t *testing.T) {
	w := window.JoinWindowsOfTimeDifferenceWithNoGrace(10 * sjTick)
	const store = "KSTREAM-OUTERSHARED-0000000004-store"
	key := append(binary.BigEndian.AppendUint64(nil, 7), 1, 'A')
	tests := []struct {
		name  string
		value []byte
		want  []tjRec
		err   string
	}{
		{"two values", []byte{1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 'x', 0, 0, 0, 3, 1, 'y', 'z'}, []tjRec{tjVal("A", "x+", 7), tjVal("A", "yz+", 7)}, ""},
		{"truncated", []byte{1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 'x'}, nil, `store "` + store + `": iterate: deserialize value`},
		{"bad side", []byte{1, 0, 0, 0, 1, 0, 0, 0, 2, 7, 'x'}, nil, "malformed outer join store value"},
		{"no header", []byte{0}, nil, "malformed outer join store value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := sjBuild(t, func(a, b dsl.KStream[string, string]) dsl.KStream[string, string] {
				return dsl.LeftJoinStream(a, b, plusJoiner, w)
			})
			s, ok := d.StateStore(store)
			if !ok {
				t.Fatalf("no store %s", store)
			}
			if err := s.(state.Restorer).Restore([]state.ChangelogRecord{{Key: key, Value: tc.value, Timestamp: 7}}); err != nil {
				t.Fatal(err)
			}
			err := d.AdvanceWatermark(18)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tjRead(t, d, "out"); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
