package state

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
)

// btreeDegree trades node size against tree depth; 32 keeps nodes within a
// few cache lines of pointers while keeping copy-on-write copies small.
const btreeDegree = 32

// iteratorBatch is how many entries an iterator pulls from its snapshot per
// seek. The btree only offers callback scans, so a pull iterator re-seeks
// after each batch; batching amortises the O(log n) seek.
const iteratorBatch = 64

// ErrNilKey is returned when a store is handed a nil key. Kafka Streams
// rejects null keys too: they cannot be ordered or sent to a changelog.
var ErrNilKey = errors.New("key is nil")

// InMemory returns the supplier of in-memory byte stores. Every Get returns a
// new, empty store: each task owns its own copy and rebuilds it from the
// changelog.
func InMemory() BytesSupplier { return inMemorySupplier{} }

type inMemorySupplier struct{}

func (inMemorySupplier) Name() string { return "in-memory" }

func (inMemorySupplier) Get(storeName string) KeyValueBytesStore {
	return newMemoryStore(storeName)
}

type entry struct {
	key, value []byte
}

func entryLess(a, b entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// memoryStore is a sorted in-memory byte store. Stored slices are private
// copies and never mutated after insertion, which is what lets iterators
// read a Clone of the tree without holding the lock.
type memoryStore struct {
	name string

	// mu guards tree. Clone writes to the tree it clones, so even iterator
	// creation takes the lock exclusively.
	mu     sync.Mutex
	tree   *btree.BTreeG[entry]
	closed atomic.Bool
}

func newMemoryStore(name string) *memoryStore {
	return &memoryStore{name: name, tree: btree.NewG(btreeDegree, entryLess)}
}

func (s *memoryStore) Name() string { return s.name }

// Init has nothing to bind: the in-memory store is usable as soon as it is
// made, which lets restoration and migration fill it without a Context.
func (s *memoryStore) Init(Context) error { return s.checkOpen() }

func (s *memoryStore) Flush() error { return s.checkOpen() }

func (s *memoryStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	// Drop the entries now rather than when the last reference goes; open
	// iterators keep their snapshots but fail on their next Next.
	s.tree = btree.NewG(btreeDegree, entryLess)
	return nil
}

func (s *memoryStore) Persistent() bool { return false }

func (s *memoryStore) checkOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("store %q: %w", s.name, ErrClosed)
	}
	return nil
}

func (s *memoryStore) Get(key []byte) ([]byte, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if err := s.checkOpen(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	e, ok := s.tree.Get(entry{key: key})
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	return bytes.Clone(e.value), nil
}

func (s *memoryStore) Put(key, value []byte) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.putLocked(key, value)
	return nil
}

// putLocked treats a nil value as a delete, as Kafka Streams' put(key, null)
// does.
func (s *memoryStore) putLocked(key, value []byte) (old []byte, found bool) {
	var e entry
	if value == nil {
		e, found = s.tree.Delete(entry{key: key})
	} else {
		e, found = s.tree.ReplaceOrInsert(entry{key: bytes.Clone(key), value: bytes.Clone(value)})
	}
	return e.value, found
}

func (s *memoryStore) PutIfAbsent(key, value []byte) ([]byte, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if e, ok := s.tree.Get(entry{key: key}); ok {
		return bytes.Clone(e.value), nil
	}
	s.putLocked(key, value)
	return nil, nil
}

// PutAll checks every key before writing any, so a bad entry leaves the
// store untouched. Entries apply in order: a later entry for the same key
// wins, which restoration relies on.
func (s *memoryStore) PutAll(entries []KeyValue[[]byte, []byte]) error {
	for _, kv := range entries {
		if err := s.checkKey(kv.Key); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return err
	}
	for _, kv := range entries {
		s.putLocked(kv.Key, kv.Value)
	}
	return nil
}

func (s *memoryStore) Delete(key []byte) ([]byte, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	old, _ := s.putLocked(key, nil)
	// An open iterator's snapshot may still hold old: hand out a copy.
	return bytes.Clone(old), nil
}

func (s *memoryStore) checkKey(key []byte) error {
	if key == nil {
		return fmt.Errorf("store %q: %w", s.name, ErrNilKey)
	}
	return nil
}

func (s *memoryStore) Range(from, to []byte) (BytesIterator, error) {
	return s.scan(from, to, nil, false)
}

func (s *memoryStore) ReverseRange(from, to []byte) (BytesIterator, error) {
	return s.scan(from, to, nil, true)
}

// PrefixScan with an empty prefix scans the whole store, since every key
// starts with it.
func (s *memoryStore) PrefixScan(prefix []byte) (BytesIterator, error) {
	return s.scan(prefix, nil, prefix, false)
}

func (s *memoryStore) All() (BytesIterator, error) { return s.scan(nil, nil, nil, false) }

