package dsl

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Kafka Streams' prefixes for cogroup nodes and stores.
const (
	cogroupAggregatePrefix = "COGROUPKSTREAM-AGGREGATE-"
	cogroupMergePrefix     = "COGROUPKSTREAM-MERGE-"
)

var errNilAggregator = errors.New("nil aggregator")

// CogroupedKStream is several grouped streams with the same key type
// aggregated into one table, each with its own aggregator, as Kafka
// Streams' CogroupedKStream: Cogroup starts one, AddCogroup adds a grouped
// stream, Aggregate (or WindowedBy... Aggregate) builds the table.
//
// Every input reaches the one shared store through its own processor
// (COGROUPKSTREAM-AGGREGATE-n), which applies that input's aggregator, and
// the processors feed a merge node (COGROUPKSTREAM-MERGE-n) whose output
// is the table. Which aggregator applies is decided by the edge a record
// arrives on, never by where it came from: a cogroup of two groupings of
// one stream applies both aggregators to each of its records.
//
// The zero value is not usable; start with Cogroup. A CogroupedKStream is a
// value: AddCogroup returns a new one and leaves its argument as it was.
type CogroupedKStream[K, VA any] struct {
	b      *Builder
	inputs []cogroupInput[K, VA]
}

// cogroupInput is one grouped stream of a cogroup and its aggregator, made
// into a processor of whichever form the cogroup is aggregated in.
type cogroupInput[K, VA any] struct {
	windowedInput[K, VA]
	// plain makes the input's processor of a cogroup aggregated without
	// windows: Kafka Streams' KStreamAggregate with the cogroup's
	// initializer.
	plain func(store string, serdes []any, init func() aggValue[VA]) processor.Untyped
}

// Cogroup starts a cogroup with g, whose values aggregator folds into the
// shared aggregate.
func Cogroup[K, V, VA any](g KGroupedStream[K, V], aggregator func(key K, value V, agg VA) VA) CogroupedKStream[K, VA] {
	return AddCogroup(CogroupedKStream[K, VA]{b: g.s.b}, g, aggregator)
}

// AddCogroup adds g to the cogroup, its values folded into the shared
// aggregate by aggregator. Its key must partition like the other inputs'
// (the build checks their serdes and partition counts).
func AddCogroup[K, V, VA any](c CogroupedKStream[K, VA], g KGroupedStream[K, V], aggregator func(key K, value V, agg VA) VA) CogroupedKStream[K, VA] {
	add := func(k K, v V, agg aggValue[VA]) VA { return aggregator(k, v, agg.v) }
	in := cogroupInput[K, VA]{
		windowedInput: windowedInputOf(g, add),
		plain: func(store string, serdes []any, init func() aggValue[VA]) processor.Untyped {
			a := aggregation[K, V, VA]{init: init, add: add}
			return &streamAggregator[K, V, VA]{aggregateBase: aggregateBase[K, VA]{storeName: store, serdes: serdes}, fold: a.fold}
		},
	}
	switch {
	case aggregator == nil:
		in.invalid = errNilAggregator
	case g.s.b != c.b:
		in.invalid = fmt.Errorf("cogrouped stream %s %w", g.s.node, errOtherBuilder)
	}
	// Clip so that appending copies: two cogroups grown from one share no
	// inputs.
	c.inputs = append(slices.Clip(c.inputs), in)
	return c
}

// Aggregate aggregates the cogroup into a table, every key's aggregate
// starting as initializer() and kept in a timestamped store named by
// materialized or COGROUPKSTREAM-AGGREGATE-STATE-STORE-n. Each input's
// records update it with their own aggregator and forward the change.
func (c CogroupedKStream[K, VA]) Aggregate(initializer func() VA, materialized ...Materialized[K, VA]) KTable[K, VA] {
	b := c.b
	m, _ := firstMaterialized(materialized)
	store := b.newStoreName(cogroupAggregatePrefix, m.name)
	// Kafka Streams' order: every boundary, then every processor, then
	// the merge node.
	parents := make([]string, len(c.inputs))
	var sources []string
	for i, in := range c.inputs {
		var src []string
		parents[i], src = in.input(store)
		sources = mergeSources(sources, src)
	}
	names := make([]string, len(c.inputs))
	for i := range names {
		names[i] = b.t.GeneratedName(cogroupAggregatePrefix)
	}
	merge := b.t.GeneratedName(cogroupMergePrefix)

	keySerde := orSerde(m.keySerde, c.inputs[0].keySerde)
	storeKeys, storeValues := serdeOrConfig(keySerde, true), serdeOrConfig(m.valueSerde, false)
	serdes := []any{storeKeys, storeValues}
	init := func() aggValue[VA] { return aggOf(initializer()) }
	for i, in := range c.inputs {
		b.t.AddProcessor(names[i], func() processor.Untyped { return in.plain(store, serdes, init) }, parents[i])
		if in.invalid != nil {
			b.t.Fail(names[i], in.invalid)
		}
	}
	b.t.AddProcessor(merge, stateless(func(ctx processor.Context[any, any], rec processor.Erased) error {
		ctx.Forward(rec)
		return nil
	}), names...)
	if err := nilFunc("initializer", initializer == nil); err != nil {
		b.t.Fail(merge, err)
	}
	b.t.AddStateStore(timestampedStore(store, storeKeys, storeValues, m), names...)
	b.t.Copartition(merge, sources...)
	return KTable[K, VA]{b: b, node: merge, keySerde: keySerde, valueSerde: m.valueSerde, meta: &tableMeta{store: store}, sources: sources}
}

