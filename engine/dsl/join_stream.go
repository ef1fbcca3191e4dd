package dsl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"math"
	"slices"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Stream-stream joins, in Kafka Streams' shape (KStreamImplJoin,
// KStreamJoinWindow, KStreamKStreamJoin) with StoatFlow's event-time rules.
//
// Each input gets its own pair of processors, fed by that input's node:
//
//	this input  --> WINDOWED (this) --> JOINTHIS  --\
//	                                                 MERGE --> result
//	other input --> WINDOWED (other) --> JOINOTHER --/
//
// The side of a record is the edge it arrived on, never its source: the
// processors of a side are built knowing which side they are, so a
// self-join (both inputs one node), a chained join and a merged leg lose
// nothing. WINDOWED drops records whose window has closed, forwards the rest
// to its join processor and keeps them in its side's window store;
// JOINTHIS (JOINOTHER) looks each record up in the other side's store. For
// left and outer joins an outer store shared by both join processors keeps
// the records that found no partner; when the frontier passes a record's
// window close, JOINTHIS emits it joined with the zero value, once, and a
// record matched before that is removed from the outer store.

// Kafka Streams' prefixes for the nodes and stores of stream-stream joins.
const (
	streamJoinWindowedPrefix    = "KSTREAM-WINDOWED-"
	streamJoinThisPrefix        = "KSTREAM-JOINTHIS-"
	streamJoinOtherPrefix       = "KSTREAM-JOINOTHER-"
	streamJoinOuterThisPrefix   = "KSTREAM-OUTERTHIS-"
	streamJoinOuterOtherPrefix  = "KSTREAM-OUTEROTHER-"
	streamJoinOuterSharedPrefix = "KSTREAM-OUTERSHARED-"
)

// streamJoinEventTime is why a stream-stream join needs a moving watermark.
const streamJoinEventTime = "stream-stream join"

var errOuterStoreEncoding = errors.New("malformed outer join store value")

// StreamJoined configures a stream-stream join, as Kafka Streams'
// StreamJoined: the serdes of the key and of both sides' values, the name
// of the join's processors, the base name of its stores, their backends
// and changelogs. Unlike Joined it has no grace period: a stream-stream
// join takes its grace from window.JoinWindows alone.
type StreamJoined[K, V, VO any] struct {
	name            string
	storeName       string
	keySerde        serde.Serde[K]
	valueSerde      serde.Serde[V]
	otherValueSerde serde.Serde[VO]
	thisSupplier    state.BytesSupplier
	otherSupplier   state.BytesSupplier
	logging         bool
	loggingSet      bool
	logConfig       map[string]string
}

// StreamJoinedWith sets the serdes of the key, this side's values and the
// other side's values. A nil serde is left to the stream's known serde, or
// to the configured default.
func StreamJoinedWith[K, V, VO any](k serde.Serde[K], v serde.Serde[V], vo serde.Serde[VO]) StreamJoined[K, V, VO] {
	return StreamJoined[K, V, VO]{keySerde: k, valueSerde: v, otherValueSerde: vo}
}

// StreamJoinedAs sets the base name of the join's stores (and so of their
// changelog topics): "<name>-this-join-store", "<name>-other-join-store"
// and, for left and outer joins, "<name>-left-shared-join-store" or
// "<name>-outer-shared-join-store", with Kafka Streams' "outer-" variants
// of the first two for the outer sides.
func StreamJoinedAs[K, V, VO any](storeName string) StreamJoined[K, V, VO] {
	return StreamJoined[K, V, VO]{storeName: storeName}
}

// WithName names the join's processors "<name>-this-windowed",
// "<name>-other-windowed", "<name>-this-join" (or "-outer-this-join"),
// "<name>-other-join" (or "-outer-other-join") and "<name>-merge", and its
// re-key boundaries "<name>-left-repartition" and "<name>-right-repartition".
func (j StreamJoined[K, V, VO]) WithName(name string) StreamJoined[K, V, VO] {
	j.name = name
	return j
}

// WithStoreName sets the base name of the join's stores (see StreamJoinedAs).
func (j StreamJoined[K, V, VO]) WithStoreName(name string) StreamJoined[K, V, VO] {
	j.storeName = name
	return j
}

// WithKeySerde sets the key serde.
func (j StreamJoined[K, V, VO]) WithKeySerde(s serde.Serde[K]) StreamJoined[K, V, VO] {
	j.keySerde = s
	return j
}

// WithValueSerde sets the serde of this side's values.
func (j StreamJoined[K, V, VO]) WithValueSerde(s serde.Serde[V]) StreamJoined[K, V, VO] {
	j.valueSerde = s
	return j
}

// WithOtherValueSerde sets the serde of the other side's values.
func (j StreamJoined[K, V, VO]) WithOtherValueSerde(s serde.Serde[VO]) StreamJoined[K, V, VO] {
	j.otherValueSerde = s
	return j
}

// WithThisStoreSupplier picks the backend of this side's store, and of the
// outer store of a left or outer join, as Kafka Streams' does.
func (j StreamJoined[K, V, VO]) WithThisStoreSupplier(s state.BytesSupplier) StreamJoined[K, V, VO] {
	j.thisSupplier = s
	return j
}

