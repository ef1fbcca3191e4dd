package dsl

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// GlobalKTable is a table every task holds in full: it reads all
// partitions of its topic, so a stream joins it by any key it computes,
// with no co-partitioning and no re-keying.
type GlobalKTable[K, V any] struct {
	b          *Builder
	store      string
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
}

// StoreName is the name of the global store holding the table.
func (g GlobalKTable[K, V]) StoreName() string { return g.store }

// GlobalTable reads topic as a global table, kept in a timestamped
// key-value store named by materialized or "<topic>-STATE-STORE-<n>". The
// store is never changelogged, whatever materialized says: the topic is its
// log. As in Kafka Streams, a Consumed named "x" names the source node
// "x-source" and the store's processor "x"; otherwise both are generated.
func GlobalTable[K, V any](b *Builder, topic string, consumed Consumed[K, V], materialized ...Materialized[K, V]) GlobalKTable[K, V] {
	m, _ := firstMaterialized(materialized)
	storeName := b.newStoreName(topic+"-", m.name)
	source, name := consumed.Name()+"-source", consumed.Name()
	if consumed.Name() == "" {
		source, name = b.t.GeneratedName(sourcePrefix), b.t.GeneratedName(tableSourcePrefix)
	}
	ks, vs := orSerde(m.keySerde, consumed.KeySerde()), orSerde(m.valueSerde, consumed.ValueSerde())
	supplier := m.supplier
	if supplier == nil {
		supplier = state.InMemory()
	}
	var store state.StoreBuilder = state.TimestampedKeyValueStoreBuilder(storeName, ks, vs, supplier).WithLoggingDisabled()
	if _, versioned := supplier.(state.VersionedSupplier); versioned {
		// Versioned global tables are not built: refused when the store
		// is, rather than kept unversioned silently.
		store = refusedStore{StoreBuilder: store, err: fmt.Errorf("state store %s: %w", storeName, errVersionedSourceOnly)}
	}
	meta := &tableMeta{store: storeName}
	b.t.AddGlobalStore(store, source, consumed.Spec(), topic, name, func() processor.Untyped {
		return &tableSource[K, V]{meta: meta}
	})
	return GlobalKTable[K, V]{b: b, store: storeName, keySerde: ks, valueSerde: vs}
}

// JoinGlobal joins each record of s with g's value for the key keySelector
// computes from the record (an inner join): records g has no value for, or
// whose selected key is null (a nil pointer, map, slice or interface), are
// dropped, as are records with a null value. Only stream records trigger
// output, with their own timestamp. The join node is named by named, or
// generated as KSTREAM-JOIN-<n> (KSTREAM-LEFTJOIN-<n> for LeftJoinGlobal).
func JoinGlobal[K, V, GK, GV, VR any](s KStream[K, V], g GlobalKTable[GK, GV], keySelector func(K, V) GK, joiner func(K, V, GV) VR, named ...Named) KStream[K, VR] {
	return streamGlobalJoin(s, g, keySelector, joiner, false, named)
}

// LeftJoinGlobal is JoinGlobal that also keeps records g has no value for,
// or whose selected key is null: the joiner then gets GV's zero value
// (Kafka Streams passes null; use a pointer GV to tell the cases apart).
// Keeping a null selected key is Kafka Streams' rule since 4.1
// (KAFKA-19208); from 2.7 to 4.0 it dropped such records.
func LeftJoinGlobal[K, V, GK, GV, VR any](s KStream[K, V], g GlobalKTable[GK, GV], keySelector func(K, V) GK, joiner func(K, V, GV) VR, named ...Named) KStream[K, VR] {
	return streamGlobalJoin(s, g, keySelector, joiner, true, named)
}

func streamGlobalJoin[K, V, GK, GV, VR any](s KStream[K, V], g GlobalKTable[GK, GV], keySelector func(K, V) GK, joiner func(K, V, GV) VR, left bool, named []Named) KStream[K, VR] {
	prefix := joinPrefix
	if left {
		prefix = leftJoinPrefix
	}
	name := s.b.newName(prefix, named)
	store := g.store
	// The join reads the global store without being connected to it: every
	// task may read every global store.
	s.b.t.AddProcessor(name, func() processor.Untyped {
		return &lookupJoin[K, V, GV, VR]{
			left:   left,
			joiner: joiner,
			keyOf:  func(_ processor.Erased, k K, v V) any { return orNull(keySelector(k, v)) },
			open:   func(ctx processor.Context[any, any]) (lookup, error) { return storeLookup[GK, GV](ctx, store) },
		}
	}, s.node)
	if keySelector == nil {
		s.b.t.Fail(name, errNilKeySelector)
	}
	if joiner == nil {
		s.b.t.Fail(name, errNilJoiner)
	}
	if g.b != s.b {
		s.b.t.Fail(name, fmt.Errorf("global table %s %w", g.store, errOtherBuilder))
	}
	// Records keep their keys and lanes, so the result is partitioned (or
	// awaits re-keying) as s is; Kafka Streams keeps the flag the same way.
	return KStream[K, VR]{b: s.b, node: name, keySerde: s.keySerde, rekeyed: s.rekeyed, sources: s.sources}
}
