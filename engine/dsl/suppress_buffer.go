package dsl

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/state"
)

// The buffer of the watermark triggers lives in a plain key-value store of
// raw bytes, so that the runtime changelogs, commits and restores it like
// any other store. One entry per buffered key:
//
//	key    the serialized record key (the changelog key, as Kafka Streams')
//	value  1 byte    layout version, 1
//	       8 bytes   buffer time, big-endian: the event time of the first
//	                 update buffered since the last release (the window's
//	                 end for UntilWindowCloses)
//	       8 bytes   timestamp of the latest update, big-endian
//	       uvarint   header count, then per header: uvarint key length, key,
//	                 varint value length (-1 for null), value
//	       varint    length of the prior value (-1 for null), the value:
//	                 the old value of the first update buffered, which is
//	                 what downstream saw last
//	       varint    length of the new value (-1 for null), the value: the
//	                 latest update's
//
// The release time is not stored: it is derived from the buffer time (plus
// the limit) or from the key's window, so a changed limit applies to
// restored keys too. A release deletes the entry, which logs a tombstone.
// Changelog records carry the timestamp of the record being processed, as
// every key-value store's do.
//
// This is not the layout of Kafka Streams' suppress changelog (V3: a
// serialized record context with offset, topic and partition, prior, old
// and new values, buffer time last, and a "v" header on every record):
// this engine's stores carry no changelog headers, and the record context
// beyond timestamp and headers means nothing here. A migration of a Kafka
// Streams suppress changelog translates it (migrate/suppress.go, through
// SuppressBuffer and SuppressBufferValue in suppress.go).
const suppressLayoutV1 byte = 1

// errSuppressLayout marks a stored buffer entry that does not decode.
var errSuppressLayout = errors.New("malformed suppress buffer entry")

// suppressValue is a decoded buffer entry.
type suppressValue struct {
	bufferTime, timestamp int64
	headers               processor.Headers
	prior, newValue       []byte
}

func encodeSuppressValue(v suppressValue) []byte {
	n := 1 + 16 + binary.MaxVarintLen64*(3+2*len(v.headers)) + len(v.prior) + len(v.newValue)
	for _, h := range v.headers {
		n += len(h.Key) + len(h.Value)
	}
	out := make([]byte, 0, n)
	out = append(out, suppressLayoutV1)
	out = binary.BigEndian.AppendUint64(out, uint64(v.bufferTime))
	out = binary.BigEndian.AppendUint64(out, uint64(v.timestamp))
	out = binary.AppendUvarint(out, uint64(len(v.headers)))
	for _, h := range v.headers {
		out = binary.AppendUvarint(out, uint64(len(h.Key)))
		out = append(out, h.Key...)
		out = suppressAppendNullable(out, h.Value)
	}
	out = suppressAppendNullable(out, v.prior)
	return suppressAppendNullable(out, v.newValue)
}

// appendNullable writes b with a varint length, -1 for nil, so that an
// empty value (an empty string) stays distinct from a null.
func suppressAppendNullable(out, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(out, -1)
	}
	return append(binary.AppendVarint(out, int64(len(b))), b...)
}

func decodeSuppressValue(b []byte) (suppressValue, error) {
	var v suppressValue
	if len(b) < 17 {
		return v, fmt.Errorf("%w: %d bytes, need at least 17", errSuppressLayout, len(b))
	}
	if b[0] != suppressLayoutV1 {
		return v, fmt.Errorf("%w: unknown layout version %d", errSuppressLayout, b[0])
	}
	v.bufferTime = int64(binary.BigEndian.Uint64(b[1:]))
	v.timestamp = int64(binary.BigEndian.Uint64(b[9:]))
	r := suppressReader{b: b[17:]}
	n := r.uvarint()
	if n > uint64(len(r.b)) { // every header takes at least two bytes
		return v, fmt.Errorf("%w: %d headers in %d bytes", errSuppressLayout, n, len(r.b))
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		key := r.bytes(int64(r.uvarint()))
		v.headers = append(v.headers, processor.Header{Key: string(key), Value: r.nullable()})
	}
	v.prior = r.nullable()
	v.newValue = r.nullable()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return suppressValue{}, fmt.Errorf("%w: %w", errSuppressLayout, r.err)
	}
	return v, nil
}

// suppressReader reads the variable part of a buffer entry, remembering the
// first error so that decoding reads straight through.
type suppressReader struct {
	b   []byte
	err error
}

func (r *suppressReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad length")
		return 0
	}
	r.b = r.b[n:]
	return x
}

// bytes reads n bytes into a copy: the store may reuse what it returned.
func (r *suppressReader) bytes(n int64) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > int64(len(r.b)) {
		r.err = fmt.Errorf("length %d past the end", n)
		return nil
	}
	out := make([]byte, n)
	copy(out, r.b)
	r.b = r.b[n:]
	return out
}

func (r *suppressReader) nullable() []byte {
	if r.err != nil {
		return nil
	}
	x, n := binary.Varint(r.b)
	if n <= 0 || x < -1 {
		r.err = errors.New("bad length")
		return nil
	}
	r.b = r.b[n:]
	if x == -1 {
		return nil
	}
	return r.bytes(x)
}