// WithOtherStoreSupplier picks the backend of the other side's store.
func (j StreamJoined[K, V, VO]) WithOtherStoreSupplier(s state.BytesSupplier) StreamJoined[K, V, VO] {
	j.otherSupplier = s
	return j
}

// WithLoggingEnabled sets the configuration of the stores' changelog
// topics; entries override the windowed defaults.
func (j StreamJoined[K, V, VO]) WithLoggingEnabled(cfg map[string]string) StreamJoined[K, V, VO] {
	j.logging, j.loggingSet, j.logConfig = true, true, cfg
	return j
}

// WithLoggingDisabled turns the stores' changelogs off: the join's state is
// lost with the instance.
func (j StreamJoined[K, V, VO]) WithLoggingDisabled() StreamJoined[K, V, VO] {
	j.logging, j.loggingSet, j.logConfig = false, true, nil
	return j
}

// Name is the name given with WithName, or "".
func (j StreamJoined[K, V, VO]) Name() string { return j.name }

// StoreName is the store base name given, or "".
func (j StreamJoined[K, V, VO]) StoreName() string { return j.storeName }

// JoinStream joins s with other on equal keys within w (an inner join): a
// record of s at t pairs with every record of other with the same key at
// t' in [t - before, t + after], and a record of other at t' with every
// record of s in [t' - after, t' + before]. Each pair is emitted once, when
// the second of the two arrives, as joiner(key, value, otherValue) with
// the larger of the two timestamps and the arriving record's headers.
//
// A record is dropped, and counted in dropped.records.total{reason=
// "late_window"}, when its window has closed: when t + after + 1 + grace
// (t' + before + 1 + grace for other, the end of its window being
// inclusive) is at or before the floor it is judged against. A negative
// before or after counts as 0 here, so a record is never late merely for
// looking into the past. Records with a null key or value are dropped and
// counted too. Both sides' window stores expire on the frontier, keeping
// records for before + after + grace (in steps of a sixteenth of that).
//
// Re-keyed inputs cross a boundary first, named after the join
// ("<name>-left", "<name>-right") or after the input's node. The inputs
// must be co-partitioned, and the topology needs event time: Build
// refuses the join beside a source that declares noWatermarks(), or with
// invalid windows, naming the join's merge node.
func JoinStream[K, V, VO, VR any](s KStream[K, V], other KStream[K, VO], joiner func(K, V, VO) VR, w window.JoinWindows, joined ...StreamJoined[K, V, VO]) KStream[K, VR] {
	return streamStreamJoin(s, other, joiner, w, joinInner, joined)
}

// LeftJoinStream is JoinStream that also emits the records of s that found
// no partner: joiner(key, value, zero VO), with the record's own timestamp,
// once the frontier reaches the close of its window (t + after + 1 +
// grace) and never before, so a record matched before then never appears
// unmatched. As in Kafka Streams, a record of other admitted after that
// (its own window, t' + before + 1 + grace, closes later when before > 0)
// still pairs with it. Kafka Streams passes null for the missing side; to
// tell it from a zero value, give other a pointer value type
// (serde.Pointer), whose zero is nil. N unmatched records of one key and
// timestamp emit N results. The unmatched records wait in an outer store
// shared by both sides.
//
// As in Kafka Streams (KIP-962), a record of s with a null key is emitted
// at once, joined with the zero VO: it can never find a partner.
func LeftJoinStream[K, V, VO, VR any](s KStream[K, V], other KStream[K, VO], joiner func(K, V, VO) VR, w window.JoinWindows, joined ...StreamJoined[K, V, VO]) KStream[K, VR] {
	return streamStreamJoin(s, other, joiner, w, joinLeft, joined)
}

// OuterJoinStream is LeftJoinStream for both sides: unmatched records of
// other are emitted as joiner(key, zero V, otherValue) once the frontier
// reaches t' + before + 1 + grace.
func OuterJoinStream[K, V, VO, VR any](s KStream[K, V], other KStream[K, VO], joiner func(K, V, VO) VR, w window.JoinWindows, joined ...StreamJoined[K, V, VO]) KStream[K, VR] {
	return streamStreamJoin(s, other, joiner, w, joinOuter, joined)
}

