package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Kinds of the windowed stores.
const (
	KindWindow            Kind = "window"
	KindTimestampedWindow Kind = "timestamped-window"
)

// WindowStore keeps values by key and window start, for windowed
// aggregations (one value per key and window) and stream-stream joins (every
// record, duplicates retained). It is Kafka Streams' WindowStore over our
// byte-store seam.
//
// # Changelog layout
//
// The changelog is exactly Kafka Streams': the key is the serialized key,
// the 8-byte big-endian window start and a 4-byte big-endian sequence number
// (WindowKeySchema.toStoreKeyBinary, see EncodeWindowKey); the value is the
// serialized value, nil for a delete. A plain store's records carry the
// timestamp of the record being processed (ChangeLoggingWindowBytesStore). A
// timestamped store's carry the plain value with the value's own timestamp
// as the record timestamp, and its deletes the processed record's
// (ChangeLoggingTimestampedWindowBytesStore), as for key-value stores.
//
// The sequence number is 0 unless the store retains duplicates; then every
// put takes the next number, starting at 1 and wrapping from 2^31-1 to 0
// (Kafka Streams' (seqnum + 1) & 0x7FFFFFFF), so that equal keys in the same
// window are kept apart.
//
// # Byte-store layout
//
// Kafka Streams' key-first layout orders a byte store by key bytes first,
// which serves the per-key scans (Fetch, FetchRange) but not the scans by
// time: FetchAll, and expiry, would read every key. Kafka Streams' in-memory
// store avoids that by indexing by start in a map of maps; on a sorted byte
// store (RocksDB, the epoch write layers) we keep two indexes in the one
// KeyValueBytesStore, told apart by their first byte:
//
//	0x00 | segment | key | start | seq  ->  stored value    key-first: Fetch, FetchRange
//	0x01 | start | key | seq            ->  empty           time-first: FetchAll, All, Expire
//
// segment is start divided by the segment interval, floored (see
// segments.go), and like start 8 bytes big-endian with the sign bit
// flipped; a key's windows are one range per segment. start is 8 bytes
// big-endian with the sign bit flipped, so negative starts
// order before positive ones (Kafka Streams writes the raw two's complement,
// which misorders them; its windows never start before 0, ours may). seq is
// 4 bytes big-endian. The stored value is the serialized value, or, in a
// timestamped store, the 8-byte timestamp followed by it
// (EncodeValueAndTimestamp). A put writes both index entries in one PutAll;
// the time-first entry holds no value, so FetchAll looks each value up in the
// key-first index and skips entries deleted since the scan began.
//
// These are the layouts of Kafka Streams' own time-ordered window store
// (PrefixedWindowKeySchemas: KeyFirstWindowKeySchema and
// TimeFirstWindowKeySchema), but for the prefix values and the time
// encoding.
//
// Within one key the key-first index orders by start, then sequence number.
// Keys of different lengths can interleave in a byte range (key "a" followed
// by start bytes against key "ab"); scans keep only entries whose length
// matches the key, which between bounds sharing the key's bytes means the key
// itself. The time-first index orders by start, then by key bytes and
// sequence number: exactly key order when duplicates are not retained.
//
// # Without the time index
//
// A store built WithoutTimeIndex keeps the key-first index alone: a put or
// a delete writes one entry, not two, which on RocksDB halves what the
// epoch's layer holds and its commit writes. Fetch, FetchRange and Expire
// are as above. FetchAll and All read every segment their times cover,
// whole, and sort what they keep in memory: the same entries in the same
// order, at the cost of the segments. It suits a store read key by key,
// as a stream-stream join's two stores are; a processor that scans by
// time (emitting windows on close) needs the index. Expire drops the
// time-first range as well, so that entries an index kept by an earlier
// build of the store left behind go with their segments.
//
// Such a store keeps a mark, a key past both indexes, and a store with the
// index that finds it at Init (its state was written without the index)
// rebuilds the index from the key-first entries (decision 0050).
//
// # Retention
//
// Expire(frontier) hides every window whose start <= frontier - retention,
// and drops the segments wholly before that horizon, Kafka Streams' rule
// for window stores (InMemoryWindowStore keeps a window
// while start > observedStreamTime - retentionPeriod; with the retention at
// least size + grace this drops a window only after it has closed). Later
// values for a dropped window are dropped too, and not logged; deletes are
// always logged. Expiry is not
// logged: the changelog topic's retention.ms, the store's retention plus a
// day, removes old records, as in Kafka Streams.
//
// Like every typed store, a window store belongs to one task: writes come
// from one goroutine at a time. Reads may run alongside.
type WindowStore[K, V any] interface {
	Store
	// Put stores value for key in the window starting at windowStart. A
	// null value deletes, except in a store that retains duplicates, where it
	// does nothing (as in Kafka Streams). A value for an expired window is
	// dropped, and not logged.
	Put(key K, value V, windowStart int64) error
	// Fetch returns the value for key in the window starting at windowStart.
	// In a store that retains duplicates it returns the one with the lowest
	// sequence number; FetchRange(key, start, start) returns them all.
	Fetch(key K, windowStart int64) (V, bool, error)
	// FetchRange iterates over key's windows with timeFrom <= start <=
	// timeTo, in start order, as (window start, value).
	FetchRange(key K, timeFrom, timeTo int64) (KeyValueIterator[int64, V], error)
	// FetchAll iterates over every key's windows with timeFrom <= start <=
	// timeTo, ordered by start and then by serialized key (with duplicates
	// retained: by serialized key followed by the sequence number). Windows
	// end at start + the store's window size (clamped to math.MaxInt64).
	FetchAll(timeFrom, timeTo int64) (KeyValueIterator[window.Windowed[K], V], error)
	// All is FetchAll over all time.
	All() (KeyValueIterator[window.Windowed[K], V], error)
	// Delete removes key's value in the window starting at windowStart (all
	// of them when duplicates are retained) and logs a tombstone for each.
	// A store without duplicates logs the tombstone even when it held no
	// value: the changelog may hold one.
	Delete(key K, windowStart int64) error
	// Expire drops the windows that frontier (stream time, or the engine's
	// frontier) has moved out of retention: those with start <= frontier -
	// retention. A frontier below an earlier one changes nothing.
	Expire(frontier int64) error
}