// suppressEntrySize is what a buffered key weighs against a byte bound: its key,
// its stored value (values, headers, timestamps) and 8 bytes for the buffer
// time the index keeps, as Kafka Streams counts it.
func suppressEntrySize(key []byte, headers processor.Headers, prior, newValue []byte) int64 {
	v := suppressValue{headers: headers, prior: prior, newValue: newValue}
	return int64(8 + len(key) + len(encodeSuppressValue(v)))
}

// suppressEntry is one buffered key as the index keeps it; the values stay
// in the store.
type suppressEntry struct {
	key        string
	bufferTime int64
	release    int64
	size       int64
}

// suppressReleaseOrder orders entries as they leave: by release time, then buffer
// time, then serialized key. Release time follows buffer time for both
// watermark triggers, so this is Kafka Streams' buffer-time-then-key order;
// ordering by release first keeps a frontier scan a prefix scan whatever
// the close-time rule.
func suppressReleaseOrder(a, b *suppressEntry) bool {
	if a.release != b.release {
		return a.release < b.release
	}
	if a.bufferTime != b.bufferTime {
		return a.bufferTime < b.bufferTime
	}
	return a.key < b.key
}

// suppressBuffer is the buffer of the watermark triggers: the store, and an
// in-memory index of its keys in release order, which Init rebuilds from
// the store.
type suppressBuffer struct {
	store state.KeyValueStore[[]byte, []byte]
	byKey map[string]*suppressEntry
	order *btree.BTreeG[*suppressEntry]
	bytes int64
}

// loadTimeBuffer indexes what store holds; releaseTime derives a key's
// release time from its buffer time.
func loadSuppressBuffer(store state.KeyValueStore[[]byte, []byte], releaseTime func(key []byte, bufferTime int64) (int64, error)) (*suppressBuffer, error) {
	b := &suppressBuffer{
		store: store,
		byKey: map[string]*suppressEntry{},
		order: btree.NewG(16, suppressReleaseOrder),
	}
	it, err := store.All()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.Next() {
		key, value := it.Key(), it.Value()
		v, err := decodeSuppressValue(value)
		if err != nil {
			return nil, fmt.Errorf("key %x: %w", key, err)
		}
		release, err := releaseTime(key, v.bufferTime)
		if err != nil {
			return nil, fmt.Errorf("key %x: %w", key, err)
		}
		b.index(&suppressEntry{key: string(key), bufferTime: v.bufferTime, release: release, size: int64(8 + len(key) + len(value))})
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *suppressBuffer) index(e *suppressEntry) {
	b.byKey[e.key] = e
	b.order.ReplaceOrInsert(e)
	b.bytes += e.size
}

func (b *suppressBuffer) records() int64 { return int64(len(b.byKey)) }

// put buffers an update of key. A key already buffered keeps its buffer
// time, release time and prior value: the update replaces only the new
// value, timestamp and headers. oldValue is called only for a key not yet
// buffered, whose prior value is the update's old value.
func (b *suppressBuffer) put(key []byte, bufferTime, release, ts int64, headers processor.Headers, newValue []byte, oldValue func() ([]byte, error)) error {
	e, ok := b.byKey[string(key)]
	var prior []byte
	if ok {
		stored, found, err := b.store.Get(key)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("key %x is indexed but not stored", key)
		}
		v, err := decodeSuppressValue(stored)
		if err != nil {
			return fmt.Errorf("key %x: %w", key, err)
		}
		prior, bufferTime = v.prior, e.bufferTime
	} else {
		var err error
		if prior, err = oldValue(); err != nil {
			return fmt.Errorf("old value: %w", err)
		}
	}
	value := encodeSuppressValue(suppressValue{bufferTime: bufferTime, timestamp: ts, headers: headers, prior: prior, newValue: newValue})
	if err := b.store.Put(key, value); err != nil {
		return err
	}
	size := int64(8 + len(key) + len(value))
	if ok {
		b.bytes += size - e.size
		e.size = size
		return nil
	}
	b.index(&suppressEntry{key: string(key), bufferTime: bufferTime, release: release, size: size})
	return nil
}

// first is the entry that leaves next.
func (b *suppressBuffer) first() (*suppressEntry, bool) { return b.order.Min() }

// dueAt counts the entries whose release time is at or before t.
func (b *suppressBuffer) dueAt(t int64) (records, bytes int64) {
	b.order.Ascend(func(e *suppressEntry) bool {
		if e.release > t {
			return false
		}
		records, bytes = records+1, bytes+e.size
		return true
	})
	return records, bytes
}

// take removes e from the buffer and returns what was buffered for it.
func (b *suppressBuffer) take(e *suppressEntry) (suppressValue, error) {
	b.order.Delete(e)
	delete(b.byKey, e.key)
	b.bytes -= e.size
	stored, found, err := b.store.Delete([]byte(e.key))
	if err != nil {
		return suppressValue{}, err
	}
	if !found {
		return suppressValue{}, fmt.Errorf("key %x is indexed but not stored", e.key)
	}
	v, err := decodeSuppressValue(stored)
	if err != nil {
		return suppressValue{}, fmt.Errorf("key %x: %w", e.key, err)
	}
	return v, nil
}

// sortBarrierEntries puts an epoch's barrier entries in release order: buffer
// time, then serialized key.
func sortBarrierEntries(es []*suppressBarrierEntry) {
	slices.SortFunc(es, func(a, b *suppressBarrierEntry) int {
		if c := cmp.Compare(a.bufferTime, b.bufferTime); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
}
