package state

import (
	"fmt"
	"math"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// KindSession is the kind of session stores.
const KindSession Kind = "session"

// SessionStore keeps session aggregates by key and session window, as Kafka
// Streams' SessionStore. Sessions are closed windows [Start, End] (see
// package window), identified by key, start and end together.
//
// # Changelog layout
//
// Exactly Kafka Streams' (ChangeLoggingSessionBytesStore with
// SessionKeySchema): the key is the serialized key followed by the session
// end and then its start, each 8 bytes big-endian (EncodeSessionKey); the
// value is the serialized aggregate, nil for a removal; the record timestamp
// is that of the record being processed.
//
// # Byte-store layout
//
// As for window stores (see WindowStore), two indexes in one byte store:
//
//	0x00 | segment | key | end | start  ->  aggregate   key-first: FindSessions, FetchSession
//	0x01 | end | start | key            ->  empty       time-first: FindSessionsAll, Expire
//
// where segment is the end's segment (see segments.go).
// with both times 8 bytes big-endian, sign bit flipped. These are the layouts
// of Kafka Streams' own time-ordered session store (PrefixedSessionKeySchemas:
// KeyFirstSessionKeySchema and TimeFirstSessionKeySchema), but for the prefix
// values and the time encoding. The key-first index holds a key's sessions in
// end order, then start order. The time-first index orders all sessions by
// end, which is the order in which they close, then start, then key bytes,
// for emitting closed sessions and expiring old ones without reading every
// key.
//
// # Without the time index
//
// A store built WithoutTimeIndex keeps the key-first index alone, as a
// window store can (see WindowStore): a put or a remove writes one entry.
// FindSessionsAll then reads the segments from earliestSessionEnd's on
// whole and sorts what it keeps, in the order above.
//
// # Retention
//
// Expire(frontier) hides every session whose end <= frontier - retention,
// and drops the segments wholly before that horizon,
// Kafka Streams' rule (InMemorySessionStore keeps a session while end >
// observedStreamTime - retentionPeriod). Later aggregates for a dropped
// session are dropped too, and not logged. Expiry itself is not logged.
//
// Like every typed store, a session store belongs to one task: writes come
// from one goroutine at a time. Reads may run alongside.
type SessionStore[K, V any] interface {
	Store
	// Put stores agg for the session. A null agg removes the session, as in
	// Kafka Streams. A session that ends before it starts is an error.
	Put(session window.Windowed[K], agg V) error
	// Remove deletes the session and logs a tombstone, whether or not the
	// store held it.
	Remove(session window.Windowed[K]) error
	// FetchSession returns the aggregate of key's session [start, end].
	FetchSession(key K, start, end int64) (V, bool, error)
	// FindSessions iterates over key's sessions that end at or after
	// earliestSessionEnd and start at or before latestSessionStart: those a
	// record could merge with. They come in end order, then start order.
	FindSessions(key K, earliestSessionEnd, latestSessionStart int64) (KeyValueIterator[window.Windowed[K], V], error)
	// FindSessionsAll is FindSessions across all keys, ordered by end, then
	// start, then serialized key: the order in which sessions close, so a
	// caller emitting closed sessions can stop at the first end past its
	// bound.
	FindSessionsAll(earliestSessionEnd, latestSessionStart int64) (KeyValueIterator[window.Windowed[K], V], error)
	// Expire drops the sessions that frontier has moved out of retention:
	// those with end <= frontier - retention.
	Expire(frontier int64) error
}

// SessionBuilder builds session stores. Logging is enabled by default, as
// in Kafka Streams.
type SessionBuilder[K, V any] struct {
	builderBase
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   BytesSupplier
	retention  int64
	// segmentInterval is 0 for DefaultSegmentInterval.
	segmentInterval int64
	// keyIndexOnly leaves the time-first index out (WithoutTimeIndex).
	keyIndexOnly bool
}

// SessionStoreBuilder describes a session store named name that keeps
// sessions for retention past the frontier, whose bytes live in a store from
// supplier. The retention is kept in whole milliseconds.
func SessionStoreBuilder[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], retention time.Duration, supplier BytesSupplier) *SessionBuilder[K, V] {
	b := &SessionBuilder[K, V]{
		builderBase: newBuilderBase(name, KindSession, keySerde, valueSerde, supplier),
		keySerde:    keySerde,
		valueSerde:  valueSerde,
		supplier:    supplier,
		retention:   retention.Milliseconds(),
	}
	b.enableLogging(windowedLogConfig(b.retention, nil))
	return b
}

// Retention is how long, in milliseconds, the store keeps a session past
// the frontier.
func (b *SessionBuilder[K, V]) Retention() int64 { return b.retention }

