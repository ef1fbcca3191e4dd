//go:build cgo

package rocks

import (
	"bytes"
	"slices"
	"unsafe"

	"github.com/google/btree"
	"github.com/stoatflow/stoatctl/engine/state/internal/keyorder"
)

// write is a layer's last write of one key (prefixed), its value held in
// a cell.
type write struct {
	key string
	c   *cell
}

// cell is a write's value: nil is a delete. A cell an iterator could
// reach is never changed, so that a tree an iterator reads, and the
// writes it buffered, stay as they were: a new write of the key replaces
// the tree's write with a new cell. Only a cell made since the tree was
// last cloned, which no iterator's tree holds, takes a new value in
// place (storeWrites.last).
type cell struct {
	value []byte
	// gen is the storeWrites generation the cell was made in.
	gen uint64
}

// writeOrder is the order of the writes of store name: every key a
// store's tree holds or is searched with begins with the name (then 0x00
// for a key, 0x01 for the store's end), but for the empty key a commit's
// merge starts from, so comparisons start after it. A task's store name
// is some 40 bytes, which the tree's searches compared word by word at
// every node before.
func writeOrder(name string) btree.LessFunc[write] {
	skip := len(name)
	return func(a, b write) bool {
		if len(a.key) < skip || len(b.key) < skip {
			return keyorder.Less(a.key, b.key)
		}
		return keyorder.Less(a.key[skip:], b.key[skip:])
	}
}

// layerDegree is the degree of a layer's B-tree. A write after a clone
// copies the nodes on its path (up to 2*degree-1 writes each), and a
// lookup compares about log2(n) keys whatever the degree: 16 keeps the
// copy near a few kilobytes at a million keys.
const layerDegree = 16

// layer is one epoch's uncommitted writes.
type layer struct {
	epoch int64
	// sealed says the epoch's writes are complete.
	sealed bool
	// stores holds each store's writes, by store name: a scan of one
	// store reads only its own, so that the writes a processor makes to
	// another store while the scan is open (a join's outer store) cost
	// no copy.
	stores map[string]*storeWrites
}

func newLayer(epoch int64) *layer {
	return &layer{epoch: epoch, stores: map[string]*storeWrites{}}
}

func (l *layer) writable(epoch int64) bool { return !l.sealed && l.epoch == epoch }

// of is the writes of store name, made when the layer has none.
func (l *layer) of(name string) *storeWrites {
	w := l.stores[name]
	if w == nil {
		w = &storeWrites{cur: &version{t: btree.NewG(layerDegree, writeOrder(name))}}
		l.stores[name] = w
	}
	return w
}

// storeWrites is one store's writes in a layer, in key order.
type storeWrites struct {
	// cur holds the last write of each key: point reads look it up,
	// iterators read it, commits walk it in key order.
	cur *version
	// size is the bytes of the keys and values in cur, to size a
	// commit's batch.
	size int
	// gen counts the clones of the tree: a cell made in the current
	// generation is in no tree but cur's.
	gen uint64
	// last is the write the last lookup found or the last set made: a
	// read-modify-write of one key (a count, a window aggregation) puts
	// the key it just read, and when last's cell is of the current
	// generation the put changes it in place instead of descending the
	// tree again. lastKey is the tree's own key string.
	lastKey string
	last    *cell
	// cells is where new cells are taken from, a chunk at a time.
	cells []cell
	// ranges are the key ranges the store deleted as units in the layer
	// (DeleteRange): they hide what the database and the layers below
	// hold in them. The layer's own writes in a range were removed when
	// it was deleted, so a write of the layer in one of its ranges came
	// after it and shows. Only appended to: an iterator keeps the slice
	// it saw.
	ranges []keyRange
}

// version is a tree of writes and the iterators reading it. A tree with
// readers takes no writes: the next write clones it (copy-on-write,
// nothing copied at once) and goes to the clone, which only the nodes on
// the written paths are copied for. A scan closed before the next write,
// the common case, costs no copy at all.
type version struct {
	t       *btree.BTreeG[write]
	readers int
}

// set writes key (nil value: a delete); the tree holds key and value as
// they are.
func (w *storeWrites) set(key string, value []byte) {
	w.writable()
	c := w.newCell(value)
	old, had := w.cur.t.ReplaceOrInsert(write{key: key, c: c})
	if had {
		w.size -= len(old.key) + len(old.c.value)
	}
	w.size += len(key) + len(value)
	w.lastKey, w.last = key, c
}

