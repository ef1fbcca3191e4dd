//go:build cgo

package rocks

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/stoatflow/stoatctl/engine/state"
)

// Supplier returns the supplier of the database's byte stores: each Get
// is the store of that name in this database, layers and all.
func (d *DB) Supplier() state.BytesSupplier { return supplier{d: d} }

// TaskSupplier returns the supplier of the byte stores of the task of
// partition in the database: their names begin with the task's prefix
// (TaskPrefix), so that the stores of several tasks share one database,
// and one task's keys lie in one range, which WipeTask deletes.
func (d *DB) TaskSupplier(partition int32) state.BytesSupplier {
	return supplier{d: d, prefix: TaskPrefix(partition)}
}

type supplier struct {
	d      *DB
	prefix string
}

func (supplier) Name() string { return "rocksdb" }

func (s supplier) Get(name string) state.KeyValueBytesStore { return s.d.Store(s.prefix + name) }

// Store returns the byte store name of the database. Its keys are those of
// the database prefixed by name and a zero byte.
func (d *DB) Store(name string) state.KeyValueBytesStore {
	p := append([]byte(name), 0)
	end := append([]byte(name), 1)
	return &store{d: d, name: name, prefix: p, end: end}
}

// store is one state store's keys in a lane database.
type store struct {
	d      *DB
	name   string
	prefix []byte // name 0x00: every key of the store starts with it
	end    []byte // name 0x01: every key of the store sorts below it
	closed atomic.Bool
}

func (s *store) Name() string { return s.name }

func (s *store) Init(state.Context) error { return s.check(nil, false) }

// Flush has nothing to do: writes reach the database when their epoch
// commits.
func (s *store) Flush() error { return s.check(nil, false) }

// Close closes the store, not the database: the lane owns that.
func (s *store) Close() error {
	s.closed.Store(true)
	return nil
}

func (s *store) Persistent() bool { return true }

// check reports a closed store or database and, when key is wanted, a nil
// key.
func (s *store) check(key []byte, wantKey bool) error {
	if s.closed.Load() {
		return fmt.Errorf("store %q: %w", s.name, state.ErrClosed)
	}
	if err := s.d.checkOpen(); err != nil {
		return fmt.Errorf("store %q: %w", s.name, err)
	}
	if wantKey && key == nil {
		return fmt.Errorf("store %q: %w", s.name, state.ErrNilKey)
	}
	return nil
}

// skey is the prefixed key as a string, in one allocation.
func (s *store) skey(k []byte) string { return s.name + "\x00" + string(k) }

func (s *store) key(k []byte) []byte {
	return append(append(make([]byte, 0, len(s.prefix)+len(k)), s.prefix...), k...)
}

func (s *store) wrap(op string, err error) error {
	return fmt.Errorf("store %q in %s: %s: %w", s.name, s.d.path, op, err)
}