func streamStreamJoin[K, V, VO, VR any](s KStream[K, V], other KStream[K, VO], joiner func(K, V, VO) VR, w window.JoinWindows, mode joinMode, joined []StreamJoined[K, V, VO]) KStream[K, VR] {
	b := s.b
	var j StreamJoined[K, V, VO]
	if len(joined) > 0 {
		j = joined[0]
	}
	// leftOuter: this side's unmatched records are emitted; rightOuter:
	// the other side's too. Kafka Streams' names follow these flags.
	leftOuter, rightOuter := mode != joinInner, mode == joinOuter

	thisIn, otherIn := streamJoinInputs(s, other, j)

	// Kafka Streams generates five names whether or not the join is named,
	// so that later generated names do not depend on it.
	thisWindowed := streamJoinName(b, j.name, "-this-windowed", streamJoinWindowedPrefix)
	otherWindowed := streamJoinName(b, j.name, "-other-windowed", streamJoinWindowedPrefix)
	thisPrefix, thisSuffix := streamJoinThisPrefix, "-this-join"
	if rightOuter {
		thisPrefix, thisSuffix = streamJoinOuterThisPrefix, "-outer-this-join"
	}
	otherPrefix, otherSuffix := streamJoinOtherPrefix, "-other-join"
	if leftOuter {
		otherPrefix, otherSuffix = streamJoinOuterOtherPrefix, "-outer-other-join"
	}
	thisGenerated, otherGenerated := b.t.GeneratedName(thisPrefix), b.t.GeneratedName(otherPrefix)
	joinThis, joinOther := thisGenerated, otherGenerated
	if j.name != "" {
		joinThis, joinOther = j.name+thisSuffix, j.name+otherSuffix
	}
	merge := streamJoinName(b, j.name, "-merge", mergePrefix)

	thisStore, otherStore := thisGenerated+"-store", otherGenerated+"-store"
	outerStore := streamJoinOuterSharedPrefix + thisGenerated[len(thisPrefix):] + "-store"
	if j.storeName != "" {
		thisStore, otherStore = j.storeName+thisSuffix+"-store", j.storeName+otherSuffix+"-store"
		outerSuffix := "-left-shared-join"
		if rightOuter {
			outerSuffix = "-outer-shared-join"
		}
		outerStore = j.storeName + outerSuffix + "-store"
	}
	if !leftOuter {
		outerStore = ""
	}

	before, after := w.Bounds()
	thisSpan := joinSpan{before: before, after: after, grace: w.Grace()}
	otherSpan := thisSpan.mirrored()

	ks := serdeOrConfig(orSerde(j.keySerde, orSerde(thisIn.keySerde, otherIn.keySerde)), true)
	vs := serdeOrConfig(orSerde(j.valueSerde, thisIn.valueSerde), false)
	vos := serdeOrConfig(orSerde(j.otherValueSerde, otherIn.valueSerde), false)
	serdes := []any{ks, vs, vos}

	reversed := func(k K, vo VO, v V) VR { return joiner(k, v, vo) }
	b.t.AddProcessor(thisWindowed, func() processor.Untyped {
		return &joinWindowed[K, V]{store: thisStore, span: thisSpan, serdes: serdes}
	}, thisIn.node)
	b.t.AddProcessor(otherWindowed, func() processor.Untyped {
		return &joinWindowed[K, VO]{store: otherStore, span: otherSpan, serdes: serdes}
	}, otherIn.node)
	b.t.AddProcessor(joinThis, func() processor.Untyped {
		return &streamJoinSide[K, V, VO, VR]{
			left: true, keep: leftOuter, otherKeeps: rightOuter, emits: leftOuter,
			span: thisSpan, otherSpan: otherSpan, otherStore: otherStore, outerStore: outerStore,
			serdes: serdes, joiner: joiner,
		}
	}, thisWindowed)
	b.t.AddProcessor(joinOther, func() processor.Untyped {
		return &streamJoinSide[K, VO, V, VR]{
			left: false, keep: rightOuter, otherKeeps: leftOuter,
			span: otherSpan, otherSpan: thisSpan, otherStore: thisStore, outerStore: outerStore,
			serdes: serdes, joiner: reversed,
		}
	}, otherWindowed)
	b.t.AddProcessor(merge, stateless(func(ctx processor.Context[any, any], rec processor.Erased) error {
		ctx.Forward(rec)
		return nil
	}), joinThis, joinOther)

	// Kafka Streams connects each window store to its side's windowed
	// processor and to the other side's join processor, which reads it.
	retention := streamJoinDuration(thisSpan.retention())
	size := streamJoinDuration(w.Size())
	lg := j.storeLogging()
	b.t.AddStateStore(streamJoinWindowStore(thisStore, ks, vs, retention, size, j.thisSupplier, lg), thisWindowed, joinOther)
	b.t.AddStateStore(streamJoinWindowStore(otherStore, ks, vos, retention, size, j.otherSupplier, lg), otherWindowed, joinThis)
	if outerStore != "" {
		b.t.AddStateStore(outerJoinStore[K]{KeyValueBuilder: streamJoinOuterStore(outerStore, ks, vs, vos, j.thisSupplier, lg), this: thisSpan, other: otherSpan}, joinThis, joinOther)
	}

	if err := w.Validate(); err != nil {
		b.t.Fail(merge, fmt.Errorf("stream-stream join: %w", err))
	}
	if joiner == nil {
		b.t.Fail(merge, errNilJoiner)
	}
	if other.b != b {
		b.t.Fail(merge, fmt.Errorf("stream %s %w", other.node, errOtherBuilder))
	}
	b.t.RequireEventTime(merge, streamJoinEventTime)
	b.t.Copartition(merge, append(slices.Clone(thisIn.sources), otherIn.sources...)...)
	return KStream[K, VR]{b: b, node: merge, keySerde: orSerde(j.keySerde, thisIn.keySerde), sources: mergeSources(thisIn.sources, otherIn.sources)}
}