// setLast writes a copy of value (not nil) to prefix+key when that is
// the last write's key and its cell may change in place, and reports
// whether it did. The copy reuses the cell's bytes when they have room:
// no reader holds them (readers copy what they read, and an iterator's
// tree is of an older generation).
func (w *storeWrites) setLast(prefix, key, value []byte) bool {
	w.writable()
	c, k := w.last, w.lastKey
	if c == nil || c.gen != w.gen || len(k) != len(prefix)+len(key) ||
		k[:len(prefix)] != string(prefix) || k[len(prefix):] != string(key) {
		return false
	}
	w.size += len(value) - len(c.value)
	if c.value != nil && cap(c.value) >= len(value) {
		c.value = append(c.value[:0], value...)
	} else {
		c.value = append(make([]byte, 0, len(value)), value...)
	}
	return true
}

// newCell takes a cell of the current generation holding value.
func (w *storeWrites) newCell(value []byte) *cell {
	const chunk = 128
	if len(w.cells) == cap(w.cells) {
		w.cells = make([]cell, 0, chunk)
	}
	w.cells = append(w.cells, cell{value: value, gen: w.gen})
	return &w.cells[len(w.cells)-1]
}

// writable moves the writes to a clone of the tree when iterators read
// it. The clone starts a generation: the cells made before it are in
// the readers' tree too and change no more.
func (w *storeWrites) writable() {
	if w.cur.readers > 0 {
		w.cur = &version{t: w.cur.t.Clone()}
		w.gen++
	}
}

// lookup is the layer's write of key; ok is false when the layer wrote
// none (value nil with ok true is a delete).
func (w *storeWrites) lookup(key []byte) (value []byte, ok bool) {
	// The string lives for the lookup only: the tree keeps none of it.
	return w.find(write{key: unsafe.String(unsafe.SliceData(key), len(key))})
}

// lookupString is lookup of a key held as a string.
func (w *storeWrites) lookupString(key string) (value []byte, ok bool) {
	return w.find(write{key: key})
}

func (w *storeWrites) find(k write) (value []byte, ok bool) {
	e, ok := w.cur.t.Get(k)
	if !ok {
		return nil, false
	}
	w.lastKey, w.last = e.key, e.c
	return e.c.value, true
}

// remove takes key's write out of the layer, as if the layer had never
// written it.
func (w *storeWrites) remove(key string) {
	w.writable()
	w.last = nil
	if old, had := w.cur.t.Delete(write{key: key}); had {
		w.size -= len(old.key) + len(old.c.value)
	}
}

// deleteRange removes the store's writes in r from the layer and
// records r.
func (w *storeWrites) deleteRange(r keyRange) {
	var gone []write
	w.cur.t.AscendRange(write{key: string(r.from)}, write{key: string(r.to)}, func(e write) bool {
		gone = append(gone, e)
		return true
	})
	if len(gone) > 0 {
		w.writable()
	}
	w.last = nil
	for _, e := range gone {
		w.cur.t.Delete(e)
		w.size -= len(e.key) + len(e.c.value)
	}
	w.ranges = append(w.ranges, r)
}

// read is the store's writes as they are now, for an iterator, which
// must call done on the version when it no longer reads it.
func (w *storeWrites) read() (*version, []keyRange) {
	w.cur.readers++
	return w.cur, w.ranges[:len(w.ranges):len(w.ranges)]
}

func (w *storeWrites) empty() bool { return w.cur.t.Len() == 0 && len(w.ranges) == 0 }

// done ends a reader of v.
func (v *version) done() { v.readers-- }

// keyRange is a range delete of one layer: from <= key < to, both
// prefixed.
type keyRange struct {
	from, to []byte
}

func (r keyRange) covers(k []byte) bool {
	return bytes.Compare(k, r.from) >= 0 && bytes.Compare(k, r.to) < 0
}

// scope is the keys a scan reads, prefixed: those that start with prefix
// and lie within from..to where set. nil is every key.
type scope struct {
	prefix         []byte
	from, to       []byte
	hasFrom, hasTo bool
	reverse        bool
}

// past reports whether k lies beyond the scan's end in its direction, so
// that no key after it is read either.
func (s *scope) past(k []byte) bool {
	if s == nil {
		return false
	}
	if !bytes.HasPrefix(k, s.prefix) {
		return true
	}
	if s.reverse {
		return s.hasFrom && bytes.Compare(k, s.from) < 0
	}
	return s.hasTo && bytes.Compare(k, s.to) > 0
}

