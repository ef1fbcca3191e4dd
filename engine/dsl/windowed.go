package dsl

import (
	"errors"
	"fmt"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"math"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Windowed aggregations: a grouped stream windowed by time windows
// (tumbling, hopping), sliding windows or session windows, aggregated into
// a table keyed by window.Windowed[K].
//
// One rule decides lateness, for every window kind and emit strategy: a
// record's window is dropped when its close time is at or before the floor
// (processor.Context.Floor), and the same close time is when
// onWindowClose emits it. A hopping window is judged alone, so a record
// may land in some of its windows and not in others. A session is judged
// after the merge scan, on the merged session. Drops are counted in
// dropped.records.total, reason "late_window" or "late_session".

// WithRetention sets how long a window or session store keeps windows past
// the frontier. It must cover the windows' size plus grace (2 * time
// difference plus grace for sliding windows, gap plus grace for sessions);
// a shorter retention is refused when the topology is built. Other stores
// ignore it.
func (m Materialized[K, V]) WithRetention(retention time.Duration) Materialized[K, V] {
	m.retention = &retention
	return m
}

// windowKind says which of the window definitions a windowDef holds.
type windowKind int

const (
	timeWindowKind windowKind = iota
	slidingWindowKind
	sessionWindowKind
)

// windowDef is a window definition of any kind, with what the DSL and the
// processors derive from it.
type windowDef struct {
	kind    windowKind
	time    window.TimeWindows
	sliding window.SlidingWindows
	session window.SessionWindows
}

func (d windowDef) validate() error {
	switch d.kind {
	case slidingWindowKind:
		return d.sliding.Validate()
	case sessionWindowKind:
		return d.session.Validate()
	}
	return d.time.Validate()
}

// closeTime is the close time of w under the definition: the one late
// rule's, and emission's, boundary.
func (d windowDef) closeTime(w window.Window) int64 {
	switch d.kind {
	case slidingWindowKind:
		return d.sliding.CloseTime(w)
	case sessionWindowKind:
		return d.session.CloseTime(w.End)
	}
	return d.time.CloseTime(w)
}

// closeOffset is how far a window's close lies past its start (time and
// sliding windows) or its end (sessions), saturated as the close times
// are: the emit pass turns a range of close times into a range of starts
// or ends with it.
func (d windowDef) closeOffset() int64 {
	switch d.kind {
	case slidingWindowKind:
		return d.sliding.CloseTime(window.Window{})
	case sessionWindowKind:
		return d.session.CloseTime(0)
	}
	return d.time.CloseTime(window.Window{End: d.time.Size()})
}

// storeWindowSize is the window size of the window store: End - Start of
// every window it returns.
func (d windowDef) storeWindowSize() int64 {
	if d.kind == slidingWindowKind {
		return d.sliding.TimeDifference()
	}
	return d.time.Size()
}

// minRetention is the shortest retention that keeps every window a record
// can still reach, Kafka Streams' bound: size + grace, 2 * time
// difference + grace for sliding windows (a record looks back that far
// for the aggregate of its left window), gap + grace for sessions. It is
// also the default.
func (d windowDef) minRetention() int64 {
	switch d.kind {
	case slidingWindowKind:
		return d.sliding.CloseTime(window.Window{Start: d.sliding.TimeDifference()}) - 1
	case sessionWindowKind:
		return d.session.CloseTime(0)
	}
	return d.closeOffset()
}

// retentionProblem describes, for errors, what minRetention covers.
func (d windowDef) retentionProblem() string {
	switch d.kind {
	case slidingWindowKind:
		return fmt.Sprintf("2 * time difference plus the grace period (time difference %dms, grace %dms)", d.sliding.TimeDifference(), d.sliding.Grace())
	case sessionWindowKind:
		return fmt.Sprintf("its inactivity gap plus the grace period (gap %dms, grace %dms)", d.session.Gap(), d.session.Grace())
	}
	return fmt.Sprintf("its window size plus the grace period (size %dms, grace %dms)", d.time.Size(), d.time.Grace())
}

// windowedPlan is what the processors of one windowed aggregation are made
// from; they share it, read-only, across tasks.
type windowedPlan[K, VA any] struct {
	windowDef
	emit  EmitStrategy
	store string
	// frontier is the companion store of the emit frontier, "" under
	// onWindowUpdate.
	frontier string
	// retention is the store's, in milliseconds.
	retention int64
	// keys is the store's key serde; sessions closing together are
	// emitted in the order of its bytes.
	keys   serde.Serde[K]
	serdes []any
	// init is the aggregate of a new window; merge folds a session's
	// aggregate into another (sessions only).
	init  func() aggValue[VA]
	merge func(key K, agg aggValue[VA], other VA) aggValue[VA]
}

// windowedInput is one input of a windowed aggregation: a grouped stream
// and how its records are folded in. Kafka Streams' aggregations have one;
// a cogroup has one per grouped stream, each reaching the shared store
// through its own processor.
type windowedInput[K, VA any] struct {
	// input is KGroupedStream.input: the node the input's processor reads
	// from, inserting the grouping's boundary if it re-keys.
	input    func(store string) (string, []string)
	keySerde serde.Serde[K]
	// processor makes the input's processor; listen says whether it runs
	// the emit pass and expiry itself (it does unless a cogroup's merge
	// node does).
	processor func(plan *windowedPlan[K, VA], listen bool) processor.Untyped
	// invalid is a misuse to report against the input's processor.
	invalid error
}

// windowedInputOf is the input of g folded with add.
func windowedInputOf[K, V, VA any](g KGroupedStream[K, V], add func(K, V, aggValue[VA]) VA) windowedInput[K, VA] {
	return windowedInput[K, VA]{
		input:    g.input,
		keySerde: g.keySerde,
		processor: func(plan *windowedPlan[K, VA], listen bool) processor.Untyped {
			return newWindowedProcessor[K, V, VA](plan, add, listen)
		},
	}
}

// newWindowedProcessor makes the processor of one input for plan's window
// kind.
func newWindowedProcessor[K, V, VA any](plan *windowedPlan[K, VA], add func(K, V, aggValue[VA]) VA, listen bool) processor.Untyped {
	node := windowedNode[K, VA]{plan: plan, listen: listen}
	agg := aggregation[K, V, VA]{init: plan.init, add: add}
	switch plan.kind {
	case slidingWindowKind:
		return &slidingWindowAggregate[K, V, VA]{windowedNode: node, agg: agg}
	case sessionWindowKind:
		return &sessionWindowAggregate[K, V, VA]{windowedNode: node, agg: agg}
	}
	return &timeWindowAggregate[K, V, VA]{windowedNode: node, agg: agg}
}

// windowedBuild says how to name and wire a windowed aggregation.
type windowedBuild[K, VA any] struct {
	b      *Builder
	def    windowDef
	emit   EmitStrategy
	prefix string
	m      Materialized[K, VA]
	// valueSerde is the aggregate's known serde, nil for the default.
	valueSerde serde.Serde[VA]
	init       func() aggValue[VA]
	merge      func(key K, agg aggValue[VA], other VA) aggValue[VA]
	inputs     []windowedInput[K, VA]
	// mergePrefix is set for a cogroup: its inputs' processors feed a
	// merge node, which the table is the output of and which runs the emit
	// pass and expiry.
	mergePrefix string
	// invalid is a misuse to report against the table's node.
	invalid error
}

// build adds the aggregation's store, processors and companion store, in
// Kafka Streams' naming order: the store name, then (for one input) the
// processor and its boundary, or (for a cogroup) every boundary, then
// every processor, then the merge node.
func (w windowedBuild[K, VA]) build() KTable[window.Windowed[K], VA] {
	b := w.b
	store := b.newStoreName(w.prefix, w.m.name)
	cogroup := w.mergePrefix != ""
	names := make([]string, len(w.inputs))
	parents := make([]string, len(w.inputs))
	var sources []string
	if !cogroup {
		names[0] = b.t.GeneratedName(w.prefix)
	}
	for i, in := range w.inputs {
		var src []string
		parents[i], src = in.input(store)
		sources = mergeSources(sources, src)
	}
	listener := names[0]
	if cogroup {
		for i := range names {
			names[i] = b.t.GeneratedName(w.prefix)
		}
		listener = b.t.GeneratedName(w.mergePrefix)
	}

	keySerde := orSerde(w.m.keySerde, w.inputs[0].keySerde)
	storeKeys, storeValues := serdeOrConfig(keySerde, true), serdeOrConfig(w.valueSerde, false)
	plan := &windowedPlan[K, VA]{windowDef: w.def, emit: w.emit, store: store, keys: storeKeys,
		serdes: []any{storeKeys, storeValues}, init: w.init, merge: w.merge}
	if w.emit.onClose {
		plan.frontier = store + emitFrontierSuffix
	}

	if err := w.def.validate(); err != nil {
		b.t.Fail(listener, err)
	}
	if w.invalid != nil {
		b.t.Fail(listener, w.invalid)
	}
	retention := w.def.minRetention()
	if w.m.retention != nil {
		retention = w.m.retention.Milliseconds()
		if retention < w.def.minRetention() {
			b.t.Fail("", fmt.Errorf("state store %s: retention period %dms must be no smaller than %s", store, retention, w.def.retentionProblem()))
		}
	}
	plan.retention = retention

	for i, in := range w.inputs {
		listen := !cogroup
		b.t.AddProcessor(names[i], func() processor.Untyped { return in.processor(plan, listen) }, parents[i])
		b.t.RequireEventTime(names[i], "window")
		if in.invalid != nil {
			b.t.Fail(names[i], in.invalid)
		}
	}
	connected := names
	if cogroup {
		b.t.AddProcessor(listener, func() processor.Untyped { return &windowedMerge[K, VA]{windowedNode[K, VA]{plan: plan, listen: true}} }, names...)
		b.t.RequireEventTime(listener, "window")
		b.t.Copartition(listener, sources...)
		connected = append(connected, listener)
	}
	b.t.AddStateStore(windowedStore(w.def, store, storeKeys, storeValues, retention, w.m, w.emit.onClose), connected...)
	if w.emit.onClose {
		b.t.AddStateStore(emitFrontierStore(store, w.m), listener)
	}
	return KTable[window.Windowed[K], VA]{
		b:          b,
		node:       listener,
		keySerde:   windowedKeySerde(w.def, storeKeys),
		valueSerde: w.valueSerde,
		meta:       &tableMeta{store: store, closeTime: w.def.closeTime, windowKeySuffix: windowKeySuffix(w.def)},
		sources:    sources,
	}
}

// windowedKeySerde is the result table's key serde over the store's key
// serde, Kafka Streams' FullTimeWindowedSerde (with the time difference as
// the size for sliding windows) or SessionWindowedSerde, so that
// ToStream().To(topic) writes windowed keys.
func windowedKeySerde[K any](d windowDef, keys serde.Serde[K]) serde.Serde[window.Windowed[K]] {
	if d.kind == sessionWindowKind {
		return window.SessionWindowedSerde(keys)
	}
	return window.TimeWindowedSerde(keys, d.storeWindowSize())
}

// windowKeySuffix is how many bytes windowedKeySerde writes after the
// inner key: a session's end and start, or a time window's start.
func windowKeySuffix(d windowDef) int {
	if d.kind == sessionWindowKind {
		return 16
	}
	return 8
}

// windowedStore describes the store of a windowed aggregation: a
// timestamped window store (the timestamp is what a final result carries)
// or a session store, with Materialized's backend and logging. Only the
// emit pass of an aggregation that emits on close scans it by time; the
// others read it key by key, and it keeps no time index.
func windowedStore[K, VA any](d windowDef, name string, ks serde.Serde[K], vs serde.Serde[VA], retention int64, m Materialized[K, VA], scannedByTime bool) state.StoreBuilder {
	supplier := m.supplier
	if supplier == nil {
		supplier = state.Default()
	}
	keep := millisDuration(max(retention, 0))
	if d.kind == sessionWindowKind {
		sb := state.SessionStoreBuilder(name, ks, vs, keep, supplier)
		if !scannedByTime {
			sb = sb.WithoutTimeIndex()
		}
		if m.loggingSet {
			if m.logging {
				sb = sb.WithLoggingEnabled(m.logConfig)
			} else {
				sb = sb.WithLoggingDisabled()
			}
		}
		return sessionWindowStore[K, VA]{sb, d.spec(retention)}
	}
	sb := state.TimestampedWindowStoreBuilder(name, ks, vs, keep, millisDuration(max(d.storeWindowSize(), 0)), false, supplier)
	if !scannedByTime {
		sb = sb.WithoutTimeIndex()
	}
	if m.loggingSet {
		if m.logging {
			sb = sb.WithLoggingEnabled(m.logConfig)
		} else {
			sb = sb.WithLoggingDisabled()
		}
	}
	return timeWindowStore[K, VA]{sb, d.spec(retention)}
}

// TimeWindowedKStream is a grouped stream windowed by time windows
// (tumbling or hopping) or sliding windows, ready for an aggregation, as
// Kafka Streams' TimeWindowedKStream. Results are tables keyed by the
// record key and its window.
type TimeWindowedKStream[K, V any] struct {
	g    KGroupedStream[K, V]
	def  windowDef
	emit EmitStrategy
}

// WindowedBy windows the grouped stream by time windows: tumbling, or
// hopping when their advance is smaller than their size. An invalid
// definition fails the build, naming it.
func (g KGroupedStream[K, V]) WindowedBy(w window.TimeWindows) TimeWindowedKStream[K, V] {
	return TimeWindowedKStream[K, V]{g: g, def: windowDef{kind: timeWindowKind, time: w}}
}

// WindowedBySliding windows the grouped stream by sliding windows, Kafka
// Streams' windowedBy(SlidingWindows): windows that follow the records,
// each holding records at most the time difference apart.
func (g KGroupedStream[K, V]) WindowedBySliding(w window.SlidingWindows) TimeWindowedKStream[K, V] {
	return TimeWindowedKStream[K, V]{g: g, def: windowDef{kind: slidingWindowKind, sliding: w}}
}

// EmitStrategy sets when results are forwarded: OnWindowUpdate (the
// default) or OnWindowClose.
func (w TimeWindowedKStream[K, V]) EmitStrategy(e EmitStrategy) TimeWindowedKStream[K, V] {
	w.emit = e
	return w
}

// CountWindowed counts the records of each key and window, Kafka Streams'
// TimeWindowedKStream.count. (A function, not a method: a method of
// TimeWindowedKStream[K, V] returning a table keyed by window.Windowed[K]
// would make Go instantiate the stream types for ever deeper keys.)
func CountWindowed[K, V any](w TimeWindowedKStream[K, V], materialized ...Materialized[K, int64]) KTable[window.Windowed[K], int64] {
	m, given := firstMaterialized(materialized)
	if given && m.name == "" && w.def.kind == timeWindowKind {
		// Kafka Streams' TimeWindowedKStreamImpl burns a store name for an
		// unnamed Materialized (its sliding counterpart does not); burning
		// one too keeps later generated names equal.
		w.g.s.b.t.NextIndex()
	}
	return windowedAggregate(w.g, w.def, w.emit, streamAggregatePrefix, m, orSerde(m.valueSerde, serde.Int64()), counting[K, V](), nil, nil)
}

// ReduceWindowed combines the values of each key and window with
// reducer(aggregate, value); a window's first value is its aggregate as is.
// It is Kafka Streams' TimeWindowedKStream.reduce.
func ReduceWindowed[K, V any](w TimeWindowedKStream[K, V], reducer func(agg, value V) V, materialized ...Materialized[K, V]) KTable[window.Windowed[K], V] {
	m, _ := firstMaterialized(materialized)
	return windowedAggregate(w.g, w.def, w.emit, streamReducePrefix, m, orSerde(m.valueSerde, w.g.valueSerde), reducing[K](reducer), nil,
		nilFunc("reducer", reducer == nil))
}

// AggregateWindowed folds the values of each key and window into an
// aggregate that starts as initializer() and is updated by adder, Kafka
// Streams' TimeWindowedKStream.aggregate. The aggregate's serde is
// materialized's, or the configured default value serde.
func AggregateWindowed[K, V, VA any](w TimeWindowedKStream[K, V], initializer func() VA, adder func(key K, value V, agg VA) VA, materialized ...Materialized[K, VA]) KTable[window.Windowed[K], VA] {
	m, _ := firstMaterialized(materialized)
	return windowedAggregate(w.g, w.def, w.emit, streamAggregatePrefix, m, m.valueSerde, aggregating(initializer, adder), nil,
		errors.Join(nilFunc("initializer", initializer == nil), nilFunc("aggregator", adder == nil)))
}

// windowedAggregate adds the windowed aggregation of g with a (and, for
// sessions, merge). invalid is a misuse to refuse at build.
func windowedAggregate[K, V, VA any](g KGroupedStream[K, V], def windowDef, emit EmitStrategy, prefix string, m Materialized[K, VA], valueSerde serde.Serde[VA], a aggregation[K, V, VA], merge func(K, aggValue[VA], VA) aggValue[VA], invalid error) KTable[window.Windowed[K], VA] {
	return windowedBuild[K, VA]{
		b: g.s.b, def: def, emit: emit, prefix: prefix, m: m, valueSerde: valueSerde,
		init: a.init, merge: merge, inputs: []windowedInput[K, VA]{windowedInputOf(g, a.add)}, invalid: invalid,
	}.build()
}

// nilFunc reports a function an aggregation was given as nil, which would
// fail on the first record; nil when it was not.
func nilFunc(what string, isNil bool) error {
	if !isNil {
		return nil
	}
	return fmt.Errorf("nil %s", what)
}

// windowedNode is what the windowed aggregation processors (and a windowed
// cogroup's merge node) share: the plan, the context and, on the node that
// listens, the closer that runs the emit pass and expiry.
type windowedNode[K, VA any] struct {
	plan   *windowedPlan[K, VA]
	listen bool
	ctx    processor.Context[any, any]
	closer *windowCloser
}

func (n *windowedNode[K, VA]) init(ctx processor.Context[any, any]) error {
	n.ctx = ctx
	if err := configureSerdes(ctx, n.plan.serdes); err != nil {
		return fmt.Errorf("serdes of state store %s: %w", n.plan.store, err)
	}
	if !n.listen {
		return nil
	}
	c, err := n.plan.closer(ctx)
	n.closer = c
	return err
}

func (n *windowedNode[K, VA]) Close() error { return nil }

// OnWatermark runs the emit pass and expiry on the node that listens; the
// other inputs of a cogroup leave both to its merge node.
func (n *windowedNode[K, VA]) OnWatermark(frontier int64) error {
	if n.closer == nil {
		return nil
	}
	return n.closer.onWatermark(frontier)
}

// NextClose implements processor.CloseScheduler for the node that emits
// time windows on close: windows start at multiples of the advance from
// 0, so the next close after after is the close of the first such start
// whose close is past it. Sliding windows and sessions follow their
// records and have no such grid; they, and the nodes that do not emit on
// close, cannot tell.
func (n *windowedNode[K, VA]) NextClose(after int64) (int64, bool) {
	if !n.listen || !n.plan.emit.onClose || n.plan.kind != timeWindowKind || n.plan.time.Advance() <= 0 {
		return 0, false
	}
	adv, off := n.plan.time.Advance(), n.plan.closeOffset()
	// The first start s, a multiple of adv at or above 0, with s+off > after.
	s := int64(0)
	if after >= math.MinInt64+off {
		if lo := after - off + 1; lo > 0 {
			s = (lo + adv - 1) / adv * adv
		}
	}
	if s > math.MaxInt64-off {
		return math.MaxInt64, true
	}
	return s + off, true
}

// forward forwards an update under onWindowUpdate; onWindowClose forwards
// only from the emit pass.
func (n *windowedNode[K, VA]) forward(rec processor.Erased) {
	if !n.plan.emit.onClose {
		n.ctx.Forward(rec)
	}
}

// closer makes the closer of the plan's store for one processor instance.
func (p *windowedPlan[K, VA]) closer(ctx processor.Context[any, any]) (*windowCloser, error) {
	c := &windowCloser{store: p.store, onClose: p.emit.onClose}
	if p.emit.onClose {
		fs, err := storeOf[state.KeyValueStore[string, int64]](ctx, p.frontier)
		if err != nil {
			return nil, err
		}
		c.frontier = fs
	}
	if p.kind == sessionWindowKind {
		s, err := storeOf[state.SessionStore[K, VA]](ctx, p.store)
		if err != nil {
			return nil, err
		}
		c.emit = func(after, upTo int64) error { return p.emitSessions(ctx, s, after, upTo) }
		c.expire = p.expiry(s.Expire)
		return c, nil
	}
	s, err := storeOf[state.TimestampedWindowStore[K, VA]](ctx, p.store)
	if err != nil {
		return nil, err
	}
	c.emit = func(after, upTo int64) error { return p.emitWindows(ctx, s, after, upTo) }
	c.expire = p.expiry(s.Expire)
	return c, nil
}

// expiry wraps a store's Expire so that it runs only when it can remove
// something. A pass seeks the store's time index and takes the store's lock
// per batch; the driver runs a pass on every record that moves the
// watermark, so skipping idle ones matters.
func (p *windowedPlan[K, VA]) expiry(expire func(frontier int64) error) func(frontier int64) error {
	retention := p.retention
	if p.kind == timeWindowKind {
		// Time windows start at multiples of the advance, from 0, and
		// expire once start <= frontier - retention: a pass removes
		// something new only when that bound reaches the next multiple.
		// Exact: no window outlives its retention.
		adv := p.time.Advance()
		next := int64(0)
		return func(frontier int64) error {
			bound := frontier - retention
			if adv <= 0 || bound < next {
				return nil
			}
			next = bound/adv*adv + adv
			return expire(frontier)
		}
	}
	// Sliding windows and sessions follow the records, so there is no grid
	// to wait for: a pass runs once the frontier has moved a sixteenth of
	// the retention (at least 1 ms) since the last, and a window or
	// session may outlive its retention by that much. That changes no
	// result: what has expired has closed, and the late rule already keeps
	// records out of it. (Kafka Streams' segmented stores keep one up to a
	// segment, half the retention, longer.)
	step := max(retention/16, 1)
	last, ran := int64(0), false
	return func(frontier int64) error {
		if ran && frontier-last < step {
			return nil
		}
		last, ran = frontier, true
		return expire(frontier)
	}
}

// startRange turns the close times (after, upTo] into the range of starts
// (or session ends) [lo, hi] of the windows that close in it.
func (p *windowedPlan[K, VA]) startRange(after, upTo int64) (lo, hi int64) {
	off := p.closeOffset()
	lo = math.MinInt64
	if after != noFrontier {
		lo = after - off + 1
	}
	return lo, upTo - off
}

// emitWindows forwards the final result of every time or sliding window
// closing in (after, upTo], in close-time order (the store's time-first
// order, start then key bytes, is close-time then key order), each with
// the timestamp of its latest record.
func (p *windowedPlan[K, VA]) emitWindows(ctx processor.Context[any, any], s state.TimestampedWindowStore[K, VA], after, upTo int64) error {
	lo, hi := p.startRange(after, upTo)
	if p.kind == timeWindowKind {
		// Time windows start at multiples of the advance, from 0: with
		// none in [lo, hi], there is nothing to scan.
		adv := p.time.Advance()
		if first := max(lo, 0); adv > 0 && first%adv != 0 {
			lo = first - first%adv + adv
		} else {
			lo = first
		}
	}
	if lo > hi {
		return nil
	}
	it, err := s.FetchAll(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		wk, vt := it.Key(), it.Value()
		if err := it.Err(); err != nil {
			return err
		}
		// The offset saturates for huge grace; the exact test keeps the
		// range exact.
		if c := p.closeTime(wk.Window); c <= after || c > upTo {
			continue
		}
		ctx.Forward(processor.Erased{Key: wk, Value: change{New: vt.Value}, Timestamp: vt.Timestamp})
	}
	return it.Err()
}

// timeWindowAggregate is Kafka Streams' KStreamWindowAggregate under the
// one late rule: each of a record's windows is updated unless it has
// closed, and forwarded (under onWindowUpdate) with the larger of the
// record's and the window's timestamps.
type timeWindowAggregate[K, V, VA any] struct {
	windowedNode[K, VA]
	agg   aggregation[K, V, VA]
	store state.TimestampedWindowStore[K, VA]
	// wins is the record's windows, a slice kept between records: the
	// graph is acyclic, so Process is never re-entered while it loops.
	wins []window.Window
}

func (p *timeWindowAggregate[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	if err := p.init(ctx); err != nil {
		return err
	}
	s, err := storeOf[state.TimestampedWindowStore[K, VA]](ctx, p.plan.store)
	p.store = s
	return err
}

// Process drops a record without a key; a null value is aggregated (a
// count counts it), as in Kafka Streams' windowed aggregations.
func (p *timeWindowAggregate[K, V, VA]) Process(rec processor.Erased) error {
	k, v, ok, err := keyedRecord[K, V](p.ctx, rec, false)
	if !ok {
		return err
	}
	tw, floor := p.plan.time, p.ctx.Floor()
	p.wins = tw.AppendWindowsFor(p.wins[:0], rec.Timestamp)
	for _, w := range p.wins {
		if c := tw.CloseTime(w); window.Closed(c, floor) {
			dropLate(p.ctx, metrics.ReasonLateWindow, rec, w, c)
			continue
		}
		if err := p.update(k, v, w, rec); err != nil {
			return err
		}
	}
	return nil
}

func (p *timeWindowAggregate[K, V, VA]) update(k K, v V, w window.Window, rec processor.Erased) error {
	cur, found, err := p.store.Fetch(k, w.Start)
	if err != nil {
		return fmt.Errorf("read window aggregate: %w", err)
	}
	ts := rec.Timestamp
	if found {
		ts = max(ts, cur.Timestamp)
	}
	newAgg, old := p.agg.fold(k, v, aggValue[VA]{v: cur.Value, ok: found})
	// A null aggregate deletes the window: the store treats
	// ValueAndTimestamp{null} as Kafka Streams treats make(null, ts).
	if err := p.store.Put(k, state.ValueAndTimestamp[VA]{Value: newAgg, Timestamp: ts}, w.Start); err != nil {
		return fmt.Errorf("write window aggregate: %w", err)
	}
	p.forward(processor.Erased{Key: window.Windowed[K]{Key: k, Window: w}, Value: change{New: orNull(newAgg), Old: old.orNil()}, Timestamp: ts, Headers: rec.Headers})
	return nil
}

// slot is a sliding window's aggregate and timestamp as the algorithm
// carries them: read from the store, or made for a new window.
type slot[VA any] struct {
	agg aggValue[VA]
	ts  int64
}

// slidingEntry is a window read by a sliding aggregation's scan.
type slidingEntry[VA any] struct {
	start int64
	slot[VA]
}

// errUnexpectedWindow reports a store holding a window the sliding
// algorithm cannot have made.
var errUnexpectedWindow = errors.New("unexpected sliding window in the store")

// slidingWindowAggregate is Kafka Streams' KStreamSlidingWindowAggregate
// (its default, backward-iterator form, processReverse and processEarly)
// under the one late rule. Every record has a left window [t-D, t] ending at it and,
// when later records are within D, a right window [t+1, t+1+D] starting
// just after it; a record updates the windows of earlier and later records
// it falls into and creates the windows the records around it imply, so
// that the store holds every distinct set of records within D of each
// other. Windows never start before 0: records before D share the window
// [0, D].
type slidingWindowAggregate[K, V, VA any] struct {
	windowedNode[K, VA]
	agg     aggregation[K, V, VA]
	store   state.TimestampedWindowStore[K, VA]
	entries []slidingEntry[VA]
	starts  map[int64]bool
}

func (p *slidingWindowAggregate[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	if err := p.init(ctx); err != nil {
		return err
	}
	s, err := storeOf[state.TimestampedWindowStore[K, VA]](ctx, p.plan.store)
	p.store = s
	p.starts = map[int64]bool{}
	return err
}

// Process drops a record without a key or a value, as Kafka Streams'
// sliding aggregation does (unlike its time and session ones).
func (p *slidingWindowAggregate[K, V, VA]) Process(rec processor.Erased) error {
	k, v, ok, err := keyedRecord[K, V](p.ctx, rec, true)
	if !ok {
		return err
	}
	ts, d := rec.Timestamp, p.plan.sliding.TimeDifference()
	// The latest-closing window holding the record starts at it; once that
	// one has closed, all have, and the record is dropped whole (Kafka
	// Streams' first check).
	if w := (window.Window{Start: ts, End: ts + d}); window.Closed(p.plan.closeTime(w), p.ctx.Floor()) {
		dropLate(p.ctx, metrics.ReasonLateWindow, rec, window.Window{Start: ts - d, End: ts}, p.plan.closeTime(w))
		return nil
	}
	if ts < d {
		return p.processEarly(k, v, rec)
	}
	return p.processReverse(k, v, rec)
}

// scan reads key's windows starting in [from, to] into p.entries, in start
// order, and records their starts. Reading them all first lets the
// algorithm write while it walks them.
func (p *slidingWindowAggregate[K, V, VA]) scan(k K, from, to int64) error {
	p.entries = p.entries[:0]
	clear(p.starts)
	it, err := p.store.FetchRange(k, from, to)
	if err != nil {
		return fmt.Errorf("read windows: %w", err)
	}
	defer it.Close()
	for it.Next() {
		vt := it.Value()
		p.entries = append(p.entries, slidingEntry[VA]{start: it.Key(), slot: slot[VA]{agg: aggValue[VA]{v: vt.Value, ok: true}, ts: vt.Timestamp}})
		p.starts[it.Key()] = true
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read windows: %w", err)
	}
	return nil
}

// processReverse is Kafka Streams' processReverse, the algorithm its
// sliding aggregation uses over every built-in store (they all iterate
// backward): it walks the windows from the latest start down, so a record
// updates the windows it falls into latest first, then creates the
// previous record's right window, its own left window and its own right
// window, in that order (SlidingWindowedKStreamIntegrationTest asserts
// that order). It stops at the first window ending before the record, the
// previous record's left window, and returns early when the record's own
// left window already holds a record at least as late: every window the
// record implies then exists.
func (p *slidingWindowAggregate[K, V, VA]) processReverse(k K, v V, rec processor.Erased) error {
	ts, d := rec.Timestamp, p.plan.sliding.TimeDifference()
	// Up to 2D back reaches the window holding the previous record, whose
	// right window may need creating; ts+1 catches this record's own right
	// window. The scan reads forward into p.entries, walked backward here.
	if err := p.scan(k, max(0, ts-2*d), ts+1); err != nil {
		return err
	}
	var left, right *slot[VA]
	leftCreated, rightCreated := false, false
	var prev *int64
walk:
	for i := len(p.entries) - 1; i >= 0; i-- {
		e := &p.entries[i]
		end := e.start + d
		switch {
		case e.start == ts+1:
			rightCreated = true
		case end > ts:
			// The first such window, the latest starting, holds the later
			// records this record's right window would hold.
			if right == nil {
				s := e.slot
				right = &s
			}
			if err := p.update(k, v, window.Window{Start: e.start, End: end}, e.slot, rec); err != nil {
				return err
			}
		case end == ts:
			leftCreated = true
			if err := p.update(k, v, window.Window{Start: e.start, End: end}, e.slot, rec); err != nil {
				return err
			}
			if e.ts >= ts {
				return nil
			}
			prevTS := e.ts
			prev = &prevTS
		default:
			left = &e.slot
			prevTS := e.ts
			prev = &prevTS
			break walk
		}
	}
	// The previous record's right window, if this record falls into it.
	if prev != nil {
		if start := *prev + 1; !p.starts[start] && start+d >= ts {
			if err := p.update(k, v, window.Window{Start: start, End: start + d}, slot[VA]{agg: p.agg.init(), ts: ts}, rec); err != nil {
				return err
			}
		}
	}
	// This record's left window: the previous record's aggregate when it
	// is within D, else a new one.
	if !leftCreated {
		s := slot[VA]{agg: p.agg.init(), ts: ts}
		if prev != nil && left != nil && ts-d <= *prev {
			s = slot[VA]{agg: left.agg, ts: ts}
		}
		if err := p.update(k, v, window.Window{Start: ts - d, End: ts}, s, rec); err != nil {
			return err
		}
	}
	if !rightCreated && right != nil && right.ts > ts {
		return p.createRightWindow(k, ts, *right, rec)
	}
	return nil
}

// processEarly handles a record before D, whose left window would start
// before 0: it goes into the window [0, D], which holds every early record.
func (p *slidingWindowAggregate[K, V, VA]) processEarly(k K, v V, rec processor.Erased) error {
	ts, d := rec.Timestamp, p.plan.sliding.TimeDifference()
	if err := p.scan(k, 0, ts+1); err != nil {
		return err
	}
	var combined, right *slot[VA]
	rightCreated := false
	var prev *int64
	for i := range p.entries {
		e := &p.entries[i]
		switch {
		case e.start == 0:
			combined = &e.slot
			if e.ts < ts {
				prevTS := e.ts
				prev = &prevTS
			}
		case e.start <= ts:
			s := e.slot
			right = &s
			if err := p.update(k, v, window.Window{Start: e.start, End: e.start + d}, e.slot, rec); err != nil {
				return err
			}
		case e.start == ts+1:
			rightCreated = true
		default:
			return fmt.Errorf("%w: window starting at %d for an early record at %d", errUnexpectedWindow, e.start, ts)
		}
	}
	// Without a right window found, the combined window holds only records
	// after this one when its latest record is later: it is this record's
	// right window's content.
	if right == nil && combined != nil && combined.ts > ts {
		s := *combined
		right = &s
	}
	if !rightCreated && right != nil && right.ts > ts {
		if err := p.createRightWindow(k, ts, *right, rec); err != nil {
			return err
		}
	}
	if prev != nil && !p.starts[*prev+1] {
		start := *prev + 1
		if err := p.update(k, v, window.Window{Start: start, End: start + d}, slot[VA]{agg: p.agg.init(), ts: ts}, rec); err != nil {
			return err
		}
	}
	cs := slot[VA]{agg: p.agg.init(), ts: ts}
	if combined != nil {
		cs = *combined
	}
	return p.update(k, v, window.Window{Start: 0, End: d}, cs, rec)
}

// update folds the record into window w, whose current aggregate is cur,
// unless w has closed.
func (p *slidingWindowAggregate[K, V, VA]) update(k K, v V, w window.Window, cur slot[VA], rec processor.Erased) error {
	if c := p.plan.closeTime(w); window.Closed(c, p.ctx.Floor()) {
		dropLate(p.ctx, metrics.ReasonLateWindow, rec, w, c)
		return nil
	}
	ts := rec.Timestamp
	if cur.agg.ok {
		ts = max(ts, cur.ts)
	}
	newAgg, old := p.agg.fold(k, v, cur.agg)
	if err := p.store.Put(k, state.ValueAndTimestamp[VA]{Value: newAgg, Timestamp: ts}, w.Start); err != nil {
		return fmt.Errorf("write window aggregate: %w", err)
	}
	p.forward(processor.Erased{Key: window.Windowed[K]{Key: k, Window: w}, Value: change{New: orNull(newAgg), Old: old.orNil()}, Timestamp: ts, Headers: rec.Headers})
	return nil
}

// createRightWindow creates the record's right window, [t+1, t+1+D], with
// the aggregate of the later records it holds (right). It does not hold the
// record, and closes after every window that does, so it is never late
// when the record is not.
func (p *slidingWindowAggregate[K, V, VA]) createRightWindow(k K, ts int64, right slot[VA], rec processor.Erased) error {
	d := p.plan.sliding.TimeDifference()
	w := window.Window{Start: ts + 1, End: ts + 1 + d}
	if err := p.store.Put(k, state.ValueAndTimestamp[VA]{Value: right.agg.v, Timestamp: right.ts}, w.Start); err != nil {
		return fmt.Errorf("write window aggregate: %w", err)
	}
	p.forward(processor.Erased{Key: window.Windowed[K]{Key: k, Window: w}, Value: change{New: right.agg.orNil()}, Timestamp: right.ts, Headers: rec.Headers})
	return nil
}
