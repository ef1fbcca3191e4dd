package state

import "fmt"

// Default returns the supplier of stores whose backend the runtime picks:
// default.dsl.store, as Kafka Streams' DSL stores without a supplier of
// their own follow it. A store from it takes its byte store, when it is
// initialised, from a Context that is a BackendContext offering one, and is
// in memory otherwise (the test driver, restoration and migration tools).
func Default() BytesSupplier { return defaultSupplier{} }

// DefaultBackendName is the Name of Default's supplier.
const DefaultBackendName = "default.dsl.store"

// RocksDBBackendName is the Name of RocksDB's supplier, and of the byte
// stores of engine/state/rocks.
const RocksDBBackendName = "rocksdb"

// RocksDB returns the supplier of stores kept in RocksDB whatever
// default.dsl.store says: the runtime's lane database, which a store takes
// when it is initialised from a BackendContext. A BackendContext that has
// none (a live engine in a binary built without cgo) fails Init naming the
// store; any other Context (the test driver, a topology's build checks)
// gets an in-memory store.
func RocksDB() BytesSupplier { return defaultSupplier{persistent: true} }

type defaultSupplier struct{ persistent bool }

func (s defaultSupplier) Name() string {
	if s.persistent {
		return RocksDBBackendName
	}
	return DefaultBackendName
}

func (s defaultSupplier) Get(name string) KeyValueBytesStore {
	return &deferredStore{name: name, persistent: s.persistent}
}

// BackendContext is a Context that supplies the byte stores of the stores
// built from Default and RocksDB. DefaultBackend may return nil: in memory
// then; PersistentBackend returns nil when there is no RocksDB.
type BackendContext interface {
	Context
	DefaultBackend() BytesSupplier
	PersistentBackend() BytesSupplier
}

// deferredStore is a byte store whose backend is chosen on Init, or on
// first use without one.
type deferredStore struct {
	name       string
	persistent bool
	inner      KeyValueBytesStore
	// wrapped says Init looked whether to meter inner (MeteredContext).
	wrapped bool
}

func (s *deferredStore) store() KeyValueBytesStore {
	if s.inner == nil {
		s.inner = newMemoryStore(s.name)
	}
	return s.inner
}

func (s *deferredStore) Name() string { return s.name }

func (s *deferredStore) Init(ctx Context) error {
	if s.inner == nil {
		var sup BytesSupplier
		bc, ok := ctx.(BackendContext)
		if ok && s.persistent {
			sup = bc.PersistentBackend()
		} else if ok {
			sup = bc.DefaultBackend()
		}
		switch {
		case sup != nil:
			s.inner = sup.Get(s.name)
		case ok && s.persistent:
			return fmt.Errorf("store %q: init: it is to be kept in RocksDB, and this engine has no RocksDB (a binary built without cgo)", s.name)
		}
	}
	if !s.wrapped {
		s.wrapped = true
		s.inner = metered(ctx, s.name, s.store())
	}
	return s.store().Init(ctx)
}

func (s *deferredStore) Flush() error     { return s.store().Flush() }
func (s *deferredStore) Close() error     { return s.store().Close() }
func (s *deferredStore) Persistent() bool { return s.store().Persistent() }

func (s *deferredStore) Get(key []byte) ([]byte, error)    { return s.store().Get(key) }
func (s *deferredStore) Put(key, value []byte) error       { return s.store().Put(key, value) }
func (s *deferredStore) Delete(key []byte) ([]byte, error) { return s.store().Delete(key) }
func (s *deferredStore) PutIfAbsent(key, value []byte) ([]byte, error) {
	return s.store().PutIfAbsent(key, value)
}
func (s *deferredStore) PutAll(entries []KeyValue[[]byte, []byte]) error {
	return s.store().PutAll(entries)
}

// putHeld passes putHeld on, so that the memory store's held words are
// found through the deferral.
func (s *deferredStore) putHeld(key, value []byte) (*uint64, error) {
	return putHeld(s.store(), key, value)
}

// appendValue passes getAppending on, so that the backend's own
// valueAppender (the memory store's) is found through the deferral.
func (s *deferredStore) appendValue(dst, key []byte) ([]byte, error) {
	return getAppending(s.store(), dst, key)
}

// WriteEpoch and RangeSinceEpoch pass the backend's epochs on (EpochLayered).
func (s *deferredStore) WriteEpoch() (int64, bool) { return writeEpoch(s.store()) }

func (s *deferredStore) RangeSinceEpoch(epoch int64, from, to []byte) (BytesIterator, error) {
	return rangeSinceEpoch(s.store(), epoch, from, to)
}

func (s *deferredStore) GetOfEpoch(epoch int64, key []byte) ([]byte, error) {
	return getOfEpoch(s.store(), epoch, key)
}

func (s *deferredStore) DeleteRange(from, to []byte) error {
	return DeleteRange(s.store(), from, to)
}
func (s *deferredStore) Range(from, to []byte) (BytesIterator, error) {
	return s.store().Range(from, to)
}
func (s *deferredStore) ReverseRange(from, to []byte) (BytesIterator, error) {
	return s.store().ReverseRange(from, to)
}
func (s *deferredStore) PrefixScan(prefix []byte) (BytesIterator, error) {
	return s.store().PrefixScan(prefix)
}
func (s *deferredStore) All() (BytesIterator, error)        { return s.store().All() }
func (s *deferredStore) ReverseAll() (BytesIterator, error) { return s.store().ReverseAll() }
func (s *deferredStore) ApproximateNumEntries() (int64, error) {
	return s.store().ApproximateNumEntries()
}