// streamJoinInputs puts boundaries before re-keyed inputs, named as Kafka
// Streams names them: "<name>-left" and "<name>-right", or the input's
// node. A self-join of one re-keyed stream, unnamed, would cross two
// boundaries of one name; it crosses one, and the names Kafka Streams
// generates for the second are burnt so that later names still match.
func streamJoinInputs[K, V, VO any](s KStream[K, V], other KStream[K, VO], j StreamJoined[K, V, VO]) (KStream[K, V], KStream[K, VO]) {
	selfJoin := other.b == s.b && other.node == s.node
	thisIn := s.repartitionForJoin(streamJoinSuffixed(j.name, "-left"), j.keySerde, j.valueSerde)
	if selfJoin && other.rekeyed && j.name == "" {
		for range 3 { // the boundary's sink, filter and source
			s.b.t.NextIndex()
		}
		return thisIn, KStream[K, VO]{b: s.b, node: thisIn.node, keySerde: thisIn.keySerde,
			valueSerde: orSerde(j.otherValueSerde, other.valueSerde), sources: thisIn.sources}
	}
	return thisIn, other.repartitionForJoin(streamJoinSuffixed(j.name, "-right"), j.keySerde, j.otherValueSerde)
}

// streamJoinSuffixed is name+suffix, or "" for no name.
func streamJoinSuffixed(name, suffix string) string {
	if name == "" {
		return ""
	}
	return name + suffix
}

// streamJoinName generates a name with prefix and returns it, or
// name+suffix when the join is named: Kafka Streams burns the index either
// way.
func streamJoinName(b *Builder, name, suffix, prefix string) string {
	generated := b.t.GeneratedName(prefix)
	if name != "" {
		return name + suffix
	}
	return generated
}

// streamJoinLogging is the changelog setting StreamJoined gives every
// store of the join.
type streamJoinLogging struct {
	set, enabled bool
	cfg          map[string]string
}

func (j StreamJoined[K, V, VO]) storeLogging() streamJoinLogging {
	return streamJoinLogging{set: j.loggingSet, enabled: j.logging, cfg: j.logConfig}
}

// streamJoinWindowStore builds one side's store: a window store retaining
// duplicates, as Kafka Streams' join stores do, in memory unless the
// StreamJoined picks a backend.
func streamJoinWindowStore[K, V any](name string, ks serde.Serde[K], vs serde.Serde[V], retention, size time.Duration, supplier state.BytesSupplier, lg streamJoinLogging) state.StoreBuilder {
	if supplier == nil {
		supplier = state.Default()
	}
	// The join reads its stores key by key (FetchRange) and expires them;
	// nothing scans them by time, so they keep no time index.
	sb := state.WindowStoreBuilder(name, ks, vs, retention, size, true, supplier).WithoutTimeIndex()
	switch {
	case lg.set && lg.enabled:
		return sb.WithLoggingEnabled(lg.cfg)
	case lg.set:
		return sb.WithLoggingDisabled()
	}
	return sb
}

// streamJoinOuterStore builds the store of unmatched records, on this
// side's backend as in Kafka Streams.
func streamJoinOuterStore[K, V, VO any](name string, ks serde.Serde[K], vs serde.Serde[V], vos serde.Serde[VO], supplier state.BytesSupplier, lg streamJoinLogging) *state.KeyValueBuilder[outerJoinKey[K], []outerJoinValue] {
	if supplier == nil {
		supplier = state.Default()
	}
	sb := state.KeyValueStoreBuilder[outerJoinKey[K], []outerJoinValue](name, outerJoinKeySerde[K]{inner: ks},
		outerJoinValuesSerde{left: serde.Erase(vs), right: serde.Erase(vos)}, supplier)
	switch {
	case lg.set && lg.enabled:
		return sb.WithLoggingEnabled(lg.cfg)
	case lg.set:
		return sb.WithLoggingDisabled()
	}
	return sb
}

// OuterJoinStore is the store builder of a left or outer join's unmatched
// records (Kafka Streams' shared outer store, KSTREAM-OUTERSHARED-...):
// keys are TimestampedKeyAndJoinSide (8-byte timestamp, side, key),
// values lists of LeftOrRightValue, both in Kafka Streams' layouts. It
// tells tools that write its changelog (migrate) where the key that
// picks a record's lane lies, and when a record's null-join is due.
type OuterJoinStore interface {
	state.StoreBuilder
	// OuterJoinClose is the close time of the window of an unmatched
	// record at ts of the join's first input (left) or second: the
	// join emits its null-join once the frontier reaches it.
	OuterJoinClose(ts int64, left bool) int64
}

// outerJoinStore is the outer store's builder with the join's windows.
type outerJoinStore[K any] struct {
	*state.KeyValueBuilder[outerJoinKey[K], []outerJoinValue]
	this, other joinSpan
}

