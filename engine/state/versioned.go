package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// A versioned key-value store (Kafka Streams' VersionedKeyValueStore,
// KIP-889) keeps, per key, every version written within its history
// retention: a version is a value, or a tombstone, valid from its own
// timestamp (validFrom) up to the timestamp of the key's next version
// (validTo, exclusive); the newest version of a key is valid until
// further notice. A put older than the retention behind the store's
// observed stream time (the largest timestamp it was given) is dropped;
// a read as of a time older than that sees only the latest version.
//
// Byte layout (docs/decisions/0035-versioned-tables.md). Every version is
// one entry of the byte store, the latest included:
//
//	key length (4, big-endian) | serialized key | validFrom (8, sign bit flipped)  ->  0x01 | value, or 0x00 for a tombstone
//
// so a key's versions are contiguous and in time order, and a put is one
// blind write: restoring a changelog needs no read, which the RocksDB
// backend's bulk restore cannot serve. Reads scan the key's versions
// newest first and stop at the version the time asks for. The changelog
// is Kafka Streams' (ChangeLoggingVersionedKeyValueBytesStore): key the
// serialized key, value the plain serialized value (null for a
// tombstone), the record's timestamp the version's validFrom; every
// write is logged, none coalesced (task.Output.Uncoalesced), because
// each is a version.

// KindVersionedKeyValue is the kind of versioned key-value stores.
const KindVersionedKeyValue Kind = "versioned-key-value"

// Kafka Streams' put return codes (VersionedKeyValueStore).
const (
	// PutValidToUndefined is what Put returns when the version it wrote
	// is the key's latest.
	PutValidToUndefined int64 = -1
	// PutNotPut is what Put returns when the version was older than the
	// history retention and was dropped.
	PutNotPut int64 = math.MinInt64
)

// ValidToOpen is the ValidTo of a key's latest version.
const ValidToOpen int64 = math.MaxInt64

// VersionedRecord is one version of a key: its value, the timestamp it
// is valid from, and the timestamp of the next version (ValidToOpen for
// the latest).
type VersionedRecord[V any] struct {
	Value     V
	Timestamp int64
	ValidTo   int64
}

// VersionedKeyValueStore is the typed versioned store. A found result is
// a value; a tombstone, like a key never written, is not found.
type VersionedKeyValueStore[K, V any] interface {
	Store
	// Put writes value as key's version valid from timestamp; a null
	// value (a nil V of a nillable type, or one its serializer writes as
	// nil) is a tombstone. It returns the new version's validTo: the next
	// version's timestamp, PutValidToUndefined when it is the latest, or
	// PutNotPut when timestamp is older than the history retention (then
	// nothing is written or logged).
	Put(key K, value V, timestamp int64) (int64, error)
	// PutTombstone is Put with a null value, for value types that have
	// none.
	PutTombstone(key K, timestamp int64) (int64, error)
	// Delete puts a tombstone at timestamp and returns the version that
	// was valid at timestamp before it (not found when there was none or
	// when the delete was older than the retention and so did nothing).
	Delete(key K, timestamp int64) (VersionedRecord[V], bool, error)
	// Get returns key's latest version, not found when it is a tombstone.
	Get(key K) (VersionedRecord[V], bool, error)
	// GetAsOf returns the version valid at asOf. Older than the history
	// retention, only the latest version is answered (when it is older
	// than asOf), as Kafka Streams does: the latest never expires.
	GetAsOf(key K, asOf int64) (VersionedRecord[V], bool, error)
	// HistoryRetention is how long versions stay readable.
	HistoryRetention() time.Duration
	// All lists each key's latest value (keys whose latest version is a
	// tombstone are left out).
	All() (KeyValueIterator[K, ValueAndTimestamp[V]], error)
}

// VersionedSupplier is the bytes supplier that makes a table's store
// versioned (Kafka Streams' VersionedBytesStoreSupplier): the backend its
// versions live in and the history retention. The DSL's Materialized takes
// it like any supplier.
type VersionedSupplier struct {
	backend         BytesSupplier
	retention       time.Duration
	segmentInterval time.Duration
}

