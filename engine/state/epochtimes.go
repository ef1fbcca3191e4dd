package state

import (
	"math"
	"sync"
)

// epochTimes is what a window store knows of the times (window starts,
// or a session store's session ends) of its entries by the epoch that
// wrote them, for a byte store that
// keeps epochs apart (EpochLayered): the entries of the current epoch
// start at or before cur; those of the epoch the store wrote in before
// it (prevEpoch) at or before prev; every other entry, written earlier,
// held when the store opened or restored, at or before older. A fetch
// from a time after older reads the writes of prevEpoch on alone
// (since), and from a time after prev too the current epoch's alone
// (onlyEpoch). Bounds only grow: an aborted epoch's times stay, which
// costs a fetch a wider read, never a missed entry.
type epochTimes struct {
	mu sync.Mutex
	// epoch is the epoch cur covers, 0 before the first write.
	epoch int64
	cur   int64
	// prevEpoch is the epoch prev covers, 0 when there was none.
	prevEpoch int64
	prev      int64
	older     int64
}

// init starts the bounds at the store's entries when it opens: none
// start after the end of the last segment it holds.
func (e *epochTimes) init(segs *segmentSet) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.epoch, e.cur = 0, math.MinInt64
	e.prevEpoch, e.prev = 0, math.MinInt64
	e.older = math.MinInt64
	segs.mu.Lock()
	defer segs.mu.Unlock()
	if n := len(segs.live); n > 0 {
		e.older = addSat(segmentStart(addSat(segs.live[n-1], 1), segs.interval), -1)
	}
}

// wrote notes an entry starting at t, written to epoch (ok false: not to
// an epoch, such as a restore's writes, which go below at once).
func (e *epochTimes) wrote(epoch int64, ok bool, t int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !ok {
		e.older = max(e.older, t)
		return
	}
	e.roll(epoch)
	e.cur = max(e.cur, t)
}

// roll makes epoch the current one when it is a new one: the current
// becomes the previous, and the previous goes into older. The lock must
// be held.
func (e *epochTimes) roll(epoch int64) {
	if epoch != e.epoch {
		e.older = max(e.older, e.prev)
		e.prevEpoch, e.prev = e.epoch, e.cur
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
	return t > max(e.older, e.prev)
}

// since is the earliest epoch that wrote an entry starting at or after
// t, when it is epoch (the epoch writes now go to) or the one the store
// wrote in before it; ok is false otherwise, or when the byte store has
// no epochs (writing false).
func (e *epochTimes) since(epoch int64, writing bool, t int64) (int64, bool) {
	if !writing {
		return 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.roll(epoch)
	switch {
	case t > max(e.older, e.prev):
		return epoch, true
	case e.prevEpoch != 0 && t > e.older:
		return e.prevEpoch, true
	}
	return 0, false
}
