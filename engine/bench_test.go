package engine_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// BenchmarkEngineVsBaseline runs the bare franz-go
// consume-transform-produce loop (the ceiling of the broker path here)
// and the engine on the same input: 1 M records (10 k with -short) of
// 100-byte values over 4 partitions. It reports both rates and the
// engine's share of the baseline, and the engine's peak heap.
//
// Each phase runs on an embedded broker of its own, in a child process,
// loaded with the same input (STOATFLOW_BENCH_BROKER=child, the default).
// With STOATFLOW_BENCH_BROKER=inprocess both run on one broker inside the
// benchmark's process, as before 2026-12-02: the broker's in-memory logs
// grow by copying into fresh memory, and the second phase, with a heap
// already grown by the first, paid up to four times the first's for the
// same bytes (docs/decisions/0019-bench-broker-per-phase.md).
func BenchmarkEngineVsBaseline(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	if v, err := strconv.Atoi(os.Getenv("STOATFLOW_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		for _, tp := range benchbase.Topologies {
			b.Run(tp.Name+"/"+guarantee, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ctx := context.Background()
					in := "in"
					seeds, stopBase := phaseBroker(b, in, "base-out", n)
					// The phases carry pprof labels, inherited by the
					// goroutines each starts: -cpuprofile with
					// pprof -tagfocus phase=engine (or =baseline) shows
					// one client's own CPU; an in-process broker's
					// goroutines, started before, carry none. Each phase
					// starts after a collection, and once the machine is
					// quiet (benchbase.Quiet), so that neither pays for
					// the garbage of the load or of the other.
					var base benchbase.Result
					var err error
					runtime.GC()
					benchbase.Quiet(ctx, 0.2, 10*time.Second)
					cpu0, wall0, mem0 := benchbase.ProcessCPU(), time.Now(), heapCounters()
					pprof.Do(ctx, pprof.Labels("phase", "baseline"), func(ctx context.Context) {
						base, err = benchbase.Baseline(ctx, seeds, in, "base-out", "base", guarantee == "exactly_once_v2", n)
					})
					cpu1, wall1, mem1 := benchbase.ProcessCPU(), time.Now(), heapCounters()
					if err != nil {
						b.Fatal(err)
					}
					stopBase()
					engineSeeds, stopEngine := phaseBroker(b, in, "engine-out", n)
					runtime.GC()
					benchbase.Quiet(ctx, 0.2, 10*time.Second)
					cpu1e, wall1e, mem1e := benchbase.ProcessCPU(), time.Now(), heapCounters()
					var rate float64
					var peak uint64
					pprof.Do(ctx, pprof.Labels("phase", "engine"), func(context.Context) {
						c := cfg(engineSeeds[0], "bench-"+tp.Name,
							"processing.guarantee", guarantee, "num.stream.threads", fmt.Sprint(runtime.NumCPU()),
							engine.BarrierIntervalMs, "500", engine.BarrierMinIntervalMs, "150")
						maps.Copy(c, benchConfig(b))
						rate, peak = runEngineOver(b, tp.Build(in, "engine-out"), c, n)
					})
					cpu2, wall2, mem2 := benchbase.ProcessCPU(), time.Now(), heapCounters()
					stopEngine()
					// Cores this process kept busy, on average, over each
					// phase (its group join and the engine's restore
					// included; a child broker's CPU is its own).
					b.ReportMetric(float64(cpu1-cpu0)/float64(wall1.Sub(wall0)), "baseline-cores")
					b.ReportMetric(float64(cpu2-cpu1e)/float64(wall2.Sub(wall1e)), "engine-cores")
					// Bytes allocated per record and GC cycles in each phase
					// (an in-process broker's included: its segment files
					// grow by copying, which makes the figure vary by ±5 %
					// between runs of one build).
					b.ReportMetric(float64(mem1.alloc-mem0.alloc)/float64(n), "baseline-B/rec")
					b.ReportMetric(float64(mem2.alloc-mem1e.alloc)/float64(n), "engine-B/rec")
					b.ReportMetric(float64(mem1.gcs-mem0.gcs), "baseline-gcs")
					b.ReportMetric(float64(mem2.gcs-mem1e.gcs), "engine-gcs")
					b.ReportMetric(base.RecordsPerSec, "baseline-rec/s")
					b.ReportMetric(rate, "engine-rec/s")
					b.ReportMetric(rate/base.RecordsPerSec, "ratio")
					b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
				}
			})
		}
	}
}

