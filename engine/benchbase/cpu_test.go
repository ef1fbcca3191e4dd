package benchbase

import (
	"math"
	"os"
	"runtime"
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

// TestPIDCPUOfThisProcess holds the /proc reading to getrusage's for the
// same process, over some work: they count the same time. The work is
// measured in CPU, not wall time: on a loaded machine 150 ms of wall time
// may give this process far less than that.
func TestPIDCPUOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	p0, err := PIDCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r0 := ProcessCPU()
	spinCPU(t, r0, 150*time.Millisecond)
	p1, err := PIDCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got, want := p1-p0, ProcessCPU()-r0
	// /proc counts whole ticks: allow a few either way.
	if d := got - want; d < -3*clockTick || d > 3*clockTick {
		t.Errorf("/proc says %v, getrusage %v over 150 ms of CPU", got, want)
	}
}

// spinCPU keeps a core busy until getrusage shows d more CPU than start;
// it gives up after a minute of wall time.
func spinCPU(t *testing.T, start, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for ProcessCPU()-start < d {
		if time.Now().After(deadline) {
			t.Fatalf("%v of CPU not reached in a minute", d)
		}
		for x := 0; x < 1e6; x++ {
		}
	}
}

func TestGCShare(t *testing.T) {
	for _, tc := range []struct {
		name       string
		since, now RuntimeCPU
		want       float64
	}{
		{"a tenth", RuntimeCPU{GC: 1, Other: 10}, RuntimeCPU{GC: 1.5, Other: 14.5}, 0.1},
		{"no cycle ended", RuntimeCPU{GC: 1, Other: 10}, RuntimeCPU{GC: 1, Other: 10}, 0},
		{"went backwards", RuntimeCPU{GC: 2, Other: 10}, RuntimeCPU{GC: 1, Other: 12}, 0},
	} {
		if got := tc.now.GCShare(tc.since); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: GCShare = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReadRuntimeCPU checks that this Go has the metrics: after a forced
// cycle the collector has spent some CPU, and the rest more.
func TestReadRuntimeCPU(t *testing.T) {
	before := ReadRuntimeCPU()
	sink := make([][]byte, 0, 1024)
	for i := range 100_000 {
		sink = append(sink[:i%1024], make([]byte, 64))
	}
	runtime.GC()
	after := ReadRuntimeCPU()
	if after.GC <= before.GC || after.Other <= before.Other {
		t.Fatalf("runtime CPU did not grow across a GC cycle: before %+v, after %+v", before, after)
	}
	if s := after.GCShare(before); s <= 0 || s >= 1 {
		t.Fatalf("GC share %v, want within (0, 1)", s)
	}
	_ = sink
}
