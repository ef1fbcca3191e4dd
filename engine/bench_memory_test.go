package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// startBenchBroker runs the broker child for b and returns its address;
// it is stopped when b ends.
func startBenchBroker(b *testing.B) string {
	b.Helper()
	addr, _ := startBenchBrokerStop(b)
	return addr
}

// startBenchBrokerStop is startBenchBroker that also returns a stop
// function, for a benchmark that wants the broker gone before it ends:
// the test binary again, as an in-memory embedded broker on a free port
// (broker.ServeChild, from TestMain), so that a benchmark of the engine's
// heap or CPU does not count the broker's.
func startBenchBrokerStop(b *testing.B) (string, func()) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	// Without GODEBUG: a gctrace asked for is the engine's, not the
	// broker's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	addr, stop, err := broker.StartChild(context.Background(), cmd)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return addr, stop
}

// heapSampler records the peak of the heap in use (objects and the free
// space of spans holding them, as MemStats.HeapInuse) and of the memory
// the runtime holds from the system, every 10 ms, from runtime/metrics.
type heapSampler struct {
	stop     chan struct{}
	done     sync.WaitGroup
	heap     atomic.Uint64
	sys      atomic.Uint64
	baseHeap uint64
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	s := &heapSampler{stop: make(chan struct{})}
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}, {Name: "/memory/classes/total:bytes"}}
	read := func() {
		metrics.Read(samples)
		heap := samples[0].Value.Uint64() + samples[1].Value.Uint64()
		if heap > s.heap.Load() {
			s.heap.Store(heap)
		}
		if sys := samples[2].Value.Uint64(); sys > s.sys.Load() {
			s.sys.Store(sys)
		}
	}
	read()
	s.baseHeap = s.heap.Load()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return s
}

// memoryBoundMB is the bound the bounded-memory benchmarks hold the peak
// heap in use to, at any record count (docs/design.md, "Bounded
// memory"): their configuration's queues, stashes, held records, fetches
// and producer buffer, and the garbage between two collections.
const memoryBoundMB = 128

// report stops the sampler and reports the peaks in MiB; a peak heap
// over memoryBoundMB fails the benchmark.
func (s *heapSampler) report(b *testing.B) {
	close(s.stop)
	s.done.Wait()
	peak := float64(s.heap.Load()) / (1 << 20)
	if peak > memoryBoundMB {
		b.Errorf("peak heap in use %.1f MiB, over the bound of %d MiB", peak, memoryBoundMB)
	}
	b.ReportMetric(peak, "peak-heap-MB")
	b.ReportMetric(float64(s.sys.Load())/(1<<20), "peak-sys-MB")
	b.ReportMetric(float64(s.baseHeap)/(1<<20), "start-heap-MB")
}

// memoryBenchSizes are the record counts the bounded-memory benchmarks
// run at: two, so that a bound that grows with the count shows.
func memoryBenchSizes() []int {
	if v := os.Getenv("STOATFLOW_BENCH_RECORDS"); v != "" {
		var out []int
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				out = append(out, n)
			}
		}
		return out
	}
	if testing.Short() {
		return []int{20_000, 100_000}
	}
	return []int{1_000_000, 5_000_000}
}

// BenchmarkBoundedMemory reports the engine's peak heap (the broker runs
// in a child process) at 1 M and 5 M records, for
//
//   - count-slow-lane: a count behind an in-memory re-key over records of
//     benchbase.Load (10 k keys, 100-byte values, 4 partitions), under
//     exactly-once with 2 lanes, one upstream lane slowed: it sleeps
//     20 ms at every barrier it crosses, so the downstream lanes wait for
//     its marker while the other upstream lane runs ahead, and 1 ms every
//     1000 records;
//   - restore: a start that restores a count's changelog of as many
//     records (10 k keys, each with its lane hash), in memory and, where
//     the binary has RocksDB, into the lanes' databases.
//
// The peak does not grow with the count; over memoryBoundMB fails the
// benchmark. docs/design.md ("Bounded memory") gives the figures.
func BenchmarkBoundedMemory(b *testing.B) {
	for _, n := range memoryBenchSizes() {
		b.Run(fmt.Sprintf("count-slow-lane/records=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				benchCountSlowLane(b, n)
			}
		})
	}
	for _, backend := range []string{"in_memory", "rocksDB"} {
		if backend == "rocksDB" && !rocks.Available() {
			continue
		}
		for _, n := range memoryBenchSizes() {
			b.Run(fmt.Sprintf("restore-%s/records=%d", backend, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					benchRestore(b, n, backend)
				}
			})
		}
	}
}

