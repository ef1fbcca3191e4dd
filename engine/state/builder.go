package state

// Kind names what a store is, for descriptions and for the runtime to pick
// the right changelog layout.
type Kind string

const (
	KindKeyValue            Kind = "key-value"
	KindTimestampedKeyValue Kind = "timestamped-key-value"
)

// BytesSupplier makes the byte-level store behind a typed store: the backend
// choice. InMemory is the one this package provides.
type BytesSupplier interface {
	// Name is the backend's name ("in-memory", "rocksdb").
	Name() string
	Get(storeName string) KeyValueBytesStore
}

// StoreBuilder describes a store in a topology. The runtime calls Build once
// for every task (or lane group) that owns a copy of the store.
type StoreBuilder interface {
	Name() string
	Kind() Kind
	// Backend is the BytesSupplier's name.
	Backend() string
	LoggingEnabled() bool
	// LogConfig is the topic configuration for the changelog topic.
	LogConfig() map[string]string
	// KeySerdeName and ValueSerdeName name the serdes, for descriptions and
	// for rules that compare serdes (the timer key serde resolution).
	KeySerdeName() string
	ValueSerdeName() string
	Build() (Store, error)
}
