//go:build cgo

package rocks

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/linxGnu/grocksdb"
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
	return s.scan(from, to, nil, false)
}

func (s *store) ReverseRange(from, to []byte) (state.BytesIterator, error) {
	return s.scan(from, to, nil, true)
}

func (s *store) PrefixScan(prefix []byte) (state.BytesIterator, error) {
	return s.scan(prefix, nil, prefix, false)
}

func (s *store) All() (state.BytesIterator, error) { return s.scan(nil, nil, nil, false) }

func (s *store) ReverseAll() (state.BytesIterator, error) { return s.scan(nil, nil, nil, true) }

// scan opens an iterator over the store as it is now: the database as of
// now (a RocksDB iterator reads the database as it was when it opened)
// under the store's writes in every layer on the stack, which later writes
// leave as they are (see version), so the caller may write while it
// iterates without changing what it sees.
func (s *store) scan(from, to, prefix []byte, reverse bool) (state.BytesIterator, error) {
	if err := s.check(nil, false); err != nil {
		return nil, err
	}
	// The three keys share one allocation, each capped so that no append
	// runs into the next.
	keys := make([]byte, 0, 3*len(s.prefix)+len(from)+len(to)+len(prefix))
	cut := func(k []byte) []byte {
		n := len(keys)
		keys = append(append(keys, s.prefix...), k...)
		return keys[n:len(keys):len(keys)]
	}
	it := &iterator{s: s, sc: scope{reverse: reverse, hasFrom: from != nil, hasTo: to != nil,
		from: cut(from), to: cut(to), prefix: cut(prefix)}}
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
	it.m = merger{sc: &it.sc, reverse: reverse}
	// Sized once: a scan per record (a window fetch, a session lookup)
	// should not grow them layer by layer.
	it.versions = make([]*version, 0, len(d.layers))
	it.m.srcs = make([]cursor, 0, len(d.layers)+1)
	it.m.ranges = make([][]keyRange, 0, len(d.layers)+1)
	for i := len(d.layers) - 1; i >= 0; i-- {
		w := d.layers[i].stores[s.name]
		if w == nil || w.empty() {
			continue
		}
		v, ranges := w.read()
		it.versions = append(it.versions, v)
		it.m.srcs = append(it.m.srcs, newTreeCursor(v.t, &it.sc, reverse))
		it.m.ranges = append(it.m.ranges, ranges)
	}
	it.nat = d.openNative(it.sc.bounds())
	it.native = it.nat.it
	it.ncv = nativeCursor{n: newStepper(it.native), reverse: reverse}
	it.nc = &it.ncv
	it.m.srcs = append(it.m.srcs, it.nc)
	it.m.ranges = append(it.m.ranges, nil)
	d.iters[it] = struct{}{}
	return it, nil
}

// iterator walks one store's keys: a merge of the layers' versions over
// a RocksDB iterator.
type iterator struct {
	s      *store
	native *grocksdb.Iterator
	// nat is native with the read options that bound it to the scan's
	// keys.
	nat *native
	// versions are the layers' trees the iterator reads (see version).
	versions []*version
	m        merger
	// nc is the merger's last source, the database's: ncv, allocated with
	// the iterator.
	nc  *nativeCursor
	ncv nativeCursor
	sc  scope

	started bool
	done    bool
	closed  bool
	key     []byte // unprefixed copy
	value   []byte
	valid   bool
	err     error
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
	if it.native == nil {
		// Freed by the database's Close.
		it.err = fmt.Errorf("store %q: %w", it.s.name, d.checkOpen())
		it.done = true
		return false
	}
	if !it.started {
		it.started = true
		start := it.sc.prefix
		switch {
		case it.sc.reverse && it.sc.hasTo:
			start = it.sc.to
		case it.sc.reverse:
			start = it.s.end
		case it.sc.hasFrom:
			start = it.sc.from
		}
		for _, c := range it.m.srcs {
			c.seek(start)
		}
	}
	src := it.m.next()
	if src < 0 {
		if err := it.nat.failed(); err != nil {
			it.err = it.s.wrap("iterate", err)
		}
		it.releaseLocked()
		return false
	}
	if src != len(it.m.srcs)-1 && (!it.nc.ok || !bytes.Equal(it.nc.k, it.m.cur)) {
		// A layer's write the database does not hold: the merger has not
		// moved the database's source past the key yet, so it would be
		// at the key if the database held it.
		d.absent, d.absentGen = append(d.absent[:0], it.m.cur...), it.nat.gen
	}
	it.key = append(it.key[:0], it.m.cur[len(it.s.prefix):]...)
	it.value = append(it.value[:0], it.m.srcs[src].value()...)
	it.valid = true
	return true
}

// Key returns a copy.
func (it *iterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return append([]byte(nil), it.key...)
}

// Value returns a copy, non-nil even when empty.
func (it *iterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return append(make([]byte, 0, len(it.value)), it.value...)
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
	it.done = true
	if it.native == nil {
		return
	}
	d := it.s.d
	d.closeNative(it.nat)
	it.native, it.nat, it.nc = nil, nil, nil
	it.m = merger{}
	for _, v := range it.versions {
		v.done()
	}
	it.versions = nil
	delete(d.iters, it)
	d.freeLocked()
}