// bounds are the scan's keys as RocksDB's iterate bounds: lo <= key < hi,
// hi nil for none. hi is appended to buf, so that a caller can build it
// in room it has.
func (s *scope) bounds(buf []byte) (lo, hi []byte) {
	lo = s.prefix
	if s.hasFrom {
		lo = s.from
	}
	if s.hasTo {
		// The smallest key after to.
		return lo, append(append(buf, s.to...), 0)
	}
	// The smallest key above every key that starts with the prefix, none
	// when it is all 0xff.
	for i := len(s.prefix) - 1; i >= 0; i-- {
		if s.prefix[i] != 0xff {
			hi = append(buf, s.prefix[:i+1]...)
			hi[i]++
			return lo, hi
		}
	}
	return lo, nil
}

// cursor walks one source of a merge in the merge's direction.
type cursor interface {
	// seek moves to the first key >= k (forward) or the last key <= k
	// (reverse).
	seek(k []byte)
	// skip moves past r: to the first key >= r.to (forward) or the last
	// key < r.from (reverse).
	skip(r keyRange)
	next()
	valid() bool
	// key is valid until the cursor moves.
	key() []byte
	// deleted says the write at the cursor is a delete.
	deleted() bool
	// value is valid until the cursor moves.
	value() []byte
}

// treeCursor walks a tree of a layer's writes, which nothing writes to
// while it reads (see version). The tree has no cursor of its own, only
// callbacks, so it reads the tree in batches, each a seek: O(log n) per
// batch, the first batch small since a window fetch reads a key or two.
type treeCursor struct {
	t       *btree.BTreeG[write]
	sc      *scope
	reverse bool
	buf     []write
	i       int
	// more says the tree may hold keys past buf within the scope.
	more  bool
	batch int
}

const (
	firstTreeBatch = 4
	maxTreeBatch   = 64
)

func newTreeCursor(t *btree.BTreeG[write], sc *scope, reverse bool) *treeCursor {
	return &treeCursor{t: t, sc: sc, reverse: reverse}
}

// fill reads a batch from pivot on, including pivot itself when incl.
func (c *treeCursor) fill(pivot string, incl bool) {
	if c.batch == 0 {
		c.batch = firstTreeBatch
	} else if c.batch < maxTreeBatch {
		c.batch *= 2
	}
	c.buf, c.i, c.more = c.buf[:0], 0, false
	visit := func(w write) bool {
		if !incl && w.key == pivot {
			return true
		}
		if c.sc.past(unsafe.Slice(unsafe.StringData(w.key), len(w.key))) {
			return false
		}
		c.buf = append(c.buf, w)
		if len(c.buf) == c.batch {
			c.more = true
			return false
		}
		return true
	}
	if c.reverse {
		c.t.DescendLessOrEqual(write{key: pivot}, visit)
	} else {
		c.t.AscendGreaterOrEqual(write{key: pivot}, visit)
	}
}

// seek reads from k, which fill keeps none of: the string over its bytes
// needs no copy.
func (c *treeCursor) seek(k []byte) {
	c.batch = 0
	c.fill(unsafe.String(unsafe.SliceData(k), len(k)), true)
}

func (c *treeCursor) skip(r keyRange) {
	if c.reverse {
		c.fill(string(r.from), false)
		return
	}
	c.fill(string(r.to), true)
}

func (c *treeCursor) next() {
	c.i++
	if c.i == len(c.buf) && c.more {
		c.fill(c.buf[len(c.buf)-1].key, false)
	}
}

func (c *treeCursor) valid() bool { return c.i < len(c.buf) }

func (c *treeCursor) key() []byte {
	k := c.buf[c.i].key
	return unsafe.Slice(unsafe.StringData(k), len(k))
}

func (c *treeCursor) value() []byte { return c.buf[c.i].c.value }

func (c *treeCursor) deleted() bool { return c.buf[c.i].c.value == nil }

// nativeCursor walks a RocksDB iterator over the database, or a memo of
// what an earlier scan of the same range read from it (rangeMemo).
type nativeCursor struct {
	n       stepper
	reverse bool
	k       []byte
	ok      bool
	// gen is the generation of the database the cursor reads.
	gen uint64
	// memo, when set, is read instead of RocksDB (forward only), from
	// the scan's lower bound lo on; i is the entry the cursor is at.
	memo *rangeMemo
	lo   []byte
	i    int
	// rec gathers what the cursor reads from RocksDB from a seek to the
	// scan's lower bound on, step by step, to become a memo once the
	// cursor has reached the end (recDone); a skip, or more entries than
	// a memo holds, drop it.
	rec     *rangeMemo
	recDone bool
}

