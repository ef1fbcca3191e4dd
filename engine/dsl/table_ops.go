package dsl

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// TableOption configures a table operation (Filter, FilterNot,
// MapTableValues, TableJoin and its variants). Two kinds exist:
//
//   - a Named (dsl.Name("x")) names the operation's processor;
//   - a Materialized[K, V] (dsl.MaterializedAs[K, V]("store")), with K and
//     V the result table's types, says how the result is stored.
//
// They may be given in any order; the last of each kind wins. As in Kafka
// Streams, a Filter or MapTableValues result is materialized only when the
// Materialized names a store; an unnamed one only contributes serdes (and
// uses up a generated index, keeping later generated names in step with
// Kafka Streams). A table join result is materialized whenever a
// Materialized is given, under a generated name if it has none.
//
// A Materialized of the wrong types compiles (TableOption is one interface
// for both kinds, which Go generics cannot type per call) and is reported by
// Build, naming the operation's node.
type TableOption interface {
	applyTableOption(*tableOptions)
}

var errNilMapper = errors.New("nil mapper")

type tableOptions struct {
	name         string
	materialized any
}

func (n Named) applyTableOption(o *tableOptions) {
	if n.name != "" {
		o.name = n.name
	}
}

func (m Materialized[K, V]) applyTableOption(o *tableOptions) { o.materialized = m }

func collectTableOptions(opts []TableOption) tableOptions {
	var o tableOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyTableOption(&o)
		}
	}
	return o
}

func (o tableOptions) named() []Named { return []Named{{name: o.name}} }

// materializedAs returns the options' Materialized as one for K and V.
func materializedAs[K, V any](o tableOptions) (m Materialized[K, V], given bool, err error) {
	if o.materialized == nil {
		return m, false, nil
	}
	m, ok := o.materialized.(Materialized[K, V])
	if !ok {
		return m, false, fmt.Errorf("materialized is a %T, but the result table needs a %T", o.materialized, m)
	}
	return m, true, nil
}

// Filter keeps the entries pred accepts. As in Kafka Streams an update
// whose new value fails pred becomes a delete of the key (a tombstone,
// carrying the old value if that passed), so that downstream tables drop a
// key that leaves the filter; nulls pass through as nulls.
func (t KTable[K, V]) Filter(pred func(K, V) bool, opts ...TableOption) KTable[K, V] {
	return t.filter(pred, false, opts)
}

// FilterNot keeps the entries pred rejects; see Filter.
func (t KTable[K, V]) FilterNot(pred func(K, V) bool, opts ...TableOption) KTable[K, V] {
	return t.filter(pred, true, opts)
}

func (t KTable[K, V]) filter(pred func(K, V) bool, not bool, opts []TableOption) KTable[K, V] {
	keep := func(k K, v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		tv, err := processor.As[V](v)
		if err != nil {
			return nil, err
		}
		if pred(k, tv) == not {
			return nil, nil
		}
		return v, nil
	}
	out := deriveTable(t, tableFilterPrefix, opts, t.valueSerde, keep)
	if pred == nil {
		t.b.t.Fail(out.node, errNilPredicate)
	}
	return out
}

// MapTableValues maps every value of t with fn; the key stays. fn is not
// called for nulls (deletes stay deletes), and a nil result (from a
// pointer, map, slice or interface VR) is a null, so a delete.
func MapTableValues[K, V, VR any](t KTable[K, V], fn func(K, V) VR, opts ...TableOption) KTable[K, VR] {
	apply := func(k K, v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		tv, err := processor.As[V](v)
		if err != nil {
			return nil, err
		}
		return orNull(fn(k, tv)), nil
	}
	// The value serde is not inherited: the value type changes.
	out := deriveTable[K, V, VR](t, tableMapValuesPrefx, opts, nil, apply)
	if fn == nil {
		t.b.t.Fail(out.node, errNilMapper)
	}
	return out
}