// WithLoggingEnabled turns the changelog on; cfg's entries override the
// windowed defaults (cleanup.policy=compact,delete, retention.ms = retention
// plus a day).
func (b *SessionBuilder[K, V]) WithLoggingEnabled(cfg map[string]string) *SessionBuilder[K, V] {
	b.enableLogging(windowedLogConfig(b.retention, cfg))
	return b
}

func (b *SessionBuilder[K, V]) WithLoggingDisabled() *SessionBuilder[K, V] {
	b.disableLogging()
	return b
}

// WithSegmentInterval sets the segment interval, in whole milliseconds:
// the unit in which expiry drops sessions, by end (see SessionStore).
func (b *SessionBuilder[K, V]) WithSegmentInterval(d time.Duration) *SessionBuilder[K, V] {
	b.segmentInterval = d.Milliseconds()
	return b
}

// WithoutTimeIndex keeps the key-first index alone (see SessionStore,
// "Without the time index"): for a store its processor reads key by key
// and expires, never scanning it by end, as a session aggregation that
// emits on every update does. A put or a remove then writes one entry
// instead of two.
func (b *SessionBuilder[K, V]) WithoutTimeIndex() *SessionBuilder[K, V] {
	b.keyIndexOnly = true
	return b
}

// KeyIndexOnly tells whether the store keeps no time index
// (WithoutTimeIndex).
func (b *SessionBuilder[K, V]) KeyIndexOnly() bool { return b.keyIndexOnly }

// SegmentInterval is the store's segment interval in milliseconds: what
// WithSegmentInterval set, else DefaultSegmentInterval of the retention.
func (b *SessionBuilder[K, V]) SegmentInterval() int64 {
	if b.segmentInterval > 0 {
		return b.segmentInterval
	}
	return DefaultSegmentInterval(b.retention)
}

// Build returns a store that implements SessionStore[K, V], Restorer and
// BytesBacked.
func (b *SessionBuilder[K, V]) Build() (Store, error) {
	inner, err := checkBuild(b.name, b.keySerde, b.valueSerde, b.supplier)
	if err != nil {
		return nil, err
	}
	if b.retention < 0 {
		return nil, fmt.Errorf("build store %q: retention %dms is negative", b.name, b.retention)
	}
	if b.segmentInterval < 0 {
		return nil, fmt.Errorf("build store %q: segment interval %dms is negative", b.name, b.segmentInterval)
	}
	s := &sessionStore[K, V]{valuedCore[K, V]{codec: plainCodec[V]{serde: b.valueSerde, null: nullCheckFor[V]()}}}
	s.setup(b.name, b.kind, inner, b.keySerde, b.logging, b.retention, b.segmentInterval)
	s.keyIndexOnly, s.timeFirstOf = b.keyIndexOnly, sessionTimeFirstOf
	return s, nil
}

// sessionSuffix is what follows the key in a key-first session entry.
const sessionSuffix = 2 * timestampSize

// sessionKeyFirst is the key-first entry of key's session [start, end], in
// segment seg (the segment of end).
func sessionKeyFirst(seg int64, key []byte, start, end int64) []byte {
	b := make([]byte, 0, 1+timestampSize+len(key)+sessionSuffix)
	b = append(b, indexKeyFirst)
	b = appendOrderedTime(b, seg)
	b = append(b, key...)
	b = appendOrderedTime(b, end)
	return appendOrderedTime(b, start)
}

func sessionTimeFirst(key []byte, start, end int64) []byte {
	b := make([]byte, 0, 1+len(key)+sessionSuffix)
	b = append(b, indexTimeFirst)
	b = appendOrderedTime(b, end)
	b = appendOrderedTime(b, start)
	return append(b, key...)
}

// decodeSessionKeyFirst splits a key-first session entry; key aliases b.
func decodeSessionKeyFirst(b []byte) (seg int64, key []byte, start, end int64, ok bool) {
	n := len(b) - sessionSuffix
	if n < 1+timestampSize || b[0] != indexKeyFirst {
		return 0, nil, 0, 0, false
	}
	return readOrderedTime(b[1:]), b[1+timestampSize : n : n], readOrderedTime(b[n+timestampSize:]), readOrderedTime(b[n:]), true
}

// sessionTimeFirstOf is the time-first entry of a key-first session entry.
func sessionTimeFirstOf(keyFirst []byte) ([]byte, bool) {
	_, key, start, end, ok := decodeSessionKeyFirst(keyFirst)
	if !ok {
		return nil, false
	}
	return sessionTimeFirst(key, start, end), true
}