// TimestampedWindowStore keeps each value with the timestamp of the record
// that wrote it, as windowed aggregations do.
type TimestampedWindowStore[K, V any] interface {
	WindowStore[K, ValueAndTimestamp[V]]
}

// windowedChangelogExtraRetention is Kafka Streams' default
// windowstore.changelog.additional.retention.ms: a day added to a windowed
// store's retention for its changelog topic, to allow for clock drift.
const windowedChangelogExtraRetention = int64(24 * time.Hour / time.Millisecond)

// windowedLogConfig is the changelog topic config of window and session
// stores, as Kafka Streams' WindowedChangelogTopicConfig makes it: compacted
// and deleted, retained for the store's retention plus a day. user's entries
// win, including a retention.ms of its own.
func windowedLogConfig(retentionMs int64, user map[string]string) map[string]string {
	cfg := map[string]string{
		"cleanup.policy": "compact,delete",
		"retention.ms":   strconv.FormatInt(addSat(retentionMs, windowedChangelogExtraRetention), 10),
	}
	maps.Copy(cfg, user)
	return cfg
}

// windowBuilderBase is what the window store builders share.
type windowBuilderBase struct {
	builderBase
	retention, windowSize int64
	retainDuplicates      bool
	// segmentInterval is 0 for DefaultSegmentInterval.
	segmentInterval int64
	// keyIndexOnly leaves the time-first index out (WithoutTimeIndex).
	keyIndexOnly bool
}

func newWindowBuilderBase[K, V any](name string, kind Kind, keySerde serde.Serde[K], valueSerde serde.Serde[V], retention, windowSize time.Duration, retainDuplicates bool, supplier BytesSupplier) windowBuilderBase {
	b := windowBuilderBase{
		builderBase:      newBuilderBase(name, kind, keySerde, valueSerde, supplier),
		retention:        retention.Milliseconds(),
		windowSize:       windowSize.Milliseconds(),
		retainDuplicates: retainDuplicates,
	}
	b.enableLogging(windowedLogConfig(b.retention, nil))
	return b
}

// Retention is how long, in milliseconds, the store keeps a window past the
// frontier.
func (b *windowBuilderBase) Retention() int64 { return b.retention }

// SegmentInterval is the store's segment interval in milliseconds: what
// WithSegmentInterval set, else DefaultSegmentInterval of the retention.
func (b *windowBuilderBase) SegmentInterval() int64 {
	if b.segmentInterval > 0 {
		return b.segmentInterval
	}
	return DefaultSegmentInterval(b.retention)
}

// WindowSize is the size, in milliseconds, of the windows the store keeps.
func (b *windowBuilderBase) WindowSize() int64 { return b.windowSize }

// RetainDuplicates tells whether every put is kept, as for stream-stream
// joins, rather than replacing the value of its key and window.
func (b *windowBuilderBase) RetainDuplicates() bool { return b.retainDuplicates }

// KeyIndexOnly tells whether the store keeps no time index
// (WithoutTimeIndex).
func (b *windowBuilderBase) KeyIndexOnly() bool { return b.keyIndexOnly }

// check applies Kafka Streams' Stores checks for window stores.
func (b *windowBuilderBase) check() error {
	switch {
	case b.retention < 0:
		return fmt.Errorf("build store %q: retention %dms is negative", b.name, b.retention)
	case b.windowSize < 0:
		return fmt.Errorf("build store %q: window size %dms is negative", b.name, b.windowSize)
	case b.windowSize > b.retention:
		return fmt.Errorf("build store %q: retention %dms is smaller than the window size %dms", b.name, b.retention, b.windowSize)
	case b.segmentInterval < 0:
		return fmt.Errorf("build store %q: segment interval %dms is negative", b.name, b.segmentInterval)
	}
	return nil
}

// WindowBuilder builds window stores. Logging is enabled by default, as in
// Kafka Streams.
type WindowBuilder[K, V any] struct {
	windowBuilderBase
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   BytesSupplier
}

// WindowStoreBuilder describes a window store named name that keeps windows
// of windowSize for retention past the frontier, whose bytes live in a store
// from supplier. retainDuplicates keeps every put, as stream-stream joins
// need. Durations are kept in whole milliseconds.
func WindowStoreBuilder[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], retention, windowSize time.Duration, retainDuplicates bool, supplier BytesSupplier) *WindowBuilder[K, V] {
	return &WindowBuilder[K, V]{
		windowBuilderBase: newWindowBuilderBase(name, KindWindow, keySerde, valueSerde, retention, windowSize, retainDuplicates, supplier),
		keySerde:          keySerde,
		valueSerde:        valueSerde,
		supplier:          supplier,
	}
}

// WithLoggingEnabled turns the changelog on; cfg's entries override the
// windowed defaults (cleanup.policy=compact,delete, retention.ms = retention
// plus a day).
func (b *WindowBuilder[K, V]) WithLoggingEnabled(cfg map[string]string) *WindowBuilder[K, V] {
	b.enableLogging(windowedLogConfig(b.retention, cfg))
	return b
}

func (b *WindowBuilder[K, V]) WithLoggingDisabled() *WindowBuilder[K, V] {
	b.disableLogging()
	return b
}

// WithSegmentInterval sets the segment interval, in whole milliseconds:
// the unit in which expiry drops windows (see WindowStore).
func (b *WindowBuilder[K, V]) WithSegmentInterval(d time.Duration) *WindowBuilder[K, V] {
	b.segmentInterval = d.Milliseconds()
	return b
}

