// Package rocks is the RocksDB backend of the state stores: the byte stores
// of one lane in one RocksDB database, with each epoch's uncommitted writes
// layered over it.
//
// Terms:
//   - A lane database (DB) is one RocksDB database under the state
//     directory, at <state-dir>/<application.id>/<lane>; every store of the
//     lane lives in it, its keys prefixed by the store's name and a zero
//     byte. RocksDB's own LOCK file in that directory keeps a second process
//     out.
//   - An epoch layer holds one epoch's writes not yet committed: per
//     store, the last write of each key (nil for a delete) in a B-tree in
//     key order, and the key ranges the store deleted as units. Point
//     reads look keys up in it, scans merge it, in Go, with a RocksDB
//     iterator over the database (bounded to the scan's keys, so that a
//     seek among deleted keys stops at the bound), and a commit walks it
//     in key order.
//     Reads and scans see the layers newest first, then the database: the
//     processing epoch over the committing epoch over committed state.
//   - A version of a store's tree is what iterators read. A version with
//     readers takes no writes: the next write clones the tree (copy on
//     write: only the nodes on the written paths are copied) and goes to
//     the clone, so an iterator sees the store as it was when it opened.
//     A put of the key a store's writes last read or made, when no
//     version with readers holds that write, changes it in place instead
//     (decision 0052): a read-modify-write descends the tree once.
//   - A point read that reaches RocksDB is cached until the next write
//     to the database (readCache, decision 0054).
//   - A memo is what a forward scan read from RocksDB in its range, kept
//     until the next write to the database; a later scan of the same
//     upper bound from a lower bound at or above the memo's reads it
//     instead of RocksDB (rangeMemo, decision 0055): a session store
//     looks its key up once per record.
//   - Sealing an epoch ends its writes: later writes go to a new layer of
//     the next epoch. Committing an epoch writes its layers and a
//     checkpoint to the database in one atomic write, once the epoch's
//     transaction has committed; aborting drops every layer, which leaves
//     the database as the last commit left it.
//   - The recent layers are the ones the last commit wrote, kept until
//     the next write to the database: what they hold of a key is what
//     the database holds of it, so point reads and the scans of a caller
//     that knows its range holds writes from an epoch on only
//     (RangeSinceEpoch) read them instead of RocksDB (decision 0056).
//   - A checkpoint records, per changelog partition, the offset the
//     database is complete up to, so that a restart restores only the
//     changelog records after it.
//
// Iterators cannot outlive what they read. The layers are Go memory: an
// iterator keeps the versions it reads after their layer leaves the stack
// (a commit, an abort), and a write never changes a version with readers.
// The database, whose native iterator it holds, is closed only when its
// last iterator is. Keys and values are copied out of RocksDB as the
// iterator reaches them.
//
// A full disk never reaches RocksDB: Open, and every write (a commit, a
// restore's batch), first checks that its filesystem keeps room to spare
// (room.go) and fails with ErrDiskFull, naming the directory, when not;
// the database stays as its last commit left it. Debian's RocksDB build
// aborts the process on a failed log write's successor.
//
// The backend needs cgo and RocksDB's C library (Debian's librocksdb-dev).
// Built without cgo, Open returns ErrUnavailable and Available reports
// false; the in-memory stores still work.
package rocks
