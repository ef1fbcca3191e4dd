//go:build cgo

package rocks

import (
	"bytes"
	"hash/maphash"
	"slices"
)

// A rangeMemo is everything a forward scan read from the database in
// lo <= key < hi, at one generation of the database: a session lookup
// reads the same key's range again and again between two commits (once
// per record of the key), each time from a later lower bound, and
// RocksDB's seek is most of what it costs (a memtable holding every
// version the epochs wrote). The next scan of the same upper bound from
// lo or later reads the memo instead of RocksDB.
type rangeMemo struct {
	lo, hi []byte
	// keys and vals are the entries, in key order; each a copy.
	keys, vals [][]byte
}

// memoMaxEntries bounds the entries of one memo: a session lookup finds
// one or two sessions; a longer scan is not remembered.
const memoMaxEntries = 8

// memoMaxBytes bounds the bytes of the memos a database keeps (their
// bounds, keys and values, and an estimate of the maps' and slices'
// share): a full set starts again empty.
const memoMaxBytes = 4 << 20

// rangeMemos are a database's memos of one generation (DB.gen, which
// every write to RocksDB moves on), by upper bound.
type rangeMemos struct {
	gen   uint64
	m     map[string]*rangeMemo
	bytes int
	// seen holds a bit for each upper bound scanned in generation
	// seenGen, by hash: a scan records a memo only when its upper bound
	// was scanned before in the generation (a join's window fetches,
	// whose bounds move with every record, would record memos no scan
	// reads).
	seen    [seenWords]uint64
	seenGen uint64
}

// seenWords is the size of rangeMemos.seen: 64 Kibit, 8 KiB.
const seenWords = 1024

var seenSeed = maphash.MakeSeed()

// again notes a scan up to hi in generation gen, and says whether one
// was noted before (or a bound of the same hash was).
func (r *rangeMemos) again(gen uint64, hi []byte) bool {
	if r.seenGen != gen {
		clear(r.seen[:])
		r.seenGen = gen
	}
	bit := maphash.Bytes(seenSeed, hi) % (seenWords * 64)
	w, m := &r.seen[bit/64], uint64(1)<<(bit%64)
	was := *w&m != 0
	*w |= m
	return was
}

// get returns the memo of generation gen with upper bound hi that covers
// lo, nil when there is none.
func (r *rangeMemos) get(gen uint64, lo, hi []byte) *rangeMemo {
	if r.gen != gen || len(r.m) == 0 {
		return nil
	}
	m := r.m[string(hi)]
	if m == nil || bytes.Compare(m.lo, lo) > 0 {
		return nil
	}
	return m
}

// put keeps m as what the database of generation gen holds in m's range.
func (r *rangeMemos) put(gen uint64, m *rangeMemo) {
	if r.m == nil {
		r.m = map[string]*rangeMemo{}
	}
	size := m.size()
	if r.gen != gen || r.bytes+size > memoMaxBytes {
		clear(r.m)
		r.gen, r.bytes = gen, 0
	}
	// Of two memos of one upper bound, the one from the lower bound
	// covers more.
	if old := r.m[string(m.hi)]; old != nil && bytes.Compare(old.lo, m.lo) <= 0 {
		return
	}
	r.m[string(m.hi)] = m
	r.bytes += size
}

// size is about what m takes in memory, kept in a rangeMemos.
func (m *rangeMemo) size() int {
	n := 2*len(m.hi) + len(m.lo) + 128
	for i, k := range m.keys {
		n += len(k) + len(m.vals[i]) + 48
	}
	return n
}

// add appends the entry a recording cursor is at, and says whether the
// memo may go on (false past memoMaxEntries).
func (m *rangeMemo) add(k, v []byte) bool {
	if len(m.keys) == memoMaxEntries {
		return false
	}
	m.keys = append(m.keys, slices.Clone(k))
	m.vals = append(m.vals, append(make([]byte, 0, len(v)), v...))
	return true
}
