package lanes

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCredit: a producer takes what there is, waits when it is spent until
// the consumer gives some back, never waits forever for more than the
// whole budget, and stops waiting when its context ends.
func TestCredit(t *testing.T) {
	ctx := context.Background()
	c := NewCredit(4)
	if n, err := c.Take(ctx, 3); n != 3 || err != nil {
		t.Fatalf("take 3 of 4: %d, %v", n, err)
	}
	took := make(chan int64)
	go func() {
		n, err := c.Take(ctx, 2)
		if err != nil {
			t.Error(err)
		}
		took <- n
	}()
	select {
	case n := <-took:
		t.Fatalf("took %d with 1 left of 4", n)
	case <-time.After(50 * time.Millisecond):
	}
	c.Give(1)
	if n := <-took; n != 2 {
		t.Fatalf("took %d, want 2", n)
	}
	if w := c.Waits(); w != 1 {
		t.Fatalf("%d waits counted, want 1", w)
	}
	c.Give(4)
	// More than the budget: capped at it, not waited for forever.
	if n, err := c.Take(ctx, 10); n != 4 || err != nil {
		t.Fatalf("take 10 of 4: %d, %v", n, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Take(cctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take from a spent budget until the deadline: %v", err)
	}
}

// TestCreditLimit: a limit below the budget holds a producer back once
// that much is outstanding, lets one hand-over larger than the limit go
// when nothing is outstanding, and raising it wakes the waiting producer.
func TestCreditLimit(t *testing.T) {
	ctx := context.Background()
	c := NewCredit(100)
	c.SetLimit(10)
	if n, err := c.Take(ctx, 8); n != 8 || err != nil {
		t.Fatalf("take 8 under a limit of 10: %d, %v", n, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Take(short, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take 3 with 8 outstanding under a limit of 10: %v, want a wait", err)
	}
	c.Give(8)
	// Nothing outstanding: a hand-over above the limit goes alone.
	if n, err := c.Take(ctx, 30); n != 30 || err != nil {
		t.Fatalf("take 30 with nothing outstanding: %d, %v", n, err)
	}
	took := make(chan int64)
	go func() {
		n, err := c.Take(ctx, 5)
		if err != nil {
			t.Error(err)
		}
		took <- n
	}()
	select {
	case n := <-took:
		t.Fatalf("took %d with 30 outstanding under a limit of 10", n)
	case <-time.After(50 * time.Millisecond):
	}
	c.SetLimit(1000) // capped at the budget, 100
	if n := <-took; n != 5 {
		t.Fatalf("took %d after the limit was raised, want 5", n)
	}
	if l := c.Limit(); l != 100 {
		t.Fatalf("limit %d, want the budget, 100", l)
	}
}
