//go:build cgo

package rocks

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// joinSide is what one side of a windowed stream-stream join does to its
// stores per record: a FetchRange of the other side's window store, a write
// to the outer-join store while that scan is open (the join's unkeep), and
// a Put to a window store. Every write overwrites an entry of the fill, so
// the epoch keeps its size while the reads are measured.
type joinSide struct {
	win   state.WindowStore[string, string]
	outer state.KeyValueBytesStore
	keys  []string
	n     int
}

// newJoinSide fills one uncommitted epoch with n window entries over n/4
// keys, four windows each, a millisecond apart per record.
func newJoinSide(b *testing.B, supplier state.BytesSupplier, n int) *joinSide {
	b.Helper()
	st, err := state.WindowStoreBuilder("win", serde.String(), serde.String(), 24*time.Hour, time.Second, false, supplier).
		WithLoggingDisabled().Build()
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Init(plainContext{}); err != nil {
		b.Fatal(err)
	}
	j := &joinSide{win: st.(state.WindowStore[string, string]), outer: supplier.Get("outer"), n: n}
	j.keys = make([]string, n/4)
	for i := range j.keys {
		j.keys[i] = fmt.Sprintf("key-%08d", i)
	}
	for i := range n {
		if err := j.win.Put(j.keys[i%len(j.keys)], "value-0123456789", int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	return j
}

// run does reads records' worth of the join's store work, each at a record
// of the fill that r picks, and returns how long they took.
func (j *joinSide) run(b *testing.B, r *rand.Rand, reads int) time.Duration {
	quarter := int64(len(j.keys))
	start := time.Now()
	for range reads {
		i := r.IntN(j.n)
		k := j.keys[i%len(j.keys)]
		it, err := j.win.FetchRange(k, int64(i)-quarter/2, int64(i)+quarter/2)
		if err != nil {
			b.Fatal(err)
		}
		found := 0
		for it.Next() {
			found++
			if err := j.outer.Put([]byte(k), []byte("matched")); err != nil {
				b.Fatal(err)
			}
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
		it.Close()
		if found != 1 {
			b.Fatalf("fetch of %s around %d found %d windows, want 1", k, i, found)
		}
		if err := j.win.Put(k, "value-0123456789", int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// BenchmarkWindowFetchDuringEpoch measures a join's read of a window store
// on RocksDB while one uncommitted epoch holds 1 k, 10 k and 100 k
// entries, against the in-memory window store doing the same in the same
// run: rocks-ns/read should not grow with the epoch, and x-memory is the
// ratio. Each iteration does 1000 reads on each store.
func BenchmarkWindowFetchDuringEpoch(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("epoch=%d", n), func(b *testing.B) {
			seed := rand.Uint64()
			b.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 0))
			mem := newJoinSide(b, state.InMemory(), n)
			d := must(Open(filepath.Join(b.TempDir(), "lane0")))
			defer d.Close()
			rk := newJoinSide(b, d.Supplier(), n)
			const reads = 1000
			var memTook, rocksTook time.Duration
			iters := 0
			for b.Loop() {
				memTook += mem.run(b, r, reads)
				rocksTook += rk.run(b, r, reads)
				iters++
			}
			perRead := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(iters*reads) }
			b.ReportMetric(perRead(rocksTook), "rocks-ns/read")
			b.ReportMetric(perRead(memTook), "memory-ns/read")
			b.ReportMetric(float64(rocksTook)/float64(memTook), "x-memory")
		})
	}
}
