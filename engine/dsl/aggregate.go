package dsl

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// aggValue is an aggregate that may be null: none yet, or deleted.
type aggValue[T any] struct {
	v  T
	ok bool
}

// aggOf wraps v; a null v (a nil pointer, say) is no aggregate.
func aggOf[T any](v T) aggValue[T] { return aggValue[T]{v: v, ok: !absent(v)} }

func (a aggValue[T]) orNil() any {
	if !a.ok {
		return nil
	}
	return a.v
}

// aggregateBase is what the aggregation processors share: the context, the
// store, and the serdes they resolve from the configuration at Init.
type aggregateBase[K, VA any] struct {
	storeName string
	serdes    []any
	ctx       processor.Context[any, any]
	store     state.TimestampedKeyValueStore[K, VA]
}

func (p *aggregateBase[K, VA]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := configureSerdes(ctx, p.serdes); err != nil {
		return fmt.Errorf("serdes of state store %s: %w", p.storeName, err)
	}
	s, err := processor.TimestampedKeyValueStore[K, VA](ctx, p.storeName)
	if err != nil {
		return err
	}
	p.store = s
	return nil
}

func (p *aggregateBase[K, VA]) Close() error { return nil }

// current returns the key's aggregate and its timestamp.
func (p *aggregateBase[K, VA]) current(key K) (aggValue[VA], int64, error) {
	cur, found, err := p.store.Get(key)
	if err != nil {
		return aggValue[VA]{}, 0, fmt.Errorf("read aggregate: %w", err)
	}
	return aggValue[VA]{v: cur.Value, ok: found}, cur.Timestamp, nil
}

// save stores the key's new aggregate, deleting the key when there is none:
// Kafka Streams puts ValueAndTimestamp.make(null, ts), which is a delete.
func (p *aggregateBase[K, VA]) save(key K, agg aggValue[VA], ts int64) error {
	if !agg.ok {
		if _, _, err := p.store.Delete(key); err != nil {
			return fmt.Errorf("delete aggregate: %w", err)
		}
		return nil
	}
	if err := p.store.Put(key, state.ValueAndTimestamp[VA]{Value: agg.v, Timestamp: ts}); err != nil {
		return fmt.Errorf("write aggregate: %w", err)
	}
	return nil
}

// streamFold folds a record's value into its key's aggregate, cur (not ok
// when the key has none). It returns the new aggregate and the old one to
// forward.
type streamFold[K, V, VA any] func(key K, value V, cur aggValue[VA]) (newAgg VA, old aggValue[VA])

// streamAggregator is Kafka Streams' KStreamAggregate and KStreamReduce:
// records without a key or a value are dropped and counted; otherwise the
// new aggregate is stored with the larger of the record's and the
// aggregate's timestamps, and forwarded as a change with that timestamp.
type streamAggregator[K, V, VA any] struct {
	aggregateBase[K, VA]
	fold streamFold[K, V, VA]
}

func (p *streamAggregator[K, V, VA]) Process(rec processor.Erased) error {
	k, v, ok, err := keyedRecord[K, V](p.ctx, rec, true)
	if !ok {
		return err
	}
	cur, curTS, err := p.current(k)
	if err != nil {
		return err
	}
	ts := rec.Timestamp
	if cur.ok {
		ts = max(ts, curTS)
	}
	newAgg, old := p.fold(k, v, cur)
	agg := aggOf(newAgg)
	if err := p.save(k, agg, ts); err != nil {
		return err
	}
	p.ctx.Forward(processor.Erased{Key: rec.Key, Value: change{New: agg.orNil(), Old: old.orNil()}, Timestamp: ts, Headers: rec.Headers})
	return nil
}

// aggregateStream adds the aggregation of g with store named after prefix
// (unless m names it) and processor prefix-<n>, in Kafka Streams' naming
// order: store, processor, then the boundary if the grouping re-keys.
// valueSerde is the known serde of the aggregate, nil for the default.
func aggregateStream[K, V, VA any](g KGroupedStream[K, V], prefix string, m Materialized[K, VA], valueSerde serde.Serde[VA], fold streamFold[K, V, VA]) KTable[K, VA] {
	b := g.s.b
	storeName := b.newStoreName(prefix, m.name)
	name := b.t.GeneratedName(prefix)
	input, sources := g.input(storeName)
	keySerde := orSerde(m.keySerde, g.keySerde)
	storeKeys, storeValues := serdeOrConfig(keySerde, true), serdeOrConfig(valueSerde, false)
	serdes := []any{storeKeys, storeValues}
	b.t.AddProcessor(name, func() processor.Untyped {
		return &streamAggregator[K, V, VA]{aggregateBase: aggregateBase[K, VA]{storeName: storeName, serdes: serdes}, fold: fold}
	}, input)
	b.t.AddStateStore(timestampedStore(storeName, storeKeys, storeValues, m), name)
	return KTable[K, VA]{b: b, node: name, keySerde: keySerde, valueSerde: valueSerde, meta: &tableMeta{store: storeName}, sources: sources}
}

