//go:build cgo && linux

package rocks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

const (
	rssKeysEnv    = "STOATFLOW_BENCH_RSS_KEYS"
	rssBackendEnv = "STOATFLOW_RSS_CHILD_BACKEND"
	rssDirEnv     = "STOATFLOW_RSS_CHILD_DIR"
)

// BenchmarkPeakRSS writes STOATFLOW_BENCH_RSS_KEYS distinct keys (opt-in:
// 10000000 for the figure; it takes minutes) into a count's store,
// a timestamped key-value store of int64s, committing an epoch every 100 k
// keys as a lane does, once in RocksDB and once in memory, each in a
// process of its own, and reports each process's peak RSS in MiB and
// RocksDB's share of in-memory's.
func BenchmarkPeakRSS(b *testing.B) {
	keys := os.Getenv(rssKeysEnv)
	if keys == "" {
		b.Skipf("opt-in: set %s (10000000 for the issue's 10 M keys)", rssKeysEnv)
	}
	peak := map[string]float64{}
	for i := 0; i < b.N; i++ {
		for _, backend := range []string{"rocksdb", "in-memory"} {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), rssBackendEnv+"="+backend, rssDirEnv+"="+b.TempDir())
			began := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("%s child: %v\n%s", backend, err, out)
			}
			m := regexp.MustCompile(`peak_rss_kb=(\d+)`).FindSubmatch(out)
			if m == nil {
				b.Fatalf("%s child printed no peak RSS:\n%s", backend, out)
			}
			kb, _ := strconv.ParseFloat(string(m[1]), 64)
			peak[backend] = kb / 1024
			b.Logf("%s: %s keys, peak RSS %.0f MiB, %s", backend, keys, peak[backend], time.Since(began).Round(time.Second))
		}
	}
	b.ReportMetric(peak["rocksdb"], "rocksdb-peak-MiB")
	b.ReportMetric(peak["in-memory"], "in-memory-peak-MiB")
	b.ReportMetric(peak["rocksdb"]/peak["in-memory"], "ratio")
}

// TestMain runs BenchmarkPeakRSS's child process when the benchmark
// started it, the tests otherwise.
func TestMain(m *testing.M) {
	if backend := os.Getenv(rssBackendEnv); backend != "" {
		if err := rssChild(backend); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// rssChild fills a store in backend and prints the process's peak RSS.
func rssChild(backend string) error {
	n, err := strconv.Atoi(os.Getenv(rssKeysEnv))
	if err != nil || n <= 0 {
		return fmt.Errorf("%s=%q", rssKeysEnv, os.Getenv(rssKeysEnv))
	}
	var supplier state.BytesSupplier = state.InMemory()
	var d *DB
	if backend == "rocksdb" {
		d = must(Open(filepath.Join(os.Getenv(rssDirEnv), "lane0")))
		defer d.Close()
		supplier = d.Supplier()
	}
	st := must(state.TimestampedKeyValueStoreBuilder("counts", serde.String(), serde.Int64(), supplier).WithLoggingDisabled().Build())
	must(0, st.Init(plainContext{}))
	s := st.(state.TimestampedKeyValueStore[string, int64])
	const epoch = 100_000
	for i := range n {
		must(0, s.Put("k"+strconv.Itoa(i), state.ValueAndTimestamp[int64]{Value: 1, Timestamp: int64(i)}))
		if d != nil && i%epoch == epoch-1 {
			e := d.Epoch()
			d.Seal(e)
			must(0, d.Commit(e, Checkpoint{Lanes: 1}))
		}
	}
	if d != nil {
		e := d.Epoch()
		d.Seal(e)
		must(0, d.Commit(e, Checkpoint{Lanes: 1}))
	}
	// A read of every thousandth key, so the store is not write-only.
	for i := 0; i < n; i += 1000 {
		if _, ok := must2(s.Get("k" + strconv.Itoa(i))); !ok {
			return fmt.Errorf("key k%d lost", i)
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	fmt.Printf("peak_rss_kb=%d\n", ru.Maxrss)
	return nil
}

func must2[T any](v T, ok bool, err error) (T, bool) {
	if err != nil {
		panic(err)
	}
	return v, ok
}
