package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/fixtures/examples"
)

const benchRecords = 1_000_000

func init() {
	// Registered only in this test binary: the benchmark's topology, a
	// one-minute tumbling count with 10 s of grace.
	examples.Register(examples.Example{
		Name:        "bench-tumbling-count",
		Description: "one-minute tumbling windowed count, for the replay benchmark",
		Config:      map[string]string{"application.id": "bench-tumbling-count"},
		Build: func() *topology.Topology {
			str := serde.String()
			b := dsl.NewBuilder()
			g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
			dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Minute, 10*time.Second))).
				ToStream().To("counts", dsl.ProducedWith(window.TimeWindowedSerde(str, time.Minute.Milliseconds()), serde.Int64()))
			return b.Topology()
		},
	})
}

// writeBenchFixture writes a fixture and a JSON Lines file of n records
// over 10 k keys, record i stamped i ms, as the test driver's windowed
// benchmarks use.
func writeBenchFixture(b *testing.B, n int) string {
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "input.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"topic":"in","key":"k%d","value":"v","timestamp":%d}`+"\n", i%10_000, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	// Emit on update: one output per record, none late.
	fixture := "topology: bench-tumbling-count\nsteps:\n  - records-file: input.jsonl\nexpect:\n  outputs:\n    counts: {count: " + strconv.Itoa(n) + "}\n"
	path := filepath.Join(dir, "bench.fixture.yaml")
	if err := os.WriteFile(path, []byte(fixture), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReplay replays a 1 M-record JSON Lines fixture through a
// tumbling windowed count. "end-to-end" is RunFile: parsing, serializing,
// the driver and the comparison; "parse" reads and serializes the same
// records without the driver, so end-to-end minus parse is the engine.
func BenchmarkReplay(b *testing.B) {
	path := writeBenchFixture(b, benchRecords)
	b.Run("end-to-end", func(b *testing.B) {
		for b.Loop() {
			res := RunFile(path)
			if res.Status != Pass {
				b.Fatalf("status %s: %v", res.Status, res.Err)
			}
		}
		b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("parse", func(b *testing.B) {
		str := serde.Erase(serde.String())
		for b.Loop() {
			rf, c, err := openRecords(filepath.Join(filepath.Dir(path), "input.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			var rec Record
			n := 0
			for {
				if err := rf.next(&rec); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					b.Fatal(err)
				}
				if _, err := Serialize(str, rec.Topic, rec.Key); err != nil {
					b.Fatal(err)
				}
				if _, err := Serialize(str, rec.Topic, rec.Value); err != nil {
					b.Fatal(err)
				}
				n++
			}
			c.Close()
			if n != benchRecords {
				b.Fatalf("parsed %d records, want %d", n, benchRecords)
			}
		}
		b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
