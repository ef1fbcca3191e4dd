package dsl_test

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

const winTick = time.Millisecond

// winKeys is how a test reads windowed keys back: the serde (the window
// size for time and winSliding windows) and how it prints the window, "[s,e)"
// for time windows and "[s,e]" for the closed winSliding and session windows.
type winKeys struct {
	serde  serde.Serde[window.Windowed[string]]
	closed bool
}

func winTimeKeys(size int64) winKeys {
	return winKeys{serde: window.TimeWindowedSerde(serde.String(), size)}
}
func winSlidingKeys(d int64) winKeys {
	return winKeys{serde: window.TimeWindowedSerde(serde.String(), d), closed: true}
}
func winSessionKeys() winKeys {
	return winKeys{serde: window.SessionWindowedSerde(serde.String()), closed: true}
}

func (k winKeys) show(w window.Windowed[string]) string {
	end := ")"
	if k.closed {
		end = "]"
	}
	return fmt.Sprintf("%s[%d,%d%s", w.Key, w.Window.Start, w.Window.End, end)
}

// winRead reads every record of topic as "key[start,end)=value@timestamp".
func winRead[V any](t *testing.T, d *testdriver.Driver, topic string, keys winKeys, vs serde.Serde[V]) []string {
	t.Helper()
	rs, err := testdriver.CreateOutputTopic(d, topic, keys.serde, vs).ReadRecordsToList()
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s=%s@%d", keys.show(r.Key), aggShow(r.Value, r.ValueNull), r.Timestamp))
	}
	return out
}

// winDriver builds a topology reading "in" (strings), grouped by key,
// aggregated by build, written to "out".
func winDriver[V any](t *testing.T, build func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], V]) (*testdriver.Driver, *dsl.Builder) {
	t.Helper()
	str := serde.String()
	b := dsl.NewBuilder()
	build(dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()).ToStream().To("out")
	d, err := testdriver.New(b.Topology(), aggConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, b
}

func winDrops(d *testdriver.Driver, reason string) int64 {
	return d.Metrics().Value(metrics.DroppedRecords, "reason", reason)
}

func winAdvance(t *testing.T, d *testdriver.Driver, ts int64) {
	t.Helper()
	if err := d.AdvanceWatermark(ts); err != nil {
		t.Fatalf("advance watermark to %d: %v", ts, err)
	}
}

// winCountCase is a windowed count run under one emit strategy: records
// piped, then the watermark advanced (0: not), and the exact output.
type winCountCase struct {
	name    string
	build   func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64]
	keys    winKeys
	in      []aggIn
	advance int64
	want    []string
	reason  string
	dropped int64
}

func winRunCountCases(t *testing.T, tests []winCountCase) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := winDriver(t, tc.build)
			aggPipe(t, d, "in", tc.in)
			if tc.advance > 0 {
				winAdvance(t, d, tc.advance)
			}
			aggCheck(t, "output", winRead(t, d, "out", tc.keys, serde.Int64()), tc.want)
			if got := winDrops(d, tc.reason); got != tc.dropped {
				t.Fatalf("dropped %s = %d, want %d", tc.reason, got, tc.dropped)
			}
		})
	}
}

// Tumbling windows of 10 winTick with 5 winTick of grace close at end + 5. The floor
// a piped record is judged against is the driver's watermark, the largest
// timestamp piped: A@19 arrives at floor 24, one tick before [10,20)
// closes at 25, and is counted; A@18 arrives at floor 25, the close
// itself, and is dropped.
var winTumblingIn = []aggIn{
	{"A", "x", 1}, {"A", "x", 4}, {"B", "x", 3}, {"A", "x", 12}, {"A", "x", 24},
	{"A", "x", 19}, // floor 24: [10,20) closes at 25, still open
	{"B", "x", 25}, // floor 25: [10,20) closed
	{"A", "x", 18}, // close == floor: dropped
	{"A", "x", 2},  // [0,10) closed at 15: dropped
}

func winTumbling(e dsl.EmitStrategy) func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
	return func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 5*winTick)).EmitStrategy(e))
	}
}