// windowedInputs lists the inputs as a windowed aggregation takes them.
func (c CogroupedKStream[K, VA]) windowedInputs() []windowedInput[K, VA] {
	out := make([]windowedInput[K, VA], len(c.inputs))
	for i, in := range c.inputs {
		out[i] = in.windowedInput
	}
	return out
}

// aggregateWindowed builds a windowed cogroup: one store, one processor per
// input, and the merge node, which forwards the inputs' updates and runs
// the emit pass and expiry for all of them.
func (c CogroupedKStream[K, VA]) aggregateWindowed(def windowDef, emit EmitStrategy, initializer func() VA, merge func(K, aggValue[VA], VA) aggValue[VA], m Materialized[K, VA], invalid error) KTable[window.Windowed[K], VA] {
	return windowedBuild[K, VA]{
		b: c.b, def: def, emit: emit, prefix: cogroupAggregatePrefix, m: m, valueSerde: m.valueSerde,
		init: func() aggValue[VA] { return aggOf(initializer()) }, merge: merge,
		inputs: c.windowedInputs(), mergePrefix: cogroupMergePrefix,
		invalid: errors.Join(nilFunc("initializer", initializer == nil), invalid),
	}.build()
}

// TimeWindowedCogroupedKStream is a cogroup windowed by time or sliding
// windows, as Kafka Streams' TimeWindowedCogroupedKStream.
type TimeWindowedCogroupedKStream[K, VA any] struct {
	c    CogroupedKStream[K, VA]
	def  windowDef
	emit EmitStrategy
}

// WindowedBy windows the cogroup by time windows (tumbling or hopping).
func (c CogroupedKStream[K, VA]) WindowedBy(w window.TimeWindows) TimeWindowedCogroupedKStream[K, VA] {
	return TimeWindowedCogroupedKStream[K, VA]{c: c, def: windowDef{kind: timeWindowKind, time: w}}
}

// WindowedBySliding windows the cogroup by sliding windows.
func (c CogroupedKStream[K, VA]) WindowedBySliding(w window.SlidingWindows) TimeWindowedCogroupedKStream[K, VA] {
	return TimeWindowedCogroupedKStream[K, VA]{c: c, def: windowDef{kind: slidingWindowKind, sliding: w}}
}

// EmitStrategy sets when results are forwarded. Kafka Streams' cogroups
// always emit on update; OnWindowClose is StoatFlow's extension, with the
// emit pass on the merge node.
func (t TimeWindowedCogroupedKStream[K, VA]) EmitStrategy(e EmitStrategy) TimeWindowedCogroupedKStream[K, VA] {
	t.emit = e
	return t
}

// Aggregate aggregates the cogroup per key and window, every window's
// aggregate starting as initializer().
func (t TimeWindowedCogroupedKStream[K, VA]) Aggregate(initializer func() VA, materialized ...Materialized[K, VA]) KTable[window.Windowed[K], VA] {
	m, _ := firstMaterialized(materialized)
	return t.c.aggregateWindowed(t.def, t.emit, initializer, nil, m, nil)
}

// SessionWindowedCogroupedKStream is a cogroup windowed by sessions, as
// Kafka Streams' SessionWindowedCogroupedKStream.
type SessionWindowedCogroupedKStream[K, VA any] struct {
	c    CogroupedKStream[K, VA]
	def  windowDef
	emit EmitStrategy
}

// WindowedBySession windows the cogroup by sessions.
func (c CogroupedKStream[K, VA]) WindowedBySession(w window.SessionWindows) SessionWindowedCogroupedKStream[K, VA] {
	return SessionWindowedCogroupedKStream[K, VA]{c: c, def: windowDef{kind: sessionWindowKind, session: w}}
}

// EmitStrategy sets when results are forwarded (see
// TimeWindowedCogroupedKStream.EmitStrategy).
func (s SessionWindowedCogroupedKStream[K, VA]) EmitStrategy(e EmitStrategy) SessionWindowedCogroupedKStream[K, VA] {
	s.emit = e
	return s
}

// Aggregate aggregates the cogroup per key and session, every session's
// aggregate starting as initializer(); merger combines the aggregates of
// sessions a record joins.
func (s SessionWindowedCogroupedKStream[K, VA]) Aggregate(initializer func() VA, merger func(key K, agg, other VA) VA, materialized ...Materialized[K, VA]) KTable[window.Windowed[K], VA] {
	m, _ := firstMaterialized(materialized)
	return s.c.aggregateWindowed(s.def, s.emit, initializer, aggregatingMerge(merger), m, nilFunc("session merger", merger == nil))
}

// windowedMerge is a windowed cogroup's merge node: it forwards what the
// inputs' processors forward, and runs the emit pass and expiry of the
// shared store.
type windowedMerge[K, VA any] struct {
	windowedNode[K, VA]
}

func (p *windowedMerge[K, VA]) Init(ctx processor.Context[any, any]) error { return p.init(ctx) }

func (p *windowedMerge[K, VA]) Process(rec processor.Erased) error {
	p.ctx.Forward(rec)
	return nil
}
