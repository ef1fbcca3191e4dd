package dsl

import (
	"fmt"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Kafka Streams' prefixes for table nodes.
const (
	tableSourcePrefix   = "KTABLE-SOURCE-"
	toStreamPrefix      = "KTABLE-TOSTREAM-"
	tableFilterPrefix   = "KTABLE-FILTER-"
	tableMapValuesPrefx = "KTABLE-MAPVALUES-"
)

// change is the value table operations forward to each other: the key's
// new value and the value it replaces (nil for none, or for a delete).
type change struct {
	New any
	Old any
	// stale marks an update of a versioned table older than the key's
	// latest version (Kafka Streams' Change.isLatest false): what follows
	// every update forwards it, what keeps the latest values ignores it.
	stale bool
}

// String prints the change as its fields, with "stale" when it is.
func (c change) String() string {
	if c.stale {
		return fmt.Sprintf("{New:%v Old:%v stale}", c.New, c.Old)
	}
	return fmt.Sprintf("{New:%v Old:%v}", c.New, c.Old)
}

// KTable is a changelog stream read as a table: the latest value per key.
// Table operations forward changes; ToStream turns them back into records.
type KTable[K, V any] struct {
	b          *Builder
	node       string
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	// meta is shared with the processors of the node, which read it when
	// they are instantiated, after the topology is complete. Joins look the
	// table up through it: in its store, or, for a table without one,
	// through the tables it derives from (tableView).
	meta    *tableMeta
	sources []string
}

// tableMeta says where a table's current values can be looked up.
type tableMeta struct {
	// closeTime is set on windowed tables (keys of type window.Windowed[K]):
	// the close time of a key's window under the aggregation's window
	// definition, which suppress(untilWindowCloses) and emit-on-close
	// judge by the one late rule.
	closeTime func(w window.Window) int64
	// windowKeySuffix is set with closeTime: how many bytes the table's
	// key serde writes after the inner key (8 for a time window's start,
	// 16 for a session's end and start), which a suppress buffer exposes
	// so that a migration can hash the key before it (SuppressBuffer).
	windowKeySuffix int
	// store is the timestamped key-value store holding the table, or "".
	store string
	// view computes the values of a table that has no store from the
	// tables it derives from (see table_ops.go); nil when store is set.
	view *tableView
	// noLookup, set when store and view are not, says why the table
	// cannot be looked up (it reads "can ..." after the table's name).
	noLookup error
	// versioned says the table can be looked up as of a time: its store
	// is versioned, or it is a view of a versioned table.
	versioned bool
	// retention is a versioned table's history retention.
	retention time.Duration
}

// Node is the name of the node whose output the table is.
func (t KTable[K, V]) Node() string { return t.node }

// StoreName is the name of the store materializing the table, or "".
func (t KTable[K, V]) StoreName() string { return t.meta.store }

// Versioned reports whether the table is versioned (a source table
// materialized with a state.VersionedSupplier, or a view of one) and its
// history retention.
func (t KTable[K, V]) Versioned() (retention time.Duration, ok bool) {
	if t.meta == nil || !t.meta.versioned {
		return 0, false
	}
	return t.meta.retention, true
}

// Table reads topic as a table. The table is materialized in a timestamped
// key-value store, named by materialized or generated as
// "<topic>-STATE-STORE-<n>"; or, when materialized's supplier is a
// state.VersionedSupplier (state.PersistentVersionedKeyValueStore), in a
// versioned store: see versioned.go for what changes.
func Table[K, V any](b *Builder, topic string, consumed Consumed[K, V], materialized ...Materialized[K, V]) KTable[K, V] {
	m, _ := firstMaterialized(materialized)
	storeName := b.newStoreName(topic+"-", m.name)
	source := consumed.Name()
	if source == "" {
		source = b.t.GeneratedName(sourcePrefix)
	}
	spec := consumed.Spec(topic)
	spec.Table = true
	b.t.AddSource(source, spec)
	name := b.t.GeneratedName(tableSourcePrefix)
	ks, vs := orSerde(m.keySerde, consumed.KeySerde()), orSerde(m.valueSerde, consumed.ValueSerde())
	meta := &tableMeta{store: storeName}
	if sup, ok := versionedSupplier(m); ok {
		meta.versioned, meta.retention = true, sup.HistoryRetention()
		b.t.AddProcessor(name, func() processor.Untyped { return &versionedTableSource[K, V]{meta: meta} }, source)
		b.t.AddStateStore(versionedStore(storeName, ks, vs, m, sup), name)
		return KTable[K, V]{b: b, node: name, keySerde: ks, valueSerde: vs, meta: meta, sources: []string{source}}
	}
	b.t.AddProcessor(name, func() processor.Untyped { return &tableSource[K, V]{meta: meta} }, source)
	b.t.AddStateStore(timestampedStore(storeName, ks, vs, m), name)
	return KTable[K, V]{b: b, node: name, keySerde: ks, valueSerde: vs, meta: meta, sources: []string{source}}
}

// timestampedStore builds the store a table or aggregation materializes
// into, honouring Materialized's backend and logging settings.
func timestampedStore[K, V any](name string, ks serde.Serde[K], vs serde.Serde[V], m Materialized[K, V]) state.StoreBuilder {
	supplier := m.supplier
	if supplier == nil {
		supplier = state.Default()
	}
	sb := state.TimestampedKeyValueStoreBuilder(name, ks, vs, supplier)
	if m.loggingSet {
		if m.logging {
			sb = sb.WithLoggingEnabled(m.logConfig)
		} else {
			sb = sb.WithLoggingDisabled()
		}
	}
	if _, versioned := supplier.(state.VersionedSupplier); versioned {
		// An aggregation's, join's or derived table's result: refused
		// when the store is built (the topology's Init probe reports it,
		// naming the processor), rather than kept unversioned silently.
		return refusedStore{StoreBuilder: sb, err: fmt.Errorf("state store %s: %w", name, errVersionedSourceOnly)}
	}
	return sb
}

// refusedStore is a store builder whose Build fails with err.
type refusedStore struct {
	state.StoreBuilder
	err error
}

func (r refusedStore) Build() (state.Store, error) { return nil, r.err }

// tableSource keeps the latest value per key and forwards each update as a
// change from the previous value.
type tableSource[K, V any] struct {
	meta  *tableMeta
	ctx   processor.Context[any, any]
	store state.TimestampedKeyValueStore[K, V]
}

func (p *tableSource[K, V]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	s, err := processor.TimestampedKeyValueStore[K, V](ctx, p.meta.store)
	p.store = s
	return err
}

func (p *tableSource[K, V]) Process(rec processor.Erased) error {
	if rec.Key == nil {
		// A table update without a key cannot be applied; Kafka Streams
		// drops it and counts it the same way.
		droppedNullKey(p.ctx)
		return nil
	}
	k, v, err := narrow[K, V](rec)
	if err != nil {
		return err
	}
	old, found, err := p.store.Get(k)
	if err != nil {
		return err
	}
	var oldValue any
	if found {
		oldValue = old.Value
	}
	if rec.Value == nil {
		if _, _, err := p.store.Delete(k); err != nil {
			return err
		}
	} else if err := p.store.Put(k, state.ValueAndTimestamp[V]{Value: v, Timestamp: rec.Timestamp}); err != nil {
		return err
	}
	p.ctx.Forward(processor.Erased{Key: rec.Key, Value: change{New: rec.Value, Old: oldValue}, Timestamp: rec.Timestamp, Headers: rec.Headers})
	return nil
}

func (p *tableSource[K, V]) Close() error { return nil }

// ToStream turns the table's changes into a stream of its new values; a
// delete becomes a record with a null value.
func (t KTable[K, V]) ToStream(named ...Named) KStream[K, V] {
	name := t.b.newName(toStreamPrefix, named)
	t.b.t.AddProcessor(name, keyKeeping(func(ctx processor.Context[any, any], rec processor.Erased) error {
		c, _ := rec.Value.(change)
		rec.Value = c.New
		ctx.Forward(rec)
		return nil
	}), t.node)
	return KStream[K, V]{b: t.b, node: name, keySerde: t.keySerde, valueSerde: t.valueSerde, sources: t.sources}
}
