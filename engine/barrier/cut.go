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
	// Records dispatched and Outputs written by the lanes since the last
	// barrier was cut.
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

// Cut cuts the next barrier with stamp w. It must not be called while an
// epoch is in flight.
func (c *Cutter) Cut(w int64, final bool) Barrier {
	b := Barrier{Epoch: c.Epoch, Stamp: w, Final: final}
	c.Epoch++
	c.Frontier, c.Stamp = c.Stamp, w
	return b
}

// Commit records that epoch's transaction committed.
func (c *Cutter) Commit(epoch int64) {
	c.Committed = max(c.Committed, epoch)
}