// PersistentVersionedKeyValueStore is Kafka Streams'
// Stores.persistentVersionedKeyValueStore: versions kept in RocksDB (in
// memory in the test driver, as RocksDB is), readable for
// historyRetention. segmentInterval is accepted for Kafka Streams' sake
// and described, but our layout has no segments (decision 0035).
func PersistentVersionedKeyValueStore(historyRetention time.Duration, segmentInterval ...time.Duration) VersionedSupplier {
	s := VersionedSupplier{backend: RocksDB(), retention: historyRetention}
	if len(segmentInterval) > 0 {
		s.segmentInterval = segmentInterval[0]
	}
	return s
}

// VersionedKeyValueStoreOver keeps versions in backend's byte stores
// (InMemory, Default, RocksDB) for historyRetention.
func VersionedKeyValueStoreOver(backend BytesSupplier, historyRetention time.Duration) VersionedSupplier {
	return VersionedSupplier{backend: backend, retention: historyRetention}
}

// Name is the backend's name.
func (s VersionedSupplier) Name() string {
	if s.backend == nil {
		return ""
	}
	return s.backend.Name()
}

// Get is the backend's byte store.
func (s VersionedSupplier) Get(name string) KeyValueBytesStore {
	if s.backend == nil {
		return nil
	}
	return s.backend.Get(name)
}

// HistoryRetention is how long versions stay readable.
func (s VersionedSupplier) HistoryRetention() time.Duration { return s.retention }

// SegmentInterval is the interval given, 0 for none.
func (s VersionedSupplier) SegmentInterval() time.Duration { return s.segmentInterval }

// Validate refuses what Kafka Streams refuses: a negative retention or
// segment interval.
func (s VersionedSupplier) Validate() error {
	switch {
	case s.backend == nil:
		return errors.New("versioned store: no backend")
	case s.retention < 0:
		return fmt.Errorf("versioned store: history retention %v is negative", s.retention)
	case s.segmentInterval < 0:
		return fmt.Errorf("versioned store: segment interval %v is negative", s.segmentInterval)
	}
	return nil
}

// MinCompactionLagConfig is the changelog topic config a versioned
// store's changelog carries, as Kafka Streams' VersionedChangelogTopicConfig
// sets it: history retention plus a day, so compaction keeps the versions
// still readable.
const MinCompactionLagConfig = "min.compaction.lag.ms"

// versionedCompactionExtra is Kafka Streams'
// VERSIONED_STORE_CHANGE_LOG_ADDITIONAL_COMPACTION_LAG_MS.
const versionedCompactionExtra = 24 * time.Hour

// VersionedKeyValueBuilder builds versioned key-value stores. Logging is
// enabled by default, as in Kafka Streams.
type VersionedKeyValueBuilder[K, V any] struct {
	builderBase
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   VersionedSupplier
}

// VersionedKeyValueStoreBuilder describes a versioned key-value store
// named name, its versions in supplier's backend.
func VersionedKeyValueStoreBuilder[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], supplier VersionedSupplier) *VersionedKeyValueBuilder[K, V] {
	var bs BytesSupplier
	if supplier.backend != nil {
		bs = supplier
	}
	return &VersionedKeyValueBuilder[K, V]{
		builderBase: newBuilderBase(name, KindVersionedKeyValue, keySerde, valueSerde, bs),
		keySerde:    keySerde,
		valueSerde:  valueSerde,
		supplier:    supplier,
	}
}

// WithLoggingEnabled turns the changelog on with cfg as its topic config.
func (b *VersionedKeyValueBuilder[K, V]) WithLoggingEnabled(cfg map[string]string) *VersionedKeyValueBuilder[K, V] {
	b.enableLogging(cfg)
	return b
}

func (b *VersionedKeyValueBuilder[K, V]) WithLoggingDisabled() *VersionedKeyValueBuilder[K, V] {
	b.disableLogging()
	return b
}

// HistoryRetention is the supplier's.
func (b *VersionedKeyValueBuilder[K, V]) HistoryRetention() time.Duration {
	return b.supplier.retention
}