// WithoutTimeIndex keeps the key-first index alone (see WindowStore,
// "Without the time index"): for a store its processor reads key by key
// and expires, never scanning it by time, as a stream-stream join's. A
// put or a delete then writes one entry instead of two.
func (b *WindowBuilder[K, V]) WithoutTimeIndex() *WindowBuilder[K, V] {
	b.keyIndexOnly = true
	return b
}

// Build returns a store that implements WindowStore[K, V], Restorer and
// BytesBacked.
func (b *WindowBuilder[K, V]) Build() (Store, error) {
	inner, err := checkBuild(b.name, b.keySerde, b.valueSerde, b.supplier)
	if err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return newWindowStore(&b.windowBuilderBase, inner, b.keySerde, valueCodec[V](plainCodec[V]{serde: b.valueSerde, null: nullCheckFor[V]()})), nil
}

// TimestampedWindowBuilder builds timestamped window stores. Logging is
// enabled by default, as in Kafka Streams.
type TimestampedWindowBuilder[K, V any] struct {
	windowBuilderBase
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   BytesSupplier
}

// TimestampedWindowStoreBuilder describes a timestamped window store, as
// WindowStoreBuilder does a plain one. valueSerde serializes the plain
// value; the store adds the timestamp.
func TimestampedWindowStoreBuilder[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], retention, windowSize time.Duration, retainDuplicates bool, supplier BytesSupplier) *TimestampedWindowBuilder[K, V] {
	return &TimestampedWindowBuilder[K, V]{
		windowBuilderBase: newWindowBuilderBase(name, KindTimestampedWindow, keySerde, valueSerde, retention, windowSize, retainDuplicates, supplier),
		keySerde:          keySerde,
		valueSerde:        valueSerde,
		supplier:          supplier,
	}
}

// WithLoggingEnabled turns the changelog on; cfg's entries override the
// windowed defaults.
func (b *TimestampedWindowBuilder[K, V]) WithLoggingEnabled(cfg map[string]string) *TimestampedWindowBuilder[K, V] {
	b.enableLogging(windowedLogConfig(b.retention, cfg))
	return b
}

func (b *TimestampedWindowBuilder[K, V]) WithLoggingDisabled() *TimestampedWindowBuilder[K, V] {
	b.disableLogging()
	return b
}

// WithoutTimeIndex keeps the key-first index alone, as
// WindowBuilder.WithoutTimeIndex does.
func (b *TimestampedWindowBuilder[K, V]) WithoutTimeIndex() *TimestampedWindowBuilder[K, V] {
	b.keyIndexOnly = true
	return b
}

// WithSegmentInterval sets the segment interval, in whole milliseconds.
func (b *TimestampedWindowBuilder[K, V]) WithSegmentInterval(d time.Duration) *TimestampedWindowBuilder[K, V] {
	b.segmentInterval = d.Milliseconds()
	return b
}

// Build returns a store that implements TimestampedWindowStore[K, V],
// Restorer and BytesBacked.
func (b *TimestampedWindowBuilder[K, V]) Build() (Store, error) {
	inner, err := checkBuild(b.name, b.keySerde, b.valueSerde, b.supplier)
	if err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return newWindowStore(&b.windowBuilderBase, inner, b.keySerde, valueCodec[ValueAndTimestamp[V]](timestampedCodec[V]{serde: b.valueSerde, null: nullCheckFor[V]()})), nil
}

// The two indexes of the window and session byte stores.
const (
	indexKeyFirst  byte = 0x00
	indexTimeFirst byte = 0x01
	// indexEnd bounds scans of the time-first index; no entry is this one
	// byte.
	indexEnd byte = 0x02
	// indexMark begins the key of the mark of a missing time index.
	indexMark byte = 0x03
)

// timeIndexMissing is the key of the mark a store without the time index
// keeps (see windowedCore.checkTimeIndex), past both indexes;
// timeIndexMissingValue is its value.
var (
	timeIndexMissing      = []byte{indexMark}
	timeIndexMissingValue = []byte{1}
)

// timeIndexValue is what time-first entries hold. It is not nil: nil would
// delete.
var timeIndexValue = []byte{}

// appendOrderedTime appends t as 8 big-endian bytes with the sign bit
// flipped, so that unsigned byte order is numeric order.
func appendOrderedTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

func readOrderedTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// windowSuffix is what follows the key in a key-first window entry.
const windowSuffix = timestampSize + windowSeqSize

// windowKeyFirst is the key-first entry of key's window at start, in
// segment seg (the segment of start).
func windowKeyFirst(seg int64, key []byte, start int64, seq uint32) []byte {
	return appendWindowKeyFirst(make([]byte, 0, 1+timestampSize+len(key)+windowSuffix), seg, key, start, seq)
}

// appendWindowKeyFirst appends windowKeyFirst's entry to b.
func appendWindowKeyFirst(b []byte, seg int64, key []byte, start int64, seq uint32) []byte {
	b = append(b, indexKeyFirst)
	b = appendOrderedTime(b, seg)
	b = append(b, key...)
	b = appendOrderedTime(b, start)
	return binary.BigEndian.AppendUint32(b, seq)
}

func windowTimeFirst(key []byte, start int64, seq uint32) []byte {
	b := make([]byte, 0, 1+len(key)+windowSuffix)
	b = append(b, indexTimeFirst)
	b = appendOrderedTime(b, start)
	b = append(b, key...)
	return binary.BigEndian.AppendUint32(b, seq)
}

// decodeWindowKeyFirst splits a key-first window entry; key aliases b.
func decodeWindowKeyFirst(b []byte) (seg int64, key []byte, start int64, seq uint32, ok bool) {
	n := len(b) - windowSuffix
	if n < 1+timestampSize || b[0] != indexKeyFirst {
		return 0, nil, 0, 0, false
	}
	return readOrderedTime(b[1:]), b[1+timestampSize : n : n], readOrderedTime(b[n:]), binary.BigEndian.Uint32(b[n+timestampSize:]), true
}

