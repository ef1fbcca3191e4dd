// Package backoff is the one retry delay of stoatctl: every loop that
// retries an operation after an error (a broker coming back, a coordinator
// settling, a topic not yet in the metadata) waits through a Policy.
//
// A Policy doubles the delay from First up to Max, and jitters it: the
// wait before retry n is uniformly random in [d/2, d], d = min(First·2^(n-1),
// Max) ("equal jitter"). The jitter keeps instances that failed together
// (every instance of an application when a broker restarts) from retrying
// together; the lower half keeps a floor, so that a retry never comes at
// once and the bound a caller logs ("retry_in") is the most it waits.
//
// Polls that wait for a state rather than retry a failure (a group to
// empty, a client's metadata in internal/kgotxn) are not retries and keep
// their intervals; the TUI's polls after a failure take Ceiling, the
// schedule without the jitter, since the view shows the countdown.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff with jitter. The zero value is not
// useful; set both fields.
type Policy struct {
	// First is the delay before the first retry, before jitter.
	First time.Duration
	// Max caps the delay, before jitter.
	Max time.Duration
}

// Ceiling is the delay before retry attempt (1 for the first) before
// jitter: First doubled attempt-1 times, at most Max.
func (p Policy) Ceiling(attempt int) time.Duration {
	d := p.First
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Delay is the wait before retry attempt (1 for the first): uniformly
// random in [Ceiling/2, Ceiling].
func (p Policy) Delay(attempt int) time.Duration {
	c := p.Ceiling(attempt)
	half := c / 2
	if half <= 0 {
		return c
	}
	return half + rand.N(c-half+1)
}

// Wait sleeps Delay(attempt), or until ctx is done, when it returns ctx's
// error.
func (p Policy) Wait(ctx context.Context, attempt int) error {
	return Sleep(ctx, p.Delay(attempt))
}

// Sleep sleeps d, or until ctx is done, when it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
