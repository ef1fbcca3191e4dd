package dsl

import (
	"errors"
	"fmt"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// Versioned tables (KIP-889, KIP-914). A source table materialized with a
// state.VersionedSupplier keeps every version of a key within the
// supplier's history retention (a Filter, MapTableValues or table-table
// join result materialized so is versioned too: resultTable in
// table_ops.go). Its source processor (Kafka Streams'
// KTableSource over a versioned store) forwards an update that is older
// than the key's latest version (out of order) as a stale change: ToStream
// still emits it, as Kafka Streams does, but table-table joins and
// groupings, which follow the latest values, ignore it, and it never
// replaces the latest value a lookup answers. An update older than the
// retention is dropped and counted as expired_version. Stream-table joins
// look a versioned table up as of the stream record's timestamp.

var (
	// errVersionedSourceOnly is why a versioned supplier is refused on an
	// aggregation's, a global table's or a foreign-key join's store.
	errVersionedSourceOnly = errors.New("a versioned store materializes a table (dsl.Table), a Filter or MapTableValues result or a table-table join result only; materialize this one in a timestamped store")
	// errGraceNeedsVersioned is Kafka Streams' refusal of a grace period
	// on a join with a table that is not versioned.
	errGraceNeedsVersioned = errors.New("the table must be versioned to use a grace period in a stream-table join (materialize its source with a versioned store supplier)")
	// errNotVersioned is a lookup as of a time on a table without
	// versions.
	errNotVersioned = errors.New("is not versioned")
)

// versionedSupplier is m's supplier when it makes versioned stores.
func versionedSupplier[K, V any](m Materialized[K, V]) (state.VersionedSupplier, bool) {
	vs, ok := m.supplier.(state.VersionedSupplier)
	return vs, ok
}

// versionedStore builds a versioned table's store, honouring
// Materialized's logging settings.
func versionedStore[K, V any](name string, ks serde.Serde[K], vs serde.Serde[V], m Materialized[K, V], sup state.VersionedSupplier) state.StoreBuilder {
	sb := state.VersionedKeyValueStoreBuilder(name, ks, vs, sup)
	if m.loggingSet {
		if m.logging {
			sb = sb.WithLoggingEnabled(m.logConfig)
		} else {
			sb = sb.WithLoggingDisabled()
		}
	}
	return sb
}

// versionedTableSource is tableSource over a versioned store.
type versionedTableSource[K, V any] struct {
	meta  *tableMeta
	ctx   processor.Context[any, any]
	store state.VersionedKeyValueStore[K, V]
}

func (p *versionedTableSource[K, V]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	s, err := processor.VersionedKeyValueStore[K, V](ctx, p.meta.store)
	p.store = s
	return err
}

func (p *versionedTableSource[K, V]) Process(rec processor.Erased) error {
	if rec.Key == nil {
		droppedNullKey(p.ctx)
		return nil
	}
	k, v, err := narrow[K, V](rec)
	if err != nil {
		return err
	}
	// The old value is the latest, whatever the update's time, as Kafka
	// Streams' KTableSource reads it.
	old, found, err := p.store.Get(k)
	if err != nil {
		return err
	}
	var oldValue any
	if found {
		oldValue = orNull(old.Value)
	}
	var code int64
	if rec.Value == nil {
		code, err = p.store.PutTombstone(k, rec.Timestamp)
	} else {
		code, err = p.store.Put(k, v, rec.Timestamp)
	}
	if err != nil {
		return err
	}
	if code == state.PutNotPut {
		// Older than the history retention: not stored, not forwarded.
		countDropped(p.ctx, metrics.ReasonExpiredVersion)
		return nil
	}
	p.ctx.Forward(processor.Erased{Key: rec.Key, Value: change{New: rec.Value, Old: oldValue, stale: code != state.PutValidToUndefined}, Timestamp: rec.Timestamp, Headers: rec.Headers})
	return nil
}

func (p *versionedTableSource[K, V]) Close() error { return nil }

// lookupAt returns a versioned table's value for a key as of a time and
// the timestamp of the version; a nil value means none.
type lookupAt func(key any, asOf int64) (value any, timestamp int64, err error)

// versionedLookup is a lookup of a versioned store's latest values.
func versionedLookup[K, V any](ctx processor.Context[any, any], name string) (lookup, error) {
	s, err := processor.VersionedKeyValueStore[K, V](ctx, name)
	if err != nil {
		return nil, err
	}
	return func(key any) (any, int64, error) {
		k, err := processor.As[K](key)
		if err != nil {
			return nil, 0, fmt.Errorf("lookup key: %w", err)
		}
		r, found, err := s.Get(k)
		if err != nil || !found {
			return nil, 0, err
		}
		return orNull(r.Value), r.Timestamp, nil
	}, nil
}

// openLookupAt makes a lookup as of a time of the versioned table meta
// describes, in a processor's Init.
func openLookupAt[K, V any](ctx processor.Context[any, any], meta *tableMeta) (lookupAt, error) {
	switch {
	case meta == nil || !meta.versioned:
		return nil, fmt.Errorf("table %w", errNotVersioned)
	case meta.store != "":
		s, err := processor.VersionedKeyValueStore[K, V](ctx, meta.store)
		if err != nil {
			return nil, err
		}
		return func(key any, asOf int64) (any, int64, error) {
			k, err := processor.As[K](key)
			if err != nil {
				return nil, 0, fmt.Errorf("lookup key: %w", err)
			}
			r, found, err := s.GetAsOf(k, asOf)
			if err != nil || !found {
				return nil, 0, err
			}
			return orNull(r.Value), r.Timestamp, nil
		}, nil
	case meta.view != nil && meta.view.openAt != nil:
		return meta.view.openAt(ctx)
	}
	return nil, fmt.Errorf("table %w", errNotVersioned)
}

// derivedViewAt is derivedView's lookup as of a time, for a view of a
// versioned parent (Kafka Streams' value getter of an unmaterialized
// Filter or MapValues over a versioned table is versioned too).
func derivedViewAt[K, V any](parent *tableMeta, apply func(K, any) (any, error)) func(processor.Context[any, any]) (lookupAt, error) {
	return func(ctx processor.Context[any, any]) (lookupAt, error) {
		get, err := openLookupAt[K, V](ctx, parent)
		if err != nil {
			return nil, err
		}
		return func(key any, asOf int64) (any, int64, error) {
			v, ts, err := get(key, asOf)
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
	}
}