func TestTumblingCount(t *testing.T) {
	winRunCountCases(t, []winCountCase{
		{
			name: "on window update", build: winTumbling(dsl.OnWindowUpdate()), keys: winTimeKeys(10), in: winTumblingIn,
			want: []string{
				"A[0,10)=1@1", "A[0,10)=2@4", "B[0,10)=1@3", "A[10,20)=1@12", "A[20,30)=1@24",
				"A[10,20)=2@19", "B[20,30)=1@25",
			},
			reason: "late_window", dropped: 2,
		},
		{
			// A@24 carries the watermark past [0,10)'s close (15): both
			// keys' windows are emitted on that pipe, in key order, each
			// with its latest record's timestamp. B@25 closes [10,20);
			// the advance to 35 closes [20,30).
			name: "on window close", build: winTumbling(dsl.OnWindowClose()), keys: winTimeKeys(10), in: winTumblingIn, advance: 35,
			want: []string{
				"A[0,10)=2@4", "B[0,10)=1@3", "A[10,20)=2@19", "A[20,30)=1@24", "B[20,30)=1@25",
			},
			reason: "late_window", dropped: 2,
		},
	})
}

// Hopping windows of size 4 advancing by 1 (four windows per record) with
// 2 winTick of grace close at start + 6. A@5 arrives at floor 10: of its
// windows [2,6) [3,7) [4,8) [5,9), closing at 8 9 10 11, the first three
// are dropped (the third at close == floor) and the last, one tick from
// closing, takes the record.
var winHoppingIn = []aggIn{{"A", "x", 3}, {"A", "x", 10}, {"A", "x", 5}}

func winHopping(e dsl.EmitStrategy) func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
	return func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(4*winTick, 2*winTick).AdvanceBy(winTick)).EmitStrategy(e))
	}
}

func TestHoppingCount(t *testing.T) {
	winRunCountCases(t, []winCountCase{
		{
			name: "on window update", build: winHopping(dsl.OnWindowUpdate()), keys: winTimeKeys(4), in: winHoppingIn,
			want: []string{
				"A[0,4)=1@3", "A[1,5)=1@3", "A[2,6)=1@3", "A[3,7)=1@3",
				"A[7,11)=1@10", "A[8,12)=1@10", "A[9,13)=1@10", "A[10,14)=1@10",
				"A[5,9)=1@5",
			},
			reason: "late_window", dropped: 3,
		},
		{
			name: "on window close", build: winHopping(dsl.OnWindowClose()), keys: winTimeKeys(4), in: winHoppingIn, advance: 20,
			want: []string{
				// A@10: the watermark passes the closes 6..9 at once.
				"A[0,4)=1@3", "A[1,5)=1@3", "A[2,6)=1@3", "A[3,7)=1@3",
				// The advance to 20: closes 11, 13..16.
				"A[5,9)=1@5", "A[7,11)=1@10", "A[8,12)=1@10", "A[9,13)=1@10", "A[10,14)=1@10",
			},
			reason: "late_window", dropped: 3,
		},
	})
}

// Sliding windows with a time difference of 5 winTick and 2 winTick of grace close
// at start + 8. A@11 arrives out of order between A@10 and A@12 and
// updates, and creates, the windows Kafka Streams' algorithm does, in its
// order. At
// floor 30 (B@30), A@22's latest window would close at 30: the record is
// dropped whole; A@27's left window [22,27] closes at 30 and is dropped,
// while A@28's, [23,28], closes one tick later and is kept.
var winSlidingIn = []aggIn{
	{"A", "x", 10}, {"A", "x", 12}, {"A", "x", 11}, {"B", "x", 30},
	{"A", "x", 22}, {"A", "x", 27}, {"A", "x", 28},
}

func winSliding(e dsl.EmitStrategy) func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
	return func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountWindowed(g.WindowedBySliding(window.SlidingWindowsOfTimeDifferenceAndGrace(5*winTick, 2*winTick)).EmitStrategy(e))
	}
}

func TestSlidingCount(t *testing.T) {
	winRunCountCases(t, []winCountCase{
		{
			name: "on window update", build: winSliding(dsl.OnWindowUpdate()), keys: winSlidingKeys(5), in: winSlidingIn,
			want: []string{
				"A[5,10]=1@10",
				"A[11,16]=1@12", "A[7,12]=2@12",
				// A@11 updates the windows it falls into latest first,
				// then creates its left and right windows, as Kafka
				// Streams' processReverse does.
				"A[11,16]=2@12", "A[7,12]=3@12", "A[6,11]=2@11", "A[12,17]=1@12",
				"B[25,30]=1@30",
				"A[23,28]=1@28",
			},
			reason: "late_window", dropped: 2,
		},
		{
			name: "on window close", build: winSliding(dsl.OnWindowClose()), keys: winSlidingKeys(5), in: winSlidingIn, advance: 100,
			want: []string{
				// B@30 closes every window of A@10..12, in start order.
				"A[5,10]=1@10", "A[6,11]=2@11", "A[7,12]=3@12", "A[11,16]=2@12", "A[12,17]=1@12",
				"A[23,28]=1@28", "B[25,30]=1@30",
			},
			reason: "late_window", dropped: 2,
		},
	})
}

