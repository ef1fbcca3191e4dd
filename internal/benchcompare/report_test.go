package benchcompare

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedReport is a report with every kind of row: two rounds on two
// brokers, a failed Kafka Streams run, latencies (one failed) and memory.
func fixedReport() *Report {
	r := &Report{Meta: Meta{
		Date: "2026-12-01 21:00 UTC", Host: "dev", GoVersion: "go1.26.8", LoadStart: "9.10 8.20 7.30", LoadEnd: "4.00 5.00 6.00",
		Cores: 2, Lanes: 2, Records: 50_000, Keys: 10_000, ValueBytes: 100, Partitions: 4, Rounds: 2,
		Label: "smoke run", Command: "go run ./scripts/benchcompare -records 50000 -rounds 2",
	}}
	add := func(br, topo, sys string, rates ...float64) {
		for i, v := range rates {
			r.Samples = append(r.Samples, Sample{Broker: br, Topology: topo, System: sys, Round: i, RecordsPerSec: v})
		}
	}
	for _, br := range []string{BrokerEmbedded, BrokerReal} {
		add(br, TopoMap, SystemBareLoop, 1_000_000, 800_000)
		add(br, TopoMap, SystemStoat, 750_000, 720_000)
		add(br, TopoMap, SystemKStreams, 250_000, 300_000)
		add(br, TopoCount, SystemStoat, 500_000, 400_000)
		add(br, TopoCount, SystemKStreams, 200_000, 100_000)
		add(br, TopoCount, SystemKStreamsNoCache, 90_000)
	}
	// CPU on some rows: both figures on the embedded broker's count, the
	// system's only (a broker not metered) on the real broker's.
	for i := range r.Samples {
		s := &r.Samples[i]
		if s.Topology == TopoCount && s.System == SystemStoat {
			s.Records = 50_000
			s.CPU = time.Duration(70+10*s.Round) * time.Millisecond
			if s.Broker == BrokerEmbedded {
				s.BrokerCPU = time.Duration(25+5*s.Round) * time.Millisecond
				s.GCShare = 0.08 + 0.02*float64(s.Round)
			}
		}
	}
	r.Samples = append(r.Samples, Sample{Broker: BrokerEmbedded, Topology: TopoCount, System: SystemKStreamsNoCache, Round: 1,
		Failed: "kafka streams count: exited before consuming its input: exit status 1"})
	r.Latency = []LatencySample{
		{Broker: BrokerEmbedded, System: SystemStoat, Share: 0.5, Offered: 360_000, Records: 1_800_000, P50: 310, P99: 720, P999: 980},
		{Broker: BrokerEmbedded, System: SystemStoat, Share: 0.25, Offered: 180_000, Records: 900_000, P50: 250.4, P99: 610, P999: 700},
		{Broker: BrokerEmbedded, System: SystemBareLoop, Share: 0.25, Offered: 225_000, Records: 1_125_000, P50: 4.25, P99: 9.5, P999: 12},
		{Broker: BrokerEmbedded, System: SystemKStreams, Share: 0.25, Offered: 68_750, Failed: "read 10 of 20 records"},
		{Broker: BrokerEmbedded, System: SystemKStreams, Share: 0.5, Offered: 125_000, Shared: true, Records: 1_375_000, P50: 120, P99: 900, P999: 1200},
		{Broker: BrokerEmbedded, System: SystemStoat, Share: 0.5, Offered: 125_000, Shared: true, Records: 1_375_000, P50: 200, P99: 450, P999: 600},
		{Broker: BrokerEmbedded, System: SystemBareLoop, Share: 0.5, Offered: 125_000, Shared: true, Failed: "read 3 of 4 records"},
	}
	r.Close = []CloseLatency{{Broker: BrokerEmbedded, System: SystemStoat, CommitIntervalMs: 500, Windows: 1200, P50: 0.91, P99: 1.74}}
	r.Memory = []Memory{{Keys: 1_000_000, BytesPerKey: 71.6, PeakHeapBytes: 150 << 20, RetainedBytes: 68 << 20}}
	return r
}

