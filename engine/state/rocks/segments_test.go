//go:build cgo

package rocks

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// plainContext is a store context without a changelog.
type plainContext struct{}

func (plainContext) ApplicationID() string                                         { return "app" }
func (plainContext) ChangelogTopic(string) string                                  { return "" }
func (plainContext) LogChange(string, []byte, []byte, int64, []state.Header) error { return nil }
func (plainContext) RecordTimestamp() int64                                        { return 0 }

func segmentedStore(t *testing.T, d *DB) state.TimestampedWindowStore[string, int64] {
	t.Helper()
	st, err := state.TimestampedWindowStoreBuilder("win", serde.String(), serde.Int64(), 100*time.Millisecond, 10*time.Millisecond, false, d.Supplier()).
		WithLoggingDisabled().WithSegmentInterval(50 * time.Millisecond).Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(plainContext{}); err != nil {
		t.Fatal(err)
	}
	return st.(state.TimestampedWindowStore[string, int64])
}

// rawSegments lists the segments of the window store's key-first entries
// in the database, and counts its time-first entries.
func rawSegments(t *testing.T, d *DB) (segs []int64, timeFirst int) {
	t.Helper()
	it := must(d.Store("win").All())
	defer it.Close()
	for it.Next() {
		k := it.Key()
		if k[0] != 0 {
			if k[0] == 1 {
				timeFirst++
			}
			continue
		}
		seg := int64(uint64(k[1])<<56|uint64(k[2])<<48|uint64(k[3])<<40|uint64(k[4])<<32|uint64(k[5])<<24|uint64(k[6])<<16|uint64(k[7])<<8|uint64(k[8])) ^ -1<<63
		if len(segs) == 0 || segs[len(segs)-1] != seg {
			segs = append(segs, seg)
		}
	}
	return segs, timeFirst
}

// TestSegmentExpiry drops expired segments of a window store in RocksDB as
// range deletes of the epoch: hidden at once, gone from the database once
// the epoch commits, back if it aborts; a reopened store finds its
// segments.
func TestSegmentExpiry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lane0")
	d := must(Open(dir))
	s := segmentedStore(t, d)
	for start := int64(0); start < 300; start += 10 {
		for _, k := range []string{"a", "b"} {
			if err := s.Put(k, state.ValueAndTimestamp[int64]{Value: start, Timestamp: start}, start); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Lanes: 1}))

	expire := func(s state.TimestampedWindowStore[string, int64]) {
		t.Helper()
		// A key's scan open across the expiry keeps what it saw (FetchAll
		// reads values live, and skips what was deleted since).
		it := must(s.FetchRange("a", 0, 1000))
		if err := s.Expire(230); err != nil { // horizon 131: segments 0 and 1 go
			t.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		it.Close()
		if n != 30 {
			t.Fatalf("a scan opened before the expiry read %d windows, want 30", n)
		}
		var starts []int64
		for fr := must(s.FetchRange("a", 0, 1000)); fr.Next(); {
			starts = append(starts, fr.Key())
		}
		if len(starts) != 16 || starts[0] != 140 || !slices.IsSorted(starts) {
			t.Fatalf("FetchRange after expiry = %v, want 140..290", starts)
		}
		if _, found, _ := s.Fetch("b", 60); found {
			t.Fatal("Fetch read a window of a dropped segment")
		}
		if sg := s.(state.Segmented).Segments(); sg != 4 {
			t.Fatalf("%d segments listed, want 4", sg)
		}
	}
	expire(s)
	// Aborted: the database is as the last commit left it.
	d.Abort()
	if segs, tf := rawSegments(t, d); len(segs) != 6 || tf != 60 {
		t.Fatalf("after the abort the database holds segments %v and %d time-first entries, want 0..5 and 60", segs, tf)
	}
	s = segmentedStore(t, d)
	if sg := s.(state.Segmented).Segments(); sg != 6 {
		t.Fatalf("a new store found %d segments, want 6", sg)
	}
	expire(s)
	d.Seal(d.Epoch())
	must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
	must(0, d.Close())

	d = must(Open(dir))
	defer d.Close()
	if segs, tf := rawSegments(t, d); !slices.Equal(segs, []int64{2, 3, 4, 5}) || tf != 40 {
		t.Fatalf("after the commit the database holds segments %v and %d time-first entries, want [2 3 4 5] and 40", segs, tf)
	}
	s = segmentedStore(t, d)
	if sg := s.(state.Segmented).Segments(); sg != 4 {
		t.Fatalf("the reopened store found %d segments, want 4", sg)
	}
	v, found, err := s.Fetch("a", 290)
	if err != nil || !found || v.Value != 290 {
		t.Fatalf("Fetch(a, 290) after reopening = %v, %v, %v", v, found, err)
	}
}
