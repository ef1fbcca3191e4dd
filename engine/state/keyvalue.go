package state

import (
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// ChangelogRecord is one record of a store's changelog topic, as restoration
// and migration read it: the key and value exactly as they are on the topic
// (Value nil for a tombstone) and the record's timestamp.
type ChangelogRecord struct {
	Key, Value []byte
	Timestamp  int64
}

// Restorer is a store that can be rebuilt from its changelog. Restore writes
// the records to the backing byte store in order, without logging them
// again: they came from the changelog.
type Restorer interface {
	Restore(records []ChangelogRecord) error
}

// BytesBacked is a typed store that exposes the byte store it sits on, for
// the runtime's write layers and for tools that copy raw state.
type BytesBacked interface {
	Bytes() KeyValueBytesStore
}

// builderBase is what the typed store builders share: everything a topology
// description needs without knowing the store's types.
type builderBase struct {
	name           string
	kind           Kind
	backend        string
	logging        bool
	logConfig      map[string]string
	keySerdeName   string
	valueSerdeName string
	// keySerde and valueSerde are the serdes erased, for tools that
	// decode a store's bytes from elsewhere (Serdes).
	keySerde, valueSerde serde.Any
}

// Serdes are the store's key and value serdes, erased (a value serde of
// the value alone, without a timestamped store's timestamp), for tools
// that check bytes written elsewhere against them: a migration samples
// Kafka Streams' changelog records with them (migrate/). Either is nil
// when the builder was given none.
func (b *builderBase) Serdes() (key, value serde.Any) { return b.keySerde, b.valueSerde }

func (b *builderBase) Name() string         { return b.name }
func (b *builderBase) Kind() Kind           { return b.kind }
func (b *builderBase) Backend() string      { return b.backend }
func (b *builderBase) LoggingEnabled() bool { return b.logging }

// LogConfig returns a copy so that descriptions cannot alter the builder.
func (b *builderBase) LogConfig() map[string]string { return maps.Clone(b.logConfig) }

func (b *builderBase) KeySerdeName() string   { return b.keySerdeName }
func (b *builderBase) ValueSerdeName() string { return b.valueSerdeName }

func (b *builderBase) enableLogging(cfg map[string]string) {
	b.logging = true
	b.logConfig = maps.Clone(cfg)
}

// disableLogging also drops the topic config, as Kafka Streams'
// withLoggingDisabled does: there is no topic for it to configure.
func (b *builderBase) disableLogging() {
	b.logging = false
	b.logConfig = nil
}

func newBuilderBase[K, V any](name string, kind Kind, keySerde serde.Serde[K], valueSerde serde.Serde[V], supplier BytesSupplier) builderBase {
	b := builderBase{name: name, kind: kind, logging: true}
	if supplier != nil {
		b.backend = supplier.Name()
	}
	if keySerde != nil {
		b.keySerdeName = keySerde.Name()
		b.keySerde = serde.Erase(keySerde)
	}
	if valueSerde != nil {
		b.valueSerdeName = valueSerde.Name()
		b.valueSerde = serde.Erase(valueSerde)
	}
	return b
}

func checkBuild[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], supplier BytesSupplier) (KeyValueBytesStore, error) {
	switch {
	case name == "":
		return nil, errors.New("build store: name is empty")
	case keySerde == nil:
		return nil, fmt.Errorf("build store %q: key serde is nil", name)
	case valueSerde == nil:
		return nil, fmt.Errorf("build store %q: value serde is nil", name)
	case supplier == nil:
		return nil, fmt.Errorf("build store %q: bytes supplier is nil", name)
	}
	inner := supplier.Get(name)
	if inner == nil {
		return nil, fmt.Errorf("build store %q: supplier %q returned no store", name, supplier.Name())
	}
	return inner, nil
}

// KeyValueBuilder builds typed key-value stores. Logging is enabled by
// default, as in Kafka Streams.
type KeyValueBuilder[K, V any] struct {
	builderBase
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   BytesSupplier
}

// KeyValueStoreBuilder describes a key-value store named name whose bytes
// live in a store from supplier.
func KeyValueStoreBuilder[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], supplier BytesSupplier) *KeyValueBuilder[K, V] {
	return &KeyValueBuilder[K, V]{
		builderBase: newBuilderBase(name, KindKeyValue, keySerde, valueSerde, supplier),
		keySerde:    keySerde,
		valueSerde:  valueSerde,
		supplier:    supplier,
	}
}

// WithLoggingEnabled turns the changelog on with cfg as its topic config.
func (b *KeyValueBuilder[K, V]) WithLoggingEnabled(cfg map[string]string) *KeyValueBuilder[K, V] {
	b.enableLogging(cfg)
	return b
}