// LogConfig adds min.compaction.lag.ms, history retention plus a day,
// unless the config given sets it.
func (b *VersionedKeyValueBuilder[K, V]) LogConfig() map[string]string {
	if !b.logging {
		return nil
	}
	cfg := maps.Clone(b.logConfig)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if _, ok := cfg[MinCompactionLagConfig]; !ok {
		lag := int64(math.MaxInt64)
		r, extra := b.supplier.retention.Milliseconds(), versionedCompactionExtra.Milliseconds()
		if r <= math.MaxInt64-extra {
			lag = r + extra
		}
		cfg[MinCompactionLagConfig] = strconv.FormatInt(lag, 10)
	}
	return cfg
}

// Build returns a store that implements VersionedKeyValueStore[K, V],
// Restorer and BytesBacked.
func (b *VersionedKeyValueBuilder[K, V]) Build() (Store, error) {
	if err := b.supplier.Validate(); err != nil {
		return nil, fmt.Errorf("build store %q: %w", b.name, err)
	}
	inner, err := checkBuild(b.name, b.keySerde, b.valueSerde, b.supplier)
	if err != nil {
		return nil, err
	}
	return &versionedStore[K, V]{
		name:       b.name,
		inner:      inner,
		keySerde:   b.keySerde,
		valueSerde: b.valueSerde,
		null:       nullCheckFor[V](),
		retention:  b.supplier.retention,
		logging:    b.logging,
		observed:   noTimestamp,
	}, nil
}

// noTimestamp is Kafka Streams' ConsumerRecord.NO_TIMESTAMP, the observed
// stream time of a store that has seen nothing.
const noTimestamp int64 = -1

// Version entry layout.
const (
	versionKeyLen  = 4
	versionTSLen   = 8
	versionTomb    = 0x00
	versionValue   = 0x01
	versionFlagLen = 1
)

// ErrBadVersionEntry is the class of a byte-store entry of a versioned
// store that does not decode.
var ErrBadVersionEntry = errors.New("bad versioned store entry")

// versionPrefix is the prefix of key's versions.
func versionPrefix(key []byte) []byte {
	b := make([]byte, 0, versionKeyLen+len(key)+versionTSLen)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	return append(b, key...)
}

// versionKey is the entry key of key's version valid from ts.
func versionKey(prefix []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], uint64(ts)^(1<<63))
}

// EncodeVersionKey lays out the byte-store key of key's version valid
// from ts.
func EncodeVersionKey(key []byte, ts int64) []byte { return versionKey(versionPrefix(key), ts) }

// DecodeVersionKey splits a byte-store key of a versioned store. key
// aliases b.
func DecodeVersionKey(b []byte) (key []byte, ts int64, err error) {
	if len(b) < versionKeyLen+versionTSLen {
		return nil, 0, fmt.Errorf("%w: key of %d bytes", ErrBadVersionEntry, len(b))
	}
	n := int(binary.BigEndian.Uint32(b))
	if n != len(b)-versionKeyLen-versionTSLen {
		return nil, 0, fmt.Errorf("%w: key length %d in a key of %d bytes", ErrBadVersionEntry, n, len(b))
	}
	end := versionKeyLen + n
	return b[versionKeyLen:end:end], int64(binary.BigEndian.Uint64(b[end:]) ^ (1 << 63)), nil
}

// EncodeVersionValue lays out a version's byte-store value: nil (a
// tombstone) as 0x00, a value as 0x01 and its bytes.
func EncodeVersionValue(value []byte) []byte {
	if value == nil {
		return []byte{versionTomb}
	}
	return append(append(make([]byte, 0, versionFlagLen+len(value)), versionValue), value...)
}

// DecodeVersionValue splits a version's byte-store value: nil for a
// tombstone. The value aliases b.
func DecodeVersionValue(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty value", ErrBadVersionEntry)
	}
	switch b[0] {
	case versionTomb:
		if len(b) != 1 {
			return nil, fmt.Errorf("%w: tombstone of %d bytes", ErrBadVersionEntry, len(b))
		}
		return nil, nil
	case versionValue:
		return b[1:len(b):len(b)], nil
	}
	return nil, fmt.Errorf("%w: flag %#x", ErrBadVersionEntry, b[0])
}

// versionedStore is the versioned store over a byte store.
type versionedStore[K, V any] struct {
	name       string
	inner      KeyValueBytesStore
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	null       func(V) bool
	retention  time.Duration
	logging    bool

	ctx   Context
	topic string
	// observed is the store's stream time: the largest timestamp put,
	// deleted or restored. It is not persisted, as Kafka Streams'
	// RocksDBVersionedStore does not persist it; a restore rebuilds it.
	observed int64
}

