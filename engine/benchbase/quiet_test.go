package benchbase

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseCPULine(t *testing.T) {
	for _, c := range []struct {
		line       string
		busy, idle uint64
		err        bool
	}{
		{"cpu  860840 72205 198790 825659 5226 0 8530 5613 0 0", 860840 + 72205 + 198790 + 8530 + 5613, 825659 + 5226, false},
		{"cpu 1 2 3 4", 6, 4, false},
		{"cpu0 1 2 3 4 5", 0, 0, true},
		{"cpu 1 x 3 4 5", 0, 0, true},
		{"", 0, 0, true},
	} {
		got, err := parseCPULine(c.line)
		if (err != nil) != c.err || !c.err && (got.busy != c.busy || got.idle != c.idle) {
			t.Errorf("parseCPULine(%q) = %+v, %v; want busy %d idle %d (error %v)", c.line, got, err, c.busy, c.idle, c.err)
		}
	}
	if s := (ticks{busy: 30, idle: 70}).busyShare(ticks{busy: 10, idle: 10}); s != 0.25 {
		t.Errorf("busy share %v, want 0.25", s)
	}
}

// TestQuietSeesABusyMachine keeps every CPU busy: Quiet with a bound of
// a third must not call that quiet. (Whether it sees an idle machine as
// quiet depends on what else runs beside the test, so that is not
// asserted.)
func TestQuietSeesABusyMachine(t *testing.T) {
	if _, err := cpuTicks(); err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	var stop atomic.Bool
	defer stop.Store(true)
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	if busy, quiet := Quiet(context.Background(), 0.33, 700*time.Millisecond); quiet {
		t.Errorf("quiet (last window %.0f %% busy) while every CPU spins", 100*busy)
	}
}
