package engine_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkStateBackends runs, on one embedded broker and input, a
// windowed count through the live engine with in-memory stores and with
// RocksDB stores, and then restores the RocksDB run's changelog into a
// fresh state directory and into memory. It reports each processing rate,
// RocksDB's share of in-memory, and the restore rates in changelog
// records/s. 200 k records (10 k with -short; STOATFLOW_BENCH_RECORDS
// sets it) of 100-byte values over 4 partitions, 10 k keys, 2 lanes.
func BenchmarkStateBackends(b *testing.B) {
	needRocks(b)
	n := 200_000
	if testing.Short() {
		n = 10_000
	}
	if v, err := strconv.Atoi(os.Getenv("STOATFLOW_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		addr := startBroker(b, map[string]int32{"out-in_memory": 4, "out-rocksDB": 4})
		if err := benchbase.Load(context.Background(), []string{addr}, "in", 4, n, 100); err != nil {
			b.Fatal(err)
		}
		rates := map[string]float64{}
		dirs := map[string]string{}
		for _, store := range []string{"in_memory", "rocksDB"} {
			dirs[store] = b.TempDir()
			c := storeCfg(addr, "bench-state-"+store, store, dirs[store], "num.stream.threads", "2",
				engine.BarrierIntervalMs, "500", engine.BarrierMinIntervalMs, "150")
			rates[store], _ = runEngineOver(b, benchWindowedCount("out-"+store), c, n)
		}
		b.ReportMetric(rates["in_memory"], "in-memory-rec/s")
		b.ReportMetric(rates["rocksDB"], "rocksdb-rec/s")
		b.ReportMetric(rates["rocksDB"]/rates["in_memory"], "ratio")

		// Restore the RocksDB run's changelog: into a new state directory,
		// and into memory, each timed by the engine's own log line.
		for _, store := range []string{"rocksDB", "in_memory"} {
			recs, took := timeRestore(b, addr, "bench-state-rocksDB", store, b.TempDir())
			b.ReportMetric(float64(recs)/took.Seconds(), "restore-"+store+"-rec/s")
			if store == "rocksDB" {
				b.ReportMetric(float64(recs), "restore-records")
			}
		}
	}
}

func benchWindowedCount(out string) *topology.Topology {
	str := serde.String()
	bld := dsl.NewBuilder()
	g := dsl.Stream(bld, dsl.ConsumedWith(str, serde.Bytes()), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Minute, time.Second)), dsl.MaterializedAs[string, int64]("win")).
		ToStream().To(out, dsl.ProducedWith(window.TimeWindowedSerde(str, 60_000), serde.Int64()))
	return bld.Topology()
}

// timeRestore starts app's topology over an empty state directory with
// store and returns how many changelog records the engine restored and
// how long it said that took, from the restore's start to its last store
// restored (the engine's own "state restored" line; see restoreTimes).
func timeRestore(b *testing.B, addr, app, store, dir string) (int64, time.Duration) {
	h := &restoreTimes{}
	c := storeCfg(addr, app, store, dir, "num.stream.threads", "2")
	e := engine.New(benchWindowedCount("out-restore"), c, engine.WithLogger(slog.New(h)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Minute)
	for e.State() != engine.Running || e.Stats().Restored == 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%s restore did not finish in 5 minutes", store)
		}
		select {
		case err := <-done:
			b.Fatalf("engine stopped: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.took == 0 {
		b.Fatalf("%s: no state restored log line", store)
	}
	return h.records, h.took
}

// restoreTimes is a log handler that adds up the engine's "state restored"
// lines: the runner's, one per generation, which count the changelog
// records read and the wall time from the restore's start to the last
// store restored and committed. The generation's lines of the same message,
// one per sub-topology (with a sub_topology attribute), are left out: they
// cover part of the same time and count a record once per lane it went
// to, so adding them in would count both twice.
type restoreTimes struct {
	mu      sync.Mutex
	records int64
	took    time.Duration
}

func (h *restoreTimes) Enabled(context.Context, slog.Level) bool { return true }

func (h *restoreTimes) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "state restored" {
		return nil
	}
	sub := false
	r.Attrs(func(a slog.Attr) bool {
		sub = sub || a.Key == "sub_topology"
		return !sub
	})
	if sub {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "records":
			h.records += a.Value.Int64()
		case "took":
			h.took += a.Value.Duration()
		}
		return true
	})
	return nil
}

func (h *restoreTimes) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *restoreTimes) WithGroup(string) slog.Handler      { return h }

// BenchmarkCleanRestart counts n records of n distinct keys (1 M; 20 k with
// -short; STOATFLOW_BENCH_RECORDS sets it), stops the engine cleanly and
// starts it again, with RocksDB stores and with in-memory stores: it
// reports how many changelog records each restart restored (0 for RocksDB)
// and how long each took to be running again.
func BenchmarkCleanRestart(b *testing.B) {
	needRocks(b)
	n := 1_000_000
	if testing.Short() {
		n = 20_000
	}
	if v, err := strconv.Atoi(os.Getenv("STOATFLOW_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		addr := startBroker(b, map[string]int32{"in": 4, "out": 4})
		loadDistinct(b, addr, "in", n)
		for _, store := range []string{"rocksDB", "in_memory"} {
			c := storeCfg(addr, "restart-"+store, store, b.TempDir(), "num.stream.threads", "2",
				engine.BarrierIntervalMs, "500", engine.BarrierMinIntervalMs, "150")
			runEngineOver(b, counts(), c, n)
			e := engine.New(counts(), c, engine.WithLogger(testLogger(b)))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			began := time.Now()
			go func() { done <- e.Run(ctx) }()
			for e.State() != engine.Running || len(e.Assignment()) == 0 {
				select {
				case err := <-done:
					b.Fatalf("engine stopped: %v", err)
				case <-time.After(10 * time.Millisecond):
				}
				if time.Since(began) > 5*time.Minute {
					b.Fatal("the restart was not running within 5 minutes")
				}
			}
			took := time.Since(began)
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(e.Stats().Restored), "restored-"+store)
			b.ReportMetric(took.Seconds(), "restart-s-"+store)
		}
	}
}

// loadDistinct produces n records of distinct keys to topic.
func loadDistinct(b *testing.B, addr, topic string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(20*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	var first error
	for i := range n {
		cl.Produce(context.Background(), &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("x")}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmpOr(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if first != nil {
		b.Fatal(first)
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
