//go:build cgo

package rocks

// #cgo LDFLAGS: -lrocksdb -lstdc++
// #include <stdlib.h>
// const char* stoat_rocksdb_version(void);
import "C"

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/linxGnu/grocksdb"
)

// Available reports whether this binary has the RocksDB backend.
func Available() bool { return true }

// Version is the version of the RocksDB library linked in.
func Version() string {
	return C.GoString(C.stoat_rocksdb_version())
}

// metaPrefix starts the keys of the database's own records; store keys
// start with the store's (non-empty) name.
const metaPrefix = "\x00meta\x00"

var checkpointKey = []byte(metaPrefix + "checkpoint")

// DB is one lane's RocksDB database with its epoch layers. Its methods are
// safe for concurrent use: the lane reads and writes while the committer
// commits.
type DB struct {
	path string
	db   *grocksdb.DB
	opts *grocksdb.Options
	bbto *grocksdb.BlockBasedTableOptions
	ro   *grocksdb.ReadOptions
	wo   *grocksdb.WriteOptions
	// bulkWo writes a restore's batches, through the write-ahead log as
	// commits are: going around it would need a flush of the memtables at
	// the end, on the restore's critical path, before a commit could build
	// on them.
	bulkWo *grocksdb.WriteOptions

	// mu guards layers, epoch, iters and the native handles' lifetime;
	// iterators take it around their native calls, so that Close can free
	// them.
	mu sync.Mutex
	// layers, oldest first, one per epoch not yet committed: the last
	// takes the writes of the processing epoch unless it is sealed.
	layers []*layer
	// epoch is the processing epoch: the epoch of new writes.
	epoch int64
	// recent are the layers the last commit wrote, oldest first, kept
	// for the scans of a caller that knows its range holds only writes
	// from an epoch on (RangeSinceEpoch): every write of an epoch after
	// heldAfter that reached the database is in recent, so such a scan
	// of an epoch after heldAfter reads the layers alone. committed is
	// the last epoch committed (or, before the first commit, the one
	// before the first epoch). Any other write to the database (a
	// restore, a wipe, an adoption) empties recent and moves heldAfter
	// up to committed (changed).
	recent    []*layer
	heldAfter int64
	committed int64
	// iters are the open native iterators, which Close frees.
	iters map[*iterator]struct{}
	// batch is the last commit's write batch bytes, for the next one.
	batch []byte
	// scans are ended scans, for the next ones (takeScan).
	scans []*scanState
	// spares are native iterators no scan reads, kept for the next scans
	// until the database changes (openNative); gen counts the writes to
	// the database.
	spares []*native
	gen    uint64
	// absent is the last key a scan read from a layer that the database
	// did not hold, as of absentGen: a session store removes the session
	// its lookup just found, and the delete's look below (visibleBelow)
	// then needs no RocksDB read while the database is as it was.
	absent    []byte
	absentGen uint64
	// memos are what scans read from RocksDB, by range (rangeMemo).
	memos rangeMemos
	// reads are the values point reads found in RocksDB (readCache).
	reads  readCache
	closed atomic.Bool
	freed  bool

	// restoring says writes go to bulk instead of to a layer
	// (BeginRestore): the index in bulkVals of the last restored write of
	// each key (nil for a delete). An index, not the value, so that a new
	// version of a key changes no map key: the keys and values live in
	// arena, not in an allocation each. bulkSize is the bytes the arena
	// holds for them.
	restoring bool
	bulk      map[string]int
	bulkVals  [][]byte
	arena     bulkArena
	bulkSize  int
	bulkErr   error
	// scratch builds a prefixed key to look up in bulk.
	scratch []byte
	// bulkMax is the bytes of one bulk write batch (SetRestoreBatchBytes,
	// DefaultRestoreBatchBytes when 0).
	bulkMax int
}

// Open opens (creating when missing) the lane database in dir. A database
// another process holds fails with an error naming its lock file.
func Open(dir string) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", dir, err)
	}
	if err := checkRoom(dir, 0); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	opts, bbto := options()
	db, err := grocksdb.OpenDb(opts, dir)
	if err != nil {
		opts.Destroy()
		bbto.Destroy()
		return nil, fmt.Errorf("open RocksDB state in %s (is another stoatctl using it? its lock file is %s/LOCK): %w", dir, dir, err)
	}
	d := &DB{path: dir, db: db, opts: opts, bbto: bbto, ro: grocksdb.NewDefaultReadOptions(), wo: grocksdb.NewDefaultWriteOptions(), epoch: 1,
		iters: map[*iterator]struct{}{}, bulkWo: grocksdb.NewDefaultWriteOptions()}
	return d, nil
}

