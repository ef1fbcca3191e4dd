package state

import (
	"bytes"
	"errors"
)

// Store is what every state store is, whatever its kind: a named thing the
// runtime initialises for a task, flushes at commit and closes.
type Store interface {
	Name() string
	// Init binds the store to the task (or lane) that owns it. A store that
	// logs changes keeps ctx to reach the changelog and the current record.
	Init(ctx Context) error
	// Flush makes buffered writes visible to the changelog and the backing
	// storage; the runtime calls it before every commit.
	Flush() error
	Close() error
	Persistent() bool
}

// Context is what a store sees of the runtime that owns it.
type Context interface {
	ApplicationID() string
	// ChangelogTopic is the topic this store's changes go to, or "" when
	// logging is disabled for it.
	ChangelogTopic(store string) string
	// LogChange sends one change to the store's changelog. value nil is a
	// delete (a tombstone). timestamp is the changelog record's timestamp.
	LogChange(store string, key, value []byte, timestamp int64, headers []Header) error
	// RecordTimestamp is the timestamp of the record being processed, the
	// timestamp a plain key-value store's changelog records carry.
	RecordTimestamp() int64
}

// Header is a changelog record header.
type Header struct {
	Key   string
	Value []byte
}

// ErrClosed is returned by operations on a closed store or iterator.
var ErrClosed = errors.New("store is closed")

// ErrNotInitialized is returned when a store is used before Init.
var ErrNotInitialized = errors.New("store is not initialized")

// BytesIterator walks key-value pairs of raw bytes in key order (or reverse
// key order for the reverse scans). Call Next before the first Key/Value.
type BytesIterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// KeyValueBytesStore is the byte-level key-value store: the seam where the
// in-memory store, the RocksDB backend and the engine's per-epoch
// uncommitted write layers plug in. Keys order lexicographically as
// unsigned bytes, as in RocksDB and Kafka Streams.
//
// Range bounds are inclusive on both ends; a nil bound is open; from after to
// is an empty scan, not an error. Implementations must not retain the byte
// slices passed in nor let callers mutate stored ones.
//
// A nil value is a null: Put and PutAll delete the key, as Kafka Streams'
// put(key, null) does. A nil key is an error (ErrNilKey). Iterators must stay
// usable while the caller writes to the store, since processors delete what
// they scan. Errors name the store, so the typed stores pass them through.
type KeyValueBytesStore interface {
	Store
	Get(key []byte) ([]byte, error)
	Put(key, value []byte) error
	// PutIfAbsent stores value only when key has no value and returns the
	// value that was there (nil when it put).
	PutIfAbsent(key, value []byte) ([]byte, error)
	PutAll(entries []KeyValue[[]byte, []byte]) error
	// Delete removes key and returns its previous value.
	Delete(key []byte) ([]byte, error)
	Range(from, to []byte) (BytesIterator, error)
	ReverseRange(from, to []byte) (BytesIterator, error)
	PrefixScan(prefix []byte) (BytesIterator, error)
	All() (BytesIterator, error)
	ReverseAll() (BytesIterator, error)
	ApproximateNumEntries() (int64, error)
}

// KeyValue is one entry of a store or one record of a scan.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// ValueAndTimestamp is a value with the timestamp of the record that last
// wrote it, as timestamped stores keep them.
type ValueAndTimestamp[V any] struct {
	Value     V
	Timestamp int64
}

// KeyValueIterator is the typed form of BytesIterator.
type KeyValueIterator[K, V any] interface {
	Next() bool
	Key() K
	Value() V
	Err() error
	Close() error
}

// KeyValueStore is the typed key-value store processors use. A nil-able V
// (a pointer, slice, map or interface) can hold a null; Get reports absence
// through its second result so that non-nullable V work too.
type KeyValueStore[K, V any] interface {
	Store
	Get(key K) (V, bool, error)
	Put(key K, value V) error
	PutIfAbsent(key K, value V) (V, bool, error)
	PutAll(entries []KeyValue[K, V]) error
	Delete(key K) (V, bool, error)
	Range(from, to K) (KeyValueIterator[K, V], error)
	ReverseRange(from, to K) (KeyValueIterator[K, V], error)
	// PrefixScan scans the keys whose serialized form starts with prefix.
	// The prefix is raw bytes because a partial key is laid out by whatever
	// serializer the caller chooses (Kafka Streams takes a prefix serializer
	// for the same reason).
	PrefixScan(prefix []byte) (KeyValueIterator[K, V], error)
	All() (KeyValueIterator[K, V], error)
	ReverseAll() (KeyValueIterator[K, V], error)
	ApproximateNumEntries() (int64, error)
}

// TimestampedKeyValueStore keeps each value with the timestamp of the record
// that wrote it. On disk the value is the 8-byte big-endian timestamp
// followed by the serialized value; in the changelog the value is the plain
// serialized value and the timestamp travels as the record's timestamp.
type TimestampedKeyValueStore[K, V any] interface {
	KeyValueStore[K, ValueAndTimestamp[V]]
}

// HeldLogger is a Context whose changelog holds back the writes of an
// epoch and keeps each key's last (the engine's lanes). LogChangeHeld is
// LogChange with the held word of the key's record in the byte store, or
// nil: a word the store keeps beside the key for the changelog alone,
// zero in a new record, so that the coalescer can note there where it
// holds the key's last write and find it again without a lookup of its
// own. Only the goroutine that writes the store reads or writes the word.
//
// A key-value store's word is its key's; a window store's is its window's
// key-first entry's, one to one with the windowed changelog key.
type HeldLogger interface {
	LogChangeHeld(store string, key, value []byte, timestamp int64, held *uint64) error
}