// phaseBroker is the broker one phase of BenchmarkEngineVsBaseline runs
// on, with topic in loaded with n records and topic out created: a fresh
// child process per phase, or (STOATFLOW_BENCH_BROKER=inprocess) one
// broker in this process for both phases, loaded once. stop ends a
// child's broker; the in-process one ends with b.
func phaseBroker(b *testing.B, in, out string, n int) (seeds []string, stop func()) {
	b.Helper()
	ctx := context.Background()
	switch mode := os.Getenv("STOATFLOW_BENCH_BROKER"); mode {
	case "inprocess":
		// Both phases reach here; the second finds the first's broker.
		if shared, ok := inprocessBrokers[b]; ok {
			return shared, func() {}
		}
		seeds = []string{startBroker(b, map[string]int32{"base-out": 4, "engine-out": 4})}
		inprocessBrokers[b] = seeds
		b.Cleanup(func() { delete(inprocessBrokers, b) })
		stop = func() {}
	case "", "child":
		addr, stopChild := startBenchBrokerStop(b)
		seeds, stop = []string{addr}, stopChild
		if err := createTopic(ctx, seeds, out, 4); err != nil {
			b.Fatal(err)
		}
	default:
		b.Fatalf("STOATFLOW_BENCH_BROKER=%q: want child or inprocess", mode)
	}
	if err := benchbase.Load(ctx, seeds, in, 4, n, 100); err != nil {
		b.Fatal(err)
	}
	return seeds, stop
}

// inprocessBrokers is the broker each benchmark shares between its phases
// under STOATFLOW_BENCH_BROKER=inprocess.
var inprocessBrokers = map[*testing.B][]string{}

// createTopic creates topic with the given partitions.
func createTopic(ctx context.Context, seeds []string, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// heapStats are the process's cumulative heap counters.
type heapStats struct{ alloc, gcs uint64 }

// heapCounters reads them without stopping the world, which
// runtime.ReadMemStats would.
func heapCounters() heapStats {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return heapStats{alloc: s[0].Value.Uint64(), gcs: s[1].Value.Uint64()}
}

// benchConfig is STOATFLOW_BENCH_CONFIG, KEY=VALUE pairs separated by
// commas, laid over the engine's configuration: the same binary measures
// a change with and without it, interleaved, e.g.
// STOATFLOW_BENCH_CONFIG=stoatflow.changelog.coalesce-bytes=0.
func benchConfig(b *testing.B) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("STOATFLOW_BENCH_CONFIG"), ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			b.Fatalf("STOATFLOW_BENCH_CONFIG: %q is not KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out
}

// runEngineOver runs the engine until n source records are committed and
// returns records/s, and the peak heap in use. Time counts from the first
// RUNNING state with partitions (group joined, state restored), as the
// baseline's counts from its first assignment.
func runEngineOver(b *testing.B, topo *topology.Topology, c map[string]string, n int) (float64, uint64) {
	e := engine.New(topo, c, engine.WithLogger(testLogger(b)))
	var mu sync.Mutex
	var start time.Time
	e.OnStateChange(func(_, s engine.State) {
		mu.Lock()
		defer mu.Unlock()
		// The last RUNNING before anything committed: a rebalance may
		// restart the lanes before the first record.
		if s == engine.Running && e.Stats().Records == 0 {
			start = time.Now()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- e.Run(ctx) }()
	var peak uint64
	polls := 0
	for e.Stats().Records < int64(n) {
		select {
		case err := <-done:
			b.Fatalf("engine stopped: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if polls++; polls%10 == 0 {
			peak = max(peak, benchbase.HeapInUse())
		}
		if time.Since(began) > 10*time.Minute {
			b.Fatal("engine did not finish within 10 minutes")
		}
	}
	mu.Lock()
	elapsed := time.Since(start)
	mu.Unlock()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(n) / elapsed.Seconds(), peak
}
