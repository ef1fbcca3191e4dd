//go:build cgo

package rocks

import (
	"fmt"
	"syscall"
)

// minFree is the room a write must leave free on the database's
// filesystem: enough for RocksDB to flush a full memtable (64 MiB by
// default) and write the next one's log. RocksDB must never meet a full
// disk itself: Debian's librocksdb 7.8.3 is built with assertions on, and
// its log writer aborts the process on the write that follows a failed
// one (WritableFileWriter::AssertFalseAndGetStatusForPrevError), so a
// full disk would crash the engine instead of failing a commit. Refused
// here, the write leaves the database as the last commit left it, and the
// engine's next start, once there is room, restores the rest from the
// changelogs. Tests lower it.
var minFree uint64 = 2 * (64 << 20)

// checkRoom fails when writing n bytes to the database would leave less
// than minFree free on its filesystem.
func checkRoom(path string, n int) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return fmt.Errorf("RocksDB state in %s: check free space: %w", path, err)
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	need := uint64(n) + minFree
	if free < need {
		return fmt.Errorf("RocksDB state in %s: %w: %d bytes free on its filesystem, %d needed (the write, and room for RocksDB to flush and compact); free space there and start again", path, ErrDiskFull, free, need)
	}
	return nil
}
