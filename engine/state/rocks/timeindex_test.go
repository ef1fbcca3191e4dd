//go:build cgo

package rocks

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// indexEntries counts the key-first and time-first entries of store name
// and tells whether it holds the mark of a missing time index.
func indexEntries(t *testing.T, d *DB, name string) (keyFirst, timeFirst int, marked bool) {
	t.Helper()
	it := must(d.Store(name).All())
	defer it.Close()
	for it.Next() {
		switch it.Key()[0] {
		case 0:
			keyFirst++
		case 1:
			timeFirst++
		default:
			marked = true
		}
	}
	return keyFirst, timeFirst, marked
}

// initStore builds and initialises a store.
func initStore[S any](t *testing.T, b state.StoreBuilder) S {
	t.Helper()
	st := must(b.Build())
	if err := st.Init(plainContext{}); err != nil {
		t.Fatal(err)
	}
	return st.(S)
}

// TestTimeIndexRebuiltOnReopen: a session store and a window store
// written without their time index on RocksDB, committed and reopened by
// a build that keeps the index (a topology that emitted on every update
// and now emits on close), find every entry by time: the index is rebuilt
// from the key-first entries at Init, in the epoch, so that an abort
// leaves the mark for the next start and a commit clears it. The scans by
// time of the store without the index give the same entries in the same
// order.
func TestTimeIndexRebuiltOnReopen(t *testing.T) {
	const retention = 100 * time.Millisecond
	sessions := func(d *DB, keyOnly bool) state.SessionStore[string, int64] {
		b := state.SessionStoreBuilder("sessions", serde.String(), serde.Int64(), retention, d.Supplier()).
			WithLoggingDisabled().WithSegmentInterval(50 * time.Millisecond)
		if keyOnly {
			b.WithoutTimeIndex()
		}
		return initStore[state.SessionStore[string, int64]](t, b)
	}
	windows := func(d *DB, keyOnly bool) state.WindowStore[string, int64] {
		b := state.WindowStoreBuilder("win", serde.String(), serde.Int64(), retention, 10*time.Millisecond, true, d.Supplier()).
			WithLoggingDisabled().WithSegmentInterval(50 * time.Millisecond)
		if keyOnly {
			b.WithoutTimeIndex()
		}
		return initStore[state.WindowStore[string, int64]](t, b)
	}
	scanSessions := func(s state.SessionStore[string, int64]) []string {
		t.Helper()
		var out []string
		it := must(s.FindSessionsAll(math.MinInt64, math.MaxInt64))
		defer it.Close()
		for it.Next() {
			out = append(out, fmt.Sprintf("%s@%d-%d=%d", it.Key().Key, it.Key().Window.Start, it.Key().Window.End, it.Value()))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	scanWindows := func(s state.WindowStore[string, int64]) []string {
		t.Helper()
		var out []string
		it := must(s.FetchAll(math.MinInt64, math.MaxInt64))
		defer it.Close()
		for it.Next() {
			out = append(out, fmt.Sprintf("%s@%d=%d", it.Key().Key, it.Key().Window.Start, it.Value()))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}

	dir := filepath.Join(t.TempDir(), "lane0")
	d := must(Open(dir))
	ss, ws := sessions(d, true), windows(d, true)
	keys := []string{"b", "a", "ab", "a\xff", ""}
	for i := range 60 {
		k, ts := keys[i%len(keys)], int64(i*3)
		// Each key's sessions: a new one every fourth time, else the last
		// one stretched to ts (removed, and put again with a new end).
		w := window.Window{Start: ts, End: ts}
		if i/len(keys)%4 != 0 {
			if it := must(ss.FindSessions(k, ts-20, ts)); it.Next() {
				w.Start = it.Key().Window.Start
				if err := ss.Remove(it.Key()); err != nil {
					t.Fatal(err)
				}
				it.Close()
			} else {
				it.Close()
			}
		}
		if err := ss.Put(window.Windowed[string]{Key: k, Window: w}, int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := ws.Put(k, int64(i), ts-ts%10); err != nil {
			t.Fatal(err)
		}
	}
	wantSessions, wantWindows := scanSessions(ss), scanWindows(ws)
	if len(wantSessions) < 10 || len(wantWindows) != 60 {
		t.Fatalf("%d sessions and %d windows written", len(wantSessions), len(wantWindows))
	}
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Lanes: 1}))
	for _, name := range []string{"sessions", "win"} {
		if kf, tf, marked := indexEntries(t, d, name); kf == 0 || tf != 0 || !marked {
			t.Fatalf("store %s without the index holds %d key-first and %d time-first entries, marked %v", name, kf, tf, marked)
		}
	}
	must(0, d.Close())

	for _, commit := range []bool{false, true} {
		d = must(Open(dir))
		ss, ws = sessions(d, false), windows(d, false)
		if got := scanSessions(ss); !reflect.DeepEqual(got, wantSessions) {
			t.Fatalf("sessions by time after the rebuild:\n%q\nwant\n%q", got, wantSessions)
		}
		if got := scanWindows(ws); !reflect.DeepEqual(got, wantWindows) {
			t.Fatalf("windows by time after the rebuild:\n%q\nwant\n%q", got, wantWindows)
		}
		if commit {
			d.Seal(d.Epoch())
			must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
		} else {
			d.Abort()
		}
		for _, name := range []string{"sessions", "win"} {
			kf, tf, marked := indexEntries(t, d, name)
			if commit && (tf != kf || marked) || !commit && (tf != 0 || !marked) {
				t.Fatalf("committed %v: store %s holds %d key-first and %d time-first entries, marked %v", commit, name, kf, tf, marked)
			}
		}
		must(0, d.Close())
	}
}