func (s outerJoinStore[K]) OuterJoinClose(ts int64, left bool) int64 {
	if left {
		return s.this.closeTime(ts)
	}
	return s.other.closeTime(ts)
}

var _ OuterJoinStore = outerJoinStore[string]{}

// joinSpan is a join window seen from one side: a record of the side at t
// pairs with the other side's records in [t - before, t + after].
type joinSpan struct {
	before, after, grace int64
}

// mirrored is the span of the other side.
func (s joinSpan) mirrored() joinSpan {
	return joinSpan{before: s.after, after: s.before, grace: s.grace}
}

// lookup returns the range of the other side's timestamps a record at t
// pairs with.
func (s joinSpan) lookup(t int64) (from, to int64) {
	return streamJoinAdd(t, -s.before), streamJoinAdd(t, s.after)
}

// closeTime is the close time of the window of a record at t on this side
// (window.JoinCloseTime).
func (s joinSpan) closeTime(t int64) int64 { return window.JoinCloseTime(t, s.after, s.grace) }

// expiryFrontier is what this side's store expires on at frontier f. A
// record at t is needed while a partner of the other side can still be
// admitted: the latest, at t + after, closes at t + after + max(before, 0)
// + 1 + grace, and floors never fall below the frontier. The store drops
// t <= x - (before + after + grace), so x is f - 1 - max(-before, 0): the
// record goes once f reaches that close, not a tick earlier, and a
// negative before keeps it longer than the retention alone would.
func (s joinSpan) expiryFrontier(f int64) int64 {
	return streamJoinAdd(streamJoinAdd(f, -1), -max(-s.before, 0))
}

// retention is how long the join's stores keep a record, before + after +
// grace, as in Kafka Streams.
func (s joinSpan) retention() int64 { return streamJoinAdd(streamJoinAdd(s.before, s.after), s.grace) }

// streamJoinAdd adds milliseconds without overflowing: results past the int64
// range stick at its ends, so huge windows never wrap to the past.
func streamJoinAdd(a, b int64) int64 { return window.AddSaturating(a, b) }

