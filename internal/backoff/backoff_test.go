package backoff

import (
	"context"
	"testing"
	"time"
)

func TestCeiling(t *testing.T) {
	p := Policy{First: 100 * time.Millisecond, Max: 2 * time.Second}
	want := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
	for i, w := range want {
		if got := p.Ceiling(i + 1); got != w*time.Millisecond {
			t.Errorf("Ceiling(%d) = %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
	// No overflow however many attempts.
	if got := p.Ceiling(1000); got != p.Max {
		t.Errorf("Ceiling(1000) = %s", got)
	}
}

// TestDelayJitters: every delay is within [ceiling/2, ceiling], and they
// are not all the same (a thousand equal draws from a range of ~10^8
// nanoseconds would mean no jitter).
func TestDelayJitters(t *testing.T) {
	p := Policy{First: 200 * time.Millisecond, Max: 5 * time.Second}
	for attempt := 1; attempt <= 8; attempt++ {
		c := p.Ceiling(attempt)
		seen := map[time.Duration]bool{}
		for range 1000 {
			d := p.Delay(attempt)
			if d < c/2 || d > c {
				t.Fatalf("Delay(%d) = %s, outside [%s, %s]", attempt, d, c/2, c)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("Delay(%d) gave one value %d times: no jitter", attempt, 1000)
		}
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Policy{First: time.Hour, Max: time.Hour}).Wait(ctx, 1); err != context.Canceled {
		t.Fatalf("Wait on a cancelled context = %v", err)
	}
}