func (b *KeyValueBuilder[K, V]) WithLoggingDisabled() *KeyValueBuilder[K, V] {
	b.disableLogging()
	return b
}

// Build returns a store that implements KeyValueStore[K, V], Restorer and
// BytesBacked.
func (b *KeyValueBuilder[K, V]) Build() (Store, error) {
	inner, err := checkBuild(b.name, b.keySerde, b.valueSerde, b.supplier)
	if err != nil {
		return nil, err
	}
	return &keyValueStore[K, V]{
		name:     b.name,
		inner:    inner,
		keySerde: b.keySerde,
		codec:    plainCodec[V]{serde: b.valueSerde, null: nullCheckFor[V]()},
		logging:  b.logging,
	}, nil
}

// valueCodec is where plain and timestamped stores differ: how a value is
// laid out in the byte store and in the changelog.
type valueCodec[V any] interface {
	// encode returns the byte-store value (nil to delete), the changelog
	// value and the changelog record's timestamp.
	encode(topic string, v V, ctx Context) (stored, logged []byte, ts int64, err error)
	decode(topic string, stored []byte) (V, error)
	// fromChangelog turns a changelog record's value into byte-store bytes.
	fromChangelog(value []byte, ts int64) []byte
}

// plainCodec stores the serialized value as is; changelog records carry the
// timestamp of the record being processed.
type plainCodec[V any] struct {
	serde serde.Serde[V]
	null  func(V) bool
}

func (c plainCodec[V]) encode(topic string, v V, ctx Context) ([]byte, []byte, int64, error) {
	ts := ctx.RecordTimestamp()
	if c.null(v) {
		return nil, nil, ts, nil
	}
	b, err := c.serde.Serialize(topic, v)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("serialize value: %w", err)
	}
	// A serializer that returns nil means null, as in Kafka: the write
	// becomes a delete.
	return b, b, ts, nil
}

func (c plainCodec[V]) decode(topic string, stored []byte) (V, error) {
	v, err := c.serde.Deserialize(topic, stored)
	if err != nil {
		return v, fmt.Errorf("deserialize value: %w", err)
	}
	return v, nil
}

func (plainCodec[V]) fromChangelog(value []byte, _ int64) []byte { return value }

// nullCheckFor returns how to tell that a V is null. Only nil-able kinds can
// be; the reflection runs once per store, not per write.
func nullCheckFor[V any]() func(V) bool {
	switch reflect.TypeFor[V]().Kind() {
	case reflect.Interface:
		return func(v V) bool { return any(v) == nil }
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return func(v V) bool { return reflect.ValueOf(v).IsNil() }
	default:
		return func(V) bool { return false }
	}
}

// keyValueStore is the typed store over a byte store, for both plain and
// timestamped values. Writes go to the byte store and then, synchronously,
// to the changelog; there is no caching layer.
//
// Errors from the byte store pass through unwrapped: byte stores already
// name the store in their errors.
type keyValueStore[K, V any] struct {
	name     string
	inner    KeyValueBytesStore
	keySerde serde.Serde[K]
	codec    valueCodec[V]
	logging  bool

	ctx Context
	// topic is what the serdes see: the changelog topic, or the store name
	// when logging is off.
	topic string
}

func (s *keyValueStore[K, V]) Name() string { return s.name }

