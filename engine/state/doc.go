// Package state holds the state stores processors read and write.
//
// Two layers. KeyValueBytesStore is the byte-level store: sorted raw keys and
// values, range and prefix scans, no serdes. It is the seam for backends (the
// in-memory store here, RocksDB later) and for the live engine's per-epoch
// write layers, which stack uncommitted writes over committed state. The
// typed stores (KeyValueStore, TimestampedKeyValueStore) sit on top: they
// serialize with the store's serdes and, when logging is enabled, send every
// change to the store's changelog topic.
//
// Changelog layouts match Kafka Streams', because migration reads Kafka
// Streams changelogs into our stores: the changelog key is the serialized key,
// the value the serialized value (nil for a delete); a timestamped store's
// timestamp travels as the record timestamp, not in the value.
//
// Changes are logged synchronously, through Context.LogChange, as each write
// happens; there is no caching layer. A plain store's changelog records carry
// the timestamp of the record being processed; a timestamped store's carry
// the value's own timestamp, and its deletes the record's. Restorer replays a
// changelog into a store without logging it again; the timestamped store puts
// the timestamp back in front of each value as it does so.
//
// InMemory is the in-memory backend: a B-tree ordered by unsigned bytes.
// Its iterators read a copy-on-write snapshot taken when they are opened, so
// they see the store as it was then, whatever the caller writes meanwhile.
//
// A StoreBuilder describes a store in a topology; the runtime calls Build once
// per task that owns the store. KeyValueStoreBuilder and
// TimestampedKeyValueStoreBuilder are the builders for the typed stores;
// logging is on unless disabled, as in Kafka Streams.
package state
