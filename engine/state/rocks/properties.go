//go:build cgo

package rocks

// PropertyNames are the RocksDB properties Properties reads, Kafka
// Streams' RocksDB property-based metrics (KIP-607) that a dashboard
// reads most: sizes, memory, keys and the compaction backlog.
var PropertyNames = []string{
	"rocksdb.estimate-num-keys",
	"rocksdb.total-sst-files-size",
	"rocksdb.live-sst-files-size",
	"rocksdb.cur-size-all-mem-tables",
	"rocksdb.size-all-mem-tables",
	"rocksdb.num-immutable-mem-table",
	"rocksdb.block-cache-usage",
	"rocksdb.block-cache-pinned-usage",
	"rocksdb.estimate-table-readers-mem",
	"rocksdb.estimate-pending-compaction-bytes",
	"rocksdb.num-running-compactions",
	"rocksdb.num-running-flushes",
	"rocksdb.background-errors",
}

// Properties reads PropertyNames from the database, by name; nil once it
// is closed. It takes the database's lock for the reads, which RocksDB
// answers from memory.
func (d *DB) Properties() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() || d.freed {
		return nil
	}
	out := make(map[string]uint64, len(PropertyNames))
	for _, p := range PropertyNames {
		if v, ok := d.db.GetIntProperty(p); ok {
			out[p] = v
		}
	}
	return out
}
