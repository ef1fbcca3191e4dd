package benchcompare

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/benchbase"
)

// TestCPUMeter meters this process over 100 ms of CPU (getrusage says
// when; wall time would not, on a loaded machine), and measures nothing
// for a pid of 0 or one that is gone.
func TestCPUMeter(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	m := meterPID(os.Getpid())
	start, deadline := benchbase.ProcessCPU(), time.Now().Add(time.Minute)
	for benchbase.ProcessCPU()-start < 100*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("100 ms of CPU not reached in a minute")
		}
		for x := 0; x < 1e6; x++ {
		}
	}
	// /proc counts whole ticks (10 ms) and may lag getrusage by one or two.
	if d, ok := m.stop(); !ok || d < 70*time.Millisecond {
		t.Errorf("meter of this process: %v, %v after 100 ms of CPU", d, ok)
	}
	if _, ok := meterPID(0).stop(); ok {
		t.Error("pid 0 measured something")
	}
	gone := cpuMeter{pid: 1 << 30, ok: true}
	if _, ok := gone.stop(); ok {
		t.Error("a process that is gone measured something")
	}
}

func TestPIDFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"broker.pid": "4242\n", "bad.pid": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := pidFile(dir, "broker.pid"); got != 4242 {
		t.Errorf("broker.pid: %d, want 4242", got)
	}
	if got := pidFile(dir, "bad.pid"); got != 0 {
		t.Errorf("bad.pid: %d, want 0", got)
	}
	if got := pidFile(dir, "none.pid"); got != 0 {
		t.Errorf("missing file: %d, want 0", got)
	}
}