// options are a lane database's options, Kafka Streams' RocksDB settings
// where they fit (RocksDBStore.openDB): a whole-key Bloom filter in the
// tables and in the memtable, since most reads of a count or a window
// aggregation look up a key that is not there yet; no compression, whose
// CPU competes with the lanes on small machines for disk the changelog
// already spends.
func options() (*grocksdb.Options, *grocksdb.BlockBasedTableOptions) {
	bbto := grocksdb.NewDefaultBlockBasedTableOptions()
	bbto.SetFilterPolicy(grocksdb.NewBloomFilterFull(10))
	opts := grocksdb.NewDefaultOptions()
	opts.SetCreateIfMissing(true)
	opts.SetBlockBasedTableFactory(bbto)
	opts.SetCompression(grocksdb.NoCompression)
	opts.SetMemTablePrefixBloomSizeRatio(0.1)
	opts.SetMemtableWholeKeyFiltering(true)
	return opts, bbto
}

// boundedReads are the read options of one native iterator, bounded to
// lo <= key < hi (nil: unbounded), with the bounds in C memory: RocksDB
// keeps pointers to them for the iterator's life. Without bounds a seek
// whose range holds no live key steps over every deleted key past the
// range until it finds one (a session store's old segment holds only
// deletes once its sessions have moved on); with them it stops at the
// bound. A spare iterator's bounds are moved for its next scan (set).
type boundedReads struct {
	ro *grocksdb.ReadOptions
	// lo and hi hold the bounds; loCap and hiCap are their sizes, loLen
	// and hiLen the bounds' lengths.
	lo, hi       unsafe.Pointer
	loCap, hiCap int
	loLen, hiLen int
}

func newBoundedReads(lo, hi []byte) *boundedReads {
	b := &boundedReads{ro: grocksdb.NewDefaultReadOptions()}
	if len(lo) > 0 {
		b.lo, b.loCap, b.loLen = setBound(b.lo, b.loCap, b.loLen, lo, b.ro.SetIterateLowerBound)
	}
	if len(hi) > 0 {
		b.hi, b.hiCap, b.hiLen = setBound(b.hi, b.hiCap, b.hiLen, hi, b.ro.SetIterateUpperBound)
	}
	return b
}

// bounded says both bounds are set, so that set can move them: RocksDB
// reads an iterator's bounds through the options' pointers at every
// check, and a bound set to none would read as an empty key.
func (b *boundedReads) bounded() bool { return b.lo != nil && b.hi != nil }

// set moves the bounds to lo and hi, both non-empty, for the next seek of
// an iterator made with b, which must be bounded. RocksDB supports bounds
// changed between seeks (BlockBasedTableIterator checks the upper bound
// again at a seek that stays in its block, and the other levels compare
// keys with the bounds as they are); a check it skips on what it knew
// of the old bounds can only let keys outside the new ones through,
// which the merge drops (scope.past).
func (b *boundedReads) set(lo, hi []byte) {
	b.lo, b.loCap, b.loLen = setBound(b.lo, b.loCap, b.loLen, lo, b.ro.SetIterateLowerBound)
	b.hi, b.hiCap, b.hiLen = setBound(b.hi, b.hiCap, b.hiLen, hi, b.ro.SetIterateUpperBound)
}

// setBound copies k into the C buffer p of size n, replaced by a larger
// one when k does not fit, and points the bound at it with apply unless
// it points there already with k's length (cur): the options keep a
// pointer and a length, and a bound of one length moved within its
// buffer (a window fetch's, key after key of one length) needs no native
// call.
func setBound(p unsafe.Pointer, n, cur int, k []byte, apply func([]byte)) (unsafe.Pointer, int, int) {
	if len(k) > n {
		// The options point at the old buffer until apply: free it after.
		old := p
		n = max(len(k), 2*n, 64)
		p = C.malloc(C.size_t(n))
		defer C.free(old)
		cur = -1
	}
	b := unsafe.Slice((*byte)(p), len(k))
	copy(b, k)
	if cur != len(k) {
		apply(b)
	}
	return p, n, len(k)
}

// free frees the options once their iterator is closed.
func (b *boundedReads) free() {
	b.ro.Destroy()
	C.free(b.lo)
	C.free(b.hi)
}

// native is a RocksDB iterator with its read options.
type native struct {
	it    *grocksdb.Iterator
	reads *boundedReads
	// gen is the database's gen when it opened: it reads the database as
	// it was then.
	gen uint64
	// checked says err holds the iterator's status (failed).
	checked bool
	err     error
}

// failed is the iterator's error, nil when it has none, asked of RocksDB
// once a scan: a native call costs as much as a step. A scan asks at its
// end; one closed before that is asked when it is.
func (n *native) failed() error {
	if !n.checked {
		n.checked, n.err = true, n.it.Err()
	}
	return n.err
}