func rekeyedCountsOf(in, out string) *topology.Topology {
	str := serde.String()
	bld := dsl.NewBuilder()
	dsl.GroupBy(dsl.Stream(bld, dsl.ConsumedWith(str, serde.Bytes()), in), func(k string, _ []byte) string { return k }, dsl.GroupedWith(str, serde.Bytes())).
		Count(dsl.MaterializedAs[string, int64]("counts")).ToStream().To(out, dsl.ProducedWith(str, serde.Int64()))
	return bld.Topology()
}

func benchCountSlowLane(b *testing.B, n int) {
	b.StopTimer()
	addr := startBenchBroker(b)
	ctx := context.Background()
	if err := benchbase.Load(ctx, []string{addr}, "in", 4, n, 100); err != nil {
		b.Fatal(err)
	}
	createTopics(b, addr, map[string]int32{"out": 4})
	var seen atomic.Int64
	slow := func(sub, idx int, barrier bool) {
		if sub != 0 || idx != 0 {
			return
		}
		if barrier {
			time.Sleep(20 * time.Millisecond)
		} else if seen.Add(1)%1000 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	probe := &engine.Probe{}
	e := engine.New(rekeyedCountsOf("in", "out"), cfg(addr, "bench-slow-lane", "num.stream.threads", "2",
		engine.BarrierIntervalMs, "200", engine.BarrierMinIntervalMs, "100"),
		engine.WithLogger(testLogger(b)), engine.WithProbe(probe, slow))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	heap := startHeapSampler()
	b.StartTimer()
	go func() { done <- e.Run(runCtx) }()
	deadline := time.Now().Add(20 * time.Minute)
	for e.Stats().Records < int64(n) {
		select {
		case err := <-done:
			b.Fatalf("engine stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d records committed in 20 minutes", e.Stats().Records, n)
		}
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	heap.report(b)
	bd := probe.Bounds()
	b.ReportMetric(float64(bd.StashPeak), "stash-peak")
	b.ReportMetric(float64(bd.UpstreamWaits), "upstream-waits")
	b.ReportMetric(float64(bd.HeldWaits), "held-waits")
}

// loadChangelog writes n records of a count's changelog: 10 k keys, each
// record to the partition of its key and with the lane hash header the
// engine writes.
func loadChangelog(b *testing.B, addr, topic string, partitions int32, n int) {
	b.Helper()
	// Compacted, as the engine wants a changelog; the embedded broker
	// compacts once an hour, so the restore reads all n.
	createTopicsWith(b, addr, map[string]int32{topic: partitions}, map[string]*string{"cleanup.policy": ptrTo("compact")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(20*time.Millisecond), kgo.MaxBufferedRecords(200_000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	var failed atomic.Pointer[error]
	for i := range n {
		key := []byte("key-" + strconv.Itoa(i%benchbase.DistinctKeys))
		rec := &kgo.Record{Key: key, Value: binary.BigEndian.AppendUint64(nil, uint64(i/benchbase.DistinctKeys+1)),
			Partition: int32(lane.For(key, int(partitions))),
			Headers:   []kgo.RecordHeader{{Key: "__stoatflow.lane.hash", Value: binary.BigEndian.AppendUint32(nil, uint32(lane.Murmur2(key)))}}}
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
}

func ptrTo(s string) *string { return &s }

func createTopics(b *testing.B, addr string, topics map[string]int32) {
	b.Helper()
	createTopicsWith(b, addr, topics, nil)
}

func createTopicsWith(b *testing.B, addr string, topics map[string]int32, configs map[string]*string) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for t, p := range topics {
		if _, err := adm.CreateTopic(context.Background(), p, -1, configs, t); err != nil {
			b.Fatalf("create %s: %v", t, err)
		}
	}
}

func benchRestore(b *testing.B, n int, backend string) {
	b.StopTimer()
	addr := startBenchBroker(b)
	const app = "bench-restore"
	createTopics(b, addr, map[string]int32{"in": 4, "out": 4})
	loadChangelog(b, addr, app+"-counts-changelog", 4, n)
	c := cfg(addr, app, "num.stream.threads", "2", "default.dsl.store", backend, "state.dir", b.TempDir())
	e := engine.New(counts(), c, engine.WithLogger(testLogger(b)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	heap := startHeapSampler()
	began := time.Now()
	b.StartTimer()
	go func() { done <- e.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Minute)
	for e.Stats().Restored < int64(n) || e.State() != engine.Running {
		select {
		case err := <-done:
			b.Fatalf("engine stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d records restored in 20 minutes", e.Stats().Restored, n)
		}
	}
	b.StopTimer()
	took := time.Since(began)
	heap.report(b)
	b.ReportMetric(float64(n)/took.Seconds(), "restored-rec/s")
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
