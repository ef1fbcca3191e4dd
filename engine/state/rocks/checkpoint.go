package rocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Checkpoint is what a lane database is complete up to: for the changelog
// partition of every task it holds, the offset of the first record it
// does not hold. It also records how the keys were routed when it was
// written, since a database routed differently cannot be brought up to
// date from a changelog.
type Checkpoint struct {
	// Application is the application.id whose state this is.
	Application string `json:"application"`
	// Lanes is the lane count of the sub-topology; keys go to lane
	// hash mod Lanes.
	Lanes int `json:"lanes"`
	// Owned names the tasks whose stores the database holds, as
	// "<sub-topology>_<partition>"; a restart keeps those it runs again
	// and wipes the others.
	Owned []string `json:"owned,omitempty"`
	// Offsets maps changelog topic to partition to the next offset to
	// restore from.
	Offsets map[string]map[int32]int64 `json:"offsets"`
	// Layout is the byte-store layout the stores were written in (Layout
	// when this build wrote it; 0 before segmented window and session
	// stores): a database in another layout is rebuilt.
	Layout int `json:"layout,omitempty"`
}

// Layout is the byte-store layout of this build's stores: 1 lays window
// and session stores out in segments (see engine/state's WindowStore); 2
// puts each task's stores under the task's prefix (TaskSupplier).
const Layout = 2

// TaskPrefix begins the names of the stores of the task of partition.
// Store names are printable and hold no '/', so no other task's names
// begin with it.
func TaskPrefix(partition int32) string { return "t" + strconv.Itoa(int(partition)) + "/" }

// drop takes the task of partition out of the checkpoint: its id from
// Owned ("<sub-topology>_<partition>"; a lane database holds one
// sub-topology's tasks) and its offsets. It reports whether the
// checkpoint named it.
func (c *Checkpoint) drop(partition int32) bool {
	suffix := "_" + strconv.Itoa(int(partition))
	changed := false
	owned := c.Owned[:0:0]
	for _, id := range c.Owned {
		if strings.HasSuffix(id, suffix) {
			changed = true
			continue
		}
		owned = append(owned, id)
	}
	c.Owned = owned
	for t, ps := range c.Offsets {
		if _, ok := ps[partition]; ok {
			changed = true
			delete(ps, partition)
			if len(ps) == 0 {
				delete(c.Offsets, t)
			}
		}
	}
	return changed
}

// ErrCorruptCheckpoint marks a checkpoint that cannot be decoded.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

// encode lays the checkpoint out as JSON: small, and readable with a
// RocksDB tool when something goes wrong.
func (c Checkpoint) encode() []byte {
	c.Layout = Layout
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("rocks: encode checkpoint: %v", err)) // maps of strings and ints always encode
	}
	return b
}

// decodeCheckpoint reads what encode wrote.
func decodeCheckpoint(b []byte) (Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
	}
	if c.Lanes <= 0 {
		return Checkpoint{}, fmt.Errorf("%w: lane count %d", ErrCorruptCheckpoint, c.Lanes)
	}
	for t, ps := range c.Offsets {
		for p, off := range ps {
			if p < 0 || off < 0 {
				return Checkpoint{}, fmt.Errorf("%w: %s[%d] at offset %d", ErrCorruptCheckpoint, t, p, off)
			}
		}
	}
	return c, nil
}

// ErrDiskFull marks a write refused because the state directory's
// filesystem has too little room for it.
var ErrDiskFull = errors.New("no space left for RocksDB state")

// ErrUnavailable is returned by Open in a binary built without RocksDB.
var ErrUnavailable = errors.New("RocksDB state stores are not available in this binary (built without cgo); rebuild with CGO_ENABLED=1 and librocksdb-dev, or set default.dsl.store=in_memory")
