//go:build !cgo

package migrate

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/state/rocks"
)

// DefaultRocksDBLibrary is the library loaded when Options.RocksDBLibrary
// is empty.
const DefaultRocksDBLibrary = "librocksdb.so"

// rocksLib is a RocksDB library; without cgo none can be loaded.
type rocksLib struct{}

func loadRocks(path string) (*rocksLib, error) {
	return nil, fmt.Errorf("load RocksDB library %s: %w", path, rocks.ErrUnavailable)
}

// instance is a RocksDB instance; without cgo none can be opened.
type instance struct{ path string }

func openInstance(_ *rocksLib, path string) (*instance, error) {
	return nil, &StateDirError{Path: path, Err: fmt.Errorf("read a Kafka Streams store: %w", rocks.ErrUnavailable)}
}

func (in *instance) close()                                     {}
func (in *instance) families() []string                         { return nil }
func (in *instance) long(string) (int64, bool, error)           { return 0, false, rocks.ErrUnavailable }
func (in *instance) each(string, func(k, v []byte) error) error { return rocks.ErrUnavailable }
