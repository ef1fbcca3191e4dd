package testdriver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

const (
	benchRecords = 1_000_000
	benchKeys    = 10_000
)

type rawRecord struct{ key, value []byte }

// benchInput is 1 M pre-serialized records over 10 k keys: what a consumer
// hands the engine.
var benchInput = func() []rawRecord {
	rs := make([]rawRecord, benchRecords)
	for i := range rs {
		rs[i] = rawRecord{key: fmt.Appendf(nil, "key-%05d", i%benchKeys), value: fmt.Appendf(nil, "value-%07d", i)}
	}
	return rs
}()

func keep(v string) bool { return v[len(v)-1] != '7' }

// baselineStateless is the same filter/map chain as a plain Go loop over
// the same bytes: decode, filter, map, encode.
func baselineStateless(rs []rawRecord) int {
	out := make([][]byte, 0, 1024)
	n := 0
	for _, r := range rs {
		k, v := string(r.key), string(r.value)
		if !keep(v) {
			continue
		}
		v = strings.ToUpper(v)
		out = append(out[:0], []byte(k), []byte(v))
		n++
	}
	return n
}

// baselineCount counts per key in a map over the same bytes.
func baselineCount(rs []rawRecord) int {
	counts := make(map[string]int64)
	for _, r := range rs {
		counts[string(r.key)]++
	}
	return len(counts)
}

// pipeAll pipes every record through d, consuming every topic written
// (output and changelogs) as it goes so that memory stays flat, as a test
// reading its output would.
func pipeAll(b *testing.B, d *testdriver.Driver, rs []rawRecord) {
	in := testdriver.CreateInputTopic(d, "in", serde.Bytes(), serde.Bytes())
	skip := func() {
		for _, topic := range d.ProducedTopicNames() {
			testdriver.CreateOutputTopic(d, topic, serde.Bytes(), serde.Bytes()).Skip()
		}
	}
	for i, r := range rs {
		if err := in.PipeInputAt(r.key, r.value, int64(i)); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 0 {
			skip()
		}
	}
	skip()
}

// measure runs engine and baseline once per iteration and reports both
// rates and their ratio, so that a noisy machine shows in both.
func measure(b *testing.B, engine func(), baseline func()) {
	var engineTime, baseTime time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		baseline()
		baseTime += time.Since(start)
		start = time.Now()
		engine()
		engineTime += time.Since(start)
	}
	records := float64(b.N * benchRecords)
	b.ReportMetric(records/engineTime.Seconds(), "records/s")
	b.ReportMetric(records/baseTime.Seconds(), "baseline-records/s")
	b.ReportMetric(baseTime.Seconds()/engineTime.Seconds(), "ratio-to-baseline")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkStatelessChain(b *testing.B) {
	str := serde.String()
	build := func() *testdriver.Driver {
		bld := dsl.NewBuilder()
		s := dsl.Stream(bld, dsl.ConsumedWith(str, str), "in").Filter(func(_, v string) bool { return keep(v) })
		dsl.MapValues(s, func(_, v string) string { return strings.ToUpper(v) }).To("out", dsl.ProducedWith(str, str))
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

func BenchmarkCount(b *testing.B) {
	str := serde.String()
	build := func() *testdriver.Driver {
		bld := dsl.NewBuilder()
		dsl.Stream(bld, dsl.ConsumedWith(str, str), "in").
			GroupByKey().
			Count(dsl.MaterializedWith(str, serde.Int64())).
			ToStream().
			To("out", dsl.ProducedWith(str, serde.Int64()))
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
	}, func() { baselineCount(benchInput) })
}