func (n *native) free() {
	n.it.Close()
	n.reads.free()
}

// maxSpares bounds the native iterators a database keeps for reuse: a
// window fetch or a session lookup opens one per segment it covers (one
// or two), a join fetches one side while the other's store is read.
const maxSpares = 4

// openNative returns a native iterator over the database as it is now,
// bounded to lo <= key < hi: a spare one, its bounds moved, when the
// database has not changed since it opened and both bounds are set;
// otherwise a new one. The lock must be held.
//
// Opening an iterator per scan, as a window fetch or a session lookup
// per record does, cost more than the seek that follows: RocksDB builds
// its iterator stack (memtables, every level) and its first seek in each
// table looks its index and data blocks up in the block cache; a spare
// one has them, and a seek near its last position stays in its blocks.
func (d *DB) openNative(lo, hi []byte) *native {
	if n := len(d.spares); n > 0 && len(lo) > 0 && len(hi) > 0 {
		nat := d.spares[n-1]
		d.spares[n-1] = nil
		d.spares = d.spares[:n-1]
		nat.reads.set(lo, hi)
		nat.checked = false
		return nat
	}
	r := newBoundedReads(lo, hi)
	return &native{it: d.db.NewIterator(r.ro), reads: r, gen: d.gen}
}

// closeNative ends a scan's use of nat: it is kept as a spare while it
// reads the database as it is, else freed. The lock must be held.
func (d *DB) closeNative(nat *native) {
	if nat.gen != d.gen || len(d.spares) >= maxSpares || !nat.reads.bounded() ||
		d.closed.Load() || nat.failed() != nil {
		nat.free()
		return
	}
	d.spares = append(d.spares, nat)
}

// changed notes a write to the database: the spare iterators read it as
// it was, and go. The lock must be held.
func (d *DB) changed() {
	d.gen++
	clear(d.recent)
	d.recent = d.recent[:0]
	d.heldAfter = d.committed
	for i, nat := range d.spares {
		nat.free()
		d.spares[i] = nil
	}
	d.spares = d.spares[:0]
}

// Path is the database's directory.
func (d *DB) Path() string { return d.path }

func (d *DB) checkOpen() error {
	if d.closed.Load() {
		return fmt.Errorf("RocksDB state in %s: database is closed", d.path)
	}
	return nil
}

// Checkpoint reads the database's checkpoint; ok is false when it has none
// (a new database, or one written before the first commit).
func (d *DB) Checkpoint() (cp Checkpoint, ok bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return Checkpoint{}, false, err
	}
	b, err := d.db.GetBytes(d.ro, checkpointKey)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read checkpoint of RocksDB state in %s: %w", d.path, err)
	}
	if b == nil {
		return Checkpoint{}, false, nil
	}
	cp, err = decodeCheckpoint(b)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("checkpoint of RocksDB state in %s: %w", d.path, err)
	}
	return cp, true, nil
}

// Epoch is the processing epoch.
func (d *DB) Epoch() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.epoch
}

// Seal ends epoch's writes: the writes that follow belong to epoch+1.
func (d *DB) Seal(epoch int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.layers {
		if l.epoch <= epoch {
			l.sealed = true
		}
	}
	d.epoch = max(d.epoch, epoch+1)
}

// Commit writes the layers of the epochs up to epoch, and cp, to the
// database in one atomic write, and takes them off the stack. It is for
// an epoch whose transaction committed.
func (d *DB) Commit(epoch int64, cp Checkpoint) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	n := 0
	for n < len(d.layers) && d.layers[n].epoch <= epoch {
		n++
	}
	rep := encodeBatch(d.batch[:0], d.layers[:n])
	// RocksDB copies the batch: its bytes serve the next commit, unless
	// a large one would keep its memory for good.
	d.batch = nil
	if cap(rep) <= keptBatchBytes {
		d.batch = rep[:0]
	}
	if err := checkRoom(d.path, len(rep)); err != nil {
		return fmt.Errorf("commit epoch %d: %w", epoch, err)
	}
	wb := grocksdb.WriteBatchFrom(rep)
	defer wb.Destroy()
	wb.Put(checkpointKey, cp.encode())
	d.changed()
	if err := d.db.Write(d.wo, wb); err != nil {
		return fmt.Errorf("commit epoch %d to RocksDB state in %s: %w", epoch, d.path, err)
	}
	// The layers just written stay readable as recent: what they hold is
	// what the database now holds of their epochs.
	d.recent = append(d.recent, d.layers[:n]...)
	d.committed = max(d.committed, epoch)
	d.drop(n)
	return nil
}

// keptBatchBytes bounds the commit batch bytes a database keeps for the
// next commit.
const keptBatchBytes = 8 << 20

