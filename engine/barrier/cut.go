package barrier

// Cutter is the dispatcher's side: which barrier comes next, whether one
// may be cut now (one epoch in flight), and whether one is needed (the
// idle rule).
type Cutter struct {
	// Epoch is the epoch the next barrier cuts.
	Epoch int64
	// Committed is the last epoch whose transaction committed.
	Committed int64
	// Stamp is the stamp of the last barrier cut; Frontier the one before.
	Stamp, Frontier int64
	// Closes, when set, tells the next close time after a frontier at
	// which an operator emitting on close may have final results, when
	// that is known (processor.CloseScheduler). It drives Hurry only.
	Closes func(after int64) (close int64, known bool)
	// passed holds, for the last three barriers cut (bit 0 the last),
	// whether the barrier's stamp passed a close of Closes since the
	// stamp before it.
	passed uint8
}

// NewCutter returns a cutter whose first barrier cuts epoch 1, resuming
// from stamp (the stamp a restart read back, or Unknown). The frontier
// starts Unknown, so that the first barrier runs the emission pass a
// crash may have lost.
func NewCutter(stamp int64) *Cutter {
	return &Cutter{Epoch: 1, Stamp: stamp, Frontier: Unknown}
}

// InFlight reports whether an epoch is cut but not committed: the next
// barrier waits for it.
func (c *Cutter) InFlight() bool { return c.Committed != c.Epoch-1 }

// Activity is what happened since the last barrier.
type Activity struct {
	// Records dispatched since the last barrier was cut; Outputs is
	// non-zero when the lanes wrote records since then (the live engine
	// marks rather than counts them).
	Records, Outputs int64
	// Watermark is the global watermark now.
	Watermark int64
	// WallClockWork says wall-clock punctuators or processing-time timers
	// exist, which only barriers run.
	WallClockWork bool
}

// Due applies the idle rule: a barrier is needed when records came in or
// went out, when the watermark moved past the last stamp, when the last
// stamp has not yet become a frontier (results it closed are still to be
// emitted), or when wall-clock work waits for barriers. The final barrier
// is always due.
func (c *Cutter) Due(a Activity, final bool) bool {
	return final || a.Records > 0 || a.Outputs > 0 || a.Watermark != c.Stamp || c.Stamp != c.Frontier || a.WallClockWork
}

// Hurry says the next barrier should come at the minimum interval rather
// than the commit interval, because final results of windows emitted on
// close wait for it. A result waits for two barriers after the one whose
// stamp passed its close: the one whose crossing makes that stamp the
// frontier (the emission pass), and the one that commits what the pass
// emitted. Without the hurry a final result trails the close by two to
// three commit intervals; with it by up to one, plus two minimum
// intervals. It is cadence only: what is emitted, and when it counts as
// final, does not change.
//
// A barrier passing closes right after one that did means the engine is
// catching up (reading history, or windows shorter than the interval):
// every barrier would hurry, trading throughput for nothing a reader can
// see yet, so then none does.
func (c *Cutter) Hurry() bool {
	return c.passed&0b011 == 0b001 || c.passed&0b110 == 0b010
}

// closeIn says a known close lies in (after, upTo].
func (c *Cutter) closeIn(after, upTo int64) bool {
	if c.Closes == nil || after == Unknown || upTo <= after {
		return false
	}
	next, known := c.Closes(after)
	return known && next <= upTo
}

// Cut cuts the next barrier with stamp w. It must not be called while an
// epoch is in flight.
func (c *Cutter) Cut(w int64, final bool) Barrier {
	b := Barrier{Epoch: c.Epoch, Stamp: w, Final: final}
	c.Epoch++
	c.passed <<= 1
	if c.closeIn(c.Stamp, w) {
		c.passed |= 1
	}
	c.Frontier, c.Stamp = c.Stamp, w
	return b
}

// Commit records that epoch's transaction committed.
func (c *Cutter) Commit(epoch int64) {
	c.Committed = max(c.Committed, epoch)
}
