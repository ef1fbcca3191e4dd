package engine

import "sync"

// Bounds is what a test reads of the engine's memory bounds after Run
// returned, over every generation it built.
type Bounds struct {
	// StashPeak is the most items a lane's aligner held at once;
	// StashBound the most it may hold per producer.
	StashPeak, StashBound int
	// QueueWaits counts the hand-overs to a lane that waited for credit
	// (stoatflow.lane.queue-size): the dispatcher's (slot 0) and the
	// upstream lanes' across a boundary.
	DispatcherWaits, UpstreamWaits int64
	// HeldWaits counts the reports that waited for the committer's
	// budget (stoatflow.commit.held-records).
	HeldWaits int64
}

// Probe watches the generations of one engine.
type Probe struct {
	mu   sync.Mutex
	gens []*generation
}

// WithProbe makes the engine call slow in a lane before it processes a
// record (barrier false) or crosses a barrier (barrier true), and lets p
// see its generations. slow may be nil.
func WithProbe(p *Probe, slow func(sub, idx int, barrier bool)) Option {
	return func(o *options) {
		o.probe = &probe{lane: slow, generation: func(g *generation) {
			p.mu.Lock()
			p.gens = append(p.gens, g)
			p.mu.Unlock()
		}}
	}
}

// Bounds reads what the generations saw; call it after Run returned.
func (p *Probe) Bounds() Bounds {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b Bounds
	for _, g := range p.gens {
		b.HeldWaits += g.sink.Held.Waits()
		for _, l := range g.lanes {
			b.StashPeak = max(b.StashPeak, int(l.StashPeak()))
			b.StashBound = max(b.StashBound, l.StashBound())
			d, u := l.QueueWaits()
			b.DispatcherWaits += d
			b.UpstreamWaits += u
		}
	}
	return b
}

// Live reads, while the engine runs, the largest stash a lane held and
// how often reports waited for the committer's budget.
func (p *Probe) Live() (stashPeak, held int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.gens {
		held += g.sink.Held.Waits()
		for _, l := range g.lanes {
			stashPeak = max(stashPeak, l.StashPeak())
		}
	}
	return stashPeak, held
}

// CloseSchedule is closeSchedule, for the tests of the cadence.
var CloseSchedule = closeSchedule

// SetMaxPendingRecords sets how many records of one partition the
// dispatcher holds for a waiting task before it pauses the partition's
// fetch, for the rest of the test; not for parallel tests.
func SetMaxPendingRecords(t interface{ Cleanup(func()) }, n int) {
	was := maxPendingRecords
	maxPendingRecords = n
	t.Cleanup(func() { maxPendingRecords = was })
}