// batchHeader is a write batch's sequence number (8 bytes) and record
// count (4 bytes, little-endian), before its records.
const batchHeader = 12

// encodeBatch lays the last writes of layers (oldest first) out as a
// write batch's bytes, built in Go and handed over in one native call: the
// range deletes first, then each key's newest write in key order (the
// memtable's skip list inserts a run of ascending keys from where the
// last one went, rather than from its head). A write of a layer below a
// range delete that covers it is left out: written after the range
// deletes, it would bring back what the range removed.
func encodeBatch(buf []byte, layers []*layer) []byte {
	size := batchHeader
	var names []string
	for _, l := range layers {
		for name, w := range l.stores {
			size += w.size + w.cur.t.Len()*(1+2*binary.MaxVarintLen32)
			for _, r := range w.ranges {
				size += 1 + 2*binary.MaxVarintLen32 + len(r.from) + len(r.to)
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	// Store by store, in the order of their key prefixes (name 0x00): in
	// key order over the whole batch.
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(a+"\x00", b+"\x00") })
	out := buf[:0]
	if cap(out) < size {
		out = make([]byte, 0, size)
	}
	out = append(out, make([]byte, batchHeader)...)
	count := 0
	for _, name := range names {
		var ws []*storeWrites
		for _, l := range layers {
			if w := l.stores[name]; w != nil {
				ws = append(ws, w)
			}
		}
		for _, w := range ws {
			for _, r := range w.ranges {
				out = append(out, byte(grocksdb.WriteBatchRangeDeletion))
				out = binary.AppendUvarint(out, uint64(len(r.from)))
				out = append(out, r.from...)
				out = binary.AppendUvarint(out, uint64(len(r.to)))
				out = append(out, r.to...)
				count++
			}
		}
		if len(ws) == 1 {
			ws[0].cur.t.Ascend(func(e write) bool {
				out = appendRecord(out, unsafe.Slice(unsafe.StringData(e.key), len(e.key)), e.c.value)
				count++
				return true
			})
			continue
		}
		// Newest first, as a scan merges them; nothing writes to the
		// layers while the lock is held, so the cursors read the trees.
		m := &merger{deletes: true}
		for i := len(ws) - 1; i >= 0; i-- {
			c := newTreeCursor(ws[i].cur.t, nil, false)
			c.seek(nil)
			m.srcs = append(m.srcs, c)
			m.ranges = append(m.ranges, ws[i].ranges)
		}
		for src := m.next(); src >= 0; src = m.next() {
			out = appendRecord(out, m.cur, m.srcs[src].value())
			count++
		}
	}
	binary.LittleEndian.PutUint32(out[8:], uint32(count))
	return out
}

// appendRecord appends a put of key (a delete when value is nil) in the
// write batch record layout: type, varint key length, key, and for a put
// varint value length and value.
func appendRecord(b, key, value []byte) []byte {
	if value == nil {
		b = append(b, byte(grocksdb.WriteBatchDeletionRecord))
		b = binary.AppendUvarint(b, uint64(len(key)))
		return append(b, key...)
	}
	b = append(b, byte(grocksdb.WriteBatchValueRecord))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// Abort drops every layer: the database is as the last commit left it.
func (d *DB) Abort() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drop(len(d.layers))
}

// drop takes the first n layers off the stack; the iterators that read
// them keep their snapshots. The lock must be held.
func (d *DB) drop(n int) {
	rest := copy(d.layers, d.layers[n:])
	clear(d.layers[rest:])
	d.layers = d.layers[:rest]
}

// Wipe deletes every store's data and the checkpoint, for a database that
// cannot be brought up to date and is rebuilt from the changelogs.
func (d *DB) Wipe() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	d.drop(len(d.layers))
	if err := checkRoom(d.path, 0); err != nil {
		return fmt.Errorf("wipe: %w", err)
	}
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	// Every key sorts below 0xff 0xff...: store names are printable.
	wb.DeleteRange([]byte{}, []byte{0xff, 0xff, 0xff, 0xff})
	d.changed()
	if err := d.db.Write(d.wo, wb); err != nil {
		return fmt.Errorf("wipe RocksDB state in %s: %w", d.path, err)
	}
	return nil
}