func (s *versionedStore[K, V]) Name() string                    { return s.name }
func (s *versionedStore[K, V]) Flush() error                    { return s.inner.Flush() }
func (s *versionedStore[K, V]) Close() error                    { return s.inner.Close() }
func (s *versionedStore[K, V]) Persistent() bool                { return s.inner.Persistent() }
func (s *versionedStore[K, V]) Bytes() KeyValueBytesStore       { return s.inner }
func (s *versionedStore[K, V]) HistoryRetention() time.Duration { return s.retention }

func (s *versionedStore[K, V]) Init(ctx Context) error {
	if ctx == nil {
		return fmt.Errorf("store %q: init: context is nil", s.name)
	}
	topic := s.name
	if s.logging {
		topic = ctx.ChangelogTopic(s.name)
		if topic == "" {
			return fmt.Errorf("store %q: init: logging is enabled but the context has no changelog topic", s.name)
		}
	}
	if err := s.inner.Init(ctx); err != nil {
		return err
	}
	s.ctx, s.topic = ctx, topic
	return nil
}

func (s *versionedStore[K, V]) errorf(op, format string, args ...any) error {
	return fmt.Errorf("store %q: %s: "+format, append([]any{s.name, op}, args...)...)
}

// horizon is the oldest timestamp a put may have: observed stream time
// less the retention (history retention doubles as the grace period, as
// in Kafka Streams).
func (s *versionedStore[K, V]) horizon() int64 {
	r := s.retention.Milliseconds()
	if s.observed < math.MinInt64+r {
		return math.MinInt64
	}
	return s.observed - r
}

func (s *versionedStore[K, V]) key(op string, key K) ([]byte, error) {
	if s.ctx == nil {
		return nil, s.errorf(op, "%w", ErrNotInitialized)
	}
	b, err := serde.SerializeView(s.keySerde, s.topic, key)
	if err != nil {
		return nil, s.errorf(op, "serialize key: %w", err)
	}
	if b == nil {
		return nil, s.errorf(op, "serialize key: %w", ErrNilKey)
	}
	return versionPrefix(b), nil
}

// Restore needs no Init, like the other stores' (migration fills a store
// before any runtime exists). Each record is a version, written blind;
// one older than the retention behind the records before it is skipped,
// as Kafka Streams' restore skips what its put would have dropped.
func (s *versionedStore[K, V]) Restore(records []ChangelogRecord) error {
	entries := make([]KeyValue[[]byte, []byte], 0, len(records))
	for _, r := range records {
		if r.Key == nil {
			return fmt.Errorf("store %q: restore: changelog record without a key", s.name)
		}
		if r.Timestamp < s.horizon() {
			continue
		}
		s.observed = max(s.observed, r.Timestamp)
		entries = append(entries, KeyValue[[]byte, []byte]{Key: EncodeVersionKey(r.Key, r.Timestamp), Value: EncodeVersionValue(r.Value)})
	}
	return s.inner.PutAll(entries)
}

// version is one version read from the byte store.
type version struct {
	ts      int64
	value   []byte // nil for a tombstone
	validTo int64
}

// find returns the version of prefix's key valid at asOf, scanning newest
// first: the latest version when asOf is ValidToOpen. latest reports the
// newest version seen, for the expired-read rule. found is false when the
// key has no version at or before asOf.
func (s *versionedStore[K, V]) find(op string, prefix []byte, asOf int64) (v version, found bool, err error) {
	it, err := s.inner.ReverseRange(versionKey(prefix, math.MinInt64), versionKey(prefix, math.MaxInt64))
	if err != nil {
		return version{}, false, err
	}
	defer it.Close()
	validTo := ValidToOpen
	for it.Next() {
		_, ts, err := DecodeVersionKey(it.Key())
		if err != nil {
			return version{}, false, s.errorf(op, "%w", err)
		}
		if ts > asOf {
			validTo = ts
			continue
		}
		value, err := DecodeVersionValue(it.Value())
		if err != nil {
			return version{}, false, s.errorf(op, "%w", err)
		}
		return version{ts: ts, value: value, validTo: validTo}, true, nil
	}
	return version{}, false, it.Err()
}

