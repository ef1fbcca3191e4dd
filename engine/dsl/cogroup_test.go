package dsl_test

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// cogroupDriver builds a topology whose output table, written to "out",
// build makes from the grouped streams of "clicks" and "views".
func cogroupDriver[KT, V any](t *testing.T, build func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[KT, V]) (*testdriver.Driver, *dsl.Builder) {
	t.Helper()
	str := serde.String()
	b := dsl.NewBuilder()
	clicks := dsl.Stream(b, dsl.ConsumedWith(str, str), "clicks").GroupByKey()
	views := dsl.Stream(b, dsl.ConsumedWith(str, str), "views").GroupByKey()
	build(clicks, views).ToStream().To("out")
	d, err := testdriver.New(b.Topology(), aggConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, b
}

func clickAgg(_, v, agg string) string { return agg + "c" + v }
func viewAgg(_, v, agg string) string  { return agg + "v" + v }
func emptyAgg() string                 { return "" }

// cogroupIn pipes records into "clicks" and "views" in the order given.
type cogroupIn struct {
	topic, key, value string
	ts                int64
}

func cogroupPipe(t *testing.T, d *testdriver.Driver, in []cogroupIn) {
	t.Helper()
	for _, r := range in {
		aggPipe(t, d, r.topic, []aggIn{{r.key, r.value, r.ts}})
	}
}

func TestCogroupTwoStreams(t *testing.T) {
	str := serde.String()
	d, b := cogroupDriver(t, func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[string, string] {
		return dsl.AddCogroup(dsl.Cogroup(clicks, clickAgg), views, viewAgg).Aggregate(emptyAgg, dsl.MaterializedWith(str, str))
	})
	cogroupPipe(t, d, []cogroupIn{
		{"clicks", "A", "1", 1}, {"views", "A", "2", 2}, {"clicks", "B", "3", 3}, {"views", "A", "4", 4},
	})
	aggCheck(t, "output", aggRead(t, d, "out", str, str), []string{"A:c1@1", "A:c1v2@2", "B:c3@3", "A:c1v2v4@4"})
	desc := b.Topology().Describe().String()
	for _, s := range []string{
		"Processor: COGROUPKSTREAM-AGGREGATE-0000000003 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])\n      --> COGROUPKSTREAM-MERGE-0000000005\n      <-- KSTREAM-SOURCE-0000000000",
		"Processor: COGROUPKSTREAM-AGGREGATE-0000000004 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])\n      --> COGROUPKSTREAM-MERGE-0000000005\n      <-- KSTREAM-SOURCE-0000000001",
		"Processor: COGROUPKSTREAM-MERGE-0000000005 (stores: [])\n      --> KTABLE-TOSTREAM-0000000006\n      <-- COGROUPKSTREAM-AGGREGATE-0000000003, COGROUPKSTREAM-AGGREGATE-0000000004",
		"Store: COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002 (timestamped-key-value",
	} {
		if !strings.Contains(desc, s) {
			t.Fatalf("describe:\n%s\nwant it to contain:\n%s", desc, s)
		}
	}
}

// TestCogroupOneSourceTwice cogroups two groupings of one stream: every
// record reaches the shared aggregate through both inputs' edges, and both
// aggregators apply. One grouping re-keys, so its records cross a
// boundary and arrive after the other's.
func TestCogroupOneSourceTwice(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
	byKey := s.GroupByKey()
	byKeyAgain := s.GroupByKey()
	rekeyed := dsl.GroupBy(s, func(k, _ string) string { return k }, dsl.GroupedWith(str, str))
	plus := func(n int64) func(string, string, int64) int64 {
		return func(_, _ string, agg int64) int64 { return agg + n }
	}
	c := dsl.AddCogroup(dsl.AddCogroup(dsl.Cogroup(byKey, plus(1)), byKeyAgain, plus(10)), rekeyed, plus(100))
	c.Aggregate(func() int64 { return 0 }, dsl.MaterializedWith(str, i64)).ToStream().To("out")
	d, err := testdriver.New(b.Topology(), aggConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	aggPipe(t, d, "in", []aggIn{{"A", "x", 1}, {"A", "x", 2}})
	aggCheck(t, "output", aggRead(t, d, "out", str, i64), []string{
		"A:1@1", "A:11@1", "A:111@1",
		"A:112@2", "A:122@2", "A:222@2",
	})
}

func TestCogroupWindowed(t *testing.T) {
	str := serde.String()
	in := []cogroupIn{
		{"clicks", "A", "1", 1}, {"views", "A", "2", 3}, {"clicks", "A", "3", 12},
		{"views", "B", "4", 30},
		{"views", "A", "5", 5}, // [0,10) closed at 15: dropped
	}
	tumbling := func(e dsl.EmitStrategy) func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
		return func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AddCogroup(dsl.Cogroup(clicks, clickAgg), views, viewAgg).
				WindowedBy(window.TimeWindowsOfSizeAndGrace(10*winTick, 5*winTick)).EmitStrategy(e).
				Aggregate(emptyAgg, dsl.MaterializedWith(str, str))
		}
	}
	t.Run("on window update", func(t *testing.T) {
		d, b := cogroupDriver(t, tumbling(dsl.OnWindowUpdate()))
		cogroupPipe(t, d, in)
		aggCheck(t, "output", winRead(t, d, "out", winTimeKeys(10), str), []string{
			"A[0,10)=c1@1", "A[0,10)=c1v2@3", "A[10,20)=c3@12", "B[30,40)=v4@30",
		})
		if got := winDrops(d, "late_window"); got != 1 {
			t.Fatalf("late_window drops = %d, want 1", got)
		}
		if desc := b.Topology().Describe().String(); !strings.Contains(desc, "Processor: COGROUPKSTREAM-MERGE-0000000005 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002])") {
			t.Fatalf("describe:\n%s", desc)
		}
	})
	t.Run("on window close", func(t *testing.T) {
		d, b := cogroupDriver(t, tumbling(dsl.OnWindowClose()))
		cogroupPipe(t, d, in)
		winAdvance(t, d, 100)
		aggCheck(t, "output", winRead(t, d, "out", winTimeKeys(10), str), []string{
			"A[0,10)=c1v2@3", "A[10,20)=c3@12", "B[30,40)=v4@30",
		})
		// The merge node runs the emit pass, so it alone holds the emit
		// frontier.
		if desc := b.Topology().Describe().String(); !strings.Contains(desc,
			"Processor: COGROUPKSTREAM-MERGE-0000000005 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002, COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000002-emitfrontier])") {
			t.Fatalf("describe:\n%s", desc)
		}
	})
	t.Run("sliding", func(t *testing.T) {
		d, _ := cogroupDriver(t, func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AddCogroup(dsl.Cogroup(clicks, clickAgg), views, viewAgg).
				WindowedBySliding(window.SlidingWindowsOfTimeDifferenceAndGrace(5*winTick, 2*winTick)).
				Aggregate(emptyAgg, dsl.MaterializedWith(str, str))
		})
		cogroupPipe(t, d, []cogroupIn{{"clicks", "A", "1", 10}, {"views", "A", "2", 12}})
		aggCheck(t, "output", winRead(t, d, "out", winSlidingKeys(5), str), []string{
			"A[5,10]=c1@10", "A[11,16]=v2@12", "A[7,12]=c1v2@12",
		})
	})
}