func (s *memoryStore) ReverseAll() (BytesIterator, error) { return s.scan(nil, nil, nil, true) }

func (s *memoryStore) ApproximateNumEntries() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	return int64(s.tree.Len()), nil
}

// scan snapshots the tree so that the caller may write to the store while
// iterating: the iterator sees the store as it was when the scan began.
func (s *memoryStore) scan(from, to, prefix []byte, reverse bool) (BytesIterator, error) {
	it := &memoryIterator{
		store:   s,
		from:    bytes.Clone(from),
		to:      bytes.Clone(to),
		prefix:  bytes.Clone(prefix),
		reverse: reverse,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	// Kafka Streams logs a warning and returns an empty iterator for an
	// inverted range; an empty iterator is the contract callers rely on.
	if from != nil && to != nil && bytes.Compare(from, to) > 0 {
		it.exhausted = true
		return it, nil
	}
	// Most scans are short (a key's windows, a session merge): read the
	// first batch from the live tree under the lock, and pay for a
	// copy-on-write snapshot only when more remains. A clone makes the next
	// writes copy tree nodes, which on a write-heavy store costs more than
	// the scan itself.
	it.snap = s.tree
	it.fill()
	if it.exhausted {
		it.snap = nil
	} else {
		it.snap = s.tree.Clone()
	}
	return it, nil
}

// memoryIterator pulls batches of entries from a private snapshot of the
// tree. It is meant for one goroutine.
type memoryIterator struct {
	store *memoryStore
	snap  *btree.BTreeG[entry]

	// from and to are inclusive bounds, nil when open. prefix, when set,
	// ends a forward scan at the first key without it.
	from, to, prefix []byte
	reverse          bool

	buf       []entry
	pos       int
	last      []byte // key of the last entry buffered, where the next seek resumes
	exhausted bool   // the snapshot has no entries past buf
	cur       entry
	valid     bool
	err       error
	closed    bool
}

func (it *memoryIterator) Next() bool {
	it.valid = false
	if it.closed {
		if it.err == nil {
			it.err = fmt.Errorf("iterator of store %q: %w", it.store.name, ErrClosed)
		}
		return false
	}
	if it.err != nil {
		return false
	}
	// The store's Close ends its iterators, as in Kafka Streams.
	if err := it.store.checkOpen(); err != nil {
		it.err = err
		it.release()
		return false
	}
	if it.pos >= len(it.buf) {
		if it.exhausted {
			it.release()
			return false
		}
		it.fill()
		if len(it.buf) == 0 {
			it.release()
			return false
		}
	}
	it.cur = it.buf[it.pos]
	it.pos++
	it.valid = true
	return true
}

func (it *memoryIterator) fill() {
	it.buf = it.buf[:0]
	it.pos = 0
	resume := it.last != nil
	visit := func(e entry) bool {
		if resume && bytes.Equal(e.key, it.last) {
			return true // already handed out by the previous batch
		}
		if it.pastEnd(e.key) {
			it.exhausted = true
			return false
		}
		it.buf = append(it.buf, e)
		return len(it.buf) < iteratorBatch
	}
	switch pivot := it.pivot(); {
	case it.reverse && pivot == nil:
		it.snap.Descend(visit)
	case it.reverse:
		it.snap.DescendLessOrEqual(entry{key: pivot}, visit)
	case pivot == nil:
		it.snap.Ascend(visit)
	default:
		it.snap.AscendGreaterOrEqual(entry{key: pivot}, visit)
	}
	if len(it.buf) < iteratorBatch {
		it.exhausted = true
	}
	if n := len(it.buf); n > 0 {
		it.last = it.buf[n-1].key
	}
}

// pivot is where the next seek starts: the last key handed out, or the
// near bound of the scan.
func (it *memoryIterator) pivot() []byte {
	if it.last != nil {
		return it.last
	}
	if it.reverse {
		return it.to
	}
	return it.from
}

// pastEnd reports whether key lies beyond the far bound of the scan.
func (it *memoryIterator) pastEnd(key []byte) bool {
	if it.reverse {
		return it.from != nil && bytes.Compare(key, it.from) < 0
	}
	if it.prefix != nil && !bytes.HasPrefix(key, it.prefix) {
		return true
	}
	return it.to != nil && bytes.Compare(key, it.to) > 0
}

// Key returns a copy: the snapshot shares its slices with the store.
func (it *memoryIterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return bytes.Clone(it.cur.key)
}

func (it *memoryIterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return bytes.Clone(it.cur.value)
}

func (it *memoryIterator) Err() error { return it.err }

func (it *memoryIterator) Close() error {
	it.closed = true
	it.valid = false
	it.release()
	return nil
}

// release lets the snapshot go as soon as it is no longer needed, so that
// a finished but unclosed iterator does not pin old tree nodes.
func (it *memoryIterator) release() {
	it.snap = nil
	it.buf = nil
	it.exhausted = true
}
