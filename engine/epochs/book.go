package epochs

import "fmt"

// Report is a lane's hand-over of outputs O (a chunk, possibly empty) for
// an epoch, as the book sees it. P names a source partition.
type Report[O any, P comparable] struct {
	Epoch int64
	// Lane is the lane that handed it over, for messages.
	Lane int
	Outs O
	// Empty says Outs holds nothing to produce.
	Empty bool
	// Credit is what the lane took of the held-records budget for Outs.
	Credit int64
	// Final says the lane crossed the epoch's barrier: its last report
	// of the epoch, with PartTimes.
	Final     bool
	PartTimes map[P]int64
}

// Epoch is an epoch ready to end: its cut, and the largest event time
// every lane processed of each source partition in it.
type Epoch[C any, P comparable] struct {
	N         int64
	Cut       C
	PartTimes map[P]int64
}

// pending is what the book knows of an epoch not committed yet.
type pending[O any, C any, P comparable] struct {
	cut    C
	hasCut bool
	// finished are the lanes that handed over their final report.
	finished  map[int]bool
	partTimes map[P]int64
	held      []O
	credit    int64
}

// Book is the committer's bookkeeping of the epochs of one generation: O
// is a chunk of outputs, C an epoch's cut, P a source partition.
type Book[O any, C any, P comparable] struct {
	lanes   int
	next    int64
	pending map[int64]*pending[O, C, P]
}

// New is the book of a generation of lanes lanes whose first epoch is
// next.
func New[O any, C any, P comparable](lanes int, next int64) *Book[O, C, P] {
	return &Book[O, C, P]{lanes: lanes, next: next, pending: map[int64]*pending[O, C, P]{}}
}

// Next is the epoch being produced: the lowest not committed.
func (b *Book[O, C, P]) Next() int64 { return b.next }

func (b *Book[O, C, P]) get(n int64) *pending[O, C, P] {
	p, ok := b.pending[n]
	if !ok {
		p = &pending[O, C, P]{partTimes: map[P]int64{}, finished: map[int]bool{}}
		b.pending[n] = p
	}
	return p
}

// Report takes a lane's report. The outputs of the epoch being produced
// are handed back (now true) to produce at once, with the credit they
// took to give back; those of a later epoch are held. A report of an
// epoch already committed is a bug of the caller's.
func (b *Book[O, C, P]) Report(r Report[O, P]) (produce O, now bool, give int64, err error) {
	if r.Epoch < b.next {
		return produce, false, 0, fmt.Errorf("epochs: lane %d reported epoch %d, committed already (producing %d)", r.Lane, r.Epoch, b.next)
	}
	p := b.get(r.Epoch)
	if r.Final {
		if p.finished[r.Lane] {
			return produce, false, 0, fmt.Errorf("epochs: lane %d finished epoch %d twice", r.Lane, r.Epoch)
		}
		if r.Lane < 0 || r.Lane >= b.lanes {
			return produce, false, 0, fmt.Errorf("epochs: lane %d of %d finished epoch %d", r.Lane, b.lanes, r.Epoch)
		}
		p.finished[r.Lane] = true
		for k, v := range r.PartTimes {
			if old, ok := p.partTimes[k]; !ok || v > old {
				p.partTimes[k] = v
			}
		}
	}
	switch {
	case r.Epoch == b.next:
		return r.Outs, true, r.Credit, nil
	case !r.Empty:
		p.held = append(p.held, r.Outs)
		p.credit += r.Credit
	}
	return produce, false, 0, nil
}

// Cut records epoch n's cut.
func (b *Book[O, C, P]) Cut(n int64, c C) error {
	if n < b.next {
		return fmt.Errorf("epochs: cut of epoch %d, committed already (producing %d)", n, b.next)
	}
	p := b.get(n)
	if p.hasCut {
		return fmt.Errorf("epochs: epoch %d cut twice", n)
	}
	p.cut, p.hasCut = c, true
	return nil
}

// Ready returns the epoch being produced once it can end: its cut is
// known and every lane finished it.
func (b *Book[O, C, P]) Ready() (Epoch[C, P], bool) {
	p := b.pending[b.next]
	if p == nil || !p.hasCut || len(p.finished) < b.lanes {
		return Epoch[C, P]{}, false
	}
	return Epoch[C, P]{N: b.next, Cut: p.cut, PartTimes: p.partTimes}, true
}

// Committed moves the book past the epoch being produced, which ended in
// a commit, and hands back what was held for the next one, to produce now
// that its transaction may open, with the credit to give back.
func (b *Book[O, C, P]) Committed() (release []O, give int64) {
	delete(b.pending, b.next)
	b.next++
	if q := b.pending[b.next]; q != nil {
		release, give = q.held, q.credit
		q.held, q.credit = nil, 0
	}
	return release, give
}

// Drop forgets every epoch not committed, after an abort or a commit of
// unknown outcome: the generation ends and its tasks reset. It returns
// the credit the held records took, which the budget gets back, and how
// many epochs and held chunks were dropped.
func (b *Book[O, C, P]) Drop() (give int64, epochs, chunks int) {
	for n, p := range b.pending {
		give += p.credit
		chunks += len(p.held)
		delete(b.pending, n)
		epochs++
	}
	return give, epochs, chunks
}