func (s *keyValueStore[K, V]) Init(ctx Context) error {
	if ctx == nil {
		return fmt.Errorf("store %q: init: context is nil", s.name)
	}
	topic := s.name
	if s.logging {
		topic = ctx.ChangelogTopic(s.name)
		// Writing without a changelog would lose state on restore; refuse
		// rather than silently drop changes.
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

func (s *keyValueStore[K, V]) Flush() error     { return s.inner.Flush() }
func (s *keyValueStore[K, V]) Close() error     { return s.inner.Close() }
func (s *keyValueStore[K, V]) Persistent() bool { return s.inner.Persistent() }

func (s *keyValueStore[K, V]) Bytes() KeyValueBytesStore { return s.inner }

// Restore needs no Init: it neither serializes nor logs, so migration can
// fill a store before any runtime exists.
func (s *keyValueStore[K, V]) Restore(records []ChangelogRecord) error {
	entries := make([]KeyValue[[]byte, []byte], len(records))
	for i, r := range records {
		entries[i] = KeyValue[[]byte, []byte]{Key: r.Key, Value: s.codec.fromChangelog(r.Value, r.Timestamp)}
	}
	return s.inner.PutAll(entries)
}

func (s *keyValueStore[K, V]) errorf(op, format string, args ...any) error {
	return fmt.Errorf("store %q: %s: "+format, append([]any{s.name, op}, args...)...)
}

func (s *keyValueStore[K, V]) ready(op string) error {
	if s.ctx == nil {
		return s.errorf(op, "%w", ErrNotInitialized)
	}
	return nil
}

// serializeKey may return bytes that share key's memory (a String key's
// own bytes, serde.SerializeView): the byte store copies the keys it
// keeps, and nothing here writes to a key's bytes.
func (s *keyValueStore[K, V]) serializeKey(op string, key K) ([]byte, error) {
	b, err := serde.SerializeView(s.keySerde, s.topic, key)
	if err != nil {
		return nil, s.errorf(op, "serialize key: %w", err)
	}
	if b == nil {
		return nil, s.errorf(op, "serialize key: %w", ErrNilKey)
	}
	return b, nil
}

func (s *keyValueStore[K, V]) decode(op string, stored []byte) (V, bool, error) {
	if stored == nil {
		var zero V
		return zero, false, nil
	}
	v, err := s.codec.decode(s.topic, stored)
	if err != nil {
		return v, false, s.errorf(op, "%w", err)
	}
	return v, true, nil
}

func (s *keyValueStore[K, V]) log(op string, key, value []byte, ts int64) error {
	return s.logHeld(op, key, value, ts, nil)
}

// logHeld is log with the held word of key's record (HeldLogger).
func (s *keyValueStore[K, V]) logHeld(op string, key, value []byte, ts int64, held *uint64) error {
	if !s.logging {
		return nil
	}
	if err := logChange(s.ctx, s.name, key, value, ts, held); err != nil {
		return s.errorf(op, "log change: %w", err)
	}
	return nil
}

func (s *keyValueStore[K, V]) Get(key K) (V, bool, error) {
	var zero V
	if err := s.ready("get"); err != nil {
		return zero, false, err
	}
	kb, err := s.serializeKey("get", key)
	if err != nil {
		return zero, false, err
	}
	stored, err := s.inner.Get(kb)
	if err != nil {
		return zero, false, err
	}
	return s.decode("get", stored)
}

// Put with a null value deletes the key, as Kafka Streams' put(key, null)
// does, and logs a tombstone.
func (s *keyValueStore[K, V]) Put(key K, value V) error {
	if err := s.ready("put"); err != nil {
		return err
	}
	kb, err := s.serializeKey("put", key)
	if err != nil {
		return err
	}
	stored, logged, ts, err := s.codec.encode(s.topic, value, s.ctx)
	if err != nil {
		return s.errorf("put", "%w", err)
	}
	held, err := putHeld(s.inner, kb, stored)
	if err != nil {
		return err
	}
	return s.logHeld("put", kb, logged, ts, held)
}

// PutIfAbsent logs only when it wrote, as Kafka Streams' change-logging
// store does.
func (s *keyValueStore[K, V]) PutIfAbsent(key K, value V) (V, bool, error) {
	var zero V
	if err := s.ready("put if absent"); err != nil {
		return zero, false, err
	}
	kb, err := s.serializeKey("put if absent", key)
	if err != nil {
		return zero, false, err
	}
	stored, logged, ts, err := s.codec.encode(s.topic, value, s.ctx)
	if err != nil {
		return zero, false, s.errorf("put if absent", "%w", err)
	}
	prev, err := s.inner.PutIfAbsent(kb, stored)
	if err != nil {
		return zero, false, err
	}
	if prev != nil {
		return s.decode("put if absent", prev)
	}
	return zero, false, s.log("put if absent", kb, logged, ts)
}

// PutAll serializes every entry before writing any, so a serde failure
// leaves both the store and the changelog untouched.
func (s *keyValueStore[K, V]) PutAll(entries []KeyValue[K, V]) error {
	if err := s.ready("put all"); err != nil {
		return err
	}
	type change struct {
		logged []byte
		ts     int64
	}
	raw := make([]KeyValue[[]byte, []byte], len(entries))
	changes := make([]change, len(entries))
	for i, e := range entries {
		kb, err := s.serializeKey("put all", e.Key)
		if err != nil {
			return err
		}
		stored, logged, ts, err := s.codec.encode(s.topic, e.Value, s.ctx)
		if err != nil {
			return s.errorf("put all", "%w", err)
		}
		raw[i] = KeyValue[[]byte, []byte]{Key: kb, Value: stored}
		changes[i] = change{logged: logged, ts: ts}
	}
	if err := s.inner.PutAll(raw); err != nil {
		return err
	}
	for i, c := range changes {
		if err := s.log("put all", raw[i].Key, c.logged, c.ts); err != nil {
			return err
		}
	}
	return nil
}

// Delete logs a tombstone even when the key was absent, as Kafka Streams
// does: the changelog may hold a value the local store has not seen.
func (s *keyValueStore[K, V]) Delete(key K) (V, bool, error) {
	var zero V
	if err := s.ready("delete"); err != nil {
		return zero, false, err
	}
	kb, err := s.serializeKey("delete", key)
	if err != nil {
		return zero, false, err
	}
	old, err := s.inner.Delete(kb)
	if err != nil {
		return zero, false, err
	}
	if err := s.log("delete", kb, nil, s.ctx.RecordTimestamp()); err != nil {
		return zero, false, err
	}
	return s.decode("delete", old)
}

// Range scans by serialized key order, which is the key order only for
// serdes that preserve it (big-endian unsigned integers, strings); Kafka
// Streams has the same caveat.
func (s *keyValueStore[K, V]) Range(from, to K) (KeyValueIterator[K, V], error) {
	return s.rangeScan("range", from, to, KeyValueBytesStore.Range)
}

func (s *keyValueStore[K, V]) ReverseRange(from, to K) (KeyValueIterator[K, V], error) {
	return s.rangeScan("reverse range", from, to, KeyValueBytesStore.ReverseRange)
}

func (s *keyValueStore[K, V]) rangeScan(op string, from, to K, scan func(KeyValueBytesStore, []byte, []byte) (BytesIterator, error)) (KeyValueIterator[K, V], error) {
	if err := s.ready(op); err != nil {
		return nil, err
	}
	fb, err := s.serializeKey(op, from)
	if err != nil {
		return nil, err
	}
	tb, err := s.serializeKey(op, to)
	if err != nil {
		return nil, err
	}
	return s.wrap(op, func() (BytesIterator, error) { return scan(s.inner, fb, tb) })
}

func (s *keyValueStore[K, V]) PrefixScan(prefix []byte) (KeyValueIterator[K, V], error) {
	return s.wrap("prefix scan", func() (BytesIterator, error) { return s.inner.PrefixScan(prefix) })
}

func (s *keyValueStore[K, V]) All() (KeyValueIterator[K, V], error) {
	return s.wrap("all", s.inner.All)
}

func (s *keyValueStore[K, V]) ReverseAll() (KeyValueIterator[K, V], error) {
	return s.wrap("reverse all", s.inner.ReverseAll)
}

func (s *keyValueStore[K, V]) ApproximateNumEntries() (int64, error) {
	return s.inner.ApproximateNumEntries()
}

func (s *keyValueStore[K, V]) wrap(op string, open func() (BytesIterator, error)) (KeyValueIterator[K, V], error) {
	if err := s.ready(op); err != nil {
		return nil, err
	}
	inner, err := open()
	if err != nil {
		return nil, err
	}
	return &keyValueIterator[K, V]{store: s, inner: inner}, nil
}

// keyValueIterator deserializes lazily: a scan that reads only keys never
// pays for values. A serde failure ends the iteration and shows in Err.
type keyValueIterator[K, V any] struct {
	store *keyValueStore[K, V]
	inner BytesIterator

	valid    bool
	key      K
	value    V
	hasKey   bool
	hasValue bool
	err      error
}

func (it *keyValueIterator[K, V]) Next() bool {
	if it.err != nil {
		return false
	}
	var zk K
	var zv V
	it.key, it.value, it.hasKey, it.hasValue = zk, zv, false, false
	it.valid = it.inner.Next()
	return it.valid
}

func (it *keyValueIterator[K, V]) Key() K {
	// Before Next or past the end there are no bytes, and nil must never
	// reach a serde.
	if it.valid && !it.hasKey && it.err == nil {
		k, err := it.store.keySerde.Deserialize(it.store.topic, it.inner.Key())
		if err != nil {
			it.err = it.store.errorf("iterate", "deserialize key: %w", err)
			return it.key
		}
		it.key, it.hasKey = k, true
	}
	return it.key
}

func (it *keyValueIterator[K, V]) Value() V {
	if it.valid && !it.hasValue && it.err == nil {
		v, err := it.store.codec.decode(it.store.topic, it.inner.Value())
		if err != nil {
			it.err = it.store.errorf("iterate", "%w", err)
			return it.value
		}
		it.value, it.hasValue = v, true
	}
	return it.value
}

func (it *keyValueIterator[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.inner.Err()
}

func (it *keyValueIterator[K, V]) Close() error { return it.inner.Close() }