// WipeTask deletes the data of every store of the task of partition
// (TaskSupplier), for a task that cannot be brought up to date from its
// checkpoint or that the instance no longer runs. Nothing may be
// uncommitted: it is called before the task's stores are opened.
func (d *DB) WipeTask(partition int32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := checkRoom(d.path, 0); err != nil {
		return fmt.Errorf("wipe task: %w", err)
	}
	from := TaskPrefix(partition)
	// The prefix ends in '/'; '0' follows it, and no other task's prefix
	// falls between (TaskPrefix).
	to := from[:len(from)-1] + "0"
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	wb.DeleteRange([]byte(from), []byte(to))
	// The checkpoint stops naming the task in the same write: a
	// checkpoint that still held it, with its offsets, would let a later
	// start that finds it there keep the task and restore only what
	// follows those offsets, over nothing. The generation that wipes a
	// task writes its own checkpoint only once its restore ends, and a
	// restore cut short (a rebalance, a standby's warm-up stopped) never
	// gets there.
	b, err := d.db.GetBytes(d.ro, checkpointKey)
	if err != nil {
		return fmt.Errorf("wipe the state of task partition %d in %s: read checkpoint: %w", partition, d.path, err)
	}
	if b != nil {
		cp, err := decodeCheckpoint(b)
		if err != nil {
			return fmt.Errorf("wipe the state of task partition %d in %s: %w", partition, d.path, err)
		}
		if cp.drop(partition) {
			wb.Put(checkpointKey, cp.encode())
		}
	}
	d.changed()
	if err := d.db.Write(d.wo, wb); err != nil {
		return fmt.Errorf("wipe the state of task partition %d in %s: %w", partition, d.path, err)
	}
	return nil
}

// adoptBatchBytes bounds the bytes one write batch of AdoptTask holds.
const adoptBatchBytes = 8 << 20

// AdoptTask copies every store of the task of partition from another
// database (a standby's, kept beside the lanes' own) into this one, and
// returns the entries copied. It is for a task the instance takes over
// while it keeps a warm copy elsewhere: a local copy in key order costs
// far less than reading the task's changelog from the start. This
// database's part of the task must be empty (WipeTask) and nothing may
// be uncommitted: it is called before the task's stores are opened. The
// checkpoint is not touched; the caller restores the task from the other
// database's checkpoint on and writes its own. A crash in between leaves
// entries no checkpoint names, which the next start wipes.
func (d *DB) AdoptTask(from *DB, partition int32) (int, error) {
	if from == d {
		return 0, fmt.Errorf("adopt task partition %d: %s is the same database", partition, d.path)
	}
	from.mu.Lock()
	defer from.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := from.checkOpen(); err != nil {
		return 0, err
	}
	if err := d.checkOpen(); err != nil {
		return 0, err
	}
	lo := []byte(TaskPrefix(partition))
	hi := append(lo[:len(lo)-1:len(lo)-1], '0') // as WipeTask
	nat := from.openNative(lo, hi)
	defer nat.free()
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	n, size := 0, 0
	flush := func() error {
		if wb.Count() == 0 {
			return nil
		}
		if err := checkRoom(d.path, size); err != nil {
			return fmt.Errorf("adopt task partition %d: %w", partition, err)
		}
		if err := d.db.Write(d.wo, wb); err != nil {
			return fmt.Errorf("adopt task partition %d from %s into %s: %w", partition, from.path, d.path, err)
		}
		wb.Clear()
		size = 0
		return nil
	}
	d.changed()
	for nat.it.Seek(lo); nat.it.Valid(); nat.it.Next() {
		k, v := nat.it.Key(), nat.it.Value()
		wb.Put(k.Data(), v.Data())
		size += k.Size() + v.Size()
		k.Free()
		v.Free()
		n++
		if size >= adoptBatchBytes {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := nat.it.Err(); err != nil {
		return n, fmt.Errorf("adopt task partition %d: read %s: %w", partition, from.path, err)
	}
	return n, flush()
}

// Close drops the layers, frees the iterators still open (they fail on
// their next Next) and closes the database: an iterator a processor never
// closed must not keep the database, and its lock, from the next owner.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Swap(true) {
		return nil
	}
	d.drop(len(d.layers))
	// Flush the memtables, so that the next Open has no log to replay (a
	// million keys' log takes seconds to replay, and a clean restart is
	// to cost nothing); not on a disk without room, where RocksDB must
	// not write (see room.go).
	var err error
	mem, _ := d.db.GetIntProperty("rocksdb.cur-size-all-mem-tables")
	if checkRoom(d.path, int(mem)) == nil {
		fo := grocksdb.NewDefaultFlushOptions()
		fo.SetWait(true)
		if ferr := d.db.Flush(fo); ferr != nil {
			err = fmt.Errorf("flush RocksDB state in %s on close: %w", d.path, ferr)
		}
		fo.Destroy()
	}
	// The last iterator's release closes the database (freeLocked).
	d.changed()
	for it := range d.iters {
		it.releaseLocked()
	}
	d.freeLocked()
	return err
}

func (d *DB) freeLocked() {
	if d.freed || !d.closed.Load() || len(d.iters) > 0 {
		return
	}
	d.freed = true
	d.db.Close()
	d.ro.Destroy()
	d.wo.Destroy()
	d.bulkWo.Destroy()
	d.opts.Destroy()
	d.bbto.Destroy()
}