// deriveTable adds the node of a Filter or MapTableValues: a table whose
// every value is apply of t's, nil for none. vs is the result's value serde
// unless a Materialized gives one.
func deriveTable[K, V, VR any](t KTable[K, V], prefix string, opts []TableOption, vs serde.Serde[VR], apply func(K, any) (any, error)) KTable[K, VR] {
	o := collectTableOptions(opts)
	m, given, merr := materializedAs[K, VR](o)
	// Kafka Streams names the store (or uses up its index) first.
	store, ks := materializedStore(t.b, prefix, m, given), t.keySerde
	if given {
		ks, vs = orSerde(m.keySerde, ks), orSerde(m.valueSerde, vs)
	}
	name := t.b.newName(prefix, o.named())
	if merr != nil {
		t.b.t.Fail(name, merr)
	}
	meta := &tableMeta{store: store}
	if sup, ok := versionedSupplier(m); ok && store != "" {
		meta.versioned, meta.retention = true, sup.HistoryRetention()
	}
	if store == "" {
		meta.view = derivedView[K, V](t.meta, apply)
		if t.meta != nil && t.meta.versioned {
			meta.versioned, meta.retention = true, t.meta.retention
			meta.view.openAt = derivedViewAt[K, V](t.meta, apply)
		}
	}
	sb, serdes := resultStore(store, ks, vs, m)
	t.b.t.AddProcessor(name, func() processor.Untyped {
		return &tableMapper[K, VR]{meta: meta, apply: apply, serdes: serdes}
	}, t.node)
	if sb != nil {
		t.b.t.AddStateStore(sb, name)
	}
	return KTable[K, VR]{b: t.b, node: name, keySerde: ks, valueSerde: vs, meta: meta, sources: t.sources}
}

// materializedStore returns the store a Filter or MapTableValues result is
// materialized in: the Materialized's name, or "" for none. An unnamed
// Materialized still uses up a store index, as Kafka Streams' does, so that
// the names generated after it match.
func materializedStore[K, V any](b *Builder, prefix string, m Materialized[K, V], given bool) string {
	if !given {
		return ""
	}
	if m.name == "" {
		b.newStoreName(prefix, "")
	}
	return m.name
}

// resultStore describes the store a table operation materializes its
// result in, nil for none (store ""). Serdes left unknown are resolved from
// the configuration's defaults by the processor's Init (see configSerde),
// as Kafka Streams falls back to the default serdes; serdes lists them.
func resultStore[K, V any](store string, ks serde.Serde[K], vs serde.Serde[V], m Materialized[K, V]) (state.StoreBuilder, []any) {
	if store == "" {
		return nil, nil
	}
	sk, sv := serdeOrConfig(ks, true), serdeOrConfig(vs, false)
	if sup, ok := versionedSupplier(m); ok {
		// A Filter, MapTableValues or table-table join result
		// materialized as versioned, as Kafka Streams allows.
		return versionedStore(store, sk, sv, m, sup), []any{sk, sv}
	}
	return timestampedStore(store, sk, sv, m), []any{sk, sv}
}

// openResultStore resolves a result store's serdes and opens the store, in
// a processor's Init; it returns nil when the table is not materialized.
func openResultStore[K, V any](ctx processor.Context[any, any], meta *tableMeta, serdes []any) (state.TimestampedKeyValueStore[K, V], error) {
	if meta.store == "" {
		return nil, nil
	}
	if err := configureSerdes(ctx, serdes); err != nil {
		return nil, fmt.Errorf("serdes of state store %s: %w", meta.store, err)
	}
	return processor.TimestampedKeyValueStore[K, V](ctx, meta.store)
}

// resultTable is where a table operation writes its result: nowhere, a
// timestamped store, or a versioned one.
type resultTable[K, V any] struct {
	ts state.TimestampedKeyValueStore[K, V]
	vs state.VersionedKeyValueStore[K, V]
}

// on reports whether the result is materialized.
func (r resultTable[K, V]) on() bool { return r.ts != nil || r.vs != nil }

// openResult opens the result's store, in a processor's Init.
func openResult[K, V any](ctx processor.Context[any, any], meta *tableMeta, serdes []any) (resultTable[K, V], error) {
	if meta.store == "" || !meta.versioned {
		ts, err := openResultStore[K, V](ctx, meta, serdes)
		return resultTable[K, V]{ts: ts}, err
	}
	if err := configureSerdes(ctx, serdes); err != nil {
		return resultTable[K, V]{}, fmt.Errorf("serdes of state store %s: %w", meta.store, err)
	}
	vs, err := processor.VersionedKeyValueStore[K, V](ctx, meta.store)
	return resultTable[K, V]{vs: vs}, err
}

