package testdriver_test

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// The windowed benchmarks pipe benchInput (1 M records over 10 k keys,
// record i stamped i ms, so every key recurs every 10 s of event time)
// through a windowed count written to a topic, under the default
// onWindowUpdate, and report records/s against the stateless baseline of
// bench_test.go measured in the same run.

func benchWindowed(b *testing.B, count func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64]) {
	str := serde.String()
	build := func() *testdriver.Driver {
		bld := dsl.NewBuilder()
		count(dsl.Stream(bld, dsl.ConsumedWith(str, str), "in").GroupByKey()).ToStream().To("out")
		d, err := testdriver.New(bld.Topology(), nil)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	measure(b, func() {
		d := build()
		pipeAll(b, d, benchInput)
		d.Close()
	}, func() { baselineStateless(benchInput) })
}

// BenchmarkTumblingCount: one-minute tumbling windows with 10 s of grace,
// so six records per key and window; each window expires as it closes.
func BenchmarkTumblingCount(b *testing.B) {
	benchWindowed(b, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Minute, 10*time.Second)))
	})
}

// BenchmarkHoppingCount: one-minute windows advancing by 15 s, so four
// windows per record.
func BenchmarkHoppingCount(b *testing.B) {
	benchWindowed(b, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Minute, 10*time.Second).AdvanceBy(15 * time.Second)))
	})
}

// BenchmarkSessionCount: a 30 s gap against a key recurring every 10 s, so
// every record merges into its key's session: a find, a remove and a put,
// and two updates forwarded.
func BenchmarkSessionCount(b *testing.B) {
	benchWindowed(b, func(g dsl.KGroupedStream[string, string]) dsl.KTable[window.Windowed[string], int64] {
		return dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(30*time.Second, 10*time.Second)))
	})
}
