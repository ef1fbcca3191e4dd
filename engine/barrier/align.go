package barrier

import "errors"

// Aligner aligns the markers of one barrier from a lane's producers.
// Producer 0 is the dispatcher; producers 1 and up are upstream lanes
// across in-memory boundaries. The zero value is not ready: use NewAligner.
type Aligner[T any] struct {
	marked []bool
	n      int
	stash  []T
	// from is how many stashed items each producer has; bound caps it
	// (0: no cap).
	from  []int
	bound int
}

// NewAligner returns an aligner for a lane with producers producers.
func NewAligner[T any](producers int) *Aligner[T] {
	return &Aligner[T]{marked: make([]bool, max(producers, 1)), from: make([]int, max(producers, 1))}
}

// NewBoundedAligner returns an aligner whose stash holds at most bound
// items of each producer. A producer past the barrier the lane waits at
// may hand over bound items of the next epoch; then it is Blocked, and
// must wait, until the lane is aligned, instead of the stash growing. A
// producer the lane still waits for is never blocked, so the marker the
// lane needs can always arrive: the runtime keeps reading every producer
// and holds the one that is ahead at its own end (a budget of bound
// records per producer, taken before it sends, given back as the lane
// processes what it sent).
func NewBoundedAligner[T any](producers, bound int) *Aligner[T] {
	a := NewAligner[T](producers)
	a.bound = max(bound, 0)
	return a
}

// Producers is the number of producers whose markers a barrier needs.
func (a *Aligner[T]) Producers() int { return len(a.marked) }

// Waiting reports how many producers' markers the lane still waits for.
func (a *Aligner[T]) Waiting() int { return len(a.marked) - a.n }

// Stashed is how many items are held for the next epoch.
func (a *Aligner[T]) Stashed() int { return len(a.stash) }

// StashedFrom is how many of the stashed items are producer from's.
func (a *Aligner[T]) StashedFrom(from int) int { return a.from[from] }

// Bound is the most items of one producer the stash holds, 0 for no
// bound.
func (a *Aligner[T]) Bound() int { return a.bound }

// Blocked reports that producer from may not hand over another item
// until the lane is aligned: its stash is at the bound. Only a producer
// whose marker has arrived can be blocked.
func (a *Aligner[T]) Blocked(from int) bool {
	return a.bound > 0 && a.marked[from] && a.from[from] >= a.bound
}

// Offer takes an item (a record or a marker) from producer from. It
// reports false when the item was stashed: its producer's marker of the
// barrier the lane waits at has arrived, so the item belongs to a later
// epoch and is released when the lane is aligned. True means the caller
// handles the item now (a record is processed; a marker goes to Marker).
//
// The caller asks Blocked first: an item of a blocked producer is a breach
// of the bound (ErrOverBound), which the caller reports, not offers.
func (a *Aligner[T]) Offer(from int, it T) bool {
	if a.marked[from] {
		a.stash = append(a.stash, it)
		a.from[from]++
		return false
	}
	return true
}

// ErrOverBound is the error of an item that arrived from a Blocked
// producer: the budget that should have held the producer back failed.
var ErrOverBound = errors.New("barrier: alignment stash over its bound")

// Marker records producer from's marker, which Offer let through. aligned
// is true when it was the last the barrier waited for: the lane crosses
// the barrier now, then handles released (what was stashed, in arrival
// order) before anything that arrives later. The aligner then waits for
// the next barrier.
func (a *Aligner[T]) Marker(from int) (aligned bool, released []T) {
	a.marked[from] = true
	a.n++
	if a.n < len(a.marked) {
		return false, nil
	}
	clear(a.marked)
	clear(a.from)
	a.n = 0
	released, a.stash = a.stash, nil
	return true, released
}
