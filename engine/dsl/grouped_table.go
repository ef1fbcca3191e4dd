package dsl

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

var (
	errTableGroupNullKey = errors.New("record key for the grouping table should not be null")
	errNotAChange        = errors.New("record value is not a table change")
)

// KGroupedTable is a table re-grouped by a new key, ready for an
// aggregation that adds what each row contributes to its group and
// subtracts what it no longer does.
type KGroupedTable[K, V any] struct {
	b *Builder
	// node is the select node the boundary follows.
	node string
	// Serdes of the grouped rows, nil when the defaults apply.
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	// changeValues serializes the values inside the changes crossing the
	// boundary: valueSerde, or the configured default.
	changeValues serde.Serde[V]
	// name is Grouped's name, or "".
	name     string
	boundary *sharedBoundary
}

// GroupTableBy re-groups a table by a key and value selected from each
// row: Kafka Streams' KTable.groupBy. It always crosses a boundary, after
// the select node (named by grouped's name when one is given).
//
// Every change of the table becomes what it does to the groups, as in
// Kafka Streams' KTableRepartitionMap: the old row's selection is
// subtracted from its group and the new row's added to its group. Since
// Kafka Streams 3.5 (KIP-904) both travel as one record when they select
// the same key, so that the group is never seen without the row; they are
// two records, subtraction first, when the key moves. A selection with a
// null key or value contributes nothing. The "upgrade.from" setting that
// makes Kafka Streams send two records in every case is not supported.
func GroupTableBy[K, V, KR, VR any](t KTable[K, V], selector func(K, V) (KR, VR), grouped ...Grouped[KR, VR]) KGroupedTable[KR, VR] {
	g := firstGrouped(grouped)
	var named []Named
	if g.name != "" {
		named = []Named{Name(g.name)}
	}
	name := t.b.newName(tableSelectPrefix, named)
	changeValues := serdeOrConfig(g.valueSerde, false)
	serdes := []any{changeValues}
	t.b.t.AddProcessor(name, func() processor.Untyped {
		return &tableRepartitionMap[K, V, KR, VR]{selector: selector, serdes: serdes}
	}, t.node)
	return KGroupedTable[KR, VR]{
		b:            t.b,
		node:         name,
		keySerde:     g.keySerde,
		valueSerde:   g.valueSerde,
		changeValues: changeValues,
		name:         g.name,
		boundary:     &sharedBoundary{},
	}
}

// tableRepartitionMap turns a table's changes into changes of the groups
// the rows select.
type tableRepartitionMap[K, V, KR, VR any] struct {
	selector func(K, V) (KR, VR)
	serdes   []any
	ctx      processor.Context[any, any]
}

