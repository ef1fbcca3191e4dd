package tui

import (
	"testing"
	"time"
)

// TestDelay: after failed polls the next waits the interval doubled per
// failure, up to MaxBackoff, or the interval when that is longer.
func TestDelay(t *testing.T) {
	tests := []struct {
		interval time.Duration
		failures int
		want     time.Duration
	}{
		{time.Second, 0, time.Second},
		{time.Second, 1, 2 * time.Second},
		{time.Second, 4, 16 * time.Second},
		{time.Second, 5, MaxBackoff},
		{time.Second, 50, MaxBackoff},
		{time.Minute, 0, time.Minute},
		{time.Minute, 3, time.Minute},
	}
	for _, tc := range tests {
		m := Model{interval: tc.interval, failures: tc.failures}
		if got := m.delay(); got != tc.want {
			t.Errorf("interval %s, %d failures: %s, want %s", tc.interval, tc.failures, got, tc.want)
		}
	}
}
