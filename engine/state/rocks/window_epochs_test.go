//go:build cgo

package rocks

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// TestWindowFetchAcrossEpochs: a window store on RocksDB read by
// FetchRange while records arrive mostly in time order, as a join's
// stores are in a catch-up, across seals, commits, aborts, reopens and a
// restore, against a model of what the store holds. A fetch from a time
// after every entry of earlier epochs reads the processing epoch's layer
// alone (state.EpochLayered); one that bound wrong misses what RocksDB or
// a sealed layer holds. With and without duplicates (a join's stores, a
// windowed aggregation's). Run with -seed to replay.
func TestWindowFetchAcrossEpochs(t *testing.T) {
	seed := uint64(*seedFlag)
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	for _, dups := range []bool{true, false} {
		t.Run(fmt.Sprintf("duplicates=%v", dups), func(t *testing.T) {
			windowEpochsRun(t, rand.New(rand.NewPCG(seed, 0)), dups)
		})
	}
}

type modelWindow struct {
	start int64
	value string
}

func windowEpochsRun(t *testing.T, r *rand.Rand, dups bool) {
	dir := filepath.Join(t.TempDir(), "lane")
	var d *DB
	var st state.WindowStore[string, string]
	open := func() {
		d = must(Open(dir))
		b := state.WindowStoreBuilder("join-store", serde.String(), serde.String(), time.Hour, 0, dups, d.Supplier()).
			WithLoggingDisabled().WithSegmentInterval(200 * time.Millisecond).WithoutTimeIndex()
		st = initStore[state.WindowStore[string, string]](t, b)
	}
	open()
	t.Cleanup(func() { d.Close() })
	// committed and pending (sealed or not) hold each key's windows in
	// write order.
	committed := map[string][]modelWindow{}
	pending := map[string][]modelWindow{}
	put := func(m map[string][]modelWindow, k string, w modelWindow) {
		if !dups {
			m[k] = slices.DeleteFunc(m[k], func(o modelWindow) bool { return o.start == w.start })
		}
		m[k] = append(m[k], w)
	}
	view := func(k string) []modelWindow {
		out := slices.Clone(committed[k])
		for _, w := range pending[k] {
			if !dups {
				out = slices.DeleteFunc(out, func(o modelWindow) bool { return o.start == w.start })
			}
			out = append(out, w)
		}
		// Time order, write order within a start (a duplicate's sequence
		// number).
		slices.SortStableFunc(out, func(a, b modelWindow) int { return int(a.start - b.start) })
		return out
	}
	commit := func() {
		e := d.Epoch()
		d.Seal(e)
		must(0, d.Commit(e, Checkpoint{Lanes: 1}))
		for k, ws := range pending {
			for _, w := range ws {
				put(committed, k, w)
			}
		}
		clear(pending)
	}

	// A restore first: what it writes goes to RocksDB around the layers.
	clock := int64(1_000)
	d.BeginRestore()
	var recs []state.ChangelogRecord
	for i := range 200 {
		k, start := fmt.Sprintf("k%d", r.IntN(8)), clock+int64(r.IntN(2_000))
		v := fmt.Sprintf("restored-%d", i)
		seq := int32(i + 1)
		if !dups {
			seq = 0
		}
		recs = append(recs, state.ChangelogRecord{Key: state.EncodeWindowKey([]byte(k), start, seq), Value: []byte(v), Timestamp: start})
		put(committed, k, modelWindow{start, v})
	}
	must(0, st.(state.Restorer).Restore(recs))
	must(0, d.EndRestore(Checkpoint{Lanes: 1}))
	clock += 2_000

	for op := range 3_000 {
		k := fmt.Sprintf("k%d", r.IntN(8))
		switch x := r.IntN(100); {
		case x < 50:
			// Mostly later than anything before; now and then late.
			clock += int64(r.IntN(20))
			start := clock - int64(r.IntN(10))
			if r.IntN(10) == 0 {
				start = clock - int64(r.IntN(3_000))
			}
			v := fmt.Sprintf("v%d", op)
			must(0, st.Put(k, v, start))
			put(pending, k, modelWindow{start, v})
		case x < 70 && !dups:
			// A point read, as a windowed aggregation's, of a window
			// written or not.
			start := clock - int64(r.IntN(40))
			if r.IntN(10) == 0 {
				start = clock - int64(r.IntN(5_000))
			}
			got, found := must2(st.Fetch(k, start))
			want, ok := "", false
			for _, w := range view(k) {
				if w.start == start {
					want, ok = w.value, true
				}
			}
			if found != ok || got != want {
				t.Fatalf("op %d: fetch %s at %d (epoch %d) = %q %v, want %q %v", op, k, start, d.Epoch(), got, found, want, ok)
			}
		case x < 90:
			from := clock - int64(r.IntN(300))
			if r.IntN(10) == 0 {
				from = clock - int64(r.IntN(5_000))
			}
			to := from + int64(r.IntN(400))
			it := must(st.FetchRange(k, from, to))
			var got []modelWindow
			for it.Next() {
				got = append(got, modelWindow{it.Key(), it.Value()})
			}
			must(0, it.Err())
			it.Close()
			var want []modelWindow
			for _, w := range view(k) {
				if w.start >= from && w.start <= to {
					want = append(want, w)
				}
			}
			// Duplicates of one start come in sequence order, and a
			// reopened store numbers its duplicates from the start again:
			// compared as sets within a start.
			byStartValue := func(a, b modelWindow) int {
				if a.start != b.start {
					return int(a.start - b.start)
				}
				return strings.Compare(a.value, b.value)
			}
			slices.SortFunc(got, byStartValue)
			slices.SortFunc(want, byStartValue)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: fetch %s [%d, %d] (epoch %d) read\n  %v\nwant\n  %v", op, k, from, to, d.Epoch(), got, want)
			}
		case x < 95:
			commit()
		case x < 97:
			// A seal that commits later: the next epoch's writes go
			// above a sealed layer.
			d.Seal(d.Epoch())
		case x < 99:
			d.Abort()
			clear(pending)
		default:
			commit()
			must(0, d.Close())
			open()
		}
	}
}
