package replay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// writeSlice writes a slice of n records over 1 k keys, record i stamped
// i ms, for the one-minute tumbling count, as `replay record` writes one:
// in a records file, or inline, one record step each. The expect section
// is what `replay --update` writes from the driver.
func writeSlice(b *testing.B, n int, inline bool) string {
	dir := b.TempDir()
	var fx bytes.Buffer
	fx.WriteString("topology: bench-tumbling-count\nsteps:\n")
	if inline {
		for i := range n {
			fmt.Fprintf(&fx, "  - {topic: in, key: k%d, value: v, timestamp: %d}\n", i%1000, i)
		}
	} else {
		f, err := os.Create(filepath.Join(dir, "input.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for i := range n {
			fmt.Fprintf(w, `{"topic":"in","key":"k%d","value":"v","timestamp":%d}`+"\n", i%1000, i)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		fx.WriteString("  - records-file: input.jsonl\n")
	}
	fx.WriteString(fillInComment)
	path := filepath.Join(dir, "slice.fixture.yaml")
	if err := os.WriteFile(path, fx.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	data, ok, err := RunFile(path).Rewrite(UpdateOptions{})
	if err != nil || !ok {
		b.Fatalf("update: changed %v, %v", ok, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// peakRSS resets the process's peak resident set size (Linux: "5" to
// /proc/self/clear_refs) and returns a function reading it since, in MiB:
// the embedded broker, which holds every topic in memory, included.
func peakRSS(b *testing.B) func() float64 {
	// What the set-up left in the heap goes back to the system first.
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("peak memory: %v", err)
	}
	return func() float64 {
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			b.Fatal(err)
		}
		for l := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				if err != nil {
					b.Fatal(err)
				}
				return kb / 1024
			}
		}
		b.Fatal("no VmHWM in /proc/self/status")
		return 0
	}
}

// BenchmarkReplayEngine replays a recorded slice of 10 k and 100 k
// records through `replay --engine`'s RunEngine on the embedded broker,
// records in a records file and inline, with the expectations --update
// writes. It reports records/s, the peak resident memory of the process
// (the broker, which keeps every topic in memory, included) and
// x-driver: the engine's time over the test driver's on the same fixture
// in the same run.
func BenchmarkReplayEngine(b *testing.B) {
	kafkatest.EmbeddedOnly(b)
	addr := kafkatest.Start(b, nil)
	for _, n := range []int{10_000, 100_000} {
		for _, form := range []string{"file", "inline"} {
			b.Run(fmt.Sprintf("records=%d/form=%s", n, form), func(b *testing.B) {
				path := writeSlice(b, n, form == "inline")
				start := time.Now()
				if r := RunFile(path); r.Status != Pass {
					b.Fatalf("driver: %s: %v", r.Status, r.Err)
				}
				driver := time.Since(start)
				peak := peakRSS(b)
				b.ResetTimer()
				for b.Loop() {
					r := RunEngineFile(context.Background(), path, EngineOptions{Bootstrap: addr})
					if r.Status != Pass {
						b.Fatalf("%s: %v", r.Status, r.Err)
					}
				}
				per := b.Elapsed() / time.Duration(b.N)
				b.ReportMetric(float64(n)/per.Seconds(), "records/s")
				b.ReportMetric(peak(), "peak-MiB")
				b.ReportMetric(per.Seconds()/driver.Seconds(), "x-driver")
			})
		}
	}
}