// decodeSessionTimeFirst splits a time-first session entry; key aliases b.
func decodeSessionTimeFirst(b []byte) (key []byte, start, end int64, ok bool) {
	if len(b) < 1+sessionSuffix || b[0] != indexTimeFirst {
		return nil, 0, 0, false
	}
	return b[1+sessionSuffix:], readOrderedTime(b[1+timestampSize:]), readOrderedTime(b[1:]), true
}

// sessionStore is the typed session store.
type sessionStore[K, V any] struct {
	valuedCore[K, V]
}

// keyFirst is the key-first entry of key's session [start, end].
func (s *sessionStore[K, V]) keyFirst(kb []byte, start, end int64) []byte {
	return sessionKeyFirst(segmentOf(end, s.segs.interval), kb, start, end)
}

func (s *sessionStore[K, V]) Put(session window.Windowed[K], agg V) error {
	const op = "put"
	if err := s.ready(op); err != nil {
		return err
	}
	w := session.Window
	if w.Start > w.End {
		return s.errorf(op, "session [%d, %d] ends before it starts", w.Start, w.End)
	}
	kb, err := s.serializeKey(op, session.Key)
	if err != nil {
		return err
	}
	stored, logged, ts, err := s.codec.encode(s.topic, agg, s.ctx)
	if err != nil {
		return s.errorf(op, "%w", err)
	}
	if stored == nil {
		return s.remove(op, kb, w, ts)
	}
	if s.expired(w.End) {
		return nil
	}
	seg, err := s.noteSegment(w.End)
	if err != nil {
		return s.errorf(op, "%w", err)
	}
	epoch, ok := writeEpoch(s.inner)
	s.times.wrote(epoch, ok, w.End)
	if err := s.inner.PutAll(s.entries(
		KeyValue[[]byte, []byte]{Key: sessionKeyFirst(seg, kb, w.Start, w.End), Value: stored},
		func() KeyValue[[]byte, []byte] {
			return KeyValue[[]byte, []byte]{Key: sessionTimeFirst(kb, w.Start, w.End), Value: timeIndexValue}
		})); err != nil {
		return err
	}
	return s.log(op, EncodeSessionKey(kb, w.Start, w.End), logged, ts)
}

func (s *sessionStore[K, V]) Remove(session window.Windowed[K]) error {
	const op = "remove"
	if err := s.ready(op); err != nil {
		return err
	}
	kb, err := s.serializeKey(op, session.Key)
	if err != nil {
		return err
	}
	return s.remove(op, kb, session.Window, s.ctx.RecordTimestamp())
}

func (s *sessionStore[K, V]) remove(op string, kb []byte, w window.Window, ts int64) error {
	if err := s.inner.PutAll(s.entries(
		KeyValue[[]byte, []byte]{Key: s.keyFirst(kb, w.Start, w.End)},
		func() KeyValue[[]byte, []byte] {
			return KeyValue[[]byte, []byte]{Key: sessionTimeFirst(kb, w.Start, w.End)}
		})); err != nil {
		return err
	}
	return s.log(op, EncodeSessionKey(kb, w.Start, w.End), nil, ts)
}

func (s *sessionStore[K, V]) FetchSession(key K, start, end int64) (V, bool, error) {
	const op = "fetch session"
	var zero V
	if err := s.ready(op); err != nil {
		return zero, false, err
	}
	kb, err := s.serializeKey(op, key)
	if err != nil {
		return zero, false, err
	}
	if s.expired(end) {
		return zero, false, nil
	}
	stored, err := s.inner.Get(s.keyFirst(kb, start, end))
	if err != nil || stored == nil {
		return zero, false, err
	}
	v, err := s.codec.decode(s.topic, stored)
	if err != nil {
		return zero, false, s.errorf(op, "%w", err)
	}
	return v, true, nil
}