// aggregation is how Count, Reduce and Aggregate fold a value into an
// aggregate, split so that every form reuses it: init is a new key's (or
// window's, or session's) aggregate before its first value, none for
// Reduce; add folds one value in. The windowed and cogrouped aggregations
// take the same two parts.
type aggregation[K, V, VA any] struct {
	init func() aggValue[VA]
	add  func(key K, value V, agg aggValue[VA]) VA
}

// fold is the streamFold of a: a key without an aggregate starts from
// init, which is also the old value forwarded (Kafka Streams forwards the
// initial aggregate of a new key as its old value, not a null).
func (a aggregation[K, V, VA]) fold(key K, value V, cur aggValue[VA]) (VA, aggValue[VA]) {
	if !cur.ok {
		cur = a.init()
	}
	return a.add(key, value, cur), cur
}

// counting is Count's aggregation: from 0, plus one per record.
func counting[K, V any]() aggregation[K, V, int64] {
	return aggregation[K, V, int64]{
		init: func() aggValue[int64] { return aggValue[int64]{ok: true} },
		add:  func(_ K, _ V, agg aggValue[int64]) int64 { return agg.v + 1 },
	}
}

// reducing is Reduce's aggregation: the first value as is, then
// reducer(aggregate, value).
func reducing[K, V any](reducer func(agg, value V) V) aggregation[K, V, V] {
	return aggregation[K, V, V]{
		init: func() aggValue[V] { return aggValue[V]{} },
		add: func(_ K, v V, agg aggValue[V]) V {
			if !agg.ok {
				return v
			}
			return reducer(agg.v, v)
		},
	}
}

// aggregating is Aggregate's aggregation: from initializer(), folded by
// adder. A null initial aggregate is none, but adder still sees it, as
// Kafka Streams' aggregator sees the initializer's null.
func aggregating[K, V, VA any](initializer func() VA, adder func(key K, value V, agg VA) VA) aggregation[K, V, VA] {
	return aggregation[K, V, VA]{
		init: func() aggValue[VA] { return aggOf(initializer()) },
		add:  func(k K, v V, agg aggValue[VA]) VA { return adder(k, v, agg.v) },
	}
}

// Count counts the records of each key. The count is kept in a timestamped
// store (int64 values unless materialized says otherwise), changelogged
// unless materialized disables it.
func (g KGroupedStream[K, V]) Count(materialized ...Materialized[K, int64]) KTable[K, int64] {
	m, given := firstMaterialized(materialized)
	if given && m.name == "" {
		// Kafka Streams burns an index for an unnamed Materialized here;
		// burning it too keeps later generated names equal.
		g.s.b.t.NextIndex()
	}
	values := orSerde(m.valueSerde, serde.Int64())
	return aggregateStream(g, streamAggregatePrefix, m, values, counting[K, V]().fold)
}

// Reduce combines the values of each key with reducer(aggregate, value);
// the first value of a key is its aggregate as is. A reducer returning a
// null (for a nil-able V) deletes the key and forwards a delete.
func (g KGroupedStream[K, V]) Reduce(reducer func(agg, value V) V, materialized ...Materialized[K, V]) KTable[K, V] {
	m, _ := firstMaterialized(materialized)
	values := orSerde(m.valueSerde, g.valueSerde)
	return aggregateStream(g, streamReducePrefix, m, values, reducing[K](reducer).fold)
}

// Aggregate folds the values of each key into an aggregate that starts as
// initializer() and is updated by adder. The aggregate's serde is
// materialized's, or the configured default value serde.
func Aggregate[K, V, VA any](g KGroupedStream[K, V], initializer func() VA, adder func(key K, value V, agg VA) VA, materialized ...Materialized[K, VA]) KTable[K, VA] {
	m, _ := firstMaterialized(materialized)
	return aggregateStream(g, streamAggregatePrefix, m, m.valueSerde, aggregating(initializer, adder).fold)
}
