package dsl

import (
	"errors"
	"fmt"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"maps"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Suppress holds back a table's updates and forwards, per key, only the
// latest one once a trigger fires, as Kafka Streams' KTable.suppress. Three
// triggers exist, on two clocks:
//
//   - UntilWindowCloses: the watermark clock. A windowed table's key is
//     released when the frontier reaches its window's close (end + grace,
//     the table's own close-time rule). A record for a window that is
//     already closed at the record's floor is dropped and counted as
//     dropped.records.total{reason="late_window"}: the one late rule every
//     window operation uses. Released deletes (a null new value) are not
//     forwarded, as Kafka Streams drops tombstones from final results.
//   - UntilTimeLimit: the watermark clock. A key is released when the
//     frontier reaches the event time of the first update buffered for it
//     since its last release, plus the limit. Later updates replace the
//     buffered one but keep its place: the limit runs from the first.
//   - UntilBarrier: the commit barrier. Every key updated during an epoch is
//     released once, at the barrier that closes it. It reads no clock.
//
// The two watermark triggers span epochs, so their buffers live in a
// changelogged store (see suppress_buffer.go for its layout), restored like
// any other; the node needs event time, and Build refuses it where no
// watermark can move. UntilBarrier's buffer lives only inside one epoch: on
// a crash the epoch is reprocessed and rebuilds it, so it has no store.
//
// A release forwards the change from the value downstream last saw (the
// old value of the first update buffered) to the latest new value, with the
// latest update's timestamp and headers. Keys released together leave in
// buffer-time order, then in serialized-key order; for UntilWindowCloses
// the buffer time is the window's end, as in Kafka Streams.
//
// The processor is named by Named, else by the Suppressed's WithName, else
// "KTABLE-SUPPRESS-<n>"; its store is "<name>-store" when named, else
// "KTABLE-SUPPRESS-STATE-STORE-<n>" (Kafka Streams' KTableImpl.suppress).
// Misuse is reported by Build, naming the node: UntilWindowCloses on a
// table that is not windowed or with a buffer that emits early, an
// UntilBarrier buffer that emits early, a negative limit or bound.
//
// A suppressed table keeps its input's window close-time rule but has no
// store of its own. Under the two watermark triggers a join can look it up
// through the buffer, as Kafka Streams' KTableSuppressProcessorSupplier's
// value getter does: a key that is buffered reads what downstream saw
// last (the buffered prior value, with an unknown timestamp), any other
// key reads the input table. A table suppressed UntilBarrier cannot be
// looked up (its buffer has no store); Build refuses a join of it.
func (t KTable[K, V]) Suppress(s Suppressed, opts ...Named) KTable[K, V] {
	b := t.b
	name := named(opts)
	if name == "" {
		name = s.name
	}
	node, store := name, ""
	if name == "" {
		node = b.t.GeneratedName(suppressPrefix)
	}
	if s.trigger == trigWindowCloses || s.trigger == trigTimeLimit {
		// Kafka Streams names the processor, then the store; a given name
		// uses up no index.
		if store = name + "-store"; name == "" {
			store = b.newStoreName(suppressPrefix, "")
		}
	}
	windowOf, windowed := suppressWindowAccessor[K]()
	var closeTime func(window.Window) int64
	if t.meta != nil {
		closeTime = t.meta.closeTime
	}
	keys := serdeOrConfig(t.keySerde, true)
	var values serde.Serde[V]
	if s.trigger != trigBarrier || s.buffer.bytesBound {
		// The barrier buffer keeps values as they are and serializes them
		// only to weigh them.
		values = serdeOrConfig(t.valueSerde, false)
	}
	serdes := []any{keys}
	if values != nil {
		serdes = append(serdes, values)
	}
	opt := suppressOptions{
		node:      node,
		store:     store,
		trigger:   s.trigger,
		limitMs:   s.limit.Milliseconds(),
		buffer:    s.buffer,
		closeTime: closeTime,
		windowOf:  windowOf,
		keys:      serde.Erase(keys),
		values:    eraseSerde(values),
		serdes:    serdes,
	}
	switch s.trigger {
	case trigBarrier:
		b.t.AddProcessor(node, func() processor.Untyped { return &barrierSuppress{opt: opt} }, t.node)
	default:
		b.t.AddProcessor(node, func() processor.Untyped { return &timeSuppress{opt: opt} }, t.node)
	}
	for _, err := range s.check(closeTime != nil && windowed, t.node) {
		b.t.Fail(node, err)
	}
	if store != "" {
		// The buffer key is the table's serialized key; the lane that owns
		// it is picked by the key before the window suffix. Known for a
		// table that is not windowed and for a windowed aggregation's own
		// table; not for a windowed table derived from one (its meta
		// carries no suffix).
		suffix := -1
		switch {
		case !windowed:
			suffix = 0
		case t.meta != nil && t.meta.windowKeySuffix > 0:
			suffix = t.meta.windowKeySuffix
		}
		b.t.AddStateStore(suppressStore{KeyValueBuilder: s.buffer.storeBuilder(store), keySuffix: suffix}, node)
		b.t.RequireEventTime(node, "suppress")
	}
	meta := &tableMeta{closeTime: closeTime}
	if store != "" {
		meta.view = suppressView[K, V](t.meta, opt)
	} else {
		meta.noLookup = fmt.Errorf("cannot be looked up: it reads %s, suppressed until the barrier, whose buffer lives in the suppress processor's memory only: join before suppressing, or suppress until a time limit", node)
	}
	return KTable[K, V]{b: b, node: node, keySerde: t.keySerde, valueSerde: t.valueSerde, meta: meta, sources: t.sources}
}

// suppressView looks up a table suppressed by a watermark trigger (keys K,
// values V; parent is the suppressed input), as Kafka Streams'
// KTableSuppressProcessorSupplier.view: a key in the buffer reads its
// prior value, the value its last release (or the input before the first
// buffered update) left downstream, so that a join sees only what the
// suppression has let through; a key not buffered reads the parent, which
// then equals what was released. Only the suppress processor writes the
// buffer: the view reads its store and nothing of its in-memory index.
func suppressView[K, V any](parent *tableMeta, opt suppressOptions) *tableView {
	return &tableView{
		parents: []*tableMeta{parent},
		stores:  []string{opt.store},
		open: func(ctx processor.Context[any, any]) (lookup, error) {
			get, err := openLookup[K, V](ctx, parent)
			if err != nil {
				return nil, err
			}
			topic, err := opt.init(ctx)
			if err != nil {
				return nil, err
			}
			store, err := processor.KeyValueStore[[]byte, []byte](ctx, opt.store)
			if err != nil {
				return nil, err
			}
			return func(key any) (any, int64, error) {
				kb, err := opt.serializeKey(topic, key)
				if err != nil {
					return nil, 0, fmt.Errorf("suppress buffer %s: %w", opt.store, err)
				}
				stored, found, err := store.Get(kb)
				if err != nil {
					return nil, 0, fmt.Errorf("suppress buffer %s: %w", opt.store, err)
				}
				if !found {
					return get(key)
				}
				v, err := decodeSuppressValue(stored)
				if err != nil {
					return nil, 0, fmt.Errorf("suppress buffer %s: key %x: %w", opt.store, kb, err)
				}
				prior, err := opt.values.DeserializeAny(topic, v.prior)
				if err != nil || absent(prior) {
					if err != nil {
						err = fmt.Errorf("suppress buffer %s: deserialize prior value with serde %s: %w", opt.store, opt.values.Name(), err)
					}
					return nil, 0, err
				}
				return prior, suppressUnknownTimestamp, nil
			}, nil
		},
	}
}

// suppressUnknownTimestamp is the timestamp a buffered key's prior value
// is read with: the buffer keeps only the prior value, not when it was
// written, and Kafka Streams answers RecordQueue.UNKNOWN (-1) there. A
// table-table join takes the larger of its two sides' timestamps, so the
// other side's wins.
const suppressUnknownTimestamp = -1

// suppressPrefix is Kafka Streams' prefix for suppress nodes and stores.
const suppressPrefix = "KTABLE-SUPPRESS-"

// Errors of Suppress, reported by Build against the suppress node.
var (
	errSuppressNoTrigger   = errors.New("suppressed has no trigger: build it with UntilWindowCloses, UntilTimeLimit or UntilBarrier")
	errSuppressNotWindowed = errors.New("untilWindowCloses needs a windowed table")
	errSuppressEager       = errors.New("buffer emits early when full")
	errSuppressNegative    = errors.New("negative")
)

// suppressTrigger is what releases a suppress buffer.
type suppressTrigger int

const (
	trigNone suppressTrigger = iota
	trigWindowCloses
	trigTimeLimit
	trigBarrier
)

// Suppressed says when a suppressed table releases its updates and how much
// it may hold meanwhile. Build one with UntilWindowCloses, UntilTimeLimit or
// UntilBarrier; the zero value has no trigger and is refused by Build.
type Suppressed struct {
	trigger suppressTrigger
	limit   time.Duration
	buffer  BufferConfig
	name    string
}

// UntilWindowCloses releases each window's final result once the window
// closes. The table must be windowed, and the buffer strict (it must not
// emit early: an early emission is not a final result); a full buffer with
// ShutDownWhenFull fails processing. This is Kafka Streams'
// Suppressed.untilWindowCloses, on the watermark instead of the
// processor's stream time.
func UntilWindowCloses(buffer BufferConfig) Suppressed {
	return Suppressed{trigger: trigWindowCloses, buffer: buffer}
}

// UntilTimeLimit releases a key once the watermark is limit past the event
// time of the first update buffered for it; limit is counted in whole
// milliseconds. Any buffer will do; one that emits early releases its
// oldest keys ahead of time when full. This is Kafka Streams'
// Suppressed.untilTimeLimit, on the watermark.
func UntilTimeLimit(limit time.Duration, buffer BufferConfig) Suppressed {
	return Suppressed{trigger: trigTimeLimit, limit: limit, buffer: buffer}
}

// UntilBarrier releases every key updated during an epoch once, at the
// commit barrier that closes the epoch, so that downstream sees one coherent
// update per key per commit. It never releases an intermediate update early:
// the buffer must be strict, and a bounded one with ShutDownWhenFull fails
// processing when full. In the test driver, which commits after every pipe
// by default, it releases every record at once; turn
// test.driver.commit-per-pipe off and call CommitBarrier to see epochs.
func UntilBarrier(buffer BufferConfig) Suppressed {
	return Suppressed{trigger: trigBarrier, buffer: buffer}
}

// WithName names the suppress processor, and its store "<name>-store", as
// Kafka Streams' Suppressed.withName does.
func (s Suppressed) WithName(name string) Suppressed {
	s.name = name
	return s
}

// check reports what is wrong with s for a table; windowed says whether the
// table has windowed keys and a close-time rule. parent names the table.
func (s Suppressed) check(windowed bool, parent string) []error {
	var errs []error
	if s.trigger == trigNone {
		return []error{errSuppressNoTrigger}
	}
	errs = append(errs, s.buffer.check()...)
	switch s.trigger {
	case trigWindowCloses:
		if !windowed {
			errs = append(errs, fmt.Errorf("%w, but table %s has no window close time: suppress a windowed aggregation's table", errSuppressNotWindowed, parent))
		}
		if !s.buffer.strict() {
			errs = append(errs, fmt.Errorf("untilWindowCloses needs a strict buffer (ShutDownWhenFull or Unbounded), but the %w: an early emission is not a final result", errSuppressEager))
		}
	case trigTimeLimit:
		if s.limit < 0 {
			errs = append(errs, fmt.Errorf("untilTimeLimit: time limit %s is %w", s.limit, errSuppressNegative))
		}
	case trigBarrier:
		if !s.buffer.strict() {
			errs = append(errs, fmt.Errorf("untilBarrier never releases an intermediate update early, but the %w: bound it with ShutDownWhenFull, or use Unbounded", errSuppressEager))
		}
	}
	return errs
}

// BufferConfig bounds what a suppress buffer holds, in records and in
// serialized bytes (key, values, headers and timestamps), and says what
// happens when a bound is exceeded: emit early (release the keys buffered
// longest ago until it fits) or shut down (fail processing). The zero value
// is Unbounded.
//
// Kafka Streams has two types for this (BufferConfig and
// StrictBufferConfig); here strictness is checked by Build instead: a
// buffer is strict when it shuts down when full, or has no bound at all.
type BufferConfig struct {
	maxRecords, maxBytes     int64
	recordsBound, bytesBound bool
	emitEarly                bool
	loggingSet, logging      bool
	logConfig                map[string]string
}

// Unbounded is a buffer with no bound: it never fills up, so it is strict.
func Unbounded() BufferConfig { return BufferConfig{} }

// MaxRecords is a buffer of at most n records that emits early when full,
// as Kafka Streams' BufferConfig.maxRecords.
func MaxRecords(n int64) BufferConfig { return BufferConfig{emitEarly: true}.WithMaxRecords(n) }

// MaxBytes is a buffer of at most n serialized bytes that emits early when
// full, as Kafka Streams' BufferConfig.maxBytes.
func MaxBytes(n int64) BufferConfig { return BufferConfig{emitEarly: true}.WithMaxBytes(n) }

// WithMaxRecords bounds the number of buffered records (keys).
func (c BufferConfig) WithMaxRecords(n int64) BufferConfig {
	c.maxRecords, c.recordsBound = n, true
	return c
}

// WithMaxBytes bounds the serialized size of the buffer.
func (c BufferConfig) WithMaxBytes(n int64) BufferConfig {
	c.maxBytes, c.bytesBound = n, true
	return c
}

// WithNoBound removes both bounds; the buffer shuts down when full, which
// it never is, as Kafka Streams' withNoBound.
func (c BufferConfig) WithNoBound() BufferConfig {
	c.maxRecords, c.maxBytes, c.recordsBound, c.bytesBound = 0, 0, false, false
	c.emitEarly = false
	return c
}

// EmitEarlyWhenFull makes a full buffer release its oldest keys (by buffer
// time, then key) until it fits again.
func (c BufferConfig) EmitEarlyWhenFull() BufferConfig {
	c.emitEarly = true
	return c
}

// ShutDownWhenFull makes a full buffer fail the record that overfilled it,
// with a *BufferFullError, whatever the processing exception handler says.
func (c BufferConfig) ShutDownWhenFull() BufferConfig {
	c.emitEarly = false
	return c
}

// WithLoggingDisabled keeps the buffer of a watermark trigger without a
// changelog: it is lost with the instance. UntilBarrier has no changelog to
// disable and ignores it.
func (c BufferConfig) WithLoggingDisabled() BufferConfig {
	c.loggingSet, c.logging, c.logConfig = true, false, nil
	return c
}

// WithLoggingEnabled sets the buffer changelog's topic configuration.
func (c BufferConfig) WithLoggingEnabled(cfg map[string]string) BufferConfig {
	c.loggingSet, c.logging, c.logConfig = true, true, maps.Clone(cfg)
	return c
}

// strict reports whether the buffer never emits early: it shuts down when
// full, or cannot be full.
func (c BufferConfig) strict() bool {
	return !c.emitEarly || (!c.recordsBound && !c.bytesBound)
}

// over reports whether records and bytes exceed the bounds.
func (c BufferConfig) over(records, bytes int64) bool {
	return (c.recordsBound && records > c.maxRecords) || (c.bytesBound && bytes > c.maxBytes)
}

func (c BufferConfig) check() []error {
	var errs []error
	if c.recordsBound && c.maxRecords < 0 {
		errs = append(errs, fmt.Errorf("buffer: max records %d is %w", c.maxRecords, errSuppressNegative))
	}
	if c.bytesBound && c.maxBytes < 0 {
		errs = append(errs, fmt.Errorf("buffer: max bytes %d is %w", c.maxBytes, errSuppressNegative))
	}
	return errs
}

// limits describes the bounds for errors: "2 records", "2 records, 100
// bytes".
func (c BufferConfig) limits() string {
	var parts []string
	if c.recordsBound {
		parts = append(parts, suppressPlural(c.maxRecords, "record"))
	}
	if c.bytesBound {
		parts = append(parts, suppressPlural(c.maxBytes, "byte"))
	}
	return strings.Join(parts, ", ")
}

// suppressPlural renders a count with its unit: "1 record", "2 records".
func suppressPlural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// storeBuilder describes the store of a watermark trigger's buffer: raw
// bytes in memory whatever default.dsl.store says, as Kafka Streams'
// suppress buffer is (KTableImpl.suppress builds an
// InMemoryTimeOrderedKeyValueChangeBuffer), changelogged unless the
// config disables it: a restart restores it from the changelog.
func (c BufferConfig) storeBuilder(name string) *state.KeyValueBuilder[[]byte, []byte] {
	sb := state.KeyValueStoreBuilder(name, serde.Bytes(), serde.Bytes(), state.InMemory())
	if c.loggingSet {
		if !c.logging {
			return sb.WithLoggingDisabled()
		}
		return sb.WithLoggingEnabled(c.logConfig)
	}
	return sb
}

// SuppressBuffer is implemented by the store builder of a suppress
// buffer (topology.StoreInfo.Builder), for tools that write the buffer's
// changelog from elsewhere: a migration of Kafka Streams' suppress
// changelog (migrate/). The engine itself does not use it.
type SuppressBuffer interface {
	state.StoreBuilder
	// SuppressKeySuffix is how many bytes of a buffer key follow the key
	// that picks the entry's lane: 8 for a time-windowed table (the
	// window start), 16 for a session-windowed one (end, start), 0 for a
	// table that is not windowed. A changelog record of the buffer must
	// carry the lane hash of the key without them. ok is false when the
	// suppressed table's key layout is not known (a windowed table
	// derived from a windowed aggregation by a table operation).
	SuppressKeySuffix() (n int, ok bool)
}

// suppressStore is the buffer's store builder, telling its key layout.
type suppressStore struct {
	*state.KeyValueBuilder[[]byte, []byte]
	keySuffix int
}

func (s suppressStore) SuppressKeySuffix() (int, bool) { return s.keySuffix, s.keySuffix >= 0 }

// SuppressBufferValue is the changelog value of one buffer entry in this
// engine's layout (see suppress_buffer.go), for tools that write the
// buffer's changelog: bufferTime is the event time of the first update
// buffered since the last release (a window's end under
// UntilWindowCloses), timestamp and headers the latest update's, prior the
// old value of the first update buffered (nil for null), newValue the
// latest update's new value (nil for null). Values are serialized by the
// suppressed table's value serde.
func SuppressBufferValue(bufferTime, timestamp int64, headers processor.Headers, prior, newValue []byte) []byte {
	return encodeSuppressValue(suppressValue{bufferTime: bufferTime, timestamp: timestamp, headers: headers, prior: prior, newValue: newValue})
}

// DecodeSuppressBufferValue reads what SuppressBufferValue writes, for
// tools that read the buffer's changelog (the way back of a migration).
func DecodeSuppressBufferValue(b []byte) (bufferTime, timestamp int64, headers processor.Headers, prior, newValue []byte, err error) {
	v, err := decodeSuppressValue(b)
	if err != nil {
		return 0, 0, nil, nil, nil, err
	}
	return v.bufferTime, v.timestamp, v.headers, v.prior, v.newValue, nil
}

// BufferFullError fails the record that overfilled a suppress buffer that
// shuts down when full. Records and Bytes are what the buffer held awaiting
// release (keys the floor had already made due are not counted: the next
// frontier releases them).
type BufferFullError struct {
	// Node is the suppress processor.
	Node string
	// Limits describes the bounds, e.g. "2 records".
	Limits  string
	Records int64
	// Bytes is -1 when the buffer does not weigh what it holds: an
	// UntilBarrier buffer without a byte bound keeps values unserialized.
	Bytes int64
}

func (e *BufferFullError) Error() string {
	held := suppressPlural(e.Records, "record")
	if e.Bytes >= 0 {
		held += ", " + suppressPlural(e.Bytes, "byte")
	}
	return fmt.Sprintf("suppress %s: buffer exceeded its limit of %s (shut down when full): it holds %s", e.Node, e.Limits, held)
}

// Fatal makes the runtime fail the record whatever the processing
// exception handler says: continuing would silently drop the guarantee the
// strict buffer was chosen for.
func (e *BufferFullError) Fatal() bool { return true }

// suppressOptions is what Suppress hands its processors; it is shared by
// every instance and never written after the build.
type suppressOptions struct {
	node, store string
	trigger     suppressTrigger
	limitMs     int64
	buffer      BufferConfig
	// closeTime and windowOf are set for windowed tables.
	closeTime func(window.Window) int64
	windowOf  func(key any) (window.Window, bool)
	keys      serde.Any
	// values is nil for an UntilBarrier buffer without a byte bound.
	values serde.Any
	// serdes are the typed serdes, some of which resolve from the
	// configuration at Init.
	serdes []any
}

// init resolves the serdes and returns the topic they are handed: the
// changelog's when the buffer has one, as Kafka Streams' buffer does, so
// that registry-backed serdes register under a topic that exists.
func (o *suppressOptions) init(ctx processor.Context[any, any]) (string, error) {
	if err := configureSerdes(ctx, o.serdes); err != nil {
		return "", fmt.Errorf("serdes of suppress buffer: %w", err)
	}
	if o.store == "" {
		return o.node, nil
	}
	if !o.buffer.loggingSet || o.buffer.logging {
		return topology.ChangelogTopic(ctx.ApplicationID(), o.store), nil
	}
	return o.store, nil
}

// serializeKey serializes a record key; a key that serializes to null
// cannot be buffered (nor ordered).
func (o *suppressOptions) serializeKey(topic string, key any) ([]byte, error) {
	kb, err := o.keys.SerializeAny(topic, key)
	if err != nil {
		return nil, fmt.Errorf("serialize key with serde %s: %w", o.keys.Name(), err)
	}
	if kb == nil {
		return nil, fmt.Errorf("serialize key with serde %s: %w", o.keys.Name(), state.ErrNilKey)
	}
	return kb, nil
}

func (o *suppressOptions) serializeValue(topic string, v any) ([]byte, error) {
	if absent(v) {
		return nil, nil
	}
	b, err := o.values.SerializeAny(topic, v)
	if err != nil {
		return nil, fmt.Errorf("serialize value with serde %s: %w", o.values.Name(), err)
	}
	return b, nil
}

// bufferFull is the error a shut-down buffer fails with, holding records
// and bytes awaiting release.
func (o *suppressOptions) bufferFull(records, bytes int64) error {
	return &BufferFullError{Node: o.node, Limits: o.buffer.limits(), Records: records, Bytes: bytes}
}

// suppressNoFrontier is the frontier before the first watermark pass.
const suppressNoFrontier = math.MinInt64

// timeSuppress is the processor of the two watermark triggers. Process
// buffers; OnWatermark releases what the frontier has made due. Process
// also releases, at once, a key the last frontier already made due (an
// out-of-order record under UntilTimeLimit), as Kafka Streams' expiry check
// after each record does, rather than holding it until the watermark next
// moves.
type timeSuppress struct {
	opt      suppressOptions
	ctx      processor.Context[any, any]
	topic    string
	buf      *suppressBuffer
	frontier int64
}

func (p *timeSuppress) Init(ctx processor.Context[any, any]) error {
	p.ctx, p.frontier = ctx, suppressNoFrontier
	topic, err := p.opt.init(ctx)
	if err != nil {
		return err
	}
	p.topic = topic
	store, err := processor.KeyValueStore[[]byte, []byte](ctx, p.opt.store)
	if err != nil {
		return err
	}
	// The store may hold what a previous instance buffered (restored from
	// the changelog); the release order is rebuilt from it.
	buf, err := loadSuppressBuffer(store, p.releaseTime)
	if err != nil {
		return fmt.Errorf("suppress buffer %s: %w", p.opt.store, err)
	}
	p.buf = buf
	return nil
}

func (p *timeSuppress) Close() error { return nil }

// releaseTime is when the frontier releases a key buffered at bufferTime:
// its window's close for UntilWindowCloses, bufferTime + limit for
// UntilTimeLimit. It is derived, never stored, so a changed limit applies
// to restored keys too.
func (p *timeSuppress) releaseTime(key []byte, bufferTime int64) (int64, error) {
	if p.opt.trigger == trigTimeLimit {
		return suppressAddSat(bufferTime, p.opt.limitMs), nil
	}
	k, err := p.opt.keys.DeserializeAny(p.topic, key)
	if err != nil {
		return 0, fmt.Errorf("deserialize key with serde %s: %w", p.opt.keys.Name(), err)
	}
	w, err := p.window(k)
	if err != nil {
		return 0, err
	}
	return p.opt.closeTime(w), nil
}

func (p *timeSuppress) window(key any) (window.Window, error) {
	w, ok := p.opt.windowOf(key)
	if !ok {
		return window.Window{}, fmt.Errorf("record key is a %T, not a windowed key", key)
	}
	return w, nil
}

func (p *timeSuppress) Process(rec processor.Erased) error {
	c, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	if absent(rec.Key) {
		droppedNullKey(p.ctx)
		return nil
	}
	var bufferTime, release int64
	if p.opt.trigger == trigWindowCloses {
		w, err := p.window(rec.Key)
		if err != nil {
			return err
		}
		// The one late rule: a window whose close is at or before the
		// floor is closed, and a closed window never changes again.
		if release = p.opt.closeTime(w); window.Closed(release, p.ctx.Floor()) {
			dropLate(p.ctx, metrics.ReasonLateWindow, rec, w, release)
			return nil
		}
		bufferTime = w.End
	} else {
		bufferTime = rec.Timestamp
		release = suppressAddSat(bufferTime, p.opt.limitMs)
	}
	key, err := p.opt.serializeKey(p.topic, rec.Key)
	if err != nil {
		return err
	}
	newValue, err := p.opt.serializeValue(p.topic, c.New)
	if err != nil {
		return fmt.Errorf("new value: %w", err)
	}
	oldValue := func() ([]byte, error) { return p.opt.serializeValue(p.topic, c.Old) }
	if err := p.buf.put(key, bufferTime, release, rec.Timestamp, rec.Headers, newValue, oldValue); err != nil {
		return fmt.Errorf("suppress buffer %s: %w", p.opt.store, err)
	}
	if p.frontier != suppressNoFrontier {
		if err := p.releaseDue(p.frontier); err != nil {
			return err
		}
	}
	return p.enforceBounds()
}

// enforceBounds applies the buffer's bounds after a record was buffered.
// Keys already due at the record's floor do not count: the next frontier
// releases them, and Kafka Streams would have released them before
// checking (in the test driver the floor is the frontier about to come).
// When the rest does not fit, an emit-early buffer releases keys in
// release order, the due ones first, until it does; a shut-down buffer
// fails the record.
func (p *timeSuppress) enforceBounds() error {
	cfg := p.opt.buffer
	if !cfg.over(p.buf.records(), p.buf.bytes) {
		return nil
	}
	floor := p.ctx.Floor()
	dueRecords, dueBytes := p.buf.dueAt(floor)
	for cfg.over(p.buf.records()-dueRecords, p.buf.bytes-dueBytes) {
		if !cfg.emitEarly {
			return p.opt.bufferFull(p.buf.records()-dueRecords, p.buf.bytes-dueBytes)
		}
		e, _ := p.buf.first()
		if window.Closed(e.release, floor) {
			dueRecords, dueBytes = dueRecords-1, dueBytes-e.size
		}
		if err := p.release(e); err != nil {
			return err
		}
	}
	return nil
}

// OnWatermark releases every key whose release time the frontier reached.
func (p *timeSuppress) OnWatermark(frontier int64) error {
	p.frontier = max(p.frontier, frontier)
	return p.releaseDue(p.frontier)
}

func (p *timeSuppress) releaseDue(frontier int64) error {
	for {
		e, ok := p.buf.first()
		if !ok || e.release > frontier {
			return nil
		}
		if err := p.release(e); err != nil {
			return err
		}
	}
}

// release takes e out of the buffer and forwards it. UntilWindowCloses
// forwards no deletes: Kafka Streams drops tombstones from final results,
// where they only mean "nothing to report".
func (p *timeSuppress) release(e *suppressEntry) error {
	v, err := p.buf.take(e)
	if err != nil {
		return fmt.Errorf("suppress buffer %s: %w", p.opt.store, err)
	}
	key, err := p.opt.keys.DeserializeAny(p.topic, []byte(e.key))
	if err != nil {
		return fmt.Errorf("suppress buffer %s: deserialize key with serde %s: %w", p.opt.store, p.opt.keys.Name(), err)
	}
	newValue, err := p.opt.values.DeserializeAny(p.topic, v.newValue)
	if err != nil {
		return fmt.Errorf("suppress buffer %s: deserialize new value with serde %s: %w", p.opt.store, p.opt.values.Name(), err)
	}
	if newValue == nil && p.opt.trigger == trigWindowCloses {
		return nil
	}
	oldValue, err := p.opt.values.DeserializeAny(p.topic, v.prior)
	if err != nil {
		return fmt.Errorf("suppress buffer %s: deserialize old value with serde %s: %w", p.opt.store, p.opt.values.Name(), err)
	}
	p.ctx.Forward(processor.Erased{Key: key, Value: change{New: newValue, Old: oldValue}, Timestamp: v.timestamp, Headers: v.headers})
	return nil
}

// barrierSuppress is the processor of UntilBarrier: it keeps the latest
// update of each key in memory and releases them all at the barrier.
type barrierSuppress struct {
	opt     suppressOptions
	ctx     processor.Context[any, any]
	topic   string
	entries map[string]*suppressBarrierEntry
	bytes   int64
}

// suppressBarrierEntry is one key buffered until the barrier.
type suppressBarrierEntry struct {
	key        string
	record     processor.Erased
	bufferTime int64
	// prior is the old value of the key's first update in the epoch: what
	// downstream saw last.
	prior any
	size  int64
}

func (p *barrierSuppress) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	p.entries = map[string]*suppressBarrierEntry{}
	topic, err := p.opt.init(ctx)
	p.topic = topic
	return err
}