func TestCogroupSession(t *testing.T) {
	str := serde.String()
	concat := func(_, a, b string) string { return a + b }
	build := func(e dsl.EmitStrategy) func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
		return func(clicks, views dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], string] {
			return dsl.AddCogroup(dsl.Cogroup(clicks, clickAgg), views, viewAgg).
				WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(5*winTick, 2*winTick)).EmitStrategy(e).
				Aggregate(emptyAgg, concat, dsl.MaterializedWith(str, str))
		}
	}
	in := []cogroupIn{{"clicks", "A", "1", 1}, {"views", "A", "2", 3}, {"views", "A", "3", 20}}
	t.Run("on window update", func(t *testing.T) {
		d, _ := cogroupDriver(t, build(dsl.OnWindowUpdate()))
		cogroupPipe(t, d, in)
		aggCheck(t, "output", winRead(t, d, "out", winSessionKeys(), str), []string{
			"A[1,1]=c1@1", "A[1,1]=<null>@1", "A[1,3]=c1v2@3", "A[20,20]=v3@20",
		})
	})
	t.Run("on window close", func(t *testing.T) {
		d, _ := cogroupDriver(t, build(dsl.OnWindowClose()))
		cogroupPipe(t, d, in)
		winAdvance(t, d, 100)
		aggCheck(t, "output", winRead(t, d, "out", winSessionKeys(), str), []string{"A[1,3]=c1v2@3", "A[20,20]=v3@20"})
	})
}

func TestCogroupRefusals(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	clicks := dsl.Stream(b, dsl.ConsumedWith(str, str), "clicks").GroupByKey()
	dsl.Cogroup[string, string, string](clicks, nil).Aggregate(nil)
	err := b.Topology().Err()
	for _, want := range []string{
		"node COGROUPKSTREAM-AGGREGATE-0000000002: nil aggregator",
		"node COGROUPKSTREAM-MERGE-0000000003: nil initializer",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v\nwant it to contain %q", err, want)
		}
	}
}
