package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/stoatflow/stoatctl/engine/state/internal/keyorder"
)

// iteratorBatch is how many entries an iterator reads from the tree per
// seek: the iterator re-seeks the live tree after each batch, and batching
// amortises the O(log n) seek and the lock.
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

// A record holds one key and its value in a single pointer-free
// allocation:
//
//	[value length u32][value capacity u32][seq u64][held u64][key][value][spare]
//
// The tree's entries are the keys, as strings over the records' key bytes.
// A lookup's last comparison reads the key bytes, so the value next to them
// is usually in cache already, and the garbage collector has no pointers to
// follow from records. The key bytes never change. The value is rewritten
// in place when it fits; otherwise the key moves to a bigger record. All of
// it is read and written under the store's lock.
//
// seq numbers the records in the order their keys were inserted: an
// iterator visits the keys whose seq is at most the store's when it was
// opened. A record that leaves the tree is marked dead (its length is
// recordDead) so that an iterator holding it looks the key up again.
//
// held belongs to the changelog's coalescer, not to the store: the store
// zeroes it in a new record and hands out its address (putHeld), and only
// the goroutine writing the store touches it, outside the lock. See
// HeldLogger.
const (
	recordHeader = 24
	recordDead   = math.MaxUint32
	// maxValueLen is the longest value a record's header can describe.
	maxValueLen = math.MaxUint32 - 1
)

// entry is the tree's item: a key, and when it comes from a leaf of the
// tree, its record around it. Search keys built from a caller's bytes and
// the separators of inner nodes have no record and must not reach the
// record methods.
type entry struct {
	key string
}

// keyLess is a < b in unsigned byte order (keyorder.Less: a word at a
// time).
func keyLess(a, b string) bool { return keyorder.Less(a, b) }

// searchKey views a caller's key as a search entry. The entry must not
// outlive the call nor be stored.
func searchKey(b []byte) entry { return entry{key: unsafe.String(unsafe.SliceData(b), len(b))} }

func newRecord(key, value []byte, seq uint64) entry {
	spare := min(uint64(len(value))/4, maxValueLen-uint64(len(value))) // room to grow a little
	if len(key)+len(value) == 0 {
		spare = 1 // keep the key's pointer inside the allocation
	}
	buf := make([]byte, recordHeader+len(key)+len(value)+int(spare))
	binary.LittleEndian.PutUint32(buf, uint32(len(value)))
	binary.LittleEndian.PutUint32(buf[4:], uint32(uint64(len(value))+spare))
	binary.LittleEndian.PutUint64(buf[8:], seq)
	copy(buf[recordHeader:], key)
	copy(buf[recordHeader+len(key):], value)
	return entry{key: unsafe.String(&buf[recordHeader:][:1][0], len(key))}
}

// header is the record's header, just before the key bytes.
func (e entry) header() *[recordHeader]byte {
	return (*[recordHeader]byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(e.key)), -recordHeader))
}

func (e entry) seq() uint64 { return binary.LittleEndian.Uint64(e.header()[8:]) }

// held is the address of the record's held word.
func (e entry) held() *uint64 { return (*uint64)(unsafe.Pointer(&e.header()[16])) }

// room is the record's value bytes up to their capacity.
func (e entry) room() []byte {
	h := e.header()
	n := binary.LittleEndian.Uint32(h[4:])
	if n == 0 {
		return nil // its address would be past the end of the allocation
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(h), recordHeader+len(e.key))), n)
}

// value is the stored value, not a copy; ok is false for a dead record.
func (e entry) value() (v []byte, ok bool) {
	n := binary.LittleEndian.Uint32(e.header()[:])
	if n == recordDead {
		return nil, false
	}
	return e.room()[:n], true
}

func (e entry) kill() { binary.LittleEndian.PutUint32(e.header()[:], recordDead) }

// set rewrites the value in place, false when it does not fit. A value
// that has shrunk to well under the room moves too, to give the room back.
func (e entry) set(v []byte) bool {
	room := e.room()
	if len(v) > len(room) || len(room) > 2*len(v)+64 {
		return false
	}
	binary.LittleEndian.PutUint32(e.header()[:], uint32(len(v)))
	copy(room, v)
	return true
}

