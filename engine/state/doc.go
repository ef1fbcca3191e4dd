// Package state holds the state stores processors read and write.
//
// Two layers. KeyValueBytesStore is the byte-level store: sorted raw keys and
// values, range and prefix scans, no serdes. It is the seam for backends (the
// in-memory store here, RocksDB later) and for the live engine's per-epoch
// write layers, which stack uncommitted writes over committed state. The
// typed stores sit on top: they serialize with the store's serdes and, when
// logging is enabled, send every change to the store's changelog topic.
//
// Terms:
//   - A key-value store (KeyValueStore) maps keys to values; a timestamped
//     one (TimestampedKeyValueStore) keeps each value with the timestamp of
//     the record that wrote it.
//   - A versioned store (VersionedKeyValueStore, Kafka Streams' KIP-889)
//     keeps every version of a key: a value or a tombstone valid from its
//     timestamp (validFrom) until the key's next version (validTo), the
//     newest valid until further notice. History retention is how long
//     versions stay readable behind the store's observed stream time (the
//     largest timestamp it was given); a put older than that is dropped,
//     and a read as of an older time answers only from the latest
//     version. See versioned.go.
//   - A window store (WindowStore, TimestampedWindowStore) keeps values by
//     key and window start, one per key and window, or every put when it
//     retains duplicates (stream-stream joins). A session store
//     (SessionStore) keeps aggregates by key and session [start, end].
//   - Retention is how long a window or session store keeps a window past
//     the frontier. Expiry is explicit: a store drops nothing by itself, its
//     owner calls Expire(frontier), and a later write for a window already
//     past retention is dropped.
//   - A segment is a span of SegmentInterval milliseconds of window starts
//     (session ends): the unit in which expiry removes entries, by range
//     deletes (RangeDeleter). Reads hide what is past retention in a
//     segment not yet dropped. See segments.go.
//   - The changelog layout is what a store writes to its changelog topic;
//     the byte-store layout is how it lays its entries out in the
//     KeyValueBytesStore. They differ for window and session stores.
//   - A held word is 8 bytes the in-memory store keeps beside each key for
//     the changelog's coalescer, which notes there where it holds the key's
//     last write of the epoch (HeldLogger; decision 0021). The store only
//     zeroes it and hands out its address.
//
// Changelog layouts match Kafka Streams', because migration reads Kafka
// Streams changelogs into our stores: the changelog key is the serialized key
// (for window stores followed by the window start and a sequence number, for
// session stores by the session end and start, see EncodeWindowKey and
// EncodeSessionKey), the value the serialized value (nil for a delete); a
// timestamped store's timestamp travels as the record timestamp, not in the
// value, as does a versioned store's version timestamp (every write of a
// versioned store is logged, never coalesced: task.Output.Uncoalesced).
//
// Window and session stores keep two indexes in one byte store, told apart
// by their first byte: key first, for a key's windows, and time first (by
// window start, or session end), so that scans by time and expiry need not
// read every key. window.go and session.go document the layouts.
//
// Changes are logged synchronously, through Context.LogChange, as each write
// happens; there is no caching layer here. (The live engine's lanes keep
// only each key's last write of an epoch before it reaches the changelog:
// engine/lanes' coalescer.) A plain store's changelog records carry
// the timestamp of the record being processed; a timestamped store's carry
// the value's own timestamp, and its deletes the record's. Expiry is not
// logged. Restorer replays a changelog into a store without logging it
// again; the timestamped stores put the timestamp back in front of each
// value as they do so.
//
// InMemory is the in-memory backend, ordered by unsigned bytes. An
// iterator's keys are fixed when it is opened: writes through the store
// while it is open, which processors make as they scan, neither break it nor
// add keys to it. Whether it sees a value written, or a key deleted, after
// it was opened is not part of the contract.
//
// A StoreBuilder describes a store in a topology; the runtime calls Build once
// per task that owns the store. KeyValueStoreBuilder,
// TimestampedKeyValueStoreBuilder, VersionedKeyValueStoreBuilder,
// WindowStoreBuilder, TimestampedWindowStoreBuilder and SessionStoreBuilder
// are the builders for the typed stores; logging is on unless disabled, as
// in Kafka Streams.
package state