func (s *store) Get(key []byte) ([]byte, error) {
	if err := s.check(key, true); err != nil {
		return nil, err
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	v, err := s.d.get(s.name, s.key(key))
	if err != nil {
		return nil, s.wrap("get", err)
	}
	return v, nil
}

func (s *store) Put(key, value []byte) error {
	if err := s.check(key, true); err != nil {
		return err
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.putLocked(key, value)
	return nil
}

// putLocked treats a nil value as a delete, as Kafka Streams'
// put(key, null) does.
func (s *store) putLocked(key, value []byte) {
	if s.d.restoring {
		s.d.bulkPut(s.prefix, key, value)
		return
	}
	if value == nil {
		s.d.del(s.name, s.skey(key))
		return
	}
	s.d.putEntry(s.name, s.prefix, key, value)
}

func (s *store) PutIfAbsent(key, value []byte) ([]byte, error) {
	if err := s.check(key, true); err != nil {
		return nil, err
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	old, err := s.d.get(s.name, s.key(key))
	if err != nil {
		return nil, s.wrap("get", err)
	}
	if old != nil {
		return old, nil
	}
	s.putLocked(key, value)
	return nil, nil
}

// PutAll checks every key before writing any; a later entry for a key
// wins.
func (s *store) PutAll(entries []state.KeyValue[[]byte, []byte]) error {
	for _, kv := range entries {
		if err := s.check(kv.Key, true); err != nil {
			return err
		}
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	for _, kv := range entries {
		s.putLocked(kv.Key, kv.Value)
	}
	return nil
}

func (s *store) Delete(key []byte) ([]byte, error) {
	if err := s.check(key, true); err != nil {
		return nil, err
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	old, err := s.d.get(s.name, s.key(key))
	if err != nil {
		return nil, s.wrap("get", err)
	}
	if old != nil {
		s.d.del(s.name, s.skey(key))
	}
	return old, nil
}

// ApproximateNumEntries is RocksDB's estimate for the whole database plus
// the puts not committed yet, as Kafka Streams' RocksDB store answers
// with RocksDB's estimate.
func (s *store) ApproximateNumEntries() (int64, error) {
	if err := s.check(nil, false); err != nil {
		return 0, err
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	n, _ := s.d.db.GetIntProperty("rocksdb.estimate-num-keys")
	total := int64(n)
	for _, l := range s.d.layers {
		if w := l.stores[s.name]; w != nil {
			total += int64(w.cur.t.Len())
		}
	}
	return total, nil
}

// DeleteRange deletes from <= key < to (a nil to is open) as one unit: a
// range delete of the epoch's layer, committed as one RocksDB range
// deletion, which the window and session stores use to drop a segment.
func (s *store) DeleteRange(from, to []byte) error {
	if err := s.check(from, true); err != nil {
		return err
	}
	hi := s.end
	if to != nil {
		hi = s.key(to)
	}
	if bytes.Compare(s.key(from), hi) >= 0 {
		return nil
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if err := s.d.deleteRange(s.name, s.key(from), hi); err != nil {
		return s.wrap("delete range", err)
	}
	return nil
}

func (s *store) Range(from, to []byte) (state.BytesIterator, error) {
	return s.scan(from, to, nil, false, 0)
}

func (s *store) ReverseRange(from, to []byte) (state.BytesIterator, error) {
	return s.scan(from, to, nil, true, 0)
}

func (s *store) PrefixScan(prefix []byte) (state.BytesIterator, error) {
	return s.scan(prefix, nil, prefix, false, 0)
}

func (s *store) All() (state.BytesIterator, error) { return s.scan(nil, nil, nil, false, 0) }

func (s *store) ReverseAll() (state.BytesIterator, error) { return s.scan(nil, nil, nil, true, 0) }

// WriteEpoch is the processing epoch, which the store's writes go to;
// not during a restore, whose writes go to the database
// (state.EpochLayered).
func (s *store) WriteEpoch() (int64, bool) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.restoring {
		return 0, false
	}
	return d.epoch, true
}

// RangeSinceEpoch is Range over the writes of epoch and the epochs after
// it, with no read of the database: the layers on the stack and those
// the last commit wrote (DB.recent), for a caller that knows no entry in
// the range was written before epoch (state.EpochLayered). When the
// database may hold writes of epoch or later that no layer holds any
// more (an older commit's), or during a restore, it is Range.
func (s *store) RangeSinceEpoch(epoch int64, from, to []byte) (state.BytesIterator, error) {
	return s.scan(from, to, nil, false, epoch)
}

// GetOfEpoch is Get of the processing epoch's layer alone, with no read
// of the database, under the same terms as RangeSinceEpoch.
func (s *store) GetOfEpoch(epoch int64, key []byte) ([]byte, error) {
	if err := s.check(key, true); err != nil {
		return nil, err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.layers)
	switch {
	case d.restoring || epoch != d.epoch:
		v, err := d.get(s.name, s.key(key))
		if err != nil {
			return nil, s.wrap("get", err)
		}
		return v, nil
	case n == 0 || d.layers[n-1].epoch != epoch:
		// The epoch has written nothing yet.
		return nil, nil
	}
	w := d.layers[n-1].stores[s.name]
	if w == nil {
		return nil, nil
	}
	// A key the layer's range deletes removed is not in its tree.
	if v, ok := w.lookup(s.key(key)); ok && v != nil {
		return append(make([]byte, 0, len(v)), v...), nil
	}
	return nil, nil
}

// scan opens an iterator over the store as it is now: the database as of
// now (a RocksDB iterator reads the database as it was when it opened)
// under the store's writes in every layer on the stack, which later writes
// leave as they are (see version), so the caller may write while it
// iterates without changing what it sees. since, when not 0, is the
// epoch from which on the layers alone are read, the stack's and those
// the last commit wrote, without the database (RangeSinceEpoch); a scan
// since an epoch the database may hold writes of (DB.heldAfter) reads it
// all.
func (s *store) scan(from, to, prefix []byte, reverse bool, since int64) (state.BytesIterator, error) {
	if err := s.check(nil, false); err != nil {
		return nil, err
	}
	it := &iterator{s: s}
	if from != nil && to != nil && bytes.Compare(from, to) > 0 {
		it.done = true
		return it, nil
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, fmt.Errorf("store %q: %w", s.name, err)
	}
	d.flushBulk()
	if d.restoring || since <= d.heldAfter || since > d.epoch {
		since = 0
	}
	st := d.takeScan()
	it.st = st
	st.sc = scope{reverse: reverse, hasFrom: from != nil, hasTo: to != nil}
	// The scope's keys and the upper bound share one buffer, sized first,
	// each capped so that no append runs into the next.
	need := 4*len(s.prefix) + len(from) + 2*len(to) + 2*len(prefix) + 1
	if cap(st.keys) < need {
		st.keys = make([]byte, 0, need)
	}
	keys := st.keys[:0]
	cut := func(k []byte) []byte {
		n := len(keys)
		keys = append(append(keys, s.prefix...), k...)
		return keys[n:len(keys):len(keys)]
	}
	st.sc.from, st.sc.to, st.sc.prefix = cut(from), cut(to), cut(prefix)
	lo, hi := st.sc.bounds(keys[len(keys):])
	st.m = merger{sc: &st.sc, reverse: reverse, srcs: st.m.srcs[:0], ranges: st.m.ranges[:0], cur: st.m.cur[:0]}
	st.trees = st.trees[:0]
	// The layers newest first: those of the stack, then, for a scan
	// since an epoch, those the last commit wrote (DB.recent), in place
	// of the database.
	recent := 0
	if since != 0 {
		recent = len(d.recent)
	}
	if n := recent + len(d.layers); cap(st.trees) < n {
		st.trees = make([]treeCursor, 0, n)
	}
	for i := recent + len(d.layers) - 1; i >= 0; i-- {
		var l *layer
		if i < recent {
			l = d.recent[i]
		} else {
			l = d.layers[i-recent]
		}
		w := l.stores[s.name]
		if w == nil || w.empty() || (since != 0 && l.epoch < since) {
			continue
		}
		v, ranges := w.read()
		st.versions = append(st.versions, v)
		n := len(st.trees)
		st.trees = st.trees[:n+1]
		c := &st.trees[n]
		*c = treeCursor{t: v.t, sc: &st.sc, reverse: reverse, buf: c.buf[:0]}
		st.m.srcs = append(st.m.srcs, c)
		st.m.ranges = append(st.m.ranges, ranges)
	}
	if since == 0 {
		st.ncv = nativeCursor{reverse: reverse, k: st.ncv.k[:0], gen: d.gen, lo: lo}
		if m := d.memos.get(d.gen, lo, hi); m != nil && !reverse {
			st.ncv.memo = m
		} else {
			st.nat = d.openNative(lo, hi)
			st.ncv.n, st.ncv.gen = newStepper(st.nat.it), st.nat.gen
			if !reverse && len(lo) > 0 && len(hi) > 0 && d.memos.again(d.gen, hi) {
				st.ncv.rec = &rangeMemo{lo: bytes.Clone(lo), hi: bytes.Clone(hi)}
			}
		}
		st.m.srcs = append(st.m.srcs, &st.ncv)
		st.m.ranges = append(st.m.ranges, nil)
	}
	d.iters[it] = struct{}{}
	return it, nil
}

// iterator is a scan's handle, what the caller holds: the scan itself
// (scanState) goes back to its database once it ends, exhausted, failed
// or closed, for the next scan (a window fetch or a session lookup per
// record would otherwise allocate its buffers each time), and the
// handle keeps what the caller may still ask.
type iterator struct {
	s *store
	// st is the scan, nil once it ended.
	st     *scanState
	done   bool
	closed bool
	valid  bool
	err    error
}

// scanState is one scan: a merge of the layers' versions over a RocksDB
// iterator, with the buffers it fills.
type scanState struct {
	// nat is the RocksDB iterator, with the read options that bound it
	// to the scan's keys; nil for a scan of one epoch's layer
	// (RangeSinceEpoch).
	nat *native
	// versions are the layers' trees the scan reads (see version).
	versions []*version
	m        merger
	// ncv is the merger's last source, the database's.
	ncv nativeCursor
	// trees are the merger's other sources, the layers'.
	trees []treeCursor
	sc    scope
	// keys holds sc's keys and the RocksDB bounds.
	keys    []byte
	started bool
	key     []byte // unprefixed copy
	value   []byte
}

// maxPooledScans bounds the ended scans a database keeps for reuse: a
// join fetches one store while the other's is read.
const maxPooledScans = 4

// takeScan returns an ended scan to reuse, or a new one. The lock must be
// held.
func (d *DB) takeScan() *scanState {
	if n := len(d.scans); n > 0 {
		st := d.scans[n-1]
		d.scans[n-1] = nil
		d.scans = d.scans[:n-1]
		return st
	}
	return &scanState{}
}

// endScan takes an ended scan back, its references to the layers' trees
// and to RocksDB dropped. The lock must be held.
func (d *DB) endScan(st *scanState) {
	for _, v := range st.versions {
		v.done()
	}
	clear(st.versions)
	st.versions = st.versions[:0]
	for i := range st.trees {
		st.trees[i].t = nil
		clear(st.trees[i].buf)
	}
	clear(st.m.srcs)
	clear(st.m.ranges)
	st.nat, st.ncv.n, st.started = nil, stepper{}, false
	st.ncv.memo, st.ncv.rec, st.ncv.lo = nil, nil, nil
	if len(d.scans) < maxPooledScans && !d.closed.Load() {
		d.scans = append(d.scans, st)
	}
}

func (it *iterator) Next() bool {
	it.valid = false
	if it.closed && it.err == nil {
		it.err = fmt.Errorf("iterator of store %q: %w", it.s.name, state.ErrClosed)
	}
	if it.err != nil {
		return false
	}
	// A closed store or database ends its iterators, as in Kafka Streams.
	if err := it.s.check(nil, false); err != nil {
		it.err = err
		it.release()
		return false
	}
	if it.done {
		return false
	}
	d := it.s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	st := it.st
	if st == nil {
		// Freed by the database's Close.
		it.err = fmt.Errorf("store %q: %w", it.s.name, d.checkOpen())
		it.done = true
		return false
	}
	if !st.started {
		st.started = true
		start := st.sc.prefix
		switch {
		case st.sc.reverse && st.sc.hasTo:
			start = st.sc.to
		case st.sc.reverse:
			start = it.s.end
		case st.sc.hasFrom:
			start = st.sc.from
		}
		for _, c := range st.m.srcs {
			c.seek(start)
		}
	}
	src := st.m.next()
	if src < 0 {
		if st.nat != nil {
			if err := st.nat.failed(); err != nil {
				it.err = it.s.wrap("iterate", err)
			}
		}
		it.releaseLocked()
		return false
	}
	if (st.nat != nil || st.ncv.memo != nil) && src != len(st.m.srcs)-1 && (!st.ncv.ok || !bytes.Equal(st.ncv.k, st.m.cur)) {
		// A layer's write the database does not hold: the merger has not
		// moved the database's source past the key yet, so it would be
		// at the key if the database held it.
		d.absent, d.absentGen = append(d.absent[:0], st.m.cur...), st.ncv.gen
	}
	st.key = append(st.key[:0], st.m.cur[len(it.s.prefix):]...)
	st.value = append(st.value[:0], st.m.srcs[src].value()...)
	it.valid = true
	return true
}

// Key returns a copy.
func (it *iterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return append([]byte(nil), it.st.key...)
}

// Value returns a copy, non-nil even when empty.
func (it *iterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return append(make([]byte, 0, len(it.st.value)), it.st.value...)
}

func (it *iterator) Err() error { return it.err }

func (it *iterator) Close() error {
	it.valid = false
	it.closed = true
	it.release()
	return nil
}

// release frees the native iterator and lets go of the snapshots, as
// soon as the iterator is exhausted or closed: a finished but unclosed
// iterator pins nothing.
func (it *iterator) release() {
	d := it.s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	it.releaseLocked()
}

// releaseLocked is release with the database's lock held.
func (it *iterator) releaseLocked() {
	it.done, it.valid = true, false
	st := it.st
	if st == nil {
		return
	}
	it.st = nil
	d := it.s.d
	if st.nat != nil {
		if st.ncv.rec != nil && st.ncv.recDone && st.nat.gen == d.gen {
			d.memos.put(d.gen, st.ncv.rec)
		}
		d.closeNative(st.nat)
	}
	d.endScan(st)
	delete(d.iters, it)
	d.freeLocked()
}