// Sessions with a 5 winTick gap and 2 winTick of grace close at end + 7. A@25 closes
// [10,14] (at 21); A@19, in its gap, starts a new session rather than
// reopening it. A@21 arrives behind the watermark but bridges [19,19] and
// [25,25], both still open: it is folded in and the three merge. At floor
// 40, A@27 would only make a closed session (34), A@33 one closing at the
// floor itself (40): both are dropped; A@34's closes one tick later.
var winSessionIn = []aggIn{
	{"A", "x", 10}, {"A", "x", 14}, {"A", "x", 25}, {"A", "x", 19}, {"A", "x", 21},
	{"B", "x", 40}, {"A", "x", 27}, {"A", "x", 33}, {"A", "x", 34},
}

func winSessions(e dsl.EmitStrategy) func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
	return func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 2*winTick)).EmitStrategy(e))
	}
}

func TestSessionCount(t *testing.T) {
	winRunCountCases(t, []winCountCase{
		{
			name: "on window update", build: winSessions(dsl.OnWindowUpdate()), keys: winSessionKeys(), in: winSessionIn,
			want: []string{
				"A[10,10]=1@10",
				"A[10,10]=<null>@10", "A[10,14]=2@14",
				"A[25,25]=1@25",
				"A[19,19]=1@19",
				"A[19,19]=<null>@19", "A[25,25]=<null>@25", "A[19,25]=3@25",
				"B[40,40]=1@40",
				"A[34,34]=1@34",
			},
			reason: "late_session", dropped: 2,
		},
		{
			name: "on window close", build: winSessions(dsl.OnWindowClose()), keys: winSessionKeys(), in: winSessionIn, advance: 100,
			want:   []string{"A[10,14]=2@14", "A[19,25]=3@25", "A[34,34]=1@34", "B[40,40]=1@40"},
			reason: "late_session", dropped: 2,
		},
	})
}

// TestEmitOnCloseRange: one advance passes the closes of many windows,
// which are emitted once each, in close-time then key order, however the
// keys arrived; a later advance emits nothing again. The emit frontier is
// written to its companion store's changelog.
func TestEmitOnCloseRange(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	in := []aggIn{
		{"B", "x", 25}, {"A", "x", 21}, {"B", "x", 1}, {"C", "x", 12}, {"A", "x", 5}, {"A", "x", 14},
	}
	t.Run("time windows", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
			return dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 20*winTick)).EmitStrategy(dsl.OnWindowClose()),
				dsl.MaterializedAs[string, int64]("counts"))
		})
		aggPipe(t, d, "in", in)
		aggCheck(t, "before the closes", winRead(t, d, "out", winTimeKeys(10), i64), []string{})
		winAdvance(t, d, 100)
		aggCheck(t, "output", winRead(t, d, "out", winTimeKeys(10), i64), []string{
			"A[0,10)=1@5", "B[0,10)=1@1", "A[10,20)=1@14", "C[10,20)=1@12", "A[20,30)=1@21", "B[20,30)=1@25",
		})
		winAdvance(t, d, 200)
		aggCheck(t, "after a second advance", winRead(t, d, "out", winTimeKeys(10), i64), []string{})
		frontier := aggRead(t, d, "app-counts-emitfrontier-changelog", str, i64)
		if n := len(frontier); n == 0 || frontier[n-1] != "counts:200@200" {
			t.Fatalf("emit frontier changelog %q, want it to end with counts:200@200", frontier)
		}
	})
	t.Run("sessions", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
			return dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 30*winTick)).EmitStrategy(dsl.OnWindowClose()),
				dsl.MaterializedAs[string, int64]("sessions"))
		})
		// B's session [1,5] and A's [5,5] end together but start apart:
		// the store orders them B then A, the emission by key.
		aggPipe(t, d, "in", []aggIn{{"B", "x", 1}, {"B", "x", 5}, {"A", "x", 5}, {"C", "x", 3}, {"A", "x", 20}})
		winAdvance(t, d, 100)
		aggCheck(t, "output", winRead(t, d, "out", winSessionKeys(), i64), []string{
			"C[3,3]=1@3", "A[5,5]=1@5", "B[1,5]=2@5", "A[20,20]=1@20",
		})
		if got := aggRead(t, d, "app-sessions-emitfrontier-changelog", str, i64); len(got) == 0 || got[len(got)-1] != "sessions:100@100" {
			t.Fatalf("emit frontier changelog %q", got)
		}
	})
}

