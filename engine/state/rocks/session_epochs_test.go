//go:build cgo

package rocks

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// TestSessionFindAcrossEpochs: a session store on RocksDB read by
// FindSessions while sessions are put, merged and removed mostly in time
// order, as a session aggregation does in a catch-up, across seals,
// commits, aborts, reopens and a restore, against a model of what the
// store holds. A lookup whose sessions all end after every session of
// earlier epochs reads the layers from an epoch on alone (decision
// 0056); one that bound wrong misses what RocksDB or a sealed layer
// holds, or shows a session removed since. Run with -seed to replay.
func TestSessionFindAcrossEpochs(t *testing.T) {
	seed := uint64(*seedFlag)
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	dir := filepath.Join(t.TempDir(), "lane")
	var d *DB
	var st state.SessionStore[string, string]
	open := func() {
		d = must(Open(dir))
		b := state.SessionStoreBuilder("sessions", serde.String(), serde.String(), time.Hour, d.Supplier()).
			WithLoggingDisabled().WithSegmentInterval(200 * time.Millisecond).WithoutTimeIndex()
		st = initStore[state.SessionStore[string, string]](t, b)
	}
	open()
	t.Cleanup(func() { d.Close() })

	// A session is its key's [start, end]; committed and pending (sealed
	// or not) hold what each epoch left, a nil value for a removal.
	type session struct {
		key        string
		start, end int64
	}
	committed := map[session]string{}
	pending := map[session]*string{}
	view := func(s session) (string, bool) {
		if v, ok := pending[s]; ok {
			if v == nil {
				return "", false
			}
			return *v, true
		}
		v, ok := committed[s]
		return v, ok
	}
	all := func(key string) []session {
		seen := map[session]bool{}
		var out []session
		for s := range committed {
			if s.key == key && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		for s := range pending {
			if s.key == key && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return slices.DeleteFunc(out, func(s session) bool { _, ok := view(s); return !ok })
	}
	commit := func() {
		e := d.Epoch()
		d.Seal(e)
		must(0, d.Commit(e, Checkpoint{Lanes: 1}))
		for s, v := range pending {
			if v == nil {
				delete(committed, s)
			} else {
				committed[s] = *v
			}
		}
		clear(pending)
	}

	// A restore first: what it writes goes to RocksDB around the layers.
	clock := int64(1_000)
	d.BeginRestore()
	var recs []state.ChangelogRecord
	for i := range 100 {
		s := session{key: fmt.Sprintf("k%d", r.IntN(8))}
		s.end = clock + int64(r.IntN(2_000))
		s.start = s.end - int64(r.IntN(50))
		v := fmt.Sprintf("restored-%d", i)
		recs = append(recs, state.ChangelogRecord{Key: state.EncodeSessionKey([]byte(s.key), s.start, s.end), Value: []byte(v), Timestamp: s.end})
		committed[s] = v
	}
	must(0, st.(state.Restorer).Restore(recs))
	must(0, d.EndRestore(Checkpoint{Lanes: 1}))
	clock += 2_000

	for op := range 3_000 {
		key := fmt.Sprintf("k%d", r.IntN(8))
		switch x := r.IntN(100); {
		case x < 40:
			// A record merges into its key's sessions that end within 30
			// ms of it: they go, and the merged one is put.
			clock += int64(r.IntN(20))
			ts := clock - int64(r.IntN(10))
			if r.IntN(10) == 0 {
				ts = clock - int64(r.IntN(3_000))
			}
			merged := session{key: key, start: ts, end: ts}
			for _, s := range all(key) {
				if s.end >= ts-30 && s.start <= ts+30 {
					merged.start, merged.end = min(merged.start, s.start), max(merged.end, s.end)
					must(0, st.Remove(window.Windowed[string]{Key: s.key, Window: window.Window{Start: s.start, End: s.end}}))
					pending[s] = nil
				}
			}
			v := fmt.Sprintf("v%d", op)
			must(0, st.Put(window.Windowed[string]{Key: key, Window: window.Window{Start: merged.start, End: merged.end}}, v))
			pending[merged] = &v
		case x < 90:
			earliest := clock - int64(r.IntN(300))
			if r.IntN(10) == 0 {
				earliest = clock - int64(r.IntN(5_000))
			}
			latest := earliest + int64(r.IntN(400))
			it := must(st.FindSessions(key, earliest, latest))
			var got []string
			for it.Next() {
				w := it.Key().Window
				got = append(got, fmt.Sprintf("[%d,%d]=%s", w.Start, w.End, it.Value()))
			}
			must(0, it.Err())
			it.Close()
			var want []string
			for _, s := range all(key) {
				if s.end >= earliest && s.start <= latest {
					v, _ := view(s)
					want = append(want, fmt.Sprintf("[%d,%d]=%s", s.start, s.end, v))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: find sessions of %s ending from %d, starting to %d (epoch %d) read\n  %v\nwant\n  %v", op, key, earliest, latest, d.Epoch(), got, want)
			}
		case x < 95:
			commit()
		case x < 97:
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
