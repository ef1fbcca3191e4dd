package engine_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// upperFile is the stateless map of make bench as a topology file: the
// value upper-cased by an expression, string serdes on both sides.
const upperFile = `application-id: bench-file
sources:
  in: {topic: in, key-serde: string, value-serde: string}
pipelines:
  p:
    from: in
    steps:
      - map-values: {expr: upper(value), value-serde: string}
      - to: {topic: engine-out, value-serde: string}
`

// upperGo is upperFile's topology built in Go.
func upperGo() *topology.Topology {
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in")
	dsl.MapValues(s, func(_, v string) string { return strings.ToUpper(v) }).
		To("engine-out", dsl.ProducedWith(serde.String(), serde.String()))
	return b.Topology()
}

// BenchmarkFileVsGo runs the engine over the same input (as
// BenchmarkEngineVsBaseline's: 1 M records of 100-byte values over 4
// partitions, STOATFLOW_BENCH_RECORDS to change) twice per iteration, on
// a broker of its own each time: the stateless map built in Go, then the
// same map loaded from a topology file (upperFile). It reports both rates
// and the file's share of Go's (ratio), and the CPU each took a record
// (the engine process's own; the broker is a child process), whose ratio
// is steadier than the rates' on a shared machine. Issue 37 asks that the
// file cost no more than 10 % against Go.
func BenchmarkFileVsGo(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	if v, err := strconv.Atoi(os.Getenv("STOATFLOW_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	f, err := topofile.Parse("upper.yaml", []byte(upperFile), ".")
	if err != nil {
		b.Fatal(err)
	}
	for _, guarantee := range []string{"exactly_once_v2"} {
		b.Run("map/"+guarantee, func(b *testing.B) {
			var rate, cpu [2]float64
			for i := 0; i < b.N; i++ {
				for side, topo := range []func() *topology.Topology{upperGo, func() *topology.Topology { return f.Topology }} {
					r, c := runSide(b, []string{"go", "file"}[side], topo(), guarantee, n)
					rate[side] += r / float64(b.N)
					cpu[side] += c / float64(b.N)
				}
			}
			b.ReportMetric(rate[0], "go-rec/s")
			b.ReportMetric(rate[1], "file-rec/s")
			b.ReportMetric(rate[1]/rate[0], "ratio")
			b.ReportMetric(cpu[0]*1e9, "go-cpu-ns/rec")
			b.ReportMetric(cpu[1]*1e9, "file-cpu-ns/rec")
			b.ReportMetric(cpu[0]/cpu[1], "cpu-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// runSide runs the engine over n records on a broker of its own, as
// BenchmarkEngineVsBaseline's engine phase does, and returns its rate and
// the CPU seconds it took a record. The phase carries the pprof label
// side=side.
func runSide(b *testing.B, side string, topo *topology.Topology, guarantee string, n int) (rate, cpuPerRec float64) {
	b.Helper()
	ctx := context.Background()
	seeds, stop := phaseBroker(b, "in", "engine-out", n)
	defer stop()
	runtime.GC()
	benchbase.Quiet(ctx, 0.2, 10*time.Second)
	cpu0 := benchbase.ProcessCPU()
	pprof.Do(ctx, pprof.Labels("side", side), func(context.Context) {
		c := cfg(seeds[0], fmt.Sprintf("bench-%s-%d", side, time.Now().UnixNano()),
			"processing.guarantee", guarantee, "num.stream.threads", fmt.Sprint(runtime.NumCPU()),
			engine.BarrierIntervalMs, "500", engine.BarrierMinIntervalMs, "150")
		maps.Copy(c, benchConfig(b))
		rate, _ = runEngineOver(b, topo, c, n)
	})
	return rate, float64(benchbase.ProcessCPU()-cpu0) / 1e9 / float64(n)
}
