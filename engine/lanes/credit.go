package lanes

import (
	"context"
	"sync"
	"sync/atomic"
)

// Credit is a budget of records shared by one producer and one consumer:
// the producer takes credit before it hands records over and waits while
// there is not enough; the consumer gives it back as it is done with them.
// It is how the engine's bounds hold without a channel that must stop
// being read: a lane's queue per producer (stoatflow.lane.queue-size) and
// the committer's held records (stoatflow.commit.held-records).
type Credit struct {
	size int64

	mu    sync.Mutex
	avail int64
	// limit caps what may be outstanding (taken and not given back) at
	// once, at most size: the lane lowers it when it processes slowly, so
	// that what waits ahead of a barrier is worth no more than the lane's
	// target time (Lane.pace). A hand-over larger than the limit goes
	// through alone, when nothing else is outstanding.
	limit int64
	// wake is closed, and replaced, when credit comes back while a
	// producer waits.
	wake chan struct{}

	// waits counts the times a producer had to wait: how the tests see
	// the back-pressure hold.
	waits atomic.Int64
}

// NewCredit returns a budget of size records, all available.
func NewCredit(size int64) *Credit { return &Credit{size: size, avail: size, limit: size} }

// SetLimit caps the records outstanding at once at n, within [1, size].
// Raising it wakes a waiting producer.
func (c *Credit) SetLimit(n int64) {
	n = min(max(n, 1), c.size)
	c.mu.Lock()
	raised := n > c.limit
	c.limit = n
	if raised && c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
	c.mu.Unlock()
}

// Limit is the cap on the records outstanding at once (SetLimit).
func (c *Credit) Limit() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}

// short says a take of n records must wait: the budget lacks them, or
// they would put more than the limit outstanding while some already are.
func (c *Credit) short(n int64) bool {
	out := c.size - c.avail
	return c.avail < n || out > 0 && out+n > c.limit
}

// Waits is how many times a producer had to wait for credit.
func (c *Credit) Waits() int64 { return c.waits.Load() }

// Take takes n records' credit, waiting while there is not enough, until
// ctx is done. n is capped at the whole budget, so that a hand-over larger
// than it waits for the budget to be free instead of forever.
func (c *Credit) Take(ctx context.Context, n int64) (int64, error) {
	n = min(n, c.size)
	c.mu.Lock()
	if !c.short(n) {
		c.avail -= n
		c.mu.Unlock()
		return n, nil
	}
	c.waits.Add(1)
	for c.short(n) {
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		w := c.wake
		c.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		c.mu.Lock()
	}
	c.avail -= n
	c.mu.Unlock()
	return n, nil
}

// Give returns n records' credit.
func (c *Credit) Give(n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.avail += n
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
	c.mu.Unlock()
}