// write materializes v (nil: a delete) for k at ts and returns the value
// it replaces as the latest, nil for none. A versioned store keeps an
// older v as history: latest is then false, as Kafka Streams forwards
// what its versioned put says (KIP-914); put is false when the store
// dropped v for being older than its retention, and nothing is forwarded.
func (r resultTable[K, V]) write(k K, v any, ts int64) (old any, latest, put bool, err error) {
	if r.vs == nil {
		old, err := materialize(r.ts, k, v, ts)
		return old, true, true, err
	}
	prev, found, err := r.vs.Get(k)
	if err != nil {
		return nil, false, false, err
	}
	if found {
		old = orNull(prev.Value)
	}
	var code int64
	if v == nil {
		code, err = r.vs.PutTombstone(k, ts)
	} else {
		nv, cerr := processor.As[V](v)
		if cerr != nil {
			return nil, false, false, fmt.Errorf("materialize value: %w", cerr)
		}
		code, err = r.vs.Put(k, nv, ts)
	}
	if err != nil || code == state.PutNotPut {
		return nil, false, false, err
	}
	return old, code == state.PutValidToUndefined, true, nil
}

// tableMapper is the processor of Filter and MapTableValues: it applies a
// per-value function to both sides of every change, which is how Kafka
// Streams' KTableFilter and KTableMapValues compute their old values. K is
// the key type and VOut the result table's value type.
type tableMapper[K, VOut any] struct {
	meta   *tableMeta
	apply  func(K, any) (any, error)
	serdes []any
	ctx    processor.Context[any, any]
	// store is the result's store, when the table is materialized.
	store resultTable[K, VOut]
}

func (p *tableMapper[K, VOut]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	s, err := openResult[K, VOut](ctx, p.meta, p.serdes)
	p.store = s
	return err
}