func (s *sessionStore[K, V]) FindSessions(key K, earliestSessionEnd, latestSessionStart int64) (KeyValueIterator[window.Windowed[K], V], error) {
	const op = "find sessions"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	kb, err := s.serializeKey(op, key)
	if err != nil {
		return nil, err
	}
	// Sessions of this key ending at or after earliestSessionEnd, whatever
	// their start; the start bound is a filter, as in Kafka Streams. Each
	// segment from earliestSessionEnd's on is scanned, in end order, from
	// the epochs' writes alone when none of those sessions is older
	// (epochTimes, by session end; decision 0056).
	earliestSessionEnd = max(earliestSessionEnd, s.liveFrom.Load())
	inner, err := s.scanSegments(segmentOf(earliestSessionEnd, s.segs.interval), math.MaxInt64, s.rangeFrom(earliestSessionEnd), func(seg int64) ([]byte, []byte) {
		return sessionKeyFirst(seg, kb, math.MinInt64, earliestSessionEnd), sessionKeyFirst(seg, kb, math.MaxInt64, math.MaxInt64)
	})
	if err != nil {
		return nil, err
	}
	width := 1 + timestampSize + len(kb) + sessionSuffix
	return &entryIterator[window.Windowed[K], V]{
		inner: inner,
		accept: func(k, v []byte) (windowedEntry, bool, error) {
			// Between bounds that share the key's bytes, an entry of the
			// same length is an entry of this key.
			if len(k) != width {
				return windowedEntry{}, false, nil
			}
			_, key, start, end, _ := decodeSessionKeyFirst(k)
			if start > latestSessionStart {
				return windowedEntry{}, false, nil
			}
			return windowedEntry{key: key, start: start, end: end, value: v}, true, nil
		},
		key:   s.windowedKey,
		value: s.decodeValue,
	}, nil
}

func (s *sessionStore[K, V]) FindSessionsAll(earliestSessionEnd, latestSessionStart int64) (KeyValueIterator[window.Windowed[K], V], error) {
	const op = "find sessions all"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	earliestSessionEnd = max(earliestSessionEnd, s.liveFrom.Load())
	if s.keyIndexOnly {
		return s.findSessionsAllByKey(earliestSessionEnd, latestSessionStart)
	}
	lo, hi := timeFirstBounds(earliestSessionEnd, math.MaxInt64)
	inner, err := s.inner.Range(lo, hi)
	if err != nil {
		return nil, err
	}
	return &entryIterator[window.Windowed[K], V]{
		inner: inner,
		accept: func(k, _ []byte) (windowedEntry, bool, error) {
			key, start, end, ok := decodeSessionTimeFirst(k)
			if !ok {
				return windowedEntry{}, false, s.errorf("iterate", "malformed index entry %x", k)
			}
			if start > latestSessionStart {
				return windowedEntry{}, false, nil
			}
			v, err := s.inner.Get(s.keyFirst(key, start, end))
			if err != nil || v == nil {
				// nil: removed since the scan began.
				return windowedEntry{}, false, err
			}
			return windowedEntry{key: key, start: start, end: end, value: v}, true, nil
		},
		key:   s.windowedKey,
		value: s.decodeValue,
	}, nil
}

// findSessionsAllByKey is FindSessionsAll without the time-first index.
func (s *sessionStore[K, V]) findSessionsAllByKey(earliestSessionEnd, latestSessionStart int64) (KeyValueIterator[window.Windowed[K], V], error) {
	return s.scanByTime(segmentOf(earliestSessionEnd, s.segs.interval), math.MaxInt64, func(k []byte) (windowedEntry, bool) {
		_, key, start, end, ok := decodeSessionKeyFirst(k)
		return windowedEntry{key: key, start: start, end: end}, ok && end >= earliestSessionEnd && start <= latestSessionStart
	})
}

func (s *sessionStore[K, V]) Expire(frontier int64) error { return s.expire(frontier) }

// Restore applies changelog records in Kafka Streams' layout (see
// SessionStore), a nil value removing the session. It needs no Init, and
// checks every record before writing any. Records for sessions already
// expired are skipped; Restore does not expire by itself, so call Expire with
// the restored frontier afterwards.
func (s *sessionStore[K, V]) Restore(records []ChangelogRecord) error {
	entries := make([]KeyValue[[]byte, []byte], 0, 2*len(records))
	for i, r := range records {
		key, start, end, err := DecodeSessionKey(r.Key)
		if err != nil {
			return s.errorf("restore", "record %d: %w", i, err)
		}
		if s.expired(end) {
			continue
		}
		stored := s.codec.fromChangelog(r.Value, r.Timestamp)
		seg, err := s.noteSegment(end)
		if err != nil {
			return s.errorf("restore", "%w", err)
		}
		epoch, ok := writeEpoch(s.inner)
		s.times.wrote(epoch, ok, end)
		kf := sessionKeyFirst(seg, key, start, end)
		tf := func() KeyValue[[]byte, []byte] {
			if stored == nil {
				return KeyValue[[]byte, []byte]{Key: sessionTimeFirst(key, start, end)}
			}
			return KeyValue[[]byte, []byte]{Key: sessionTimeFirst(key, start, end), Value: timeIndexValue}
		}
		entries = append(entries, s.entries(KeyValue[[]byte, []byte]{Key: kf, Value: stored}, tf)...)
	}
	return s.inner.PutAll(s.withMark(entries))
}
