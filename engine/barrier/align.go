package barrier

// Aligner aligns the markers of one barrier from a lane's producers.
// Producer 0 is the dispatcher; producers 1 and up are upstream lanes
// across in-memory boundaries. The zero value is not ready: use NewAligner.
type Aligner[T any] struct {
	marked []bool
	n      int
	stash  []T
}

// NewAligner returns an aligner for a lane with producers producers.
func NewAligner[T any](producers int) *Aligner[T] {
	return &Aligner[T]{marked: make([]bool, max(producers, 1))}
}

// Producers is the number of producers whose markers a barrier needs.
func (a *Aligner[T]) Producers() int { return len(a.marked) }

// Waiting reports how many producers' markers the lane still waits for.
func (a *Aligner[T]) Waiting() int { return len(a.marked) - a.n }

// Stashed is how many items are held for the next epoch.
func (a *Aligner[T]) Stashed() int { return len(a.stash) }

// Offer takes an item (a record or a marker) from producer from. It
// reports false when the item was stashed: its producer's marker of the
// barrier the lane waits at has arrived, so the item belongs to a later
// epoch and is released when the lane is aligned. True means the caller
// handles the item now (a record is processed; a marker goes to Marker).
func (a *Aligner[T]) Offer(from int, it T) bool {
	if a.marked[from] {
		a.stash = append(a.stash, it)
		return false
	}
	return true
}

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
	a.n = 0
	released, a.stash = a.stash, nil
	return true, released
}
