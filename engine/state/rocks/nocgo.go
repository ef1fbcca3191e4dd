//go:build !cgo

package rocks

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/state"
)

// Available reports whether this binary has the RocksDB backend.
func Available() bool { return false }

// Version is empty: no RocksDB is linked in.
func Version() string { return "" }

// DB is a lane database; without cgo none can be opened.
type DB struct{ path string }

// Open fails: this binary was built without cgo.
func Open(dir string) (*DB, error) {
	return nil, fmt.Errorf("open RocksDB state in %s: %w", dir, ErrUnavailable)
}

func (d *DB) Path() string                           { return d.path }
func (d *DB) Checkpoint() (Checkpoint, bool, error)  { return Checkpoint{}, false, ErrUnavailable }
func (d *DB) Epoch() int64                           { return 0 }
func (d *DB) Seal(int64)                             {}
func (d *DB) Commit(int64, Checkpoint) error         { return ErrUnavailable }
func (d *DB) Abort()                                 {}
func (d *DB) Wipe() error                            { return ErrUnavailable }
func (d *DB) Close() error                           { return nil }
func (d *DB) Supplier() state.BytesSupplier          { return nil }
func (d *DB) TaskSupplier(int32) state.BytesSupplier { return nil }
func (d *DB) WipeTask(int32) error                   { return ErrUnavailable }
func (d *DB) AdoptTask(*DB, int32) (int, error)      { return 0, ErrUnavailable }
func (d *DB) Store(string) state.KeyValueBytesStore  { return nil }
func (d *DB) BeginRestore()                          {}
func (d *DB) SetRestoreBatchBytes(int)               {}
func (d *DB) EndRestore(Checkpoint) error            { return ErrUnavailable }

// PropertyNames is empty without RocksDB.
var PropertyNames []string

func (d *DB) Properties() map[string]uint64 { return nil }