// decodeWindowTimeFirst splits a time-first window entry; key aliases b.
func decodeWindowTimeFirst(b []byte) (key []byte, start int64, seq uint32, ok bool) {
	n := len(b) - windowSeqSize
	if n < 1+timestampSize || b[0] != indexTimeFirst {
		return nil, 0, 0, false
	}
	return b[1+timestampSize : n : n], readOrderedTime(b[1:]), binary.BigEndian.Uint32(b[n:]), true
}

// timeFirstBounds returns the inclusive bounds of a time-first scan over
// times from..to. Every entry is longer than the 9-byte bounds, so the upper
// bound [prefix | to+1] keeps exactly the entries at or before to.
func timeFirstBounds(from, to int64) (lo, hi []byte) {
	lo = appendOrderedTime([]byte{indexTimeFirst}, from)
	if to == math.MaxInt64 {
		return lo, []byte{indexEnd}
	}
	return lo, appendOrderedTime([]byte{indexTimeFirst}, to+1)
}

// addSat adds without overflowing: results past the int64 range stick at
// its ends.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// windowedCore is what window and session stores share: lifecycle, key
// serialization, logging and the expiry horizon.
type windowedCore[K any] struct {
	name      string
	inner     KeyValueBytesStore
	keySerde  serde.Serde[K]
	logging   bool
	retention int64

	ctx Context
	// topic is what the serdes see: the changelog topic, or the store name
	// when logging is off.
	topic string
	// liveFrom is the earliest time (window start, session end) the store
	// still keeps; Expire raises it, and reads hide what lies before it.
	// Atomic so that readers on other goroutines stay race-free.
	liveFrom atomic.Int64
	// kind is the store's Kind, for the segments gauge.
	kind Kind
	segs segmentSet
	// closed says Close ran.
	closed atomic.Bool
	// keyIndexOnly says the store keeps no time-first index
	// (WithoutTimeIndex); timeFirstOf turns a key-first entry into its
	// time-first one, to rebuild the index (see checkTimeIndex).
	keyIndexOnly bool
	timeFirstOf  func(keyFirst []byte) ([]byte, bool)
	// times bounds the entries' times by the epoch that wrote them, for
	// the window store's fetches (see epochTimes).
	times epochTimes
}

func (c *windowedCore[K]) setup(name string, kind Kind, inner KeyValueBytesStore, keySerde serde.Serde[K], logging bool, retention, segmentInterval int64) {
	c.name, c.kind, c.inner, c.keySerde, c.logging, c.retention = name, kind, inner, keySerde, logging, retention
	c.liveFrom.Store(math.MinInt64)
	if segmentInterval <= 0 {
		segmentInterval = DefaultSegmentInterval(retention)
	}
	c.segs.init(segmentInterval)
}

// Kind is the store's kind.
func (c *windowedCore[K]) Kind() Kind { return c.kind }

func (c *windowedCore[K]) Name() string { return c.name }

func (c *windowedCore[K]) Init(ctx Context) error {
	if ctx == nil {
		return fmt.Errorf("store %q: init: context is nil", c.name)
	}
	topic := c.name
	if c.logging {
		topic = ctx.ChangelogTopic(c.name)
		if topic == "" {
			return fmt.Errorf("store %q: init: logging is enabled but the context has no changelog topic", c.name)
		}
	}
	if err := c.inner.Init(ctx); err != nil {
		return err
	}
	// A persistent store may hold segments already.
	if err := c.segs.discover(c.inner); err != nil {
		return c.errorf("init", "list segments: %w", err)
	}
	c.times.init(&c.segs)
	if err := c.checkTimeIndex(); err != nil {
		return c.errorf("init", "%w", err)
	}
	c.ctx, c.topic = ctx, topic
	return nil
}

// checkTimeIndex keeps the mark (timeIndexMissing) on every store whose
// time index may lack entries. A store without the index sets the mark
// before it writes. A store with the index finds the mark where an
// earlier build of the same store (a topology that emitted on update,
// say, and now emits on close) kept none: it rebuilds the index from the
// key-first entries and clears the mark, in the same epoch, so that a
// failure before that epoch commits leaves the mark for the next start.
func (c *windowedCore[K]) checkTimeIndex() error {
	mark, err := c.inner.Get(timeIndexMissing)
	if err != nil {
		return fmt.Errorf("read the time index mark: %w", err)
	}
	switch {
	case c.keyIndexOnly && mark == nil:
		if err := c.inner.Put(timeIndexMissing, timeIndexMissingValue); err != nil {
			return fmt.Errorf("mark the time index missing: %w", err)
		}
	case !c.keyIndexOnly && mark != nil:
		if err := c.rebuildTimeIndex(); err != nil {
			return fmt.Errorf("rebuild the time index: %w", err)
		}
	}
	return nil
}