func (p *tableMapper[K, VOut]) Process(rec processor.Erased) error {
	c, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	k, err := processor.As[K](rec.Key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	newValue, err := p.apply(k, c.New)
	if err != nil {
		return fmt.Errorf("new value: %w", err)
	}
	var oldValue any
	stale := c.stale
	if p.store.on() {
		// A materialized table's old value is what it stored, as Kafka
		// Streams reads it; it equals apply(old) but costs no user call.
		// Kafka Streams' KTableFilter and KTableMapValues forward what
		// their store's put says: a timestamped store takes every put as
		// the latest, a versioned one may keep it as history.
		latest, put := false, false
		if oldValue, latest, put, err = p.store.write(k, newValue, rec.Timestamp); err != nil {
			return err
		}
		if !put {
			countDropped(p.ctx, metrics.ReasonExpiredVersion)
			return nil
		}
		stale = !latest
	} else if oldValue, err = p.apply(k, c.Old); err != nil {
		return fmt.Errorf("old value: %w", err)
	}
	rec.Value = change{New: newValue, Old: oldValue, stale: stale}
	p.ctx.Forward(rec)
	return nil
}

func (p *tableMapper[K, VOut]) Close() error { return nil }

// asChange narrows the value table nodes forward to each other.
func asChange(v any) (change, error) {
	c, ok := v.(change)
	if !ok {
		return change{}, fmt.Errorf("table operation got a %T, want a table change", v)
	}
	return c, nil
}

// materialize writes a table's new value for k (a null deletes it) with the
// timestamp of the record that produced it, and returns the value it
// replaces, nil for none.
func materialize[K, V any](s state.TimestampedKeyValueStore[K, V], k K, v any, ts int64) (any, error) {
	if v == nil {
		old, found, err := s.Delete(k)
		if err != nil || !found {
			return nil, err
		}
		return old.Value, nil
	}
	nv, err := processor.As[V](v)
	if err != nil {
		return nil, fmt.Errorf("materialize value: %w", err)
	}
	old, found, err := s.Get(k)
	if err != nil {
		return nil, err
	}
	if err := s.Put(k, state.ValueAndTimestamp[V]{Value: nv, Timestamp: ts}); err != nil {
		return nil, err
	}
	if !found {
		return nil, nil
	}
	return old.Value, nil
}

// lookup returns a table's current value for a key and the timestamp of
// the record that last wrote it; a nil value means the key has none.
type lookup func(key any) (value any, timestamp int64, err error)

// tableView looks up the values of a table that has no store, by looking
// up the tables it derives from and recomputing, as Kafka Streams'
// KTableValueGetter does for non-materialized tables. Joins use it, so that
// joining a derived table costs no store and no changelog topic (neither
// of which Kafka Streams would create) and needs no serde for the derived
// values.
type tableView struct {
	// parents are the tables the view reads.
	parents []*tableMeta
	// stores are the stores the view reads itself, besides its parents'
	// (a suppress buffer).
	stores []string
	// open makes the lookup for one processor instance, in its Init.
	open func(ctx processor.Context[any, any]) (lookup, error)
	// openAt, set on views of versioned tables, makes their lookup as
	// of a time.
	openAt func(ctx processor.Context[any, any]) (lookupAt, error)
}

// lookupStores lists the stores a processor reading the table must be
// connected to. A table with neither store nor view (one another part of
// the DSL built without either) cannot be looked up: the error says why,
// naming the table at fault when it is not the one asked about.
func (m *tableMeta) lookupStores() ([]string, error) {
	switch {
	case m == nil:
		return nil, errNoLookup
	case m.store != "":
		return []string{m.store}, nil
	case m.noLookup != nil:
		return nil, m.noLookup
	case m.view == nil:
		return nil, errNoLookup
	}
	stores := slices.Clone(m.view.stores)
	for _, p := range m.view.parents {
		s, err := p.lookupStores()
		if err != nil {
			return nil, err
		}
		stores = mergeSources(stores, s)
	}
	return stores, nil
}

// errNoLookup is why a table without store or view cannot be looked up.
var errNoLookup = errors.New("can be looked up neither in a store nor through the tables it derives from")

// openLookup makes a lookup of the table meta describes, whose keys are K
// and values V. It runs in a processor's Init, so it sees the topology
// complete.
func openLookup[K, V any](ctx processor.Context[any, any], meta *tableMeta) (lookup, error) {
	switch {
	case meta != nil && meta.store != "" && meta.versioned:
		return versionedLookup[K, V](ctx, meta.store)
	case meta != nil && meta.store != "":
		return storeLookup[K, V](ctx, meta.store)
	case meta != nil && meta.view != nil:
		return meta.view.open(ctx)
	case meta != nil && meta.noLookup != nil:
		return nil, meta.noLookup
	}
	return nil, fmt.Errorf("table %w", errNoLookup)
}

func storeLookup[K, V any](ctx processor.Context[any, any], name string) (lookup, error) {
	s, err := processor.TimestampedKeyValueStore[K, V](ctx, name)
	if err != nil {
		return nil, err
	}
	return func(key any) (any, int64, error) {
		k, err := processor.As[K](key)
		if err != nil {
			return nil, 0, fmt.Errorf("lookup key: %w", err)
		}
		v, found, err := s.Get(k)
		if err != nil || !found {
			return nil, 0, err
		}
		return v.Value, v.Timestamp, nil
	}, nil
}

// derivedView is the view of a table computed from parent (keys K, values
// V) by a per-value function, keeping the parent's timestamp.
func derivedView[K, V any](parent *tableMeta, apply func(K, any) (any, error)) *tableView {
	return &tableView{
		parents: []*tableMeta{parent},
		open: func(ctx processor.Context[any, any]) (lookup, error) {
			get, err := openLookup[K, V](ctx, parent)
			if err != nil {
				return nil, err
			}
			return func(key any) (any, int64, error) {
				v, ts, err := get(key)
				if err != nil || v == nil {
					return nil, 0, err
				}
				k, err := processor.As[K](key)
				if err != nil {
					return nil, 0, fmt.Errorf("lookup key: %w", err)
				}
				if v, err = apply(k, v); err != nil || v == nil {
					return nil, 0, err
				}
				return v, ts, nil
			}, nil
		},
	}
}

// orNull erases v, mapping a nil pointer, map, slice, channel, function or
// interface to nil: a user function returning one means null, as a Java
// function returning null does.
func orNull[T any](v T) any { return anyOrNil(any(v)) }