// result turns a version into what Get and GetAsOf answer.
func (s *versionedStore[K, V]) result(op string, v version, found bool) (VersionedRecord[V], bool, error) {
	if !found || v.value == nil {
		return VersionedRecord[V]{}, false, nil
	}
	val, err := s.valueSerde.Deserialize(s.topic, v.value)
	if err != nil {
		return VersionedRecord[V]{}, false, s.errorf(op, "deserialize value: %w", err)
	}
	return VersionedRecord[V]{Value: val, Timestamp: v.ts, ValidTo: v.validTo}, true, nil
}

func (s *versionedStore[K, V]) Get(key K) (VersionedRecord[V], bool, error) {
	p, err := s.key("get", key)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	v, found, err := s.find("get", p, ValidToOpen)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	return s.result("get", v, found)
}

func (s *versionedStore[K, V]) GetAsOf(key K, asOf int64) (VersionedRecord[V], bool, error) {
	p, err := s.key("get as of", key)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	if asOf < s.horizon() {
		// History retention has passed: only the latest version, when it
		// is old enough, is an answer; older ones may still be stored but
		// are not returned, for predictability (Kafka Streams' rule).
		v, found, err := s.find("get as of", p, ValidToOpen)
		if err != nil || !found || v.ts > asOf {
			return VersionedRecord[V]{}, false, err
		}
		return s.result("get as of", v, found)
	}
	v, found, err := s.find("get as of", p, asOf)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	return s.result("get as of", v, found)
}

func (s *versionedStore[K, V]) Put(key K, value V, timestamp int64) (int64, error) {
	if s.null(value) {
		return s.PutTombstone(key, timestamp)
	}
	p, err := s.key("put", key)
	if err != nil {
		return 0, err
	}
	b, err := s.valueSerde.Serialize(s.topic, value)
	if err != nil {
		return 0, s.errorf("put", "serialize value: %w", err)
	}
	return s.put("put", p, b, timestamp)
}

func (s *versionedStore[K, V]) PutTombstone(key K, timestamp int64) (int64, error) {
	p, err := s.key("put", key)
	if err != nil {
		return 0, err
	}
	return s.put("put", p, nil, timestamp)
}

func (s *versionedStore[K, V]) Delete(key K, timestamp int64) (VersionedRecord[V], bool, error) {
	p, err := s.key("delete", key)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	if timestamp < s.horizon() {
		return VersionedRecord[V]{}, false, nil
	}
	v, found, err := s.find("delete", p, timestamp)
	if err != nil {
		return VersionedRecord[V]{}, false, err
	}
	if _, err := s.put("delete", p, nil, timestamp); err != nil {
		return VersionedRecord[V]{}, false, err
	}
	return s.result("delete", v, found)
}

// put writes value (nil: a tombstone) as the version of prefix's key from
// ts, logs it, and drops the key's versions no read can reach any more.
func (s *versionedStore[K, V]) put(op string, prefix, value []byte, ts int64) (int64, error) {
	if ts < s.horizon() {
		return PutNotPut, nil
	}
	s.observed = max(s.observed, ts)
	validTo := PutValidToUndefined
	if ts < math.MaxInt64 {
		next, err := s.first(versionKey(prefix, ts+1), versionKey(prefix, math.MaxInt64))
		if err != nil {
			return 0, err
		}
		if next != nil {
			_, nts, err := DecodeVersionKey(next)
			if err != nil {
				return 0, s.errorf(op, "%w", err)
			}
			validTo = nts
		}
	}
	if err := s.inner.Put(versionKey(prefix, ts), EncodeVersionValue(value)); err != nil {
		return 0, err
	}
	if s.logging {
		if err := logChange(s.ctx, s.name, prefix[versionKeyLen:], value, ts, nil); err != nil {
			return 0, s.errorf(op, "log change: %w", err)
		}
	}
	if err := s.prune(op, prefix); err != nil {
		return 0, err
	}
	return validTo, nil
}

