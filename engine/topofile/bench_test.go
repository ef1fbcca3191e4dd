package topofile

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// benchShapes are the topologies BenchmarkFileVsGo runs both ways: built
// in Go with the DSL, and compiled from the equivalent topology file.
// Both read string keys and values from in and write to out.
var benchShapes = []struct {
	name string
	goT  func() *topology.Topology
	file string
}{
	{
		name: "map",
		goT: func() *topology.Topology {
			b := dsl.NewBuilder()
			s := dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in")
			dsl.MapValues(s, func(_, v string) string { return strings.ToUpper(v) }).
				To("out", dsl.ProducedWith(serde.String(), serde.String()))
			return b.Topology()
		},
		file: `
      - map-values: {expr: upper(value), value-serde: string}
      - to: {topic: out, value-serde: string}`,
	},
	{
		name: "filter-map",
		goT: func() *topology.Topology {
			b := dsl.NewBuilder()
			s := dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in").
				Filter(func(_, v string) bool { return !strings.HasSuffix(v, "7") })
			dsl.MapValues(s, func(_, v string) string { return strings.ToUpper(v) }).
				To("out", dsl.ProducedWith(serde.String(), serde.String()))
			return b.Topology()
		},
		file: `
      - filter: 'not (value endsWith "7")'
      - map-values: {expr: upper(value), value-serde: string}
      - to: {topic: out, value-serde: string}`,
	},
	{
		name: "count",
		goT: func() *topology.Topology {
			b := dsl.NewBuilder()
			dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in").GroupByKey().
				Count(dsl.MaterializedAs[string, int64]("counts")).ToStream().
				To("out", dsl.ProducedWith(serde.String(), serde.Int64()))
			return b.Topology()
		},
		file: `
      - group-by-key
      - count: {store: counts}
      - to-stream
      - to: {topic: out, value-serde: long}`,
	},
}

// benchFile is the topology file of a shape: its steps under one
// pipeline reading the source in.
func benchFile(steps string) string {
	return `application-id: bench
sources:
  in: {topic: in, key-serde: string, value-serde: string}
pipelines:
  p:
    from: in
    steps:` + steps + "\n"
}

// BenchmarkFileVsGo runs each shape of benchShapes through the test
// driver twice per iteration, as built in Go and as compiled from its
// topology file, over the same 200 000 records (10 000 keys), and
// reports both rates and the file's share of Go's (ratio), and the CPU
// each took a record and their ratio (cpu-ratio, Go's over the file's):
// the cost of the expression path (the dynamically typed serdes, the
// evaluation of the expressions) with the engine's own work the same on
// both sides. Issue 37 asks for 0.9 or more.
func BenchmarkFileVsGo(b *testing.B) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	keys := make([][]byte, n)
	values := make([][]byte, n)
	for i := range n {
		keys[i] = fmt.Appendf(nil, "key-%05d", i%10_000)
		values[i] = fmt.Appendf(nil, "value-%07d", i)
	}
	cfg := map[string]string{config.ApplicationID: "bench", config.TestDriverCommitPerPipe: "false"}
	for _, sh := range benchShapes {
		f, err := Parse("bench.yaml", []byte(benchFile(sh.file)), ".")
		if err != nil {
			b.Fatalf("%s: %v", sh.name, err)
		}
		b.Run(sh.name, func(b *testing.B) {
			var took, cpu [2]time.Duration
			var written [2]int
			for i := range b.N {
				// Each side builds its driver anew, as the file's topology
				// would be for a new run; the build is not timed. The
				// sides take turns going first.
				for j := range 2 {
					side := (i + j) % 2
					topo := f.Topology
					if side == 0 {
						topo = sh.goT()
					}
					w, dt, dc := pipeBench(b, []string{"go", "file"}[side], topo, cfg, keys, values)
					took[side] += dt
					cpu[side] += dc
					written[side] = w
				}
			}
			if written[0] == 0 || written[0] != written[1] {
				b.Fatalf("the Go topology wrote %d records, the file %d", written[0], written[1])
			}
			recs := float64(b.N * n)
			b.ReportMetric(recs/took[0].Seconds(), "go-rec/s")
			b.ReportMetric(recs/took[1].Seconds(), "file-rec/s")
			b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "ratio")
			b.ReportMetric(float64(cpu[0].Nanoseconds())/recs, "go-cpu-ns/rec")
			b.ReportMetric(float64(cpu[1].Nanoseconds())/recs, "file-cpu-ns/rec")
			b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "cpu-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// pipeBench pipes every record through a new driver for topo, skipping
// its output as it goes so that memory stays flat, and returns how many
// records it wrote to out, how long the piping took and the process's CPU
// time over it (steadier than the time on a shared machine: the driver
// runs on one goroutine, and the collector's work is charged to the side
// that made the garbage, mostly). The piping carries the pprof label
// side=side (go or file), so that a -cpuprofile shows one side with
// pprof -tagfocus side=file.
func pipeBench(b *testing.B, side string, topo *topology.Topology, cfg map[string]string, keys, values [][]byte) (written int, took, cpu time.Duration) {
	b.Helper()
	b.StopTimer()
	d, err := testdriver.New(topo, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", serde.Bytes(), serde.Bytes())
	out := testdriver.CreateOutputTopic(d, "out", serde.Bytes(), serde.Bytes())
	runtime.GC()
	b.StartTimer()
	cpu0 := benchbase.ProcessCPU()
	pprof.Do(context.Background(), pprof.Labels("side", side), func(context.Context) {
		start := time.Now()
		for i := range keys {
			if err := in.PipeInputAt(keys[i], values[i], int64(i)); err != nil {
				b.Fatal(err)
			}
			if i%4096 == 4095 {
				written += out.Skip()
			}
		}
		written += out.Skip()
		took = time.Since(start)
	})
	return written, took, benchbase.ProcessCPU() - cpu0
}