// writable returns the layer that takes the processing epoch's writes,
// pushing a new one when the top layer is sealed or of an earlier epoch.
// The lock must be held.
func (d *DB) writable() *layer {
	if n := len(d.layers); n > 0 && d.layers[n-1].writable(d.epoch) {
		return d.layers[n-1]
	}
	l := newLayer(d.epoch)
	d.layers = append(d.layers, l)
	return l
}

// putEntry writes key of store name, prefixed by prefix, with a copy of
// value (not nil) in the writable layer. A put of the key the layer last
// read or wrote may change that write in place (storeWrites.setLast,
// decision 0052); any other is the prefixed key and the value in one
// allocation, which the layer's tree holds as they are. Not for a
// restore (bulkPut).
func (d *DB) putEntry(name string, prefix, key, value []byte) {
	w := d.writable().of(name)
	if w.setLast(prefix, key, value) {
		return
	}
	n := len(prefix) + len(key)
	b := make([]byte, n+len(value))
	copy(b, prefix)
	copy(b[len(prefix):], key)
	copy(b[n:], value)
	w.set(unsafe.String(&b[0], n), b[n:len(b):len(b)])
}

// del deletes key of store name (prefixed). The lock must be held.
//
// A key the writable layer put, with nothing visible below the layer (no
// older layer, nor the database, holds it), leaves the layer instead of
// becoming a delete: it was never anywhere else, so no reader can tell,
// and the commit writes no tombstone for it. Keys made and removed
// within one epoch are common (a session store removes the session it
// merges a record into and puts the merged one: under a backlog an
// epoch does that several times per key), and every tombstone is a
// memtable entry that inserts and seeks step over until a compaction
// drops it. A key the layer did not put is deleted without a look below:
// a key put in an earlier epoch is the common case there. A look below
// that fails leaves the delete in the layer, which is always right.
func (d *DB) del(name, key string) {
	if d.restoring {
		d.bulkAdd(key, nil)
		return
	}
	l := d.writable()
	w := l.of(name)
	if v, ok := w.lookupString(key); ok && v != nil {
		if below, err := d.visibleBelow(l, name, key); err == nil && !below {
			w.remove(key)
			return
		}
	}
	w.set(key, nil)
}

// visibleBelow reports whether a read would find key of store name were
// layer l (the top of the stack) not to hold it: whether l's range
// deletes leave it to the layers below and the database, and one of them
// holds it. The lock must be held.
func (d *DB) visibleBelow(l *layer, name, key string) (bool, error) {
	kb := unsafe.Slice(unsafe.StringData(key), len(key))
	for i := len(d.layers) - 1; i >= 0; i-- {
		w := d.layers[i].stores[name]
		if w == nil {
			continue
		}
		if d.layers[i] != l {
			if v, ok := w.lookup(kb); ok {
				return v != nil, nil
			}
		}
		for _, r := range w.ranges {
			if r.covers(kb) {
				return false, nil
			}
		}
	}
	// What the last commit wrote is what the database holds of it.
	for i := len(d.recent) - 1; i >= 0; i-- {
		w := d.recent[i].stores[name]
		if w == nil {
			continue
		}
		if v, ok := w.lookup(kb); ok {
			return v != nil, nil
		}
		for _, r := range w.ranges {
			if r.covers(kb) {
				return false, nil
			}
		}
	}
	if d.absentGen == d.gen && string(d.absent) == key {
		return false, nil
	}
	// The read cache answers for the database as of this generation: a
	// join's outer store reads a key (absent, so the cache says nil),
	// puts it, and deletes it when a partner comes, most often before
	// the next commit.
	if v, ok := d.reads.get(d.gen, kb); ok {
		return v != nil, nil
	}
	s, err := d.db.Get(d.ro, kb)
	if err != nil {
		return false, err
	}
	defer s.Free()
	return s.Exists(), nil
}

// deleteRange deletes from <= key < to (prefixed keys) as one unit: a range
// delete on the writable layer, which hides what lies below, the layer's
// own earlier writes in the range removed. A restore writes it
// to the database at once. The lock must be held.
func (d *DB) deleteRange(name string, from, to []byte) error {
	if d.restoring {
		d.flushBulk()
		if d.bulkErr != nil {
			return d.bulkErr
		}
		if err := checkRoom(d.path, len(from)+len(to)); err != nil {
			return err
		}
		wb := grocksdb.NewWriteBatch()
		defer wb.Destroy()
		wb.DeleteRange(from, to)
		d.changed()
		if err := d.db.Write(d.bulkWo, wb); err != nil {
			return fmt.Errorf("delete a range of RocksDB state in %s: %w", d.path, err)
		}
		return nil
	}
	d.writable().of(name).deleteRange(keyRange{from: bytes.Clone(from), to: bytes.Clone(to)})
	return nil
}