// TestWindowExpiry: a window leaves the store once the clock of its
// strategy passes its start plus retention; the default retention (size
// plus grace) removes it as it closes, a longer one keeps it.
func TestWindowExpiry(t *testing.T) {
	tests := []struct {
		name      string
		emit      dsl.EmitStrategy
		retention time.Duration
		want      []string
	}{
		// At 25, [10,20) closes: start <= 25 - (10 + 5) goes.
		{"update, default retention", dsl.OnWindowUpdate(), 0, []string{"A[20,30)=1@24", "B[20,30)=1@25"}},
		{"close, default retention", dsl.OnWindowClose(), 0, []string{"A[20,30)=1@24", "B[20,30)=1@25"}},
		// Retention 20: start <= 25 - 20 goes, so [0,10) but not [10,20).
		{"update, longer retention", dsl.OnWindowUpdate(), 20 * winTick, []string{"A[10,20)=1@12", "A[20,30)=1@24", "B[20,30)=1@25"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := dsl.MaterializedAs[string, int64]("counts")
			if tc.retention > 0 {
				m = m.WithRetention(tc.retention)
			}
			d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
				return dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 5*winTick)).EmitStrategy(tc.emit), m)
			})
			aggPipe(t, d, "in", []aggIn{{"A", "x", 1}, {"A", "x", 12}, {"A", "x", 24}, {"B", "x", 25}})
			s, ok := d.StateStore("counts")
			if !ok {
				t.Fatal("no store counts")
			}
			ws, ok := s.(state.TimestampedWindowStore[string, int64])
			if !ok {
				t.Fatalf("store counts is a %T", s)
			}
			it, err := ws.All()
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			got := []string{}
			for it.Next() {
				got = append(got, fmt.Sprintf("%s=%d@%d", winTimeKeys(10).show(it.Key()), it.Value().Value, it.Value().Timestamp))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			aggCheck(t, "store", got, tc.want)
		})
	}

	t.Run("sessions", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
			return dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 2*winTick)), dsl.MaterializedAs[string, int64]("s"))
		})
		aggPipe(t, d, "in", []aggIn{{"A", "x", 10}, {"B", "x", 15}, {"A", "x", 17}})
		s, _ := d.StateStore("s")
		it, err := s.(state.SessionStore[string, int64]).FindSessionsAll(0, 100)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		got := []string{}
		for it.Next() {
			got = append(got, winSessionKeys().show(it.Key()))
		}
		// A's [10,10] closed at 17, as the watermark reached it.
		aggCheck(t, "store", got, []string{"B[15,15]", "A[17,17]"})
	})
}

// TestWindowedReduceAndAggregate runs the other two folds through windows
// and winSessions: strings, so the order of folding shows.
func TestWindowedReduceAndAggregate(t *testing.T) {
	str := serde.String()
	concat := func(agg, v string) string { return agg + "+" + v }
	in := []aggIn{{"A", "1", 1}, {"A", "2", 3}, {"A", "3", 12}, {"A", "4", 8}}
	t.Run("tumbling reduce", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.ReduceWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 5*winTick)), concat)
		})
		aggPipe(t, d, "in", in)
		aggCheck(t, "output", winRead(t, d, "out", winTimeKeys(10), str), []string{
			"A[0,10)=1@1", "A[0,10)=1+2@3", "A[10,20)=3@12", "A[0,10)=1+2+4@8",
		})
	})
	t.Run("tumbling aggregate", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AggregateWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 5*winTick)),
				func() string { return "0" }, func(_, v, agg string) string { return agg + "+" + v },
				dsl.MaterializedWith[string, string](str, str))
		})
		aggPipe(t, d, "in", in)
		aggCheck(t, "output", winRead(t, d, "out", winTimeKeys(10), str), []string{
			"A[0,10)=0+1@1", "A[0,10)=0+1+2@3", "A[10,20)=0+3@12", "A[0,10)=0+1+2+4@8",
		})
	})
	t.Run("session reduce", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.ReduceSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 10*winTick)), concat)
		})
		// A@8 bridges [1,3] and [12,12]: the merged aggregate reduces the
		// winSessions in end order, then the record.
		aggPipe(t, d, "in", in)
		aggCheck(t, "output", winRead(t, d, "out", winSessionKeys(), str), []string{
			"A[1,1]=1@1", "A[1,1]=<null>@1", "A[1,3]=1+2@3", "A[12,12]=3@12",
			"A[1,3]=<null>@3", "A[12,12]=<null>@12", "A[1,12]=1+2+3+4@12",
		})
	})
	t.Run("session aggregate", func(t *testing.T) {
		d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AggregateSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 10*winTick)),
				func() string { return "" }, func(_, v, agg string) string { return agg + v },
				func(_, agg, other string) string { return agg + "|" + other },
				dsl.MaterializedWith[string, string](str, str))
		})
		aggPipe(t, d, "in", in)
		aggCheck(t, "output", winRead(t, d, "out", winSessionKeys(), str), []string{
			"A[1,1]=1@1", "A[1,1]=<null>@1", "A[1,3]=|12@3", "A[12,12]=3@12",
			"A[1,3]=<null>@3", "A[12,12]=<null>@12", "A[1,12]=||12|34@12",
		})
	})
}