// memoryStore is a sorted in-memory byte store: a B+ tree of records
// ordered by unsigned key bytes. Updating a key rewrites its record in
// place, so only inserts and deletes change the tree.
type memoryStore struct {
	name string

	// mu guards the tree and the records' contents.
	mu   sync.Mutex
	tree bptree
	// seq is the seq of the last record inserted.
	seq uint64
	// recent is the entry last found or made, zero when none: a
	// read-modify-write of a key finds it once.
	recent entry
	closed atomic.Bool
	// retained keeps the entries at Close, for a Retained to reopen.
	retained bool
}

func newMemoryStore(name string) *memoryStore {
	s := &memoryStore{name: name}
	s.tree.init()
	return s
}

func (s *memoryStore) Name() string { return s.name }

// Init has nothing to bind: the in-memory store is usable as soon as it is
// made, which lets restoration and migration fill it without a Context.
func (s *memoryStore) Init(Context) error { return s.checkOpen() }

func (s *memoryStore) Flush() error { return s.checkOpen() }

func (s *memoryStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) || s.retained {
		// A retained store keeps its entries for the next task
		// (Retained); its open iterators fail on their next Next too.
		return nil
	}
	// Drop the entries now rather than when the last reference goes; open
	// iterators fail on their next Next.
	s.tree.init()
	s.recent = entry{}
	return nil
}

func (s *memoryStore) Persistent() bool { return false }

func (s *memoryStore) checkOpen() error {
	if s.closed.Load() {
		return fmt.Errorf("store %q: %w", s.name, ErrClosed)
	}
	return nil
}

// isRecent returns the recent entry if it is key's, and live.
func (s *memoryStore) isRecent(key []byte) (entry, bool) {
	e := s.recent
	if unsafe.StringData(e.key) == nil || e.key != string(key) {
		return entry{}, false
	}
	_, live := e.value()
	return e, live
}

// find returns key's live entry.
func (s *memoryStore) find(key []byte) (entry, bool) {
	if e, ok := s.isRecent(key); ok {
		return e, true
	}
	e, ok := s.tree.get(searchKey(key).key)
	if ok {
		s.recent = e
	}
	return e, ok
}

// Get returns a copy: the stored bytes change in place on the next put.
func (s *memoryStore) Get(key []byte) ([]byte, error) { return s.appendValue(nil, key) }

// appendValue copies key's value onto the end of dst (a new slice for a
// nil dst, which is Get): the record's bytes change in place on the next
// write, so they are copied under the lock, into the caller's memory
// where it has room.
func (s *memoryStore) appendValue(dst, key []byte) ([]byte, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	e, ok := s.find(key)
	if !ok {
		return nil, nil
	}
	v, _ := e.value()
	if out := append(dst, v...); out != nil {
		return out, nil
	}
	return []byte{}, nil
}

// cloneValue copies v into a new slice, non-nil even when v is empty: an
// empty value is a value, not a null.
func cloneValue(v []byte) []byte { return append(make([]byte, 0, len(v)), v...) }

func (s *memoryStore) Put(key, value []byte) error {
	_, err := s.putHeld(key, value)
	return err
}

// putHeld is Put that also returns the held word of key's record, nil
// for a delete.
func (s *memoryStore) putHeld(key, value []byte) (*uint64, error) {
	if err := s.checkEntry(key, value); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	e, ok := s.putLocked(key, value)
	if !ok {
		return nil, nil
	}
	return e.held(), nil
}

// putLocked treats a nil value as a delete, as Kafka Streams' put(key, null)
// does. It returns key's record after a put.
func (s *memoryStore) putLocked(key, value []byte) (entry, bool) {
	if value == nil {
		s.deleteLocked(key)
		return entry{}, false
	}
	if e, ok := s.isRecent(key); ok && e.set(value) {
		return e, true // the common read-modify-write
	}
	k := searchKey(key).key
	if !s.tree.seek(k) {
		s.seq++
		n := newRecord(key, value, s.seq)
		s.tree.insertAtSeek(n)
		s.recent = n
		return n, true
	}
	e := s.tree.atSeek()
	if !e.set(value) {
		// The key moves to a record of the right size; it keeps its seq,
		// so iterators opened before still visit it. Its held word starts
		// at zero: what the old one said is about a dead record.
		n := newRecord(key, value, e.seq())
		s.tree.replaceAtSeek(n)
		e.kill()
		e = n
	}
	s.recent = e
	return e, true
}

