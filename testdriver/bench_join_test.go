package testdriver_test

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// joinBenchTimestamp spreads benchInput over time for the join benchmark:
// 20 records a millisecond, so that a key (every 10 k records) comes back
// every 500 ms.
func joinBenchTimestamp(i int) int64 { return int64(i / 20) }

// joinBenchTopic alternates a key's records between the two topics, so that
// each record pairs with the key's previous record, 500 ms earlier on the
// other side, and with nothing else inside a 1 s window.
func joinBenchTopic(i int) int { return (i / benchKeys) % 2 }

// pipeTwo pipes every record into topic "left" or "right" with increasing
// timestamps, consuming every topic written as it goes, as pipeAll does
// for one topic.
func pipeTwo(b *testing.B, d *testdriver.Driver, rs []rawRecord) {
	in := [2]*testdriver.InputTopic[[]byte, []byte]{
		testdriver.CreateInputTopic(d, "left", serde.Bytes(), serde.Bytes()),
		testdriver.CreateInputTopic(d, "right", serde.Bytes(), serde.Bytes()),
	}
	skip := func() {
		for _, topic := range d.ProducedTopicNames() {
			testdriver.CreateOutputTopic(d, topic, serde.Bytes(), serde.Bytes()).Skip()
		}
	}
	for i, r := range rs {
		if err := in[joinBenchTopic(i)].PipeInputAt(r.key, r.value, joinBenchTimestamp(i)); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 0 {
			skip()
		}
	}
	skip()
}

// BenchmarkStreamStreamJoin is an inner join of two topics over a 1 s
// window, with changelogged in-memory stores, against the stateless
// baseline: about one result per record, stores of some 20 k records per
// side, expired on the frontier as it moves.
func BenchmarkStreamStreamJoin(b *testing.B) {
	str := serde.String()
	build := func() *testdriver.Driver {
		bld := dsl.NewBuilder()
		left := dsl.Stream(bld, dsl.ConsumedWith(str, str), "left")
		right := dsl.Stream(bld, dsl.ConsumedWith(str, str), "right")
		dsl.JoinStream(left, right, func(_, l, r string) string { return l + "+" + r },
			window.JoinWindowsOfTimeDifferenceWithNoGrace(time.Second)).
			To("out", dsl.ProducedWith(str, str))
		d, err := testdriver.New(bld.Topology(), nil)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	measure(b, func() {
		d := build()
		pipeTwo(b, d, benchInput)
		d.Close()
	}, func() { baselineStateless(benchInput) })
}