func (p *barrierSuppress) Close() error { return nil }

func (p *barrierSuppress) Process(rec processor.Erased) error {
	c, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	if absent(rec.Key) {
		droppedNullKey(p.ctx)
		return nil
	}
	kb, err := p.opt.serializeKey(p.topic, rec.Key)
	if err != nil {
		return err
	}
	e, ok := p.entries[string(kb)]
	if !ok {
		e = &suppressBarrierEntry{key: string(kb), bufferTime: rec.Timestamp, prior: c.Old}
		p.entries[e.key] = e
	}
	e.record = rec
	if p.opt.buffer.bytesBound {
		size, err := p.weigh(kb, rec, c.New, e.prior)
		if err != nil {
			return err
		}
		p.bytes += size - e.size
		e.size = size
	}
	// Never evict: an intermediate released early is the inconsistent
	// answer this buffer exists to prevent. Build refused emit-early.
	if p.opt.buffer.over(int64(len(p.entries)), p.bytes) {
		bytes := p.bytes
		if !p.opt.buffer.bytesBound {
			bytes = -1
		}
		return p.opt.bufferFull(int64(len(p.entries)), bytes)
	}
	return nil
}

// weigh is the serialized size of a buffered key, counted as the
// watermark triggers' store counts it.
func (p *barrierSuppress) weigh(key []byte, rec processor.Erased, newValue, prior any) (int64, error) {
	nb, err := p.opt.serializeValue(p.topic, newValue)
	if err != nil {
		return 0, fmt.Errorf("new value: %w", err)
	}
	ob, err := p.opt.serializeValue(p.topic, prior)
	if err != nil {
		return 0, fmt.Errorf("old value: %w", err)
	}
	return suppressEntrySize(key, rec.Headers, ob, nb), nil
}