func (p *tableRepartitionMap[K, V, KR, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := configureSerdes(ctx, p.serdes); err != nil {
		return fmt.Errorf("serde of the grouped values: %w", err)
	}
	return nil
}

func (p *tableRepartitionMap[K, V, KR, VR]) Close() error { return nil }

func (p *tableRepartitionMap[K, V, KR, VR]) Process(rec processor.Erased) error {
	if absent(rec.Key) {
		// Kafka Streams fails here too: a table row always has a key.
		return errTableGroupNullKey
	}
	c, ok := rec.Value.(change)
	if !ok {
		return fmt.Errorf("%w: got %T", errNotAChange, rec.Value)
	}
	if c.stale {
		// An out-of-order update of a versioned table is not the row's
		// value; Kafka Streams' KTableRepartitionMap drops it too.
		return nil
	}
	key, err := processor.As[K](rec.Key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	newKey, newValue, hasNew, err := p.selection(key, c.New)
	if err != nil {
		return err
	}
	oldKey, oldValue, hasOld, err := p.selection(key, c.Old)
	if err != nil {
		return err
	}
	if hasOld && hasNew && reflect.DeepEqual(oldKey, newKey) {
		p.forward(rec, oldKey, change{New: newValue, Old: oldValue})
		return nil
	}
	if hasOld {
		p.forward(rec, oldKey, change{Old: oldValue})
	}
	if hasNew {
		p.forward(rec, newKey, change{New: newValue})
	}
	return nil
}

// selection applies the selector to a row value; ok is false when the row
// is null or selects a null key or value.
func (p *tableRepartitionMap[K, V, KR, VR]) selection(key K, value any) (k, v any, ok bool, err error) {
	if absent(value) {
		return nil, nil, false, nil
	}
	typed, err := processor.As[V](value)
	if err != nil {
		return nil, nil, false, fmt.Errorf("record value: %w", err)
	}
	kr, vr := p.selector(key, typed)
	if absent(kr) || absent(vr) {
		return nil, nil, false, nil
	}
	return kr, vr, true, nil
}

func (p *tableRepartitionMap[K, V, KR, VR]) forward(rec processor.Erased, key any, c change) {
	p.ctx.Forward(processor.Erased{Key: key, Value: c, Timestamp: rec.Timestamp, Headers: rec.Headers})
}

// input adds the boundary an aggregation with store storeName reads from,
// in Kafka Streams' naming order (sink, then source; KGroupedTableImpl adds
// no null-key filter, the select node drops null keys) and returns its
// source. A named grouping's aggregations share one boundary.
func (g KGroupedTable[K, V]) input(storeName string) string {
	sink := g.b.t.GeneratedName(sinkPrefix)
	source := g.b.t.GeneratedName(sourcePrefix)
	if g.name != "" && g.boundary.source != "" {
		return g.boundary.source
	}
	base := g.name
	if base == "" {
		base = storeName
	}
	values := newChangeSerde(serde.Erase(g.changeValues))
	g.b.t.AddBoundary(sink, source, base+"-repartition", eraseSerde(g.keySerde), values, g.node)
	if g.name != "" {
		g.boundary.source = source
	}
	return source
}

// tableFold applies one change to a group's aggregate cur, whose timestamp
// is curTS, for a record at ts: it returns the new aggregate (not ok when
// there is none) and its timestamp.
type tableFold[K, V, VA any] func(key K, c valueChange[V], cur aggValue[VA], curTS, ts int64) (aggValue[VA], int64)

// valueChange is a change with its values typed.
type valueChange[V any] struct {
	newValue, oldValue aggValue[V]
}

func typedChange[V any](c change) (valueChange[V], error) {
	var out valueChange[V]
	if !absent(c.New) {
		v, err := processor.As[V](c.New)
		if err != nil {
			return out, fmt.Errorf("new value: %w", err)
		}
		out.newValue = aggValue[V]{v: v, ok: true}
	}
	if !absent(c.Old) {
		v, err := processor.As[V](c.Old)
		if err != nil {
			return out, fmt.Errorf("old value: %w", err)
		}
		out.oldValue = aggValue[V]{v: v, ok: true}
	}
	return out, nil
}

// tableAggregator is Kafka Streams' KTableAggregate and KTableReduce: it
// applies each change to the group's aggregate, stores the result (a null
// result deletes the group) and forwards the change of the aggregate.
type tableAggregator[K, V, VA any] struct {
	aggregateBase[K, VA]
	fold tableFold[K, V, VA]
}

func (p *tableAggregator[K, V, VA]) Process(rec processor.Erased) error {
	if absent(rec.Key) {
		return fmt.Errorf("record key for table aggregation with state store %s should not be null", p.storeName)
	}
	c, ok := rec.Value.(change)
	if !ok {
		return fmt.Errorf("%w: got %T", errNotAChange, rec.Value)
	}
	key, err := processor.As[K](rec.Key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	vc, err := typedChange[V](c)
	if err != nil {
		return fmt.Errorf("record value: %w", err)
	}
	cur, curTS, err := p.current(key)
	if err != nil {
		return err
	}
	agg, ts := p.fold(key, vc, cur, curTS, rec.Timestamp)
	if err := p.save(key, agg, ts); err != nil {
		return err
	}
	p.ctx.Forward(processor.Erased{Key: rec.Key, Value: change{New: agg.orNil(), Old: cur.orNil()}, Timestamp: ts, Headers: rec.Headers})
	return nil
}

// aggregateFold is KTableAggregate's: subtract the old value from the
// aggregate if both exist, then add the new value to what is left (or to a
// fresh initializer() when nothing is). The timestamp is the record's, or
// the larger of it and the aggregate's once the aggregate took part.
func aggregateFold[K, V, VA any](initializer func() VA, adder, subtractor func(K, V, VA) VA) tableFold[K, V, VA] {
	return func(key K, c valueChange[V], cur aggValue[VA], curTS, ts int64) (aggValue[VA], int64) {
		newTS := ts
		agg := cur
		if c.oldValue.ok && cur.ok {
			agg = aggOf(subtractor(key, c.oldValue.v, cur.v))
			newTS = max(ts, curTS)
		}
		if !c.newValue.ok {
			return agg, newTS
		}
		base := agg.v
		if !agg.ok {
			base = initializer()
		}
		if cur.ok {
			newTS = max(ts, curTS)
		}
		return aggOf(adder(key, c.newValue.v, base)), newTS
	}
}

// reduceFold is KTableReduce's: as aggregateFold, but a group without an
// aggregate takes the new value as it is.
func reduceFold[K, V any](adder, subtractor func(agg, value V) V) tableFold[K, V, V] {
	return func(_ K, c valueChange[V], cur aggValue[V], curTS, ts int64) (aggValue[V], int64) {
		newTS := ts
		agg := cur
		if c.oldValue.ok && cur.ok {
			agg = aggOf(subtractor(cur.v, c.oldValue.v))
			newTS = max(ts, curTS)
		}
		switch {
		case !c.newValue.ok:
			return agg, newTS
		case !agg.ok:
			return c.newValue, newTS
		}
		return aggOf(adder(agg.v, c.newValue.v)), max(ts, curTS)
	}
}

// aggregateTable adds the aggregation of g in Kafka Streams' naming order
// (KGroupedTableImpl): store (unless m names it), boundary sink and source,
// then the processor prefix-<n>. valueSerde is the known serde of the
// aggregate, nil for the default.
func aggregateTable[K, V, VA any](g KGroupedTable[K, V], prefix string, m Materialized[K, VA], valueSerde serde.Serde[VA], fold tableFold[K, V, VA]) KTable[K, VA] {
	b := g.b
	storeName := b.newStoreName(tableAggregatePrefix, m.name)
	source := g.input(storeName)
	name := b.t.GeneratedName(prefix)
	keySerde := orSerde(m.keySerde, g.keySerde)
	storeKeys, storeValues := serdeOrConfig(keySerde, true), serdeOrConfig(valueSerde, false)
	// The changes' value serde is resolved here too: this side of the
	// boundary may run where the select node does not.
	serdes := []any{storeKeys, storeValues, g.changeValues}
	b.t.AddProcessor(name, func() processor.Untyped {
		return &tableAggregator[K, V, VA]{aggregateBase: aggregateBase[K, VA]{storeName: storeName, serdes: serdes}, fold: fold}
	}, source)
	b.t.AddStateStore(timestampedStore(storeName, storeKeys, storeValues, m), name)
	return KTable[K, VA]{b: b, node: name, keySerde: keySerde, valueSerde: valueSerde, meta: &tableMeta{store: storeName}, sources: []string{source}}
}

// Count counts the rows of each group. A group whose rows all left keeps
// a count of 0, as in Kafka Streams.
func (g KGroupedTable[K, V]) Count(materialized ...Materialized[K, int64]) KTable[K, int64] {
	m, _ := firstMaterialized(materialized)
	values := orSerde(m.valueSerde, serde.Int64())
	return aggregateTable(g, tableAggregatePrefix, m, values, aggregateFold(
		func() int64 { return 0 },
		func(_ K, _ V, agg int64) int64 { return agg + 1 },
		func(_ K, _ V, agg int64) int64 { return agg - 1 }))
}

// Reduce combines the values of each group with adder and takes back the
// values rows no longer contribute with subtractor, subtracting before
// adding. A group without an aggregate takes the first value as it is; a
// subtractor returning a null (for a nil-able V) deletes the group and
// forwards a delete.
func (g KGroupedTable[K, V]) Reduce(adder, subtractor func(agg, value V) V, materialized ...Materialized[K, V]) KTable[K, V] {
	m, _ := firstMaterialized(materialized)
	values := orSerde(m.valueSerde, g.valueSerde)
	return aggregateTable(g, tableReducePrefix, m, values, reduceFold[K](adder, subtractor))
}

// AggregateTable folds the values of each group into an aggregate that
// starts as initializer(): adder adds a row's value, subtractor takes back
// the value a row no longer contributes (subtraction comes first). A null
// aggregate (for a nil-able VA) deletes the group and forwards a delete.
// The aggregate's serde is materialized's, or the configured default.
func AggregateTable[K, V, VA any](g KGroupedTable[K, V], initializer func() VA, adder func(K, V, VA) VA, subtractor func(K, V, VA) VA, materialized ...Materialized[K, VA]) KTable[K, VA] {
	m, _ := firstMaterialized(materialized)
	return aggregateTable(g, tableAggregatePrefix, m, m.valueSerde, aggregateFold(initializer, adder, subtractor))
}