// DefaultRestoreBatchBytes is how many bytes of restored records are
// written at once unless SetRestoreBatchBytes says otherwise.
const DefaultRestoreBatchBytes = 8 << 20

// SetRestoreBatchBytes bounds the bytes of restored records gathered for
// one write batch (stoatflow.restore.rocksdb.batch-bytes): what a restore
// holds in memory beside the records it reads. n <= 0 is the default.
func (d *DB) SetRestoreBatchBytes(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bulkMax = n
}

// BeginRestore makes the writes that follow go straight to the database
// in large write batches laid out in Go, one native call per batch rather
// than one per record, and each key once per batch (a changelog holds many
// versions of a key; RocksDB's memtable inserts are the cost), until
// EndRestore. It is for a restore, before the
// lane processes anything: a crash in between leaves records past the
// checkpoint in the database, which the next restore, reading from the
// same checkpoint, writes again in the same order, to the same result.
func (d *DB) BeginRestore() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.restoring = true
	d.bulk = map[string]int{}
}

// EndRestore writes what is left of the restore with cp, atomically.
func (d *DB) EndRestore(cp Checkpoint) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	d.bulkAdd(string(checkpointKey), cp.encode())
	d.flushBulk()
	d.restoring, d.bulk, d.bulkVals, d.arena, d.scratch = false, nil, nil, bulkArena{}, nil
	err := d.bulkErr
	d.bulkErr = nil
	if err != nil {
		return err
	}
	return nil
}

func (d *DB) bulkAdd(key string, value []byte) {
	d.bulkPut(nil, []byte(key), value)
}

// bulkPut gathers the restored write of prefix+key (a delete when value is
// nil). A key already in bulk keeps its string, and its value's room when
// the new value fits (a count's versions all have one length), so a
// changelog's versions of a key cost no allocation; a new key or a larger
// value is copied into the arena.
func (d *DB) bulkPut(prefix, key, value []byte) {
	d.scratch = append(append(d.scratch[:0], prefix...), key...)
	i, ok := d.bulk[string(d.scratch)]
	if !ok {
		k := d.arena.copy(d.scratch)
		d.bulkSize += len(k)
		// The string is the arena's bytes, which stay as they are
		// until flushBulk has dropped it from the map.
		d.bulk[unsafe.String(unsafe.SliceData(k), len(k))] = len(d.bulkVals)
		d.bulkVals = append(d.bulkVals, d.copyValue(value))
	} else if old := d.bulkVals[i]; value != nil && old != nil && cap(old) >= len(value) {
		d.bulkVals[i] = append(old[:0], value...)
	} else {
		d.bulkVals[i] = d.copyValue(value)
	}
	limit := d.bulkMax
	if limit <= 0 {
		limit = DefaultRestoreBatchBytes
	}
	if d.bulkSize >= limit {
		d.flushBulk()
	}
}

// copyValue copies value into the arena; nil stays nil (a delete), and an
// empty value is an empty one, not a delete.
func (d *DB) copyValue(value []byte) []byte {
	if value == nil {
		return nil
	}
	if len(value) == 0 {
		return []byte{}
	}
	d.bulkSize += len(value)
	return d.arena.copy(value)
}

// flushBulk writes the restored records gathered so far. The lock must be
// held.
func (d *DB) flushBulk() {
	if len(d.bulk) == 0 || d.bulkErr != nil {
		return
	}
	rep := d.encodeBulk()
	if err := checkRoom(d.path, len(rep)); err != nil {
		d.bulkErr = fmt.Errorf("restore: %w", err)
		return
	}
	wb := grocksdb.WriteBatchFrom(rep)
	d.changed()
	if err := d.db.Write(d.bulkWo, wb); err != nil {
		d.bulkErr = fmt.Errorf("restore into RocksDB state in %s: %w", d.path, err)
	}
	wb.Destroy()
	// The map's keys and values point into the arena: they go before
	// the arena's blocks are written again.
	clear(d.bulk)
	clear(d.bulkVals)
	d.bulkVals = d.bulkVals[:0]
	d.arena.reset()
	d.bulkSize = 0
}

// encodeBulk lays bulk out as a write batch's bytes, in key order as
// encodeBatch does. The lock must be held.
func (d *DB) encodeBulk() []byte {
	size := batchHeader
	for k, i := range d.bulk {
		size += 1 + 2*binary.MaxVarintLen32 + len(k) + len(d.bulkVals[i])
	}
	out := make([]byte, batchHeader, size)
	binary.LittleEndian.PutUint32(out[8:], uint32(len(d.bulk)))
	for _, k := range slices.Sorted(maps.Keys(d.bulk)) {
		out = appendRecord(out, unsafe.Slice(unsafe.StringData(k), len(k)), d.bulkVals[d.bulk[k]])
	}
	return out
}