// logChange sends a change to ctx's changelog, with held where ctx takes
// it.
func logChange(ctx Context, store string, key, value []byte, ts int64, held *uint64) error {
	if h, ok := ctx.(HeldLogger); ok && held != nil {
		return h.LogChangeHeld(store, key, value, ts, held)
	}
	return ctx.LogChange(store, key, value, ts, nil)
}

// heldPutter is a byte store whose records keep a held word (HeldLogger):
// putHeld is Put that also returns the word of key's record, nil for a
// delete.
type heldPutter interface {
	putHeld(key, value []byte) (*uint64, error)
}

// putHeld puts value under key in s, and returns the held word of key's
// record where s keeps one (nil elsewhere).
func putHeld(s KeyValueBytesStore, key, value []byte) (*uint64, error) {
	if h, ok := s.(heldPutter); ok {
		return h.putHeld(key, value)
	}
	return nil, s.Put(key, value)
}

// valueAppender is a byte store that can copy a value onto the end of a
// caller's buffer: a read decoded at once, as a window aggregation's
// Fetch is, then needs no allocation of its own.
type valueAppender interface {
	appendValue(dst, key []byte) ([]byte, error)
}

// getAppending reads key's value onto the end of dst where s is a
// valueAppender and as Get does where it is not. Like Get, it returns nil
// for a missing key and a non-nil slice for a value, even an empty one.
func getAppending(s KeyValueBytesStore, dst, key []byte) ([]byte, error) {
	if a, ok := s.(valueAppender); ok {
		return a.appendValue(dst, key)
	}
	return s.Get(key)
}

// RangeDeleter is a byte store that deletes a range of keys as one unit:
// from inclusive, to exclusive (a nil to is open). The window and session
// stores drop an expired segment that way. A store without it has the
// range's keys deleted one by one (DeleteRange).
type RangeDeleter interface {
	DeleteRange(from, to []byte) error
}

// DeleteRange deletes the keys from <= key < to of s (a nil to is open):
// as one unit when s is a RangeDeleter, else key by key.
func DeleteRange(s KeyValueBytesStore, from, to []byte) error {
	if rd, ok := s.(RangeDeleter); ok {
		return rd.DeleteRange(from, to)
	}
	it, err := s.Range(from, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	const batch = 512
	dels := make([]KeyValue[[]byte, []byte], 0, batch)
	for it.Next() {
		k := it.Key()
		if to != nil && bytes.Compare(k, to) >= 0 {
			break
		}
		dels = append(dels, KeyValue[[]byte, []byte]{Key: k})
		if len(dels) == batch {
			// An iterator's key set is fixed when it opens and deleted
			// keys are skipped, so deleting as we go is safe.
			if err := s.PutAll(dels); err != nil {
				return err
			}
			dels = dels[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if len(dels) == 0 {
		return nil
	}
	return s.PutAll(dels)
}

// EpochLayered is a byte store that keeps the writes of each epoch apart
// until they commit (the RocksDB backend's layers, decision 0032). A
// window store that knows none of its entries from a time on predates
// the epoch being written reads them from that epoch's writes alone,
// never from the database below: in a catch-up a window fetch mostly
// finds its partners among the records of the same epoch, and a read of
// RocksDB for nothing costs more than the rest of the fetch. The RocksDB
// backend keeps the layers of its last commit readable until the next
// (decision 0056), so that a fetch reaching back into the epoch before
// reads them instead.
type EpochLayered interface {
	// WriteEpoch is the epoch the store's next writes belong to; ok is
	// false when writes do not go to epochs (a restore's).
	WriteEpoch() (epoch int64, ok bool)
	// RangeSinceEpoch is Range over the writes of epoch and of the
	// epochs after it, for a caller that knows no entry in the range was
	// written before epoch (nor held when the store opened); the whole
	// store (Range) when the backend no longer holds every one of those
	// epochs' writes apart, or epoch is not one writes went to yet.
	RangeSinceEpoch(epoch int64, from, to []byte) (BytesIterator, error)
	// GetOfEpoch is Get of epoch's writes alone, or of the whole store
	// once epoch is no longer the one writes go to.
	GetOfEpoch(epoch int64, key []byte) ([]byte, error)
}

// writeEpoch is s's WriteEpoch where s is EpochLayered; ok false
// elsewhere.
func writeEpoch(s KeyValueBytesStore) (int64, bool) {
	if l, ok := s.(EpochLayered); ok {
		return l.WriteEpoch()
	}
	return 0, false
}

// getOfEpoch is s's GetOfEpoch where s is EpochLayered, its Get
// elsewhere.
func getOfEpoch(s KeyValueBytesStore, epoch int64, key []byte) ([]byte, error) {
	if l, ok := s.(EpochLayered); ok {
		return l.GetOfEpoch(epoch, key)
	}
	return s.Get(key)
}

// rangeSinceEpoch is s's RangeSinceEpoch where s is EpochLayered, its Range
// elsewhere.
func rangeSinceEpoch(s KeyValueBytesStore, epoch int64, from, to []byte) (BytesIterator, error) {
	if l, ok := s.(EpochLayered); ok {
		return l.RangeSinceEpoch(epoch, from, to)
	}
	return s.Range(from, to)
}
