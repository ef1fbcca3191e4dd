package lanes

import (
	"sync/atomic"

	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/task"
)

// coalescer holds back a lane's changelog records within an epoch and
// keeps only the last write of each store key: restoration applies the
// records of a key in order and keeps the last, and every record of an
// epoch commits in one transaction or none does, so the epoch's last
// write per key restores the same state as all of them. A count over
// 10 000 keys then writes at most 10 000 changelog records an epoch, not
// one per input record.
//
// Records leave in the order their keys were first written in the epoch,
// so a run is deterministic; at the barrier's commit step (Lane.step), or
// before, when what is held passes the byte bound (a smaller coalescing
// window, never a lost write). Only changelog records are held: what the
// topology forwards and sinks is unchanged, each update still goes out.
//
// A write that carries its key's held word (task.Output.Held, from the
// memory store) skips the index once the key is held: the first write of
// a key in a coalescing window notes there (gen, position in outs), and a
// later write that finds its own gen there replaces outs[position]
// directly. The store's record was just written, so reading the word
// costs no cache miss, where the index's lookup missed twice (its slot
// group, then the held key's bytes) in the live profiles. A word is
// trusted only with the gen of this coalescer's current window: gens are
// unique in the process and change at every drain, a new record's word is
// zero, and a key's record is one key's, so the word cannot name another
// key's write. Every key still enters the index on its first write, so
// writes without a word (deletes, other stores) find it there.
type coalescer struct {
	// max is the bound in bytes; 0 turns coalescing off.
	max   int
	bytes int
	// index finds a held record by store and partition (the task's:
	// two tasks of a lane hold the same store name), then key bytes;
	// lastStore and lastKeys are the store written last and its keys, as
	// a task mostly writes one store over and over.
	index     map[storePartition]map[string]int
	lastStore storePartition
	lastKeys  map[string]int
	outs      []heldWrite
	// gen is this coalescing window's generation (coalescerGens).
	gen uint32
}

// storePartition names one task's store: a store name and the task's
// partition, where its changelog records go.
type storePartition struct {
	store     string
	partition int32
}

// coalescerGens hands out coalescer generations, never 0 (a new record's
// held word).
var coalescerGens atomic.Uint32

func nextGen() uint32 {
	for {
		if g := coalescerGens.Add(1); g != 0 {
			return g
		}
	}
}

// heldAt is the held word of a write held at outs[i] of generation gen.
func heldAt(gen uint32, i int) uint64 { return uint64(gen)<<32 | uint64(uint32(i)) }

// heldWrite is a changelog record held back, with the lane mark of the
// write that made it (routing waits until it leaves).
type heldWrite struct {
	out  task.Output
	mark laneMark
}

// entryOverhead approximates, in bytes, what holding one record costs
// beside its key, value and headers: the Output, its index entry and the
// key's copy there.
const entryOverhead = 200

func newCoalescer(max int) *coalescer {
	return &coalescer{max: max, index: map[storePartition]map[string]int{}, gen: nextGen()}
}

func (c *coalescer) on() bool { return c != nil && c.max > 0 }

// size is what the record held as w will weigh once it leaves: its key,
// value and headers, and the lane hash header routing adds then.
func size(w *heldWrite) int {
	o := &w.out
	n := len(o.Key) + len(o.Value)
	for _, h := range o.Headers {
		n += len(h.Key) + len(h.Value)
	}
	if w.mark.laned {
		n += len(lane.HashHeader) + 4
	}
	return n
}

// add holds o, replacing the held write of the same store key if there
// is one. It reports whether o is a key not held before.
func (c *coalescer) add(o task.Output, m laneMark) bool {
	word := o.Held
	o.Held = nil // the word is the store's; nothing past this call uses it
	if word != nil {
		if h := *word; uint32(h>>32) == c.gen {
			c.replace(int(uint32(h)), heldWrite{out: o, mark: m})
			return false
		}
	}
	keys := c.lastKeys
	if sp := (storePartition{o.Store, o.Partition}); keys == nil || sp != c.lastStore {
		keys = c.index[sp]
		if keys == nil {
			keys = map[string]int{}
			c.index[sp] = keys
		}
		c.lastStore, c.lastKeys = sp, keys
	}
	i, ok := keys[string(o.Key)]
	if word != nil {
		if !ok {
			i = len(c.outs)
		}
		*word = heldAt(c.gen, i)
	}
	if ok {
		c.replace(i, heldWrite{out: o, mark: m})
		return false
	}
	keys[string(o.Key)] = len(c.outs)
	c.outs = append(c.outs, heldWrite{out: o, mark: m})
	c.bytes += size(&c.outs[len(c.outs)-1]) + entryOverhead
	return true
}

// replace puts w in place of the held write at outs[i], the same store
// key's.
func (c *coalescer) replace(i int, w heldWrite) {
	held := &c.outs[i]
	c.bytes += size(&w) - size(held)
	*held = w
}

// full says what is held has passed the bound.
func (c *coalescer) full() bool { return c.bytes > c.max }

// held is the number of records held.
func (c *coalescer) held() int { return len(c.outs) }

// drain hands each held record to emit, in first-write order, and empties
// the coalescer. On an error from emit the records not yet handed over are
// dropped with the rest: the lane's epoch has failed and is not committed.
func (c *coalescer) drain(emit func(task.Output, laneMark) error) error {
	var err error
	for i := range c.outs {
		if err == nil {
			err = emit(c.outs[i].out, c.outs[i].mark)
		}
	}
	// The records now belong to the lane's report; keep the array and
	// the maps' room for the next epoch, not what they point to.
	clear(c.outs)
	c.outs = c.outs[:0]
	for _, keys := range c.index {
		clear(keys)
	}
	c.bytes = 0
	// The held words noted in this window name positions in outs that
	// are gone.
	c.gen = nextGen()
	return err
}
