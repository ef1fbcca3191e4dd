package topofile

import (
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
}

// storeBackends maps the backend option's values, default.dsl.store's
// spellings, to their suppliers.
var storeBackends = map[string]func() state.BytesSupplier{
	"rocksDB":   state.RocksDB,
	"in_memory": state.InMemory,
}

// store reads f's store option.
func (c *compiler) store(f fields, what string) (storeSpec, bool) {
	n := f.get("store")
	if n == nil {
		return storeSpec{}, true
	}
	what += " store"
	if d := deref(n); d != nil && d.Kind == yaml.MappingNode {
		sf, ok := c.mapping(d, what, "name", "backend")
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
		return spec, true
	}
	name, ok := c.scalar(n, what)
	return storeSpec{name: name}, ok
}

// materializedAs is the DSL's Materialized for spec.
func materializedAs[K any](spec storeSpec) dsl.Materialized[K, any] {
	m := dsl.MaterializedAs[K, any](spec.name)
	if spec.supplier != nil {
		m = m.WithStoreSupplier(spec.supplier)
	}
	return m
}