// deleteLocked removes key and returns its value, which stays readable
// though the record is dead: nothing writes to a dead record.
func (s *memoryStore) deleteLocked(key []byte) (old []byte, found bool) {
	if !s.tree.seek(searchKey(key).key) {
		return nil, false
	}
	e := s.tree.deleteAtSeek()
	old, _ = e.value()
	e.kill()
	return old, true
}

func (s *memoryStore) PutIfAbsent(key, value []byte) ([]byte, error) {
	if err := s.checkEntry(key, value); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if e, ok := s.find(key); ok {
		v, _ := e.value()
		return cloneValue(v), nil
	}
	s.putLocked(key, value)
	return nil, nil
}

// PutAll checks every entry before writing any, so a bad entry leaves the
// store untouched. Entries apply in order: a later entry for the same key
// wins, which restoration relies on.
func (s *memoryStore) PutAll(entries []KeyValue[[]byte, []byte]) error {
	for _, kv := range entries {
		if err := s.checkEntry(kv.Key, kv.Value); err != nil {
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
	old, found := s.deleteLocked(key)
	if !found {
		return nil, nil
	}
	return cloneValue(old), nil
}

// DeleteRange deletes the keys from <= key < to (a nil to is open) in one
// pass under the lock. Iterators already open skip them, as they skip any
// deleted key.
func (s *memoryStore) DeleteRange(from, to []byte) error {
	if from == nil {
		return s.checkKey(from)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return err
	}
	hi := string(to)
	var keys []string
	s.tree.ascend(string(from), true, func(e entry) bool {
		if to != nil && !keyLess(e.key, hi) {
			return false
		}
		keys = append(keys, e.key)
		return true
	})
	for _, k := range keys {
		s.deleteLocked(unsafe.Slice(unsafe.StringData(k), len(k)))
	}
	return nil
}

func (s *memoryStore) checkKey(key []byte) error {
	if key == nil {
		return fmt.Errorf("store %q: %w", s.name, ErrNilKey)
	}
	return nil
}

func (s *memoryStore) checkEntry(key, value []byte) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if uint64(len(value)) > maxValueLen {
		return fmt.Errorf("store %q: value of %d bytes is too large", s.name, len(value))
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
	return int64(s.tree.len), nil
}

// scan opens an iterator over the keys in the store now, as Kafka Streams'
// in-memory store does by copying its key set: keys inserted afterwards do
// not show up, so the caller may write to the store while iterating. Values
// are read when Next reaches their key, as Kafka Streams reads them from its
// map: a key updated since the scan began shows its new value, and a key
// deleted since is skipped. A key deleted and put again is a new key here,
// skipped too, where Kafka Streams would show it.
//
// The iterator does not copy the keys nor snapshot the tree: it reads the
// live tree in batches, under the lock, and skips the records inserted
// after it was opened. A snapshot would make the writes after each scan
// copy the tree nodes they touch.
func (s *memoryStore) scan(from, to, prefix []byte, reverse bool) (BytesIterator, error) {
	it := &memoryIterator{
		store:   s,
		from:    string(from),
		to:      string(to),
		hasFrom: from != nil,
		hasTo:   to != nil,
		prefix:  string(prefix),
		reverse: reverse,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	it.seq = s.seq
	// Kafka Streams logs a warning and returns an empty iterator for an
	// inverted range; an empty iterator is the contract callers rely on.
	if from != nil && to != nil && bytes.Compare(from, to) > 0 {
		it.exhausted = true
	}
	return it, nil
}

// memoryIterator pulls batches of entries from the live tree and reads each
// value as Next reaches it. It is meant for one goroutine.
type memoryIterator struct {
	store *memoryStore
	// seq is the store's seq when the iterator was opened: later records
	// are not in its key set.
	seq uint64

	// from and to are inclusive bounds, open unless hasFrom and hasTo.
	// prefix, when not empty, ends a forward scan at the first key without
	// it.
	from, to       string
	hasFrom, hasTo bool
	prefix         string
	reverse        bool

	buf       []entry
	pos       int
	last      string // key of the last entry read, where the next seek resumes
	resume    bool   // last is set
	exhausted bool   // the tree has no entries for the iterator past buf
	key       string
	value     []byte // the current value, a private copy
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
	s := it.store
	s.mu.Lock()
	defer s.mu.Unlock()
	// The store's Close ends its iterators, as in Kafka Streams.
	if err := s.checkOpen(); err != nil {
		it.err = err
		it.release()
		return false
	}
	for {
		if it.pos >= len(it.buf) {
			if it.exhausted {
				it.release()
				return false
			}
			it.fill() // may read nothing but keys inserted since the scan began
			continue
		}
		e := it.buf[it.pos]
		it.buf[it.pos] = entry{} // let a dead record go
		it.pos++
		v, live := e.value()
		if !live {
			// Deleted, or moved to a bigger record, since the batch was
			// read.
			cur, ok := s.tree.get(e.key)
			if !ok || cur.seq() > it.seq {
				continue
			}
			v, _ = cur.value()
		}
		it.key, it.value, it.valid = e.key, append(it.value[:0], v...), true
		return true
	}
}

// fill reads the next batch from the tree. The store's lock must be held.
func (it *memoryIterator) fill() {
	it.buf = it.buf[:0]
	it.pos = 0
	resume, last := it.resume, it.last
	n := 0 // entries visited, counting those skipped
	visit := func(e entry) bool {
		if resume && e.key == last {
			return true // already handed out by the previous batch
		}
		if it.pastEnd(e.key) {
			it.exhausted = true
			return false
		}
		n++
		it.last, it.resume = e.key, true
		if e.seq() <= it.seq {
			it.buf = append(it.buf, e)
		}
		return n < iteratorBatch
	}
	pivot, ok := it.pivot()
	if it.reverse {
		it.store.tree.descend(pivot, ok, visit)
	} else {
		it.store.tree.ascend(pivot, ok, visit)
	}
	if n < iteratorBatch {
		it.exhausted = true
	}
}

// pivot is where the next seek starts: the last key read, or the near bound
// of the scan; ok is false when the scan is open at that end.
func (it *memoryIterator) pivot() (string, bool) {
	switch {
	case it.resume:
		return it.last, true
	case it.reverse:
		return it.to, it.hasTo
	default:
		return it.from, it.hasFrom
	}
}

// pastEnd reports whether key lies beyond the far bound of the scan.
func (it *memoryIterator) pastEnd(key string) bool {
	if it.reverse {
		return it.hasFrom && keyLess(key, it.from)
	}
	if !strings.HasPrefix(key, it.prefix) {
		return true
	}
	return it.hasTo && keyLess(it.to, key)
}

// Key returns a copy: the key's bytes are the store's.
func (it *memoryIterator) Key() []byte {
	if !it.valid {
		return nil
	}
	return []byte(it.key)
}

// Value returns the value the key held when Next reached it, as a copy.
func (it *memoryIterator) Value() []byte {
	if !it.valid {
		return nil
	}
	return cloneValue(it.value)
}

func (it *memoryIterator) Err() error { return it.err }

func (it *memoryIterator) Close() error {
	it.closed = true
	it.valid = false
	it.release()
	return nil
}

// release drops the batch as soon as it is no longer needed, so that a
// finished but unclosed iterator does not pin dead records.
func (it *memoryIterator) release() {
	it.buf = nil
	it.value = nil
	it.exhausted = true
}

// bptree is a B+ tree of entries: entries in the leaves, separators in the
// inner nodes, nodes of at most nodeMax entries or children. It is made for
// this store rather than generic: comparisons are direct calls to keyLess,
// a put finds a missing key and inserts it in one descent, and there is no
// copy-on-write, since iterators read the live tree (see scan).
type bptree struct {
	root *bnode
	len  int
	// path is the root-to-leaf path of the last seek, for the operation
	// that follows it: the child index in each inner node, then the entry
	// index in the leaf.
	path []bstep
}

const (
	// nodeMax entries of 16 bytes make a leaf of 16 cache lines; a binary
	// search reads 6 of them.
	nodeMax = 64
	// nodeMin: a node of fewer entries or children is merged with a
	// sibling, or takes some of its entries.
	nodeMin = nodeMax / 4
)

// A bnode is a leaf when kids is nil. In an inner node, keys[i] separates
// kids[i], whose keys are all less, from kids[i+1], whose keys are all
// greater or equal; inner keys are copies, not records.
type bnode struct {
	keys []entry
	kids []*bnode
}

type bstep struct {
	n *bnode
	i int
}

func (t *bptree) init() {
	t.root = &bnode{}
	t.len = 0
	t.path = t.path[:0]
}

// lowerBound is the index of the first of keys not less than k.
func lowerBound(keys []entry, k string) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keyLess(keys[m].key, k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// child is the index of the child of inner node n whose keys k lies among.
func (n *bnode) child(k string) int {
	lo, hi := 0, len(n.keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keyLess(k, n.keys[m].key) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

func (t *bptree) get(k string) (entry, bool) {
	n := t.root
	for n.kids != nil {
		n = n.kids[n.child(k)]
	}
	if i := lowerBound(n.keys, k); i < len(n.keys) && n.keys[i].key == k {
		return n.keys[i], true
	}
	return entry{}, false
}

// seek records the path to where k is or would be inserted and reports
// whether it is there.
func (t *bptree) seek(k string) bool {
	t.path = t.path[:0]
	n := t.root
	for n.kids != nil {
		i := n.child(k)
		t.path = append(t.path, bstep{n, i})
		n = n.kids[i]
	}
	i := lowerBound(n.keys, k)
	t.path = append(t.path, bstep{n, i})
	return i < len(n.keys) && n.keys[i].key == k
}

// atSeek is the entry a successful seek found.
func (t *bptree) atSeek() entry {
	l := t.path[len(t.path)-1]
	return l.n.keys[l.i]
}

// replaceAtSeek puts e, of the same key, in place of the entry a
// successful seek found.
func (t *bptree) replaceAtSeek(e entry) {
	l := t.path[len(t.path)-1]
	l.n.keys[l.i] = e
}

// insertAtSeek inserts e where a failed seek of its key ended, splitting
// the nodes that overflow on the way up.
func (t *bptree) insertAtSeek(e entry) {
	t.len++
	d := len(t.path) - 1
	leaf := t.path[d].n
	leaf.keys = slices.Insert(leaf.keys, t.path[d].i, e)
	if len(leaf.keys) <= nodeMax {
		return
	}
	sep, right := leaf.split()
	for d--; d >= 0; d-- {
		p := t.path[d]
		p.n.keys = slices.Insert(p.n.keys, p.i, sep)
		p.n.kids = slices.Insert(p.n.kids, p.i+1, right)
		if len(p.n.kids) <= nodeMax {
			return
		}
		sep, right = p.n.split()
	}
	t.root = &bnode{keys: []entry{sep}, kids: []*bnode{t.root, right}}
}

// split moves the upper half of an overflowing n to a new right sibling
// and returns the separator between them.
func (n *bnode) split() (entry, *bnode) {
	right := &bnode{keys: make([]entry, 0, nodeMax+1)}
	if n.kids == nil {
		mid := len(n.keys) / 2
		right.keys = append(right.keys, n.keys[mid:]...)
		clear(n.keys[mid:])
		n.keys = n.keys[:mid]
		return separator(right.keys[0]), right
	}
	// The separator between the halves moves up rather than being kept.
	mid := len(n.kids) / 2
	sep := n.keys[mid-1]
	right.keys = append(right.keys, n.keys[mid:]...)
	right.kids = append(make([]*bnode, 0, nodeMax+1), n.kids[mid:]...)
	clear(n.keys[mid-1:])
	clear(n.kids[mid:])
	n.keys, n.kids = n.keys[:mid-1], n.kids[:mid]
	return sep, right
}

// deleteAtSeek removes and returns the entry a successful seek found,
// rebalancing the nodes that underflow on the way up.
func (t *bptree) deleteAtSeek() entry {
	t.len--
	d := len(t.path) - 1
	leaf := t.path[d].n
	old := leaf.keys[t.path[d].i]
	leaf.keys = slices.Delete(leaf.keys, t.path[d].i, t.path[d].i+1)
	for n := leaf; d > 0 && n.size() < nodeMin; d-- {
		p := t.path[d-1]
		p.n.rebalance(p.i)
		n = p.n
	}
	if len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
	}
	return old
}

func (n *bnode) size() int {
	if n.kids == nil {
		return len(n.keys)
	}
	return len(n.kids)
}

// rebalance merges the underflowing child i of n with a sibling, or, when
// together they would overflow, shares their entries evenly.
func (n *bnode) rebalance(i int) {
	if i == len(n.kids)-1 {
		i-- // the last child pairs with its left sibling
	}
	left, right := n.kids[i], n.kids[i+1]
	if left.kids == nil {
		if len(left.keys)+len(right.keys) <= nodeMax {
			left.keys = append(left.keys, right.keys...)
			n.removeChild(i)
			return
		}
		all := append(slices.Clip(left.keys), right.keys...)
		mid := len(all) / 2
		refill(&left.keys, all[:mid])
		refill(&right.keys, all[mid:])
		n.keys[i] = separator(right.keys[0])
		return
	}
	if len(left.kids)+len(right.kids) <= nodeMax {
		left.keys = append(append(left.keys, n.keys[i]), right.keys...)
		left.kids = append(left.kids, right.kids...)
		n.removeChild(i)
		return
	}
	keys := append(append(slices.Clip(left.keys), n.keys[i]), right.keys...)
	kids := append(slices.Clip(left.kids), right.kids...)
	mid := len(kids) / 2
	refill(&left.keys, keys[:mid-1])
	refill(&left.kids, kids[:mid])
	n.keys[i] = keys[mid-1]
	refill(&right.keys, keys[mid:])
	refill(&right.kids, kids[mid:])
}

// refill sets *dst to a copy of src in its own array, cleared first: nodes
// keep no references past their length.
func refill[T any](dst *[]T, src []T) {
	clear(*dst)
	*dst = append((*dst)[:0], src...)
}

// separator copies the key of e for an inner node, so that separators do
// not keep deleted records, and their values, from being collected.
// Separators are only compared, never read as records.
func separator(e entry) entry { return entry{key: strings.Clone(e.key)} }

// removeChild drops child i+1 of n, merged into child i, and their
// separator.
func (n *bnode) removeChild(i int) {
	n.keys = slices.Delete(n.keys, i, i+1)
	n.kids = slices.Delete(n.kids, i+1, i+2)
}

// ascend calls visit with the entries from the first not less than pivot
// (from the first when hasPivot is false), in order, until visit returns
// false.
func (t *bptree) ascend(pivot string, hasPivot bool, visit func(entry) bool) {
	if hasPivot {
		t.seek(pivot)
	} else {
		t.edge(false)
	}
	for {
		l := t.path[len(t.path)-1]
		for _, e := range l.n.keys[l.i:] {
			if !visit(e) {
				return
			}
		}
		if !t.step(false) {
			return
		}
	}
}

// descend calls visit with the entries from the last not greater than pivot
// (from the last when hasPivot is false), in reverse order, until visit
// returns false.
func (t *bptree) descend(pivot string, hasPivot bool, visit func(entry) bool) {
	if hasPivot {
		if !t.seek(pivot) {
			// Start at the entry before the insertion point, which may be
			// the last of an earlier leaf.
			if l := &t.path[len(t.path)-1]; l.i > 0 {
				l.i--
			} else if !t.step(true) {
				return
			}
		}
	} else {
		t.edge(true)
	}
	for {
		l := t.path[len(t.path)-1]
		if l.i < len(l.n.keys) {
			for j := l.i; j >= 0; j-- {
				if !visit(l.n.keys[j]) {
					return
				}
			}
		}
		if !t.step(true) {
			return
		}
	}
}

// edge sets the path to the first entry, or to the last when last is set.
func (t *bptree) edge(last bool) {
	t.path = t.path[:0]
	t.down(t.root, last)
}

// down extends the path from n to its first leaf entry, or its last.
func (t *bptree) down(n *bnode, last bool) {
	for {
		i := 0
		if last {
			i = n.size() - 1
		}
		t.path = append(t.path, bstep{n, i})
		if n.kids == nil {
			return
		}
		n = n.kids[i]
	}
}

// step moves the path to the first entry of the next leaf, or to the last
// entry of the previous one when back is set; false when there is none.
// Empty leaves only occur as an empty root.
func (t *bptree) step(back bool) bool {
	for d := len(t.path) - 2; d >= 0; d-- {
		p := &t.path[d]
		if back && p.i > 0 || !back && p.i < len(p.n.kids)-1 {
			if back {
				p.i--
			} else {
				p.i++
			}
			t.path = t.path[:d+1]
			t.down(p.n.kids[p.i], back)
			return true
		}
	}
	return false
}