func (c *nativeCursor) seek(k []byte) {
	if c.memo != nil {
		if bytes.Compare(k, c.lo) < 0 {
			k = c.lo
		}
		c.i, _ = slices.BinarySearchFunc(c.memo.keys, k, bytes.Compare)
		c.memoAt()
		return
	}
	op := stepSeek
	if c.reverse {
		op = stepSeekForPrev
	}
	c.k, c.ok = c.n.step(op, k, c.k)
	if c.rec != nil {
		if c.reverse || !bytes.Equal(k, c.rec.lo) {
			c.rec = nil
			return
		}
		c.record()
	}
}

func (c *nativeCursor) skip(r keyRange) {
	if c.memo != nil {
		c.seek(r.to)
		return
	}
	c.rec = nil
	if !c.reverse {
		c.k, c.ok = c.n.step(stepSeek, r.to, c.k)
		return
	}
	c.k, c.ok = c.n.step(stepSeekForPrev, r.from, c.k)
	if c.ok && bytes.Equal(c.k, r.from) {
		c.k, c.ok = c.n.step(stepPrev, nil, c.k)
	}
}

func (c *nativeCursor) next() {
	if c.memo != nil {
		c.i++
		c.memoAt()
		return
	}
	op := stepNext
	if c.reverse {
		op = stepPrev
	}
	c.k, c.ok = c.n.step(op, nil, c.k)
	if c.rec != nil {
		c.record()
	}
}

// memoAt sets the cursor's key from the memo's entry i. The key is
// copied: the cursor's buffer goes on to the scan that reuses it.
func (c *nativeCursor) memoAt() {
	c.ok = c.i < len(c.memo.keys)
	if c.ok {
		c.k = append(c.k[:0], c.memo.keys[c.i]...)
	}
}

// record adds the entry the cursor is at to rec, or notes the end.
func (c *nativeCursor) record() {
	if !c.ok {
		c.recDone = true
		return
	}
	if !c.rec.add(c.k, c.n.value()) {
		c.rec = nil
	}
}

func (c *nativeCursor) valid() bool { return c.ok }
func (c *nativeCursor) key() []byte { return c.k }
func (c *nativeCursor) value() []byte {
	if c.memo != nil {
		return c.memo.vals[c.i]
	}
	return c.n.value()
}
func (c *nativeCursor) deleted() bool { return false }

// merger merges sources, newest first: the newest write of a key wins, a
// delete hides the key, and a range delete of a layer hides what the
// sources older than it hold in the range.
type merger struct {
	srcs []cursor
	// ranges[i] are the range deletes of source i's layer (none for the
	// database).
	ranges  [][]keyRange
	sc      *scope
	reverse bool
	// deletes says next yields deletes too (a commit's batch) instead
	// of skipping them (a scan).
	deletes bool
	// cur is the key next last yielded: the sources at it move on at the
	// next call.
	cur     []byte
	started bool
}

// next moves to the next key and returns the source whose write it is,
// -1 at the end. The key is m.cur.
func (m *merger) next() int {
	if m.started {
		m.pass(m.cur)
	}
	m.started = true
	for {
		best := -1
		var bk []byte
		for i, c := range m.srcs {
			if !c.valid() {
				continue
			}
			k := c.key()
			if best < 0 {
				best, bk = i, k
				continue
			}
			if x := bytes.Compare(k, bk); (x < 0 && !m.reverse) || (x > 0 && m.reverse) {
				best, bk = i, k
			}
		}
		if best < 0 || m.sc.past(bk) {
			return -1
		}
		if r, j, hidden := m.hiddenBy(bk, best); hidden {
			// Every source older than the range's layer moves past the
			// range at once: a dropped segment costs one seek, not a
			// step per key in it.
			for _, c := range m.srcs[j+1:] {
				if c.valid() && r.covers(c.key()) {
					c.skip(r)
				}
			}
			continue
		}
		m.cur = append(m.cur[:0], bk...)
		if m.srcs[best].deleted() && !m.deletes {
			m.pass(m.cur)
			continue
		}
		return best
	}
}

// pass moves the sources at k on.
func (m *merger) pass(k []byte) {
	for _, c := range m.srcs {
		if c.valid() && bytes.Equal(c.key(), k) {
			c.next()
		}
	}
}

// hiddenBy finds a range delete of a layer newer than source src that
// covers k, and that layer's index.
func (m *merger) hiddenBy(k []byte, src int) (keyRange, int, bool) {
	for j := range src {
		for _, r := range m.ranges[j] {
			if r.covers(k) {
				return r, j, true
			}
		}
	}
	return keyRange{}, 0, false
}
