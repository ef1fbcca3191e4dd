package topofile

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/state"
)

// storeSpec is a step's store option: `store: NAME`, or
// `store: {name: NAME, backend: rocksDB|in_memory}`. A zero spec lets the
// DSL name the store and default.dsl.store pick its backend.
type storeSpec struct {
	name string
	// supplier is nil for default.dsl.store.
	supplier state.BytesSupplier
	// versioned is set by a table's history-retention: the store keeps
	// every version for retention (Kafka Streams'
	// persistentVersionedKeyValueStore); segment is its segment-interval,
	// 0 for none.
	versioned          bool
	retention, segment time.Duration
}

// storeBackends maps the backend option's values, default.dsl.store's
// spellings, to their suppliers.
var storeBackends = map[string]func() state.BytesSupplier{
	"rocksDB":   state.RocksDB,
	"in_memory": state.InMemory,
}

// store reads f's store option.
func (c *compiler) store(f fields, what string) (storeSpec, bool) {
	return c.storeOf(f, what, false)
}

// tableStore reads a table's store option, which may also make the store
// versioned: `store: {name: NAME, history-retention: 1h}`, with
// segment-interval accepted for Kafka Streams' sake.
func (c *compiler) tableStore(f fields, what string) (storeSpec, bool) {
	return c.storeOf(f, what, true)
}

func (c *compiler) storeOf(f fields, what string, table bool) (storeSpec, bool) {
	n := f.get("store")
	if n == nil {
		return storeSpec{}, true
	}
	what += " store"
	if d := deref(n); d != nil && d.Kind == yaml.MappingNode {
		keys := []string{"name", "backend"}
		if table {
			keys = append(keys, "history-retention", "segment-interval")
		}
		sf, ok := c.mapping(d, what, keys...)
		if !ok {
			return storeSpec{}, false
		}
		var spec storeSpec
		if nn := sf.get("name"); nn != nil {
			if spec.name, ok = c.scalar(nn, what+" name"); !ok {
				return storeSpec{}, false
			}
		}
		if bn := sf.get("backend"); bn != nil {
			b, ok := c.oneOf(bn, what+" backend", "rocksDB", "in_memory")
			if !ok {
				return storeSpec{}, false
			}
			spec.supplier = storeBackends[b]()
		}
		if rn := sf.get("history-retention"); rn != nil {
			// c.duration refuses a negative duration.
			if spec.retention, ok = c.duration(rn, what+" history-retention"); !ok {
				return storeSpec{}, false
			}
			spec.versioned = true
		}
		if sn := sf.get("segment-interval"); sn != nil {
			if !spec.versioned {
				c.errf(sn, "%s segment-interval: only a versioned store (history-retention) has one", what)
				return storeSpec{}, false
			}
			if spec.segment, ok = c.duration(sn, what+" segment-interval"); !ok {
				return storeSpec{}, false
			}
			if spec.segment <= 0 {
				c.errf(sn, "%s segment-interval: %v is not positive", what, spec.segment)
				return storeSpec{}, false
			}
		}
		return spec, true
	}
	name, ok := c.scalar(n, what)
	return storeSpec{name: name}, ok
}

// materializedAs is the DSL's Materialized for spec: a versioned store
// keeps its versions in the backend given (default.dsl.store's without
// one).
func materializedAs[K any](spec storeSpec) dsl.Materialized[K, any] {
	m := dsl.MaterializedAs[K, any](spec.name)
	switch {
	case spec.versioned && spec.supplier != nil && spec.supplier.Name() == state.RocksDBBackendName:
		m = m.WithStoreSupplier(state.PersistentVersionedKeyValueStore(spec.retention, spec.segment))
	case spec.versioned && spec.supplier != nil:
		m = m.WithStoreSupplier(state.VersionedKeyValueStoreOver(spec.supplier, spec.retention))
	case spec.versioned:
		m = m.WithStoreSupplier(state.VersionedKeyValueStoreOver(state.Default(), spec.retention))
	case spec.supplier != nil:
		m = m.WithStoreSupplier(spec.supplier)
	}
	return m
}