// OnBarrier releases every key buffered in the epoch, in buffer-time, then
// key order, and empties the buffer.
func (p *barrierSuppress) OnBarrier() error {
	if len(p.entries) == 0 {
		return nil
	}
	out := make([]*suppressBarrierEntry, 0, len(p.entries))
	for _, e := range p.entries {
		out = append(out, e)
	}
	clear(p.entries)
	p.bytes = 0
	sortBarrierEntries(out)
	for _, e := range out {
		c, _ := e.record.Value.(change)
		rec := e.record
		rec.Value = change{New: c.New, Old: e.prior}
		p.ctx.Forward(rec)
	}
	return nil
}

// suppressWindowAccessor returns how to read the window of a key of type
// K, and whether K is a window.Windowed instantiation at all. Windowed[K]
// is generic, so no interface covers every instantiation; reflection finds
// the field once and reads it per record.
func suppressWindowAccessor[K any]() (func(any) (window.Window, bool), bool) {
	t := reflect.TypeFor[K]()
	wt := reflect.TypeFor[window.Window]()
	if t.Kind() != reflect.Struct || t.PkgPath() != wt.PkgPath() || !strings.HasPrefix(t.Name(), "Windowed[") {
		return func(any) (window.Window, bool) { return window.Window{}, false }, false
	}
	f, ok := t.FieldByName("Window")
	if !ok || f.Type != wt {
		return func(any) (window.Window, bool) { return window.Window{}, false }, false
	}
	return func(key any) (window.Window, bool) {
		v := reflect.ValueOf(key)
		if !v.IsValid() || v.Type() != t {
			return window.Window{}, false
		}
		w, ok := v.FieldByIndex(f.Index).Interface().(window.Window)
		return w, ok
	}, true
}

// suppressAddSat adds without overflowing, so that a huge limit means
// "never" instead of wrapping into the past.
func suppressAddSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

var _ SuppressBuffer = suppressStore{}
