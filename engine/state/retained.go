package state

// Retained is an in-memory BytesSupplier whose stores outlive their
// task: a store it made keeps its entries when it is closed, and a later
// Get of the same name, by the next task of the same shard, reopens it
// as it was. The live engine gives one to each lane's shard of each task
// whose stores are in memory; a rebalance that revoked nothing commits
// everything processed, then hands the shards of the tasks that stay to
// the next generation's tasks, which then restore nothing for them
// (decision 0049). A shard whose state may hold uncommitted writes gets
// a new Retained instead, and its stores are restored from their
// changelogs as before.
//
// A Retained is used by one task at a time, from that task's goroutine;
// Begin hands it to the next.
type Retained struct {
	stores map[string]*memoryStore
	// reopened names the stores Get reopened since Begin.
	reopened map[string]bool
}

// NewRetained returns a Retained holding no store.
func NewRetained() *Retained {
	return &Retained{stores: map[string]*memoryStore{}, reopened: map[string]bool{}}
}

// Name is the in-memory backend's name.
func (*Retained) Name() string { return "in-memory" }

// Get returns the store of name: the one made earlier, reopened with its
// entries, once its task closed it; else a new, empty one.
func (r *Retained) Get(name string) KeyValueBytesStore {
	if s, ok := r.stores[name]; ok && s.closed.Load() {
		s.closed.Store(false)
		r.reopened[name] = true
		return s
	}
	s := newMemoryStore(name)
	s.retained = true
	r.stores[name] = s
	return s
}

// Begin readies r for its next task: Reopened is empty again.
func (r *Retained) Begin() { clear(r.reopened) }

// Forget drops the store of name: the next Get makes a new, empty one,
// for a store whose state is more than its entries (Keepable).
func (r *Retained) Forget(name string) { delete(r.stores, name) }

// Keepable says a store built by b is its entries and nothing else, so
// that one reopened as its last task left it is the store a restore
// from its changelog would make: key-value, window and session stores.
// Not a versioned store, whose stream time (the history it keeps) its
// restore rebuilds from the versions, nor a window store that retains
// duplicates (a stream-stream join's), whose next sequence number its
// restore takes from the records; nor a kind it does not know.
func Keepable(b StoreBuilder) bool {
	switch b.Kind() {
	case KindKeyValue, KindTimestampedKeyValue, KindSession:
		return true
	case KindWindow, KindTimestampedWindow:
		d, ok := b.(interface{ RetainDuplicates() bool })
		return ok && !d.RetainDuplicates()
	}
	return false
}

// Reopened says Get returned the store of name with the entries an
// earlier task left in it.
func (r *Retained) Reopened(name string) bool { return r.reopened[name] }