// rebuildTimeIndex writes the time-first entry of every key-first one,
// then clears the mark.
func (c *windowedCore[K]) rebuildTimeIndex() error {
	it, err := c.inner.Range([]byte{indexKeyFirst}, []byte{indexTimeFirst})
	if err != nil {
		return err
	}
	defer it.Close()
	const batch = 4096
	entries := make([]KeyValue[[]byte, []byte], 0, batch)
	for it.Next() {
		tf, ok := c.timeFirstOf(it.Key())
		if !ok {
			return fmt.Errorf("malformed entry %x", it.Key())
		}
		entries = append(entries, KeyValue[[]byte, []byte]{Key: tf, Value: timeIndexValue})
		if len(entries) == batch {
			if err := c.inner.PutAll(entries); err != nil {
				return err
			}
			entries = entries[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	entries = append(entries, KeyValue[[]byte, []byte]{Key: timeIndexMissing})
	return c.inner.PutAll(entries)
}

// withMark adds the time index mark to a restore's entries when the
// store keeps no index: Restore needs no Init, and may fill a store whose
// Init comes after it.
func (c *windowedCore[K]) withMark(entries []KeyValue[[]byte, []byte]) []KeyValue[[]byte, []byte] {
	if c.keyIndexOnly {
		entries = append(entries, KeyValue[[]byte, []byte]{Key: timeIndexMissing, Value: timeIndexMissingValue})
	}
	return entries
}

// scanByTime is a scan by time of a store without the time index: it
// reads the key-first entries of segments lo..hi whole, keeps those entry
// accepts (entry splits a key-first entry, its value aside), and returns
// them in the order of their time-first entries, as the index would have,
// at the cost of the segments it covers.
func (s *valuedCore[K, V]) scanByTime(lo, hi int64, entry func(keyFirst []byte) (windowedEntry, bool)) (KeyValueIterator[window.Windowed[K], V], error) {
	it, err := s.scanSegments(lo, hi, nil, segmentBounds)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	type found struct{ timeFirst, keyFirst, value []byte }
	var all []found
	for it.Next() {
		k := it.Key()
		if _, ok := entry(k); !ok {
			continue
		}
		tf, _ := s.timeFirstOf(k)
		all = append(all, found{tf, bytes.Clone(k), bytes.Clone(it.Value())})
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b found) int { return bytes.Compare(a.timeFirst, b.timeFirst) })
	entries := make([]KeyValue[[]byte, []byte], len(all))
	for i, f := range all {
		entries[i] = KeyValue[[]byte, []byte]{Key: f.keyFirst, Value: f.value}
	}
	return &entryIterator[window.Windowed[K], V]{
		inner: &sliceIterator{entries: entries, i: -1},
		accept: func(k, v []byte) (windowedEntry, bool, error) {
			e, _ := entry(k)
			e.value = v
			return e, true, nil
		},
		key:   s.windowedKey,
		value: s.decodeValue,
	}, nil
}

func (c *windowedCore[K]) Flush() error { return c.inner.Flush() }
func (c *windowedCore[K]) Close() error {
	c.closed.Store(true)
	return c.inner.Close()
}
func (c *windowedCore[K]) Persistent() bool { return c.inner.Persistent() }

func (c *windowedCore[K]) Bytes() KeyValueBytesStore { return c.inner }

func (c *windowedCore[K]) errorf(op, format string, args ...any) error {
	return fmt.Errorf("store %q: %s: "+format, append([]any{c.name, op}, args...)...)
}

func (c *windowedCore[K]) ready(op string) error {
	if c.ctx == nil {
		return c.errorf(op, "%w", ErrNotInitialized)
	}
	return nil
}

// serializeKey may return bytes that share key's memory (a String key's
// own bytes, serde.SerializeView): every entry and changelog key is built
// in a new slice from them, and nothing writes to them.
func (c *windowedCore[K]) serializeKey(op string, key K) ([]byte, error) {
	b, err := serde.SerializeView(c.keySerde, c.topic, key)
	if err != nil {
		return nil, c.errorf(op, "serialize key: %w", err)
	}
	if b == nil {
		return nil, c.errorf(op, "serialize key: %w", ErrNilKey)
	}
	return b, nil
}

func (c *windowedCore[K]) deserializeKey(b []byte) (K, error) {
	k, err := c.keySerde.Deserialize(c.topic, b)
	if err != nil {
		return k, c.errorf("iterate", "deserialize key: %w", err)
	}
	return k, nil
}

func (c *windowedCore[K]) log(op string, key, value []byte, ts int64) error {
	return c.logHeld(op, key, value, ts, nil)
}

// logHeld is log with the held word of the key's entry (HeldLogger).
func (c *windowedCore[K]) logHeld(op string, key, value []byte, ts int64, held *uint64) error {
	if !c.logging {
		return nil
	}
	if err := logChange(c.ctx, c.name, key, value, ts, held); err != nil {
		return c.errorf(op, "log change: %w", err)
	}
	return nil
}

// entries is what a write of one window or session puts into the byte
// store: its key-first entry, and its time-first one unless the store has
// no time index.
func (c *windowedCore[K]) entries(keyFirst KeyValue[[]byte, []byte], timeFirst func() KeyValue[[]byte, []byte]) []KeyValue[[]byte, []byte] {
	if c.keyIndexOnly {
		return []KeyValue[[]byte, []byte]{keyFirst}
	}
	return []KeyValue[[]byte, []byte]{keyFirst, timeFirst()}
}

// expired reports whether time t is past retention.
func (c *windowedCore[K]) expired(t int64) bool { return t < c.liveFrom.Load() }

// expire raises the horizon to frontier - retention + 1 and drops the
// segments wholly before it (see segments.go): its key-first entries in
// one range delete, its time-first ones, below the first live segment's
// start, in another.
func (c *windowedCore[K]) expire(frontier int64) error {
	if c.closed.Load() {
		return c.errorf("expire", "%w", ErrClosed)
	}
	cutoff := addSat(addSat(frontier, -c.retention), 1)
	if cutoff <= c.liveFrom.Load() {
		return nil
	}
	c.liveFrom.Store(cutoff)
	if err := c.segs.discover(c.inner); err != nil {
		return err
	}
	first := segmentOf(cutoff, c.segs.interval)
	if !c.segs.dropBelow(first) {
		return nil
	}
	if err := DeleteRange(c.inner, []byte{indexKeyFirst}, keyFirstPrefix(first)); err != nil {
		return c.errorf("expire", "drop segments before %d: %w", first, err)
	}
	if err := DeleteRange(c.inner, []byte{indexTimeFirst}, appendOrderedTime([]byte{indexTimeFirst}, segmentStart(first, c.segs.interval))); err != nil {
		return c.errorf("expire", "drop segments before %d: %w", first, err)
	}
	return nil
}

// windowStore is the typed window store, plain or timestamped by its codec.
type windowStore[K, V any] struct {
	valuedCore[K, V]
	size int64
	dups bool
	// seq is the last sequence number handed out when duplicates are
	// retained.
	seq atomic.Uint32
	// found is the key-first entry the last Fetch found, with writes as it
	// began: a Put of that window with no write since, an aggregation's
	// read-modify-write, need not write its time-first entry again, which
	// halves what an update costs the byte store and its commit. writes
	// counts the writes that could remove a window (Put, Delete, Expire,
	// Restore), so that a Fetch on another goroutine cannot vouch for a
	// window removed after it read.
	found  atomic.Pointer[foundEntry]
	writes atomic.Uint64
}

// foundEntry is what a Fetch found: a window's key-first entry, with the
// store's write count when the Fetch began. The entry is built in buf
// when it fits, and the value read after it where the store can
// (getAppending), so that a Fetch allocates once for all three.
type foundEntry struct {
	key    []byte
	writes uint64
	buf    [64]byte
}

// is reports whether the entry is key kb's window at start with sequence
// number seq in segment seg, without building that entry.
func (f *foundEntry) is(seg int64, kb []byte, start int64, seq uint32) bool {
	fseg, fkey, fstart, fseq, ok := decodeWindowKeyFirst(f.key)
	return ok && fseg == seg && fstart == start && fseq == seq && bytes.Equal(fkey, kb)
}

// forget ends what found vouches for: a write is under way.
func (s *windowStore[K, V]) forget() { s.writes.Add(1) }

func newWindowStore[K, V any](b *windowBuilderBase, inner KeyValueBytesStore, keySerde serde.Serde[K], codec valueCodec[V]) *windowStore[K, V] {
	s := &windowStore[K, V]{valuedCore: valuedCore[K, V]{codec: codec}, size: b.windowSize, dups: b.retainDuplicates}
	s.setup(b.name, b.kind, inner, keySerde, b.logging, b.retention, b.segmentInterval)
	s.keyIndexOnly, s.timeFirstOf = b.keyIndexOnly, windowTimeFirstOf
	return s
}

// keyFirst is the key-first entry of key's window at start.
func (s *windowStore[K, V]) keyFirst(kb []byte, start int64, seq uint32) []byte {
	return windowKeyFirst(segmentOf(start, s.segs.interval), kb, start, seq)
}

// nextSeq is Kafka Streams' maybeUpdateSeqnumForDups.
func (s *windowStore[K, V]) nextSeq() uint32 {
	if !s.dups {
		return 0
	}
	for {
		old := s.seq.Load()
		if next := (old + 1) & math.MaxInt32; s.seq.CompareAndSwap(old, next) {
			return next
		}
	}
}

func (s *windowStore[K, V]) Put(key K, value V, windowStart int64) error {
	const op = "put"
	if err := s.ready(op); err != nil {
		return err
	}
	kb, err := s.serializeKey(op, key)
	if err != nil {
		return err
	}
	stored, logged, ts, err := s.codec.encode(s.topic, value, s.ctx)
	if err != nil {
		return s.errorf(op, "%w", err)
	}
	if stored == nil {
		if s.dups {
			return nil
		}
		return s.deleteOne(op, kb, windowStart, ts)
	}
	if s.expired(windowStart) {
		return nil
	}
	seg, err := s.noteSegment(windowStart)
	if err != nil {
		return s.errorf(op, "%w", err)
	}
	epoch, ok := writeEpoch(s.inner)
	s.times.wrote(epoch, ok, windowStart)
	seq := s.nextSeq()
	f := s.found.Load()
	known := f != nil && f.writes == s.writes.Load() && f.is(seg, kb, windowStart, seq)
	s.forget()
	if known {
		// The window and its time-first entry are there; the entry the
		// Fetch built is this window's, and nothing writes to it.
		held, err := putHeld(s.inner, f.key, stored)
		if err != nil {
			return err
		}
		return s.logHeld(op, EncodeWindowKey(kb, windowStart, int32(seq)), logged, ts, held)
	}
	kf := windowKeyFirst(seg, kb, windowStart, seq)
	if err := s.inner.PutAll(s.entries(
		KeyValue[[]byte, []byte]{Key: kf, Value: stored},
		func() KeyValue[[]byte, []byte] {
			return KeyValue[[]byte, []byte]{Key: windowTimeFirst(kb, windowStart, seq), Value: timeIndexValue}
		})); err != nil {
		return err
	}
	return s.log(op, EncodeWindowKey(kb, windowStart, int32(seq)), logged, ts)
}

// deleteOne deletes the entry with sequence number 0 and logs its
// tombstone.
func (s *windowStore[K, V]) deleteOne(op string, kb []byte, start, ts int64) error {
	s.forget()
	if err := s.inner.PutAll(s.entries(
		KeyValue[[]byte, []byte]{Key: s.keyFirst(kb, start, 0)},
		func() KeyValue[[]byte, []byte] { return KeyValue[[]byte, []byte]{Key: windowTimeFirst(kb, start, 0)} })); err != nil {
		return err
	}
	return s.log(op, EncodeWindowKey(kb, start, 0), nil, ts)
}

func (s *windowStore[K, V]) Delete(key K, windowStart int64) error {
	const op = "delete"
	if err := s.ready(op); err != nil {
		return err
	}
	kb, err := s.serializeKey(op, key)
	if err != nil {
		return err
	}
	ts := s.ctx.RecordTimestamp()
	if !s.dups {
		return s.deleteOne(op, kb, windowStart, ts)
	}
	seqs, err := s.duplicates(kb, windowStart)
	if err != nil {
		return err
	}
	dels := make([]KeyValue[[]byte, []byte], 0, 2*len(seqs))
	for _, seq := range seqs {
		dels = append(dels, KeyValue[[]byte, []byte]{Key: s.keyFirst(kb, windowStart, seq)})
		if !s.keyIndexOnly {
			dels = append(dels, KeyValue[[]byte, []byte]{Key: windowTimeFirst(kb, windowStart, seq)})
		}
	}
	if err := s.inner.PutAll(dels); err != nil {
		return err
	}
	for _, seq := range seqs {
		if err := s.log(op, EncodeWindowKey(kb, windowStart, int32(seq)), nil, ts); err != nil {
			return err
		}
	}
	return nil
}

// duplicates lists the sequence numbers stored for a key and window start.
func (s *windowStore[K, V]) duplicates(kb []byte, start int64) ([]uint32, error) {
	lo, hi := s.keyFirst(kb, start, 0), s.keyFirst(kb, start, math.MaxUint32)
	it, err := s.inner.Range(lo, hi)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var seqs []uint32
	for it.Next() {
		if k := it.Key(); len(k) == len(lo) {
			seqs = append(seqs, binary.BigEndian.Uint32(k[len(k)-windowSeqSize:]))
		}
	}
	return seqs, it.Err()
}

func (s *windowStore[K, V]) Fetch(key K, windowStart int64) (V, bool, error) {
	const op = "fetch"
	var zero V
	if err := s.ready(op); err != nil {
		return zero, false, err
	}
	kb, err := s.serializeKey(op, key)
	if err != nil {
		return zero, false, err
	}
	if s.expired(windowStart) {
		return zero, false, nil
	}
	var stored []byte
	if !s.dups {
		f := &foundEntry{writes: s.writes.Load()}
		f.key = appendWindowKeyFirst(f.buf[:0], segmentOf(windowStart, s.segs.interval), kb, windowStart, 0)
		// The value is read into the rest of buf when the key is in it:
		// it is decoded below and not kept, and nothing writes to an
		// entry once published.
		var dst []byte
		if n := len(f.key); cap(f.key) == len(f.buf) {
			dst = f.buf[n:n]
		}
		// A window no earlier epoch reached is in this epoch's writes or
		// nowhere (epochTimes).
		if epoch, ok := writeEpoch(s.inner); s.times.onlyEpoch(epoch, ok, windowStart) {
			stored, err = getOfEpoch(s.inner, epoch, f.key)
		} else {
			stored, err = getAppending(s.inner, dst, f.key)
		}
		if err != nil {
			return zero, false, err
		}
		if stored != nil {
			s.found.Store(f)
		}
	} else {
		lo, hi := s.keyFirst(kb, windowStart, 0), s.keyFirst(kb, windowStart, math.MaxUint32)
		it, err := s.inner.Range(lo, hi)
		if err != nil {
			return zero, false, err
		}
		for it.Next() {
			if len(it.Key()) == len(lo) {
				stored = it.Value()
				break
			}
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return zero, false, err
		}
	}
	if stored == nil {
		return zero, false, nil
	}
	v, err := s.codec.decode(s.topic, stored)
	if err != nil {
		return zero, false, s.errorf(op, "%w", err)
	}
	return v, true, nil
}

func (s *windowStore[K, V]) FetchRange(key K, timeFrom, timeTo int64) (KeyValueIterator[int64, V], error) {
	const op = "fetch range"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	kb, err := s.serializeKey(op, key)
	if err != nil {
		return nil, err
	}
	timeFrom = max(timeFrom, s.liveFrom.Load())
	if timeFrom > timeTo {
		return &entryIterator[int64, V]{inner: emptyIterator{}}, nil
	}
	iv := s.segs.interval
	inner, err := s.scanSegments(segmentOf(timeFrom, iv), segmentOf(timeTo, iv), s.rangeFrom(timeFrom), func(seg int64) ([]byte, []byte) {
		return windowKeyFirst(seg, kb, timeFrom, 0), windowKeyFirst(seg, kb, timeTo, math.MaxUint32)
	})
	if err != nil {
		return nil, err
	}
	width := 1 + timestampSize + len(kb) + windowSuffix
	return &entryIterator[int64, V]{
		inner: inner,
		accept: func(k, v []byte) (windowedEntry, bool, error) {
			// Between bounds that share the key's bytes, an entry of the
			// same length is an entry of this key.
			if len(k) != width {
				return windowedEntry{}, false, nil
			}
			return windowedEntry{start: readOrderedTime(k[width-windowSuffix:]), value: v}, true, nil
		},
		key:   func(e windowedEntry) (int64, error) { return e.start, nil },
		value: s.decodeValue,
	}, nil
}

func (s *windowStore[K, V]) FetchAll(timeFrom, timeTo int64) (KeyValueIterator[window.Windowed[K], V], error) {
	const op = "fetch all"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	timeFrom = max(timeFrom, s.liveFrom.Load())
	if timeFrom > timeTo {
		return &entryIterator[window.Windowed[K], V]{inner: emptyIterator{}}, nil
	}
	if s.keyIndexOnly {
		return s.fetchAllByKey(timeFrom, timeTo)
	}
	lo, hi := timeFirstBounds(timeFrom, timeTo)
	inner, err := s.inner.Range(lo, hi)
	if err != nil {
		return nil, err
	}
	return &entryIterator[window.Windowed[K], V]{
		inner: inner,
		accept: func(k, _ []byte) (windowedEntry, bool, error) {
			key, start, seq, ok := decodeWindowTimeFirst(k)
			if !ok {
				return windowedEntry{}, false, s.errorf("iterate", "malformed index entry %x", k)
			}
			v, err := s.inner.Get(s.keyFirst(key, start, seq))
			if err != nil || v == nil {
				// nil: deleted since the scan began.
				return windowedEntry{}, false, err
			}
			return windowedEntry{key: key, start: start, end: addSat(start, s.size), value: v}, true, nil
		},
		key:   s.windowedKey,
		value: s.decodeValue,
	}, nil
}

// fetchAllByKey is FetchAll without the time-first index.
func (s *windowStore[K, V]) fetchAllByKey(timeFrom, timeTo int64) (KeyValueIterator[window.Windowed[K], V], error) {
	iv := s.segs.interval
	return s.scanByTime(segmentOf(timeFrom, iv), segmentOf(timeTo, iv), func(k []byte) (windowedEntry, bool) {
		_, key, start, _, ok := decodeWindowKeyFirst(k)
		return windowedEntry{key: key, start: start, end: addSat(start, s.size)}, ok && start >= timeFrom && start <= timeTo
	})
}

// windowTimeFirstOf is the time-first entry of a key-first window entry.
func windowTimeFirstOf(keyFirst []byte) ([]byte, bool) {
	_, key, start, seq, ok := decodeWindowKeyFirst(keyFirst)
	if !ok {
		return nil, false
	}
	return windowTimeFirst(key, start, seq), true
}

func (s *windowStore[K, V]) All() (KeyValueIterator[window.Windowed[K], V], error) {
	return s.FetchAll(math.MinInt64, math.MaxInt64)
}

// valuedCore is windowedCore with the value codec: what window and
// session stores share to decode what they iterate.
type valuedCore[K, V any] struct {
	windowedCore[K]
	codec valueCodec[V]
}

func (s *valuedCore[K, V]) decodeValue(b []byte) (V, error) {
	v, err := s.codec.decode(s.topic, b)
	if err != nil {
		return v, s.errorf("iterate", "%w", err)
	}
	return v, nil
}

func (s *valuedCore[K, V]) windowedKey(e windowedEntry) (window.Windowed[K], error) {
	k, err := s.deserializeKey(e.key)
	if err != nil {
		return window.Windowed[K]{}, err
	}
	return window.Windowed[K]{Key: k, Window: window.Window{Start: e.start, End: e.end}}, nil
}

func (s *windowStore[K, V]) Expire(frontier int64) error {
	s.forget()
	return s.expire(frontier)
}

// Restore applies changelog records in Kafka Streams' layout (see
// WindowStore): each key is split into key, start and sequence number and
// written to both indexes, a nil value deleting. It needs no Init, and checks
// every record before writing any. Records for windows already expired are
// skipped; Restore does not expire by itself, so call Expire with the
// restored frontier afterwards. When duplicates are retained, later puts
// continue from the largest restored sequence number, so they do not
// overwrite restored duplicates (Kafka Streams restarts from 0).
func (s *windowStore[K, V]) Restore(records []ChangelogRecord) error {
	s.forget()
	entries := make([]KeyValue[[]byte, []byte], 0, 2*len(records))
	var maxSeq uint32
	for i, r := range records {
		key, start, seq, err := DecodeWindowKey(r.Key)
		if err != nil {
			return s.errorf("restore", "record %d: %w", i, err)
		}
		if s.expired(start) {
			continue
		}
		useq := uint32(seq)
		maxSeq = max(maxSeq, useq&math.MaxInt32)
		stored := s.codec.fromChangelog(r.Value, r.Timestamp)
		seg, err := s.noteSegment(start)
		if err != nil {
			return s.errorf("restore", "%w", err)
		}
		epoch, ok := writeEpoch(s.inner)
		s.times.wrote(epoch, ok, start)
		kf := windowKeyFirst(seg, key, start, useq)
		tf := func() KeyValue[[]byte, []byte] {
			if stored == nil {
				return KeyValue[[]byte, []byte]{Key: windowTimeFirst(key, start, useq)}
			}
			return KeyValue[[]byte, []byte]{Key: windowTimeFirst(key, start, useq), Value: timeIndexValue}
		}
		entries = append(entries, s.entries(KeyValue[[]byte, []byte]{Key: kf, Value: stored}, tf)...)
	}
	if err := s.inner.PutAll(s.withMark(entries)); err != nil {
		return err
	}
	if s.dups {
		for {
			old := s.seq.Load()
			if old >= maxSeq || s.seq.CompareAndSwap(old, maxSeq) {
				break
			}
		}
	}
	return nil
}

// windowedEntry is one entry of a window or session scan, before its key
// and value are deserialized. end is the window end (start + size for
// window stores). key and value alias the scan's copies.
type windowedEntry struct {
	key        []byte
	start, end int64
	value      []byte
}

// entryIterator turns a byte-store scan into typed entries. accept filters
// and splits each raw entry; key and value deserialize lazily, so a scan
// that reads only keys never pays for values. A failure ends the iteration
// and shows in Err.
type entryIterator[KOut, V any] struct {
	inner  BytesIterator
	accept func(key, value []byte) (windowedEntry, bool, error)
	key    func(windowedEntry) (KOut, error)
	value  func([]byte) (V, error)

	cur      windowedEntry
	valid    bool
	k        KOut
	v        V
	hasK     bool
	hasV     bool
	err      error
	finished bool
}

func (it *entryIterator[KOut, V]) Next() bool {
	var zk KOut
	var zv V
	it.k, it.v, it.hasK, it.hasV, it.valid = zk, zv, false, false, false
	if it.err != nil || it.finished {
		return false
	}
	for it.inner.Next() {
		e, ok, err := it.accept(it.inner.Key(), it.inner.Value())
		if err != nil {
			it.err = err
			return false
		}
		if ok {
			it.cur, it.valid = e, true
			return true
		}
	}
	it.finished = true
	return false
}

func (it *entryIterator[KOut, V]) Key() KOut {
	if it.valid && !it.hasK && it.err == nil {
		k, err := it.key(it.cur)
		if err != nil {
			it.err = err
			return it.k
		}
		it.k, it.hasK = k, true
	}
	return it.k
}

func (it *entryIterator[KOut, V]) Value() V {
	if it.valid && !it.hasV && it.err == nil {
		v, err := it.value(it.cur.value)
		if err != nil {
			it.err = err
			return it.v
		}
		it.v, it.hasV = v, true
	}
	return it.v
}

func (it *entryIterator[KOut, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.inner.Err()
}

func (it *entryIterator[KOut, V]) Close() error { return it.inner.Close() }
