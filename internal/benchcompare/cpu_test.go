package benchcompare

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		wantErr    bool
	}{
		{name: "plain", line: "4242 (java) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 37 0 0 20 0 30 0 100 0 0", want: 287 * clockTick},
		{name: "spaces and parentheses in the name", line: "7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0", want: 7 * clockTick},
		{name: "no name", line: "7 R 1", wantErr: true},
		{name: "short", line: "7 (x) R 1 2 3", wantErr: true},
		{name: "not a number", line: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 x 4 0", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.line))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("cpu = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProcCPUOfThisProcess holds the /proc reading to getrusage's for
// the same process, after some work: they count the same time.
func TestProcCPUOfThisProcess(t *testing.T) {
	m := meterPID(os.Getpid())
	self := selfCPU()
	deadline := time.Now().Add(150 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	_ = x
	got, ok := m.stop()
	want := selfCPU() - self
	if !ok {
		t.Fatal("no reading of /proc/self")
	}
	// /proc counts whole ticks: allow two either way and the test's own.
	if d := got - want; d < -3*clockTick || d > 3*clockTick {
		t.Errorf("/proc says %v, getrusage %v", got, want)
	}
	if _, ok := meterPID(0).stop(); ok {
		t.Error("pid 0 measured something")
	}
}