// streamJoinDuration converts milliseconds to a Duration, saturating, and never
// negative: invalid windows are reported by Validate, not by the store.
func streamJoinDuration(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return 0
	case ms > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// joinWindowed is Kafka Streams' KStreamJoinWindow for one side: it drops
// records the join cannot take, forwards the rest to its side's join
// processor and then keeps them in the side's window store, which it
// expires on the frontier.
type joinWindowed[K, V any] struct {
	store  string
	span   joinSpan
	serdes []any
	// expiryStep is the granularity of expiry, expired the last frontier
	// expired on.
	expiryStep int64
	expired    int64
	ctx        processor.Context[any, any]
	win        state.WindowStore[K, V]
	// joinLate is stoatflow.join.late-records=join: a late record is
	// joined, not dropped.
	joinLate bool
}

// lateRecordsJoin reads stoatflow.join.late-records: true for join (Kafka
// Streams' behaviour), false for drop (the one late rule, the default).
func lateRecordsJoin(ctx processor.Context[any, any]) (bool, error) {
	switch v := ctx.AppConfig()[config.JoinLateRecords]; v {
	case "", config.JoinLateDrop:
		return false, nil
	case config.JoinLateJoin:
		return true, nil
	default:
		return false, fmt.Errorf("config %s: %q is not one of %s, %s", config.JoinLateRecords, v, config.JoinLateDrop, config.JoinLateJoin)
	}
}

func (p *joinWindowed[K, V]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	var err error
	if p.joinLate, err = lateRecordsJoin(ctx); err != nil {
		return err
	}
	p.expiryStep = max(p.span.retention()/16, 1)
	p.expired = math.MinInt64
	if err := configureSerdes(ctx, p.serdes); err != nil {
		return fmt.Errorf("serdes of state store %s: %w", p.store, err)
	}
	win, err := streamJoinStore[state.WindowStore[K, V]](ctx, p.store)
	p.win = win
	return err
}

func (p *joinWindowed[K, V]) Process(rec processor.Erased) error {
	// A null value is an empty message, nothing to join; Kafka Streams
	// drops it rather than let a null read as "no partner".
	if absent(rec.Value) {
		droppedNullValue(p.ctx)
		return nil
	}
	// A null key joins nothing, so it is not kept; the join processor
	// knows whether its side emits it or drops it.
	if absent(rec.Key) {
		p.ctx.Forward(rec)
		return nil
	}
	// The one late rule: the record's window has closed at or before the
	// floor, so a result it took part in could reach a window downstream
	// that has already been emitted.
	// Under stoatflow.join.late-records=join it is joined instead, as
	// Kafka Streams joins it, and kept only if its side's store would
	// still hold it (gone: below what the store keeps).
	gone := false
	if c := p.span.closeTime(rec.Timestamp); window.Closed(c, p.ctx.Floor()) {
		if !p.joinLate {
			from, to := p.span.lookup(rec.Timestamp)
			dropLate(p.ctx, metrics.ReasonLateWindow, rec, window.Window{Start: from, End: to}, c)
			return nil
		}
		// The store drops t <= x - retention at expiry frontier x.
		gone = rec.Timestamp <= streamJoinAdd(p.span.expiryFrontier(p.ctx.Floor()), -p.span.retention())
	}
	k, v, err := narrow[K, V](rec)
	if err != nil {
		return err
	}
	// Forward before keeping, as Kafka Streams does: a record reaching
	// both sides (a self-join) then pairs with itself once, not twice.
	p.ctx.Forward(rec)
	if gone {
		// Kafka Streams' segmented store ignores the put too.
		return nil
	}
	if err := p.win.Put(k, v, rec.Timestamp); err != nil {
		return fmt.Errorf("keep record for the join: %w", err)
	}
	return nil
}

// OnWatermark expires what no admissible record can pair with any more.
// It expires in steps of a sixteenth of the retention, as a segmented store
// drops whole segments: a pass costs a scan, and the driver runs one per
// record. A record kept a step longer changes no result, because no
// admissible record can pair with it.
func (p *joinWindowed[K, V]) OnWatermark(frontier int64) error {
	// Round down to a multiple of the step (saturating near the int64
	// floor, where nothing expires anyway).
	x := p.span.expiryFrontier(frontier)
	x = streamJoinAdd(x, -(((x % p.expiryStep) + p.expiryStep) % p.expiryStep))
	if x <= p.expired {
		return nil
	}
	if err := p.win.Expire(x); err != nil {
		return fmt.Errorf("expire join records: %w", err)
	}
	p.expired = x
	return nil
}

func (p *joinWindowed[K, V]) Close() error { return nil }

// streamJoinSide is the join processor of one side (Kafka Streams'
// KStreamKStreamJoinLeftSide and RightSide): V1 is its side's value type,
// V2 the other's, and joiner takes them in that order (reversed for the
// other side). It pairs each record with the other side's window store.
type streamJoinSide[K, V1, V2, VR any] struct {
	// left is true for the processor of the join's first input.
	left bool
	// keep: this side's unmatched records wait in the outer store.
	keep bool
	// otherKeeps: the other side's do, and a match removes them.
	otherKeeps bool
	// emits: this processor emits the outer store's closed records; only
	// one of the two does, so each is emitted once.
	emits      bool
	span       joinSpan
	otherSpan  joinSpan
	otherStore string
	outerStore string
	serdes     []any
	joiner     func(K, V1, V2) VR

	ctx   processor.Context[any, any]
	other state.WindowStore[K, V2]
	outer state.KeyValueStore[outerJoinKey[K], []outerJoinValue]
	// joinLate is stoatflow.join.late-records=join.
	joinLate bool
}

func (p *streamJoinSide[K, V1, V2, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	var err error
	if p.joinLate, err = lateRecordsJoin(ctx); err != nil {
		return err
	}
	if err := configureSerdes(ctx, p.serdes); err != nil {
		return fmt.Errorf("serdes of state store %s: %w", p.otherStore, err)
	}
	other, err := streamJoinStore[state.WindowStore[K, V2]](ctx, p.otherStore)
	if err != nil {
		return err
	}
	p.other = other
	if p.outerStore != "" {
		outer, err := streamJoinStore[state.KeyValueStore[outerJoinKey[K], []outerJoinValue]](ctx, p.outerStore)
		if err != nil {
			return err
		}
		p.outer = outer
	}
	return nil
}

func (p *streamJoinSide[K, V1, V2, VR]) Process(rec processor.Erased) error {
	if absent(rec.Key) {
		// Only the windowed processor forwards null keys: an outer side
		// emits the record now, as Kafka Streams does since KIP-962,
		// because nothing can ever pair with it.
		if !p.keep {
			droppedNullKey(p.ctx)
			return nil
		}
		v, err := processor.As[V1](rec.Value)
		if err != nil {
			return fmt.Errorf("record value: %w", err)
		}
		var k K
		var none V2
		rec.Value = orNull(p.joiner(k, v, none))
		p.ctx.Forward(rec)
		return nil
	}
	k, v, err := narrow[K, V1](rec)
	if err != nil {
		return err
	}
	from, to := p.span.lookup(rec.Timestamp)
	it, err := p.other.FetchRange(k, from, to)
	if err != nil {
		return fmt.Errorf("look up partners: %w", err)
	}
	matched, removed := false, int64(0)
	for it.Next() {
		ts, ov := it.Key(), it.Value()
		if it.Err() != nil {
			break
		}
		// Every record of the other side at this key and timestamp is in
		// the window, so all of them are matched: one removal covers them.
		if p.otherKeeps && (!matched || ts != removed) {
			if err := p.unkeep(outerJoinKey[K]{ts: ts, left: !p.left, key: k}); err != nil {
				it.Close()
				return err
			}
			removed = ts
		}
		matched = true
		p.ctx.Forward(processor.Erased{Key: rec.Key, Value: orNull(p.joiner(k, v, ov)), Timestamp: max(rec.Timestamp, ts), Headers: rec.Headers})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("look up partners: %w", err)
	}
	if p.keep && !matched {
		if p.joinLate && window.Closed(p.span.closeTime(rec.Timestamp), p.ctx.Floor()) {
			// A late record (stoatflow.join.late-records=join) whose
			// window has closed finds no partner later: Kafka Streams
			// emits it at once rather than keep it.
			var none V2
			p.ctx.Forward(processor.Erased{Key: rec.Key, Value: orNull(p.joiner(k, v, none)), Timestamp: rec.Timestamp, Headers: rec.Headers})
			return nil
		}
		return p.keepUnmatched(outerJoinKey[K]{ts: rec.Timestamp, left: p.left, key: k}, v)
	}
	return nil
}

// keepUnmatched appends v to the records waiting under key: duplicates are
// kept, so N unmatched arrivals emit N results (Kafka Streams' list-valued
// outer store does the same).
func (p *streamJoinSide[K, V1, V2, VR]) keepUnmatched(key outerJoinKey[K], v V1) error {
	list, _, err := p.outer.Get(key)
	if err != nil {
		return fmt.Errorf("keep unmatched record: %w", err)
	}
	if err := p.outer.Put(key, append(list, outerJoinValue{left: p.left, value: any(v)})); err != nil {
		return fmt.Errorf("keep unmatched record: %w", err)
	}
	return nil
}

// unkeep removes the records waiting under key, which a partner has just
// matched. It reads first so that a match of a record never kept logs no
// tombstone.
func (p *streamJoinSide[K, V1, V2, VR]) unkeep(key outerJoinKey[K]) error {
	_, found, err := p.outer.Get(key)
	if err != nil {
		return fmt.Errorf("remove matched records: %w", err)
	}
	if !found {
		return nil
	}
	if err := p.outer.Put(key, nil); err != nil {
		return fmt.Errorf("remove matched records: %w", err)
	}
	return nil
}

// OnWatermark emits, joined with the zero value of the missing side, every
// unmatched record whose window the frontier has closed, in the outer
// store's (timestamp, side, key) order, and removes it: each is emitted
// once, with its own timestamp. The frontier is the committed watermark, so
// every record that could have matched it has been processed.
func (p *streamJoinSide[K, V1, V2, VR]) OnWatermark(frontier int64) error {
	if !p.emits || p.outer == nil {
		return nil
	}
	it, err := p.outer.All()
	if err != nil {
		return fmt.Errorf("emit unmatched records: %w", err)
	}
	defer it.Close()
	for it.Next() {
		key := it.Key()
		if err := it.Err(); err != nil {
			break
		}
		thisClose, otherClose := p.span.closeTime(key.ts), p.otherSpan.closeTime(key.ts)
		// Each side's records close in timestamp order: once both sides
		// are open at this timestamp, everything after is open too.
		if thisClose > frontier && otherClose > frontier {
			break
		}
		closeAt := otherClose
		if key.left == p.left {
			closeAt = thisClose
		}
		if closeAt > frontier {
			continue
		}
		for _, e := range it.Value() {
			r, err := p.joinMissing(key.key, e)
			if err != nil {
				return err
			}
			p.ctx.Forward(processor.Erased{Key: any(key.key), Value: r, Timestamp: key.ts})
		}
		if err := p.outer.Put(key, nil); err != nil {
			return fmt.Errorf("emit unmatched records: %w", err)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("emit unmatched records: %w", err)
	}
	return nil
}

// joinMissing joins an unmatched record with the zero value of the side it
// lacks.
func (p *streamJoinSide[K, V1, V2, VR]) joinMissing(k K, e outerJoinValue) (any, error) {
	if e.left == p.left {
		v, err := processor.As[V1](e.value)
		if err != nil {
			return nil, fmt.Errorf("outer join store %s: %w", p.outerStore, err)
		}
		var none V2
		return orNull(p.joiner(k, v, none)), nil
	}
	ov, err := processor.As[V2](e.value)
	if err != nil {
		return nil, fmt.Errorf("outer join store %s: %w", p.outerStore, err)
	}
	var none V1
	return orNull(p.joiner(k, none, ov)), nil
}

func (p *streamJoinSide[K, V1, V2, VR]) Close() error { return nil }

// streamJoinStore returns the store called name as S.
func streamJoinStore[S any](ctx processor.Context[any, any], name string) (S, error) {
	var zero S
	s, err := ctx.StateStore(name)
	if err != nil {
		return zero, err
	}
	typed, ok := s.(S)
	if !ok {
		return zero, fmt.Errorf("state store %s is a %T, not a join store", name, s)
	}
	return typed, nil
}

// outerJoinKey is the outer store's key, Kafka Streams' TimestampedKeyAndJoinSide:
// the unmatched record's timestamp, its side and its key.
type outerJoinKey[K any] struct {
	ts   int64
	left bool
	key  K
}

// outerJoinKeySerde lays an outerJoinKey out as Kafka Streams'
// TimestampedKeyAndJoinSideSerializer does, so that the store scans in
// timestamp order and its changelog is Kafka Streams':
//
//	8-byte big-endian timestamp | 1 for the left side, 0 for the right | key
//
// Event time is never negative (sources skip such records), so the signed
// timestamp orders correctly as unsigned bytes.
type outerJoinKeySerde[K any] struct{ inner serde.Serde[K] }

func (s outerJoinKeySerde[K]) Name() string {
	name := s.inner.Name()
	if name == "" {
		name = "default"
	}
	return "timestamped-key-and-join-side(" + name + ")"
}

func (s outerJoinKeySerde[K]) Serialize(topic string, k outerJoinKey[K]) ([]byte, error) {
	kb, err := s.inner.Serialize(topic, k.key)
	if err != nil {
		return nil, fmt.Errorf("serialize outer join key: %w", err)
	}
	if kb == nil {
		return nil, fmt.Errorf("serialize outer join key: %w", state.ErrNilKey)
	}
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(kb)), uint64(k.ts))
	side := byte(0)
	if k.left {
		side = 1
	}
	return append(append(b, side), kb...), nil
}

func (s outerJoinKeySerde[K]) Deserialize(topic string, data []byte) (outerJoinKey[K], error) {
	if len(data) < 9 || data[8] > 1 {
		return outerJoinKey[K]{}, fmt.Errorf("deserialize outer join key: %w: %d bytes", errOuterStoreEncoding, len(data))
	}
	k, err := s.inner.Deserialize(topic, data[9:])
	if err != nil {
		return outerJoinKey[K]{}, fmt.Errorf("deserialize outer join key: %w", err)
	}
	return outerJoinKey[K]{ts: int64(binary.BigEndian.Uint64(data)), left: data[8] == 1, key: k}, nil
}

// outerJoinValue is one unmatched record's value, Kafka Streams'
// LeftOrRightValue; value holds a V for the left side, a VO for the right.
type outerJoinValue struct {
	left  bool
	value any
}

// outerJoinValuesSerde lays the unmatched records of one key out as Kafka
// Streams' ListValueStore does (its ListSerde of byte arrays, variable-size
// strategy), each element a LeftOrRightValue:
//
//	0x01 | 4-byte count | per element: 4-byte length | side (1 left, 0 right) | value
//
// All integers are big-endian.
type outerJoinValuesSerde struct{ left, right serde.Any }

// kafkaListVariableSize is the strategy byte of Kafka's ListSerializer for
// elements of variable size.
const kafkaListVariableSize = 1

func (s outerJoinValuesSerde) Name() string {
	return "list(left-or-right(" + outerJoinSerdeName(s.left) + ", " + outerJoinSerdeName(s.right) + "))"
}

func outerJoinSerdeName(s serde.Any) string {
	if n := s.Name(); n != "" {
		return n
	}
	return "default"
}

func (s outerJoinValuesSerde) Serialize(topic string, vs []outerJoinValue) ([]byte, error) {
	out := binary.BigEndian.AppendUint32([]byte{kafkaListVariableSize}, uint32(len(vs)))
	for i, v := range vs {
		inner, side := s.right, byte(0)
		if v.left {
			inner, side = s.left, 1
		}
		b, err := inner.SerializeAny(topic, v.value)
		if err != nil {
			return nil, fmt.Errorf("serialize outer join value %d: %w", i, err)
		}
		if b == nil {
			return nil, fmt.Errorf("serialize outer join value %d: a null value cannot wait for a partner", i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(1+len(b)))
		out = append(append(out, side), b...)
	}
	return out, nil
}

func (s outerJoinValuesSerde) Deserialize(topic string, data []byte) ([]outerJoinValue, error) {
	if len(data) < 5 || data[0] != kafkaListVariableSize {
		return nil, fmt.Errorf("deserialize outer join values: %w: no list header", errOuterStoreEncoding)
	}
	n := binary.BigEndian.Uint32(data[1:])
	rest := data[5:]
	// Every element takes at least 5 bytes; a count beyond that is
	// corrupt, and must not size an allocation.
	if uint64(n)*5 > uint64(len(rest)) {
		return nil, fmt.Errorf("deserialize outer join values: %w: %d elements in %d bytes", errOuterStoreEncoding, n, len(rest))
	}
	vs := make([]outerJoinValue, 0, n)
	for i := range n {
		if len(rest) < 4 {
			return nil, fmt.Errorf("deserialize outer join value %d: %w: truncated", i, errOuterStoreEncoding)
		}
		size := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if size < 1 || uint64(size) > uint64(len(rest)) || rest[0] > 1 {
			return nil, fmt.Errorf("deserialize outer join value %d: %w: bad element", i, errOuterStoreEncoding)
		}
		left := rest[0] == 1
		inner := s.right
		if left {
			inner = s.left
		}
		v, err := inner.DeserializeAny(topic, rest[1:size:size])
		if err != nil {
			return nil, fmt.Errorf("deserialize outer join value %d: %w", i, err)
		}
		vs = append(vs, outerJoinValue{left: left, value: v})
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("deserialize outer join values: %w: %d trailing bytes", errOuterStoreEncoding, len(rest))
	}
	return vs, nil
}
