//go:build cgo

package rocks

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/state"
)

// BenchmarkScanOverDeletes scans ranges that hold only deleted keys, as a
// session store's lookup does in a segment its sessions have moved out
// of: n keys committed, then deleted and committed, and one live key
// after them all. Each scan reads one key's range and finds nothing; it
// reports rocks-ns/scan, which should not grow with n, against the
// in-memory store doing the same in the same run (x-memory).
func BenchmarkScanOverDeletes(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("deleted=%d", n), func(b *testing.B) {
			seed := rand.Uint64()
			b.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 0))
			d := must(Open(filepath.Join(b.TempDir(), "lane0")))
			defer d.Close()
			rk, mem := d.Store("sessions"), state.InMemory().Get("sessions")
			key := func(i int) []byte { return []byte(fmt.Sprintf("a-%08d", i)) }
			commit := func() {
				d.Seal(d.Epoch())
				must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
			}
			for _, s := range []state.KeyValueBytesStore{rk, mem} {
				for i := range n {
					must(0, s.Put(key(i), []byte("session")))
				}
				commit()
				for i := range n {
					must(s.Delete(key(i)))
				}
				must(0, s.Put([]byte("b"), []byte("live")))
				commit()
			}
			const scans = 1000
			scan := func(s state.KeyValueBytesStore) time.Duration {
				start := time.Now()
				for range scans {
					k := key(r.IntN(n))
					it := must(s.Range(k, append(k, 0xff)))
					for it.Next() {
						b.Fatalf("found %q in a range of deleted keys", it.Key())
					}
					it.Close()
				}
				return time.Since(start)
			}
			var memTook, rocksTook time.Duration
			iters := 0
			for b.Loop() {
				memTook += scan(mem)
				rocksTook += scan(rk)
				iters++
			}
			b.ReportMetric(float64(rocksTook.Nanoseconds())/float64(iters*scans), "rocks-ns/scan")
			b.ReportMetric(float64(memTook.Nanoseconds())/float64(iters*scans), "memory-ns/scan")
			b.ReportMetric(float64(rocksTook)/float64(memTook), "x-memory")
		})
	}
}
