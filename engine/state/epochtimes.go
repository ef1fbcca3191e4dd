package state

import (
	"math"
	"sync"
)

// epochTimes is what a window store knows of the times (window starts)
// of its entries by the epoch that wrote them, for a byte store that
// keeps epochs apart (EpochLayered): every entry written before the
// current epoch, held when the store opened or restored, starts at or
// before below; the entries of the current epoch start at or before cur.
// A fetch from a time after below reads the current epoch's writes alone
// (onlyEpoch). Bounds only grow: an aborted epoch's times stay, which
// costs a fetch a wider read, never a missed entry.
type epochTimes struct {
	mu sync.Mutex
	// epoch is the epoch cur covers, 0 before the first write.
	epoch int64
	cur   int64
	below int64
}

// init starts the bounds at the store's entries when it opens: none
// start after the end of the last segment it holds.
func (e *epochTimes) init(segs *segmentSet) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.epoch, e.cur, e.below = 0, math.MinInt64, math.MinInt64
	segs.mu.Lock()
	defer segs.mu.Unlock()
	if n := len(segs.live); n > 0 {
		e.below = addSat(segmentStart(addSat(segs.live[n-1], 1), segs.interval), -1)
	}
}

// wrote notes an entry starting at t, written to epoch (ok false: not to
// an epoch, such as a restore's writes, which go below at once).
func (e *epochTimes) wrote(epoch int64, ok bool, t int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !ok {
		e.below = max(e.below, t)
		return
	}
	e.roll(epoch)
	e.cur = max(e.cur, t)
}

// roll moves cur below when epoch is a new one. The lock must be held.
func (e *epochTimes) roll(epoch int64) {
	if epoch != e.epoch {
		e.below = max(e.below, e.cur)
		e.epoch, e.cur = epoch, math.MinInt64
	}
}

// onlyEpoch reports whether every entry starting at or after t was
// written in epoch, the epoch writes now go to (ok false: the byte store
// has no epochs).
func (e *epochTimes) onlyEpoch(epoch int64, ok bool, t int64) bool {
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.roll(epoch)
	return t > e.below
}