// TestWindowedTopology checks Kafka Streams' names, the companion store of
// onWindowClose, the changelogs, and that the result's windowed key serde
// lets ToStream().To write without a Produced.
func TestWindowedTopology(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeWithNoGrace(10 * winTick)).EmitStrategy(dsl.OnWindowClose())).ToStream().To("out")
	dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapWithNoGrace(5*winTick)), dsl.MaterializedWith(str, serde.Int64())).ToStream().To("out2")
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-AGGREGATE-0000000002, KSTREAM-AGGREGATE-0000000007
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001, KSTREAM-AGGREGATE-STATE-STORE-0000000001-emitfrontier])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-AGGREGATE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: out)
      <-- KTABLE-TOSTREAM-0000000003
    Processor: KSTREAM-AGGREGATE-0000000007 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000006])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-SINK-0000000009
      <-- KSTREAM-AGGREGATE-0000000007
    Sink: KSTREAM-SINK-0000000009 (topic: out2)
      <-- KTABLE-TOSTREAM-0000000008
`
	desc := b.Topology().Describe().String()
	if !strings.HasPrefix(desc, want) {
		t.Fatalf("describe:\n%s\nwant it to start with:\n%s", desc, want)
	}
	for _, s := range []string{
		"Store: KSTREAM-AGGREGATE-STATE-STORE-0000000001 (timestamped-window, default.dsl.store; key serde: string, value serde: int64;",
		"Store: KSTREAM-AGGREGATE-STATE-STORE-0000000001-emitfrontier (key-value, default.dsl.store; key serde: string, value serde: int64;",
		"Store: KSTREAM-AGGREGATE-STATE-STORE-0000000006 (session, default.dsl.store;",
	} {
		if !strings.Contains(desc, s) {
			t.Fatalf("describe:\n%s\nwant it to contain %q", desc, s)
		}
	}
	d, err := testdriver.New(b.Topology(), aggConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	aggPipe(t, d, "in", []aggIn{{"A", "x", 1}, {"A", "x", 30}})
	aggCheck(t, "out", winRead(t, d, "out", winTimeKeys(10), serde.Int64()), []string{"A[0,10)=1@1"})
	aggCheck(t, "out2", winRead(t, d, "out2", winSessionKeys(), serde.Int64()), []string{"A[1,1]=1@1", "A[30,30]=1@30"})
	aggCheck(t, "topics", d.ProducedTopicNames(), []string{
		"app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog",
		"app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-emitfrontier-changelog",
		"app-KSTREAM-AGGREGATE-STATE-STORE-0000000006-changelog",
		"out", "out2",
	})
}

// TestWindowedRefusals: what cannot run is refused when the topology is
// built, naming what is at fault.
func TestWindowedRefusals(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name  string
		build func(b *dsl.Builder, g dsl.KGroupedStream[string, string])
		want  string
	}{
		{
			name: "windowed count beside a noWatermarks source",
			build: func(b *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.Stream(b, dsl.ConsumedWith(str, str).WithName("frozen").WithWatermarkStrategy(watermark.NoWatermarks()), "other").To("sink")
				dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeWithNoGrace(10 * winTick)))
			},
			want: "node KSTREAM-AGGREGATE-0000000003: window needs event time, but source frozen declares noWatermarks()",
		},
		{
			name: "zero-size time windows",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeWithNoGrace(0)))
			},
			want: "node KSTREAM-AGGREGATE-0000000002: invalid time windows [size 0ms, advance 0ms, grace 0ms]: size must be positive",
		},
		{
			name: "hopping advance past size",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeWithNoGrace(4 * winTick).AdvanceBy(5 * winTick)))
			},
			want: "node KSTREAM-AGGREGATE-0000000002: invalid time windows [size 4ms, advance 5ms, grace 0ms]: advance must lie within (0, size]",
		},
		{
			name: "negative sliding difference",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountWindowed(g.WindowedBySliding(window.SlidingWindowsOfTimeDifferenceWithNoGrace(-winTick)))
			},
			want: "node KSTREAM-AGGREGATE-0000000002: invalid sliding windows [time difference -1ms, grace 0ms]: time difference must not be negative",
		},
		{
			name: "zero session gap",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapWithNoGrace(0)))
			},
			want: "node KSTREAM-AGGREGATE-0000000002: invalid session windows [inactivity gap 0ms, grace 0ms]: inactivity gap must be positive",
		},
		{
			name: "retention below size plus grace",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 5*winTick)), dsl.MaterializedAs[string, int64]("counts").WithRetention(14*winTick))
			},
			want: "state store counts: retention period 14ms must be no smaller than its window size plus the grace period (size 10ms, grace 5ms)",
		},
		{
			name: "sliding retention below twice the difference plus grace",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountWindowed(g.WindowedBySliding(window.SlidingWindowsOfTimeDifferenceAndGrace(5*winTick, 2*winTick)), dsl.MaterializedAs[string, int64]("s").WithRetention(11*winTick))
			},
			want: "state store s: retention period 11ms must be no smaller than 2 * time difference plus the grace period (time difference 5ms, grace 2ms)",
		},
		{
			name: "session retention below gap plus grace",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 2*winTick)), dsl.MaterializedAs[string, int64]("s").WithRetention(6*winTick))
			},
			want: "state store s: retention period 6ms must be no smaller than its inactivity gap plus the grace period (gap 5ms, grace 2ms)",
		},
		{
			name: "nil reducer",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.ReduceWindowed(g.WindowedBy(window.TimeWindowsOfSizeWithNoGrace(10*winTick)), nil)
			},
			want: "node KSTREAM-REDUCE-0000000002: nil reducer",
		},
		{
			name: "nil session merger",
			build: func(_ *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.AggregateSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapWithNoGrace(5*winTick)),
					func() string { return "" }, func(_, v, agg string) string { return agg + v }, nil)
			},
			want: "node KSTREAM-AGGREGATE-0000000002: nil session merger",
		},
		{
			name: "windowed cogroup beside a noWatermarks source",
			build: func(b *dsl.Builder, g dsl.KGroupedStream[string, string]) {
				dsl.Stream(b, dsl.ConsumedWith(str, str).WithName("frozen").WithWatermarkStrategy(watermark.NoWatermarks()), "other").To("sink")
				dsl.Cogroup(g, func(_, v, agg string) string { return agg + v }).
					WindowedBySession(window.SessionWindowsOfInactivityGapWithNoGrace(5*winTick)).
					Aggregate(func() string { return "" }, func(_, a, b string) string { return a + b })
			},
			want: "node COGROUPKSTREAM-AGGREGATE-0000000003: window needs event time, but source frozen declares noWatermarks()",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b, dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey())
			_, err := testdriver.New(b.Topology(), aggConfig)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// The refusal is recorded on the topology, as a *topology.Error.
	b := dsl.NewBuilder()
	dsl.CountWindowed(dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey().WindowedBy(window.TimeWindowsOfSizeWithNoGrace(0)))
	var te *topology.Error
	if err := b.Topology().Err(); !errors.As(err, &te) {
		t.Fatalf("Err() = %v, want a *topology.Error", err)
	}
}

// TestWindowedNulls: a record without a key is dropped by every windowed
// aggregation; one without a value is counted by time and session windows
// and dropped by sliding ones, as in Kafka Streams.
func TestWindowedNulls(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name      string
		build     func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64]
		keys      winKeys
		want      []string
		nullValue int64
	}{
		{"tumbling", winTumbling(dsl.OnWindowUpdate()), winTimeKeys(10), []string{"A[0,10)=1@2"}, 0},
		{"session", winSessions(dsl.OnWindowUpdate()), winSessionKeys(), []string{"A[2,2]=1@2"}, 0},
		{"sliding", winSliding(dsl.OnWindowUpdate()), winSlidingKeys(5), []string{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := winDriver(t, tc.build)
			in := testdriver.CreateInputTopic(d, "in", str, str)
			if err := in.PipeRecord(testdriver.TestRecord[string, string]{KeyNull: true, Value: "x", Timestamp: 1}); err != nil {
				t.Fatal(err)
			}
			if err := in.PipeTombstoneAt("A", 2); err != nil {
				t.Fatal(err)
			}
			aggCheck(t, "output", winRead(t, d, "out", tc.keys, serde.Int64()), tc.want)
			if got := winDrops(d, "null_key"); got != 1 {
				t.Fatalf("null_key drops = %d, want 1", got)
			}
			if got := winDrops(d, "null_value"); got != tc.nullValue {
				t.Fatalf("null_value drops = %d, want %d", got, tc.nullValue)
			}
		})
	}
}

// TestWindowedSuppress: a windowed table carries its close-time rule, so
// suppress(untilWindowCloses) over it releases what onWindowClose emits.
func TestWindowedSuppress(t *testing.T) {
	d, _ := winDriver(t, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return winTumbling(dsl.OnWindowUpdate())(g).Suppress(dsl.UntilWindowCloses(dsl.Unbounded()))
	})
	aggPipe(t, d, "in", winTumblingIn)
	winAdvance(t, d, 35)
	aggCheck(t, "output", winRead(t, d, "out", winTimeKeys(10), serde.Int64()), []string{
		"A[0,10)=2@4", "B[0,10)=1@3", "A[10,20)=2@19", "A[20,30)=1@24", "B[20,30)=1@25",
	})
}

// TestSlidingKafkaStreamsOracles replays two of Kafka Streams' own tests of
// KStreamSlidingWindowAggregate (testEarlyRecordsLargeInput, whose records
// before the time difference share the window [0, D], and
// testNoGracePeriodSmallInput) with their expected results. Under their
// stream time no window closes before its last record, so the one late
// rule admits what Kafka Streams admits.
func TestSlidingKafkaStreamsOracles(t *testing.T) {
	str := serde.String()
	aggregate := func(d, grace time.Duration) func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
		return func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AggregateWindowed(g.WindowedBySliding(window.SlidingWindowsOfTimeDifferenceAndGrace(d, grace)),
				func() string { return "0" }, func(_, v, agg string) string { return agg + "+" + v },
				dsl.MaterializedWith(str, str))
		}
	}
	read := func(t *testing.T, d *testdriver.Driver, size int64) []testdriver.TestRecord[window.Windowed[string], string] {
		t.Helper()
		rs, err := testdriver.CreateOutputTopic(d, "out", window.TimeWindowedSerde(str, size), str).ReadRecordsToList()
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}

	t.Run("early records, large input", func(t *testing.T) {
		d, _ := winDriver(t, aggregate(10*winTick, 50*winTick))
		aggPipe(t, d, "in", []aggIn{
			{"E", "1", 0}, {"E", "3", 5}, {"E", "4", 6}, {"E", "2", 3}, {"E", "6", 13},
			{"E", "5", 10}, {"E", "7", 4}, {"E", "8", 2}, {"E", "9", 15},
		})
		rs := read(t, d, 10)
		// Kafka Streams' test sorts by key, then window start, keeping
		// the order of updates to one window.
		slices.SortStableFunc(rs, func(a, b testdriver.TestRecord[window.Windowed[string], string]) int {
			return cmp.Or(strings.Compare(a.Key.Key, b.Key.Key), cmp.Compare(a.Key.Window.Start, b.Key.Window.Start))
		})
		got := []string{}
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%s=%s@%d", winSlidingKeys(10).show(r.Key), r.Value, r.Timestamp))
		}
		aggCheck(t, "output", got, []string{
			"E[0,10]=0+1@0", "E[0,10]=0+1+3@5", "E[0,10]=0+1+3+4@6", "E[0,10]=0+1+3+4+2@6",
			"E[0,10]=0+1+3+4+2+5@10", "E[0,10]=0+1+3+4+2+5+7@10", "E[0,10]=0+1+3+4+2+5+7+8@10",
			"E[1,11]=0+3@5", "E[1,11]=0+3+4@6", "E[1,11]=0+3+4+2@6", "E[1,11]=0+3+4+2+5@10",
			"E[1,11]=0+3+4+2+5+7@10", "E[1,11]=0+3+4+2+5+7+8@10",
			"E[3,13]=0+3+4+2+6@13", "E[3,13]=0+3+4+2+6+5@13", "E[3,13]=0+3+4+2+6+5+7@13",
			"E[4,14]=0+3+4@6", "E[4,14]=0+3+4+6@13", "E[4,14]=0+3+4+6+5@13", "E[4,14]=0+3+4+6+5+7@13",
			"E[5,15]=0+3+4+6+5@13", "E[5,15]=0+3+4+6+5+9@15",
			"E[6,16]=0+4@6", "E[6,16]=0+4+6@13", "E[6,16]=0+4+6+5@13", "E[6,16]=0+4+6+5+9@15",
			"E[7,17]=0+6@13", "E[7,17]=0+6+5@13", "E[7,17]=0+6+5+9@15",
			"E[11,21]=0+6@13", "E[11,21]=0+6+9@15",
			"E[14,24]=0+9@15",
		})
	})

	t.Run("no grace, small input", func(t *testing.T) {
		d, _ := winDriver(t, aggregate(50*winTick, 0))
		aggPipe(t, d, "in", []aggIn{
			{"A", "1", 100}, {"A", "2", 105}, {"A", "3", 106}, {"A", "4", 103}, {"A", "5", 113}, {"A", "6", 110},
		})
		// The test keeps each window's last update.
		last := map[int64]string{}
		for _, r := range read(t, d, 50) {
			last[r.Key.Window.Start] = fmt.Sprintf("%s@%d", r.Value, r.Timestamp)
		}
		want := map[int64]string{
			50: "0+1@100", 55: "0+1+2@105", 56: "0+1+2+3+4@106", 63: "0+1+2+3+4+5+6@113",
			101: "0+2+3+4+5+6@113", 104: "0+2+3+5+6@113", 106: "0+3+5+6@113", 107: "0+5+6@113", 111: "0+5@113",
		}
		if !maps.Equal(last, want) {
			t.Fatalf("last update per window start:\n got %v\nwant %v", last, want)
		}
	})
}

// TestSlidingUpdateOrderKafkaStreams replays Kafka Streams'
// SlidingWindowedKStreamIntegrationTest.shouldAggregateWindowedWithGrace
// and shouldAggregateWindowedWithNoGrace (ON_WINDOW_UPDATE), the tests
// that assert the order in which one record's window updates are emitted
// (KStreamSlidingWindowAggregateTest compares sets): Kafka Streams' default
// algorithm, processReverse, updates the windows a record falls into
// latest start first, then creates the previous record's right window,
// the record's left window and its right window. A record before the time
// difference (processEarly) walks forward, and updates [0, D] last. The
// expected lists are the Kafka Streams test's own, in its order.
func TestSlidingUpdateOrderKafkaStreams(t *testing.T) {
	str := serde.String()
	aggregate := func(grace time.Duration) func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
		return func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AggregateWindowed(g.WindowedBySliding(window.SlidingWindowsOfTimeDifferenceAndGrace(10*winTick, grace)),
				func() string { return "0" }, func(_, v, agg string) string { return agg + "+" + v },
				dsl.MaterializedWith(str, str))
		}
	}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		in    []aggIn
		want  []string
	}{
		{
			name: "shouldAggregateWindowedWithGrace", grace: 5 * winTick,
			in: []aggIn{
				{"A", "1", 0}, {"A", "2", 5}, {"A", "3", 10}, {"A", "4", 6},
				{"A", "5", 11}, {"A", "6", 16}, {"A", "7", 27}, {"A", "8", 11},
			},
			want: []string{
				"A[0,10]=0+1@0",
				"A[1,11]=0+2@5", "A[0,10]=0+1+2@5",
				"A[1,11]=0+2+3@10", "A[0,10]=0+1+2+3@10", "A[6,16]=0+3@10",
				"A[1,11]=0+2+3+4@10", "A[6,16]=0+3+4@10", "A[7,17]=0+3@10", "A[0,10]=0+1+2+3+4@10",
				"A[7,17]=0+3+5@11", "A[6,16]=0+3+4+5@11", "A[1,11]=0+2+3+4+5@11", "A[11,21]=0+5@11",
				"A[11,21]=0+5+6@16", "A[7,17]=0+3+5+6@16", "A[6,16]=0+3+4+5+6@16", "A[12,22]=0+6@16",
				// The previous record's right window and A@27's left
				// window are both [17,27]: Kafka Streams emits it twice.
				"A[17,27]=0+7@27", "A[17,27]=0+7@27",
			},
		},
		{
			name: "shouldAggregateWindowedWithNoGrace",
			in: []aggIn{
				{"A", "1", 0}, {"A", "2", 5}, {"A", "3", 10}, {"A", "4", 17},
				{"B", "5", 6}, {"B", "6", 11}, {"B", "7", 18}, {"C", "8", 25},
			},
			want: []string{
				"A[0,10]=0+1@0",
				"A[1,11]=0+2@5", "A[0,10]=0+1+2@5",
				"A[1,11]=0+2+3@10", "A[0,10]=0+1+2+3@10", "A[6,16]=0+3@10",
				"A[11,21]=0+4@17", "A[7,17]=0+3+4@17",
				"B[8,18]=0+7@18",
				"C[15,25]=0+8@25",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := winDriver(t, aggregate(tc.grace))
			aggPipe(t, d, "in", tc.in)
			aggCheck(t, "output", winRead(t, d, "out", winSlidingKeys(10), str), tc.want)
		})
	}
}