// prune deletes the key's versions whose validTo is at or before the
// horizon: every version at or before it but the newest of them, which
// may still be valid past it. A read as of the horizon or later never
// needs them, and one before it answers only from the latest version.
// So a key keeps at most one version older than the retention, besides
// those within it; a key never written again keeps what it had
// (decision 0035).
func (s *versionedStore[K, V]) prune(op string, prefix []byte) error {
	h := s.horizon()
	if h == math.MinInt64 {
		return nil
	}
	it, err := s.inner.Range(versionKey(prefix, math.MinInt64), versionKey(prefix, h))
	if err != nil {
		return err
	}
	var keys [][]byte
	for it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	err = it.Err()
	it.Close()
	if err != nil || len(keys) < 2 {
		return err
	}
	dels := make([]KeyValue[[]byte, []byte], len(keys)-1)
	for i, k := range keys[:len(keys)-1] {
		dels[i] = KeyValue[[]byte, []byte]{Key: k}
	}
	if err := s.inner.PutAll(dels); err != nil {
		return fmt.Errorf("store %q: %s: drop expired versions: %w", s.name, op, err)
	}
	return nil
}

// first is the first key of the byte store in [from, to], nil for none.
func (s *versionedStore[K, V]) first(from, to []byte) ([]byte, error) {
	it, err := s.inner.Range(from, to)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if it.Next() {
		return append([]byte(nil), it.Key()...), nil
	}
	return nil, it.Err()
}

// All iterates the latest value of every key whose latest version is not
// a tombstone, with its timestamp, as a timestamped store lists its
// entries (tools compare a table's contents this way: replay's store
// expectations). Keys come in the byte store's order, which the length
// prefix makes shorter serialized keys first, not key order.
func (s *versionedStore[K, V]) All() (KeyValueIterator[K, ValueAndTimestamp[V]], error) {
	if s.ctx == nil {
		return nil, s.errorf("all", "%w", ErrNotInitialized)
	}
	inner, err := s.inner.All()
	if err != nil {
		return nil, err
	}
	return &latestIterator[K, V]{s: s, inner: inner}, nil
}

// rawVersion is a byte-store entry read ahead, copied: an iterator's
// memory is reused by its next step.
type rawVersion struct{ key, value []byte }

// latestIterator yields each key's last entry, the latest version, when
// it holds a value.
type latestIterator[K, V any] struct {
	s       *versionedStore[K, V]
	inner   BytesIterator
	pending *rawVersion
	key     K
	value   ValueAndTimestamp[V]
	err     error
}

func (it *latestIterator[K, V]) read() *rawVersion {
	return &rawVersion{key: append([]byte(nil), it.inner.Key()...), value: append([]byte(nil), it.inner.Value()...)}
}

func (it *latestIterator[K, V]) Next() bool {
	for it.err == nil {
		last := it.pending
		it.pending = nil
		if last == nil {
			if !it.inner.Next() {
				return false
			}
			last = it.read()
		}
		k, _, err := DecodeVersionKey(last.key)
		if err != nil {
			it.err = it.s.errorf("all", "%w", err)
			return false
		}
		for it.inner.Next() {
			e := it.read()
			ek, _, err := DecodeVersionKey(e.key)
			if err != nil {
				it.err = it.s.errorf("all", "%w", err)
				return false
			}
			if string(ek) != string(k) {
				it.pending = e
				break
			}
			last = e
		}
		_, ts, _ := DecodeVersionKey(last.key)
		raw, err := DecodeVersionValue(last.value)
		if err != nil {
			it.err = it.s.errorf("all", "%w", err)
			return false
		}
		if raw == nil {
			continue
		}
		key, err := it.s.keySerde.Deserialize(it.s.topic, k)
		if err != nil {
			it.err = it.s.errorf("all", "deserialize key: %w", err)
			return false
		}
		v, err := it.s.valueSerde.Deserialize(it.s.topic, raw)
		if err != nil {
			it.err = it.s.errorf("all", "deserialize value: %w", err)
			return false
		}
		it.key, it.value = key, ValueAndTimestamp[V]{Value: v, Timestamp: ts}
		return true
	}
	return false
}

func (it *latestIterator[K, V]) Key() K                      { return it.key }
func (it *latestIterator[K, V]) Value() ValueAndTimestamp[V] { return it.value }
func (it *latestIterator[K, V]) Close() error                { return it.inner.Close() }

func (it *latestIterator[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.inner.Err()
}
