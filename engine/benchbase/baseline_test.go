package benchbase_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/kafka"
)

const (
	partitions = 4
	valueSize  = 100
)

func startBroker(tb testing.TB) *broker.Broker {
	tb.Helper()
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

func createTopic(tb testing.TB, addr, topic string) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), partitions, -1, nil, topic); err != nil {
		tb.Fatalf("create %s: %v", topic, err)
	}
}

var modes = []struct {
	name        string
	exactlyOnce bool
}{
	{"eos", true},
	{"alos", false},
}

// TestBaselineOutput runs both loops over the same input and reads their
// output read-committed: every input record, transformed, exactly once.
func TestBaselineOutput(t *testing.T) {
	const n = 5000
	b := startBroker(t)
	seeds := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	if err := benchbase.Load(ctx, seeds, "in", partitions, n, valueSize); err != nil {
		t.Fatal(err)
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			out := "out-" + m.name
			createTopic(t, b.Addr(), out)
			res, err := benchbase.Baseline(ctx, seeds, "in", out, "group-"+m.name, m.exactlyOnce, n)
			if err != nil {
				t.Fatal(err)
			}
			if res.Records != n || res.RecordsPerSec <= 0 {
				t.Errorf("result %+v, want %d records at a positive rate", res, n)
			}

			seen := make([]int, n)
			_, err = kafka.ReadToEnd(ctx, seeds, out, kafka.FromLogStart(0, 1, 2, 3), func(r *kgo.Record) error {
				i, err := strconv.Atoi(string(r.Value[len("VALUE-"):][:9]))
				if err != nil || i < 0 || i >= n {
					return fmt.Errorf("value %.20q names no input record", r.Value)
				}
				want := bytes.ToUpper(benchbase.Value(i, valueSize))
				if !bytes.Equal(r.Value, want) {
					return fmt.Errorf("value %.20q..., want %.20q...", r.Value, want)
				}
				if wantKey := "key-" + strconv.Itoa(i%benchbase.DistinctKeys); string(r.Key) != wantKey {
					return fmt.Errorf("record %d has key %q, want %q", i, r.Key, wantKey)
				}
				seen[i]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range seen {
				if c != 1 {
					t.Errorf("record %d is in the output %d times, want once", i, c)
				}
			}
		})
	}
}

// BenchmarkBaseline measures both loops over a million records (ten
// thousand under -short) and reports records/s, the figure engine
// benchmarks divide theirs by.
func BenchmarkBaseline(b *testing.B) {
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	br := startBroker(b)
	seeds := []string{br.Addr()}
	ctx := context.Background()
	start := time.Now()
	if err := benchbase.Load(ctx, seeds, "in", partitions, n, valueSize); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d records in %v", n, time.Since(start))

	// The benchmark function runs more than once (b.N 1, then more), and
	// every run needs fresh output topics and groups.
	runs := 0
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			var records int
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				runs++
				out := fmt.Sprintf("out-%s-%d", m.name, runs)
				createTopic(b, br.Addr(), out)
				b.StartTimer()
				res, err := benchbase.Baseline(ctx, seeds, "in", out, out, m.exactlyOnce, n)
				if err != nil {
					b.Fatal(err)
				}
				records += res.Records
				elapsed += res.Elapsed
				b.Logf("%s: %d records in %v after %v startup: %.0f records/s", m.name, res.Records, res.Elapsed, res.Startup, res.RecordsPerSec)
			}
			b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
		})
	}
}

// TestHeapInUse: the figure is what ReadMemStats calls HeapInuse, within
// what a moment's allocation can move it.
func TestHeapInUse(t *testing.T) {
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	got := benchbase.HeapInUse()
	if diff := int64(got) - int64(ms.HeapInuse); diff < -4<<20 || diff > 4<<20 {
		t.Errorf("HeapInUse %d, MemStats.HeapInuse %d", got, ms.HeapInuse)
	}
	runtime.KeepAlive(keep)
}
