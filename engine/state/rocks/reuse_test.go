//go:build cgo

package rocks

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state"
)

// memDeletes is the point deletes in the database's active memtable.
func memDeletes(t *testing.T, d *DB) uint64 {
	t.Helper()
	n, ok := d.db.GetIntProperty("rocksdb.num-deletes-active-mem-table")
	if !ok {
		t.Fatal("no rocksdb.num-deletes-active-mem-table")
	}
	return n
}

// TestDeleteOfAKeyOnlyTheEpochWrote: a key the processing epoch put and
// then deleted, with nothing below it, leaves the layer and costs the
// commit no tombstone; where something below holds the key (the database,
// an older epoch's layer) the delete is kept and hides it. On the code
// before, every delete was committed as a tombstone.
func TestDeleteOfAKeyOnlyTheEpochWrote(t *testing.T) {
	commit := func(d *DB) {
		e := d.Epoch()
		d.Seal(e)
		must(0, d.Commit(e, Checkpoint{Lanes: 1}))
	}
	for _, tc := range []struct {
		name string
		// setup runs before the epoch that puts and deletes "k".
		setup      func(d *DB, s state.KeyValueBytesStore)
		tombstones uint64
	}{
		{name: "nothing below", setup: func(*DB, state.KeyValueBytesStore) {}, tombstones: 0},
		{name: "another key committed", setup: func(d *DB, s state.KeyValueBytesStore) {
			must(0, s.Put([]byte("j"), []byte("old")))
			commit(d)
		}, tombstones: 0},
		{name: "committed below", setup: func(d *DB, s state.KeyValueBytesStore) {
			must(0, s.Put([]byte("k"), []byte("old")))
			commit(d)
		}, tombstones: 1},
		{name: "in a sealed epoch below", setup: func(d *DB, s state.KeyValueBytesStore) {
			must(0, s.Put([]byte("k"), []byte("old")))
			d.Seal(d.Epoch())
		}, tombstones: 1},
		{name: "committed below, range deleted in the epoch", setup: func(d *DB, s state.KeyValueBytesStore) {
			must(0, s.Put([]byte("k"), []byte("old")))
			commit(d)
			must(0, s.(state.RangeDeleter).DeleteRange([]byte("a"), []byte("z")))
		}, tombstones: 0},
	} {
		// scanned: a scan reads "k" between its put and its delete, as a
		// session store's lookup does before it removes what it found.
		// reread: "k" is read before the setup and again before the put,
		// as a join's outer store reads a key it is about to keep, so
		// that the delete's look below finds the database's answer in the
		// read cache; read: only before the setup, so that what the cache
		// holds is of an older generation when the setup commits, and
		// must not be taken.
		for _, how := range []string{"put", "scanned", "read", "reread"} {
			scanned := how == "scanned"
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				d := must(Open(filepath.Join(t.TempDir(), "lane0")))
				defer d.Close()
				s := d.Store("s")
				if how == "read" || how == "reread" {
					must(s.Get([]byte("k")))
				}
				tc.setup(d, s)
				if how == "reread" {
					must(s.Get([]byte("k")))
				}
				before := memDeletes(t, d)
				must(0, s.Put([]byte("k"), []byte("new")))
				if scanned {
					if got := collect(t, must(s.Range([]byte("a"), []byte("z")))); !slices.Contains(got, "k=new") {
						t.Fatalf("the scan read %v", got)
					}
				}
				must(0, s.PutAll([]state.KeyValue[[]byte, []byte]{{Key: []byte("k")}}))
				if v := must(s.Get([]byte("k"))); v != nil {
					t.Fatalf("k reads %q after its delete, want nothing", v)
				}
				e := d.Epoch()
				d.Seal(e)
				must(0, d.Commit(e, Checkpoint{Lanes: 1}))
				if v := must(s.Get([]byte("k"))); v != nil {
					t.Fatalf("k reads %q after the commit, want nothing", v)
				}
				if got := collect(t, must(s.All())); slices.Contains(got, "k=old") || slices.Contains(got, "k=new") {
					t.Fatalf("a scan reads %v", got)
				}
				if got := memDeletes(t, d) - before; got != tc.tombstones {
					t.Fatalf("the commits wrote %d tombstones, want %d", got, tc.tombstones)
				}
			})
		}
	}
}