// arenaBlock is the size of a bulkArena's blocks.
const arenaBlock = 1 << 20

// bulkArena holds the bytes of a restore's bulk in blocks that never move,
// so that bulk's keys (strings over the bytes) and values can point into
// them: one allocation per block instead of two per record. reset keeps
// the blocks for the next batch; the bulk's bound bounds them.
type bulkArena struct {
	blocks [][]byte
	// cur is the block being filled, an index into blocks.
	cur int
}

// copy returns a copy of b in the arena, its capacity its length, so that
// an append to it cannot run into its neighbour.
func (a *bulkArena) copy(b []byte) []byte {
	if len(b) > arenaBlock/4 {
		return append(make([]byte, 0, len(b)), b...)
	}
	for a.cur < len(a.blocks) && cap(a.blocks[a.cur])-len(a.blocks[a.cur]) < len(b) {
		a.cur++
	}
	if a.cur == len(a.blocks) {
		a.blocks = append(a.blocks, make([]byte, 0, arenaBlock))
	}
	blk := a.blocks[a.cur]
	n := len(blk)
	blk = append(blk, b...)
	a.blocks[a.cur] = blk
	return blk[n:len(blk):len(blk)]
}

// reset empties the arena; what pointed into it must be gone.
func (a *bulkArena) reset() {
	for i := range a.blocks {
		a.blocks[i] = a.blocks[i][:0]
	}
	a.cur = 0
}

// get reads key of store name (prefixed) through the layers, newest
// first, then the database. The lock must be held.
func (d *DB) get(name string, key []byte) ([]byte, error) {
	d.flushBulk()
	// The layers on the stack, newest first, then those the last commit
	// wrote: what they hold of a key is what the database holds of it
	// (DB.recent), one tree search away instead of a RocksDB read.
	for i := len(d.layers) + len(d.recent) - 1; i >= 0; i-- {
		var l *layer
		if i < len(d.recent) {
			l = d.recent[i]
		} else {
			l = d.layers[i-len(d.recent)]
		}
		w := l.stores[name]
		if w == nil {
			continue
		}
		if v, ok := w.lookup(key); ok {
			if v == nil {
				return nil, nil
			}
			return append(make([]byte, 0, len(v)), v...), nil
		}
		for _, r := range w.ranges {
			if r.covers(key) {
				return nil, nil
			}
		}
	}
	if v, ok := d.reads.get(d.gen, key); ok {
		if v == nil {
			return nil, nil
		}
		return append(make([]byte, 0, len(v)), v...), nil
	}
	s, err := d.db.Get(d.ro, key)
	if err != nil {
		return nil, err
	}
	defer s.Free()
	if !s.Exists() {
		d.reads.put(d.gen, key, nil)
		return nil, nil
	}
	v := append(make([]byte, 0, s.Size()), s.Data()...)
	d.reads.put(d.gen, key, v)
	return v, nil
}

// readCache holds what point reads found in RocksDB (nil: no value) while
// the database stays as it was: any write to it (a commit, a restore's
// batch, a wipe) starts a generation (DB.changed), and the cache forgets
// everything of the last one. A read that reaches RocksDB found the key
// in no layer, so the layers cannot hold a newer value the cache would
// hide; a key a layer writes is read from the layer until the layer is
// committed, which changes the database. A stream-table join, or any
// processor that reads a store its epoch does not write, reads the same
// keys again and again between two commits: Kafka Streams serves those
// from its record cache in front of RocksDB. Bounded by readCacheBytes:
// a cache that fills up starts again empty.
type readCache struct {
	gen   uint64
	m     map[string][]byte
	bytes int
}

// readCacheBytes bounds the keys and values a lane database's read cache
// holds.
const readCacheBytes = 2 << 20

func (c *readCache) get(gen uint64, key []byte) ([]byte, bool) {
	if c.gen != gen || c.m == nil {
		return nil, false
	}
	v, ok := c.m[string(key)]
	return v, ok
}

// put keeps copies of key and value.
func (c *readCache) put(gen uint64, key, value []byte) {
	if value != nil {
		value = append(make([]byte, 0, len(value)), value...)
	}
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	size := len(key) + len(value) + 64 // the map's share, roughly
	if c.gen != gen || c.bytes+size > readCacheBytes {
		clear(c.m)
		c.gen, c.bytes = gen, 0
	}
	c.m[string(key)] = value
	c.bytes += size
}

// layerCount is the depth of the stack, for tests.
func (d *DB) layerCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.layers)
}