func TestRows(t *testing.T) {
	rows := fixedReport().Rows(BrokerEmbedded)
	var count Row
	for _, row := range rows {
		if row.Topology == TopoCount && row.System == SystemStoat {
			count = row
		}
	}
	// Per-round ratios: 500/1000 and 400/800 to the ceiling, 500/200 and
	// 400/100 to Kafka Streams.
	if count.ToCeiling != (Summary{0.5, 0.5, 0.5, 2}) {
		t.Errorf("count to ceiling = %+v, want 0.5 in both rounds", count.ToCeiling)
	}
	if count.ToKS != (Summary{3.25, 2.5, 4, 2}) {
		t.Errorf("count to Kafka Streams = %+v, want median 3.25 of 2.5 and 4", count.ToKS)
	}
	// 70 and 80 ms over 50 000 records: 1.4 and 1.6 s a million; the
	// broker's 25 and 30 ms, 0.5 and 0.6 s.
	if !near(count.CPU, Summary{1.5, 1.4, 1.6, 2}) || !near(count.BrokerCPU, Summary{0.55, 0.5, 0.6, 2}) {
		t.Errorf("count CPU = %+v, broker %+v; want medians 1.5 and 0.55", count.CPU, count.BrokerCPU)
	}
	if !near(count.GC, Summary{0.09, 0.08, 0.1, 2}) {
		t.Errorf("count GC share = %+v, want median 0.09 of 0.08 and 0.1", count.GC)
	}
	if len(rows) != 6 {
		t.Errorf("%d rows, want 6 (3 systems on map, 3 on count)", len(rows))
	}
}

func near(a, b Summary) bool {
	close := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return a.N == b.N && close(a.Median, b.Median) && close(a.Min, b.Min) && close(a.Max, b.Max)
}

// TestWriteMarkdown checks the whole report against its golden file
// (go test -run TestWriteMarkdown ./internal/benchcompare/ -update
// rewrites it).
func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := fixedReport().WriteMarkdown(&b, "chart-%s.png"); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("report differs from %s (rerun with -update and review the diff):\n%s", golden, b.String())
	}
}

// TestWriteChart renders a chart: a PNG file that decodes' magic number.
func TestWriteChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := fixedReport().WriteChart(BrokerReal, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 1000 {
		t.Errorf("chart is %d bytes, not a PNG", len(b))
	}
}

func TestStamped(t *testing.T) {
	at := time.Unix(1_700_000_000, 123_456_789)
	v := stamped(7, 100, at)
	if len(v) != 100 {
		t.Fatalf("len %d, want 100", len(v))
	}
	got, ok := sentAt(bytes.ToUpper(v))
	if !ok || !got.Equal(at) {
		t.Errorf("sentAt(upper(stamped)) = %v %v, want %v", got, ok, at)
	}
	if _, ok := sentAt([]byte("value-000000001")); ok {
		t.Error("sentAt read a time from a value without one")
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1 000", 1_234_567: "1 234 567", -4200: "-4 200"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCause(t *testing.T) {
	var b tailBuffer
	b.Write([]byte("state: CREATED -> REBALANCING\nerror: Kafka Streams failed: StreamsException: Could not create topic x-changelog.\n\tat a.b(C.java:1)\nCaused by: StreamsException: outer\n\tat d.e(F.java:2)\nCaused by: java.lang.IllegalArgumentException: id should be positive, id: -1\n\tat g.h(I.java:3)\n"))
	want := "error: Kafka Streams failed: StreamsException: Could not create topic x-changelog. (Caused by: java.lang.IllegalArgumentException: id should be positive, id: -1)"
	if got := b.Cause(); got != want {
		t.Errorf("Cause() =\n%q, want\n%q", got, want)
	}
	var quiet tailBuffer
	quiet.Write([]byte("one\ntwo\nthree\nfour\n"))
	if got := quiet.Cause(); got != "two / three / four" {
		t.Errorf("Cause() without an error line = %q", got)
	}
}