// TestDeleteAfterAScanOfAnOlderDatabase: a scan read "k" from the epoch's
// layer when the database did not hold it; then the sealed epoch below,
// which put "k" too, commits. The delete that follows must look into
// RocksDB again, find the committed "k", and leave a tombstone.
func TestDeleteAfterAScanOfAnOlderDatabase(t *testing.T) {
	d := must(Open(filepath.Join(t.TempDir(), "lane0")))
	defer d.Close()
	s := d.Store("s")
	must(0, s.Put([]byte("k"), []byte("old")))
	sealed := d.Epoch()
	d.Seal(sealed)
	must(0, s.Put([]byte("k"), []byte("new")))
	if got := collect(t, must(s.Range([]byte("a"), []byte("z")))); !slices.Equal(got, []string{"k=new"}) {
		t.Fatalf("the scan read %v", got)
	}
	must(0, d.Commit(sealed, Checkpoint{Lanes: 1}))
	before := memDeletes(t, d)
	must(0, s.PutAll([]state.KeyValue[[]byte, []byte]{{Key: []byte("k")}}))
	e := d.Epoch()
	d.Seal(e)
	must(0, d.Commit(e, Checkpoint{Lanes: 1}))
	if v := must(s.Get([]byte("k"))); v != nil {
		t.Fatalf("k reads %q after the commit, want nothing", v)
	}
	if got := memDeletes(t, d) - before; got != 1 {
		t.Fatalf("the commit wrote %d tombstones, want 1", got)
	}
}

// TestSpareIterators: a scan reuses a native iterator an earlier scan
// closed, its bounds moved, while the database is unchanged; it reads
// what a new one would: within its own bounds wider, narrower, reverse,
// of another store or longer than the last, and a commit retires the
// spares, so that the next scan reads the commit.
func TestSpareIterators(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lane0")
	d := must(Open(dir))
	s, o := d.Store("s"), d.Store("o")
	for i := range 100 {
		must(0, s.Put(key(i), []byte("v")))
		must(0, o.Put(key(i), []byte("o")))
	}
	d.Seal(1)
	must(0, d.Commit(1, Checkpoint{Lanes: 1}))
	// Reopened, the keys are in a table file, whose iterator caches what
	// it knew of the bounds per block.
	must(0, d.Close())
	d = must(Open(dir))
	defer d.Close()
	s, o = d.Store("s"), d.Store("o")
	want := func(from, to int, v string, reverse bool) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("%s=%s", key(i), v))
		}
		if reverse {
			slices.Reverse(out)
		}
		return out
	}
	long := append(key(20), strings.Repeat("x", 300)...)
	for i, tc := range []struct {
		st       state.KeyValueBytesStore
		from, to []byte
		reverse  bool
		want     []string
	}{
		{st: s, from: key(10), to: key(12), want: want(10, 12, "v", false)},
		{st: s, from: key(10), to: key(50), want: want(10, 50, "v", false)},
		{st: s, from: key(11), to: key(11), want: want(11, 11, "v", false)},
		{st: s, from: key(5), to: key(8), reverse: true, want: want(5, 8, "v", true)},
		{st: s, from: key(5), to: key(90), reverse: true, want: want(5, 90, "v", true)},
		{st: o, from: key(40), to: key(99), want: want(40, 99, "o", false)},
		{st: s, from: key(20), to: long, want: want(20, 20, "v", false)},
		{st: s, from: long, to: key(22), want: want(21, 22, "v", false)},
		{st: s, from: key(98), to: key(200), want: want(98, 99, "v", false)},
	} {
		var it state.BytesIterator
		if tc.reverse {
			it = must(tc.st.ReverseRange(tc.from, tc.to))
		} else {
			it = must(tc.st.Range(tc.from, tc.to))
		}
		if got := collect(t, it); !slices.Equal(got, tc.want) {
			t.Fatalf("scan %d [%s, %s] reverse=%v read\n  %v\nwant\n  %v", i, tc.from, tc.to, tc.reverse, got, tc.want)
		}
		if len(d.spares) == 0 {
			t.Fatalf("scan %d left no spare iterator", i)
		}
	}
	must(0, s.Put(key(11), []byte("w")))
	d.Seal(d.Epoch())
	must(0, d.Commit(d.Epoch()-1, Checkpoint{Lanes: 1}))
	if len(d.spares) != 0 {
		t.Fatalf("%d spare iterators outlived a commit", len(d.spares))
	}
	if got := collect(t, must(s.Range(key(10), key(12)))); !slices.Equal(got, []string{string(key(10)) + "=v", string(key(11)) + "=w", string(key(12)) + "=v"}) {
		t.Fatalf("after the commit a scan read %v", got)
	}
}
