package prom_test

import (
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/prom"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/internal/golden"
)

// TestMetricsDoc keeps docs/metrics.md generated from Families; -update
// rewrites it.
func TestMetricsDoc(t *testing.T) {
	golden.Check(t, "./engine/prom", "../../docs/metrics.md", prom.Markdown())
}

func scrape(t *testing.T, m *prom.Meters) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// TestFamiliesAreExported holds the catalogue to the code: at each level
// exactly the families of that level and below appear in a scrape.
func TestFamiliesAreExported(t *testing.T) {
	sample := func() prom.Sample {
		return prom.Sample{State: "RUNNING", EventTime: true, Global: 1000, LagMs: 5,
			Partitions: []watermark.PartitionState{{Partition: watermark.Partition{Topic: "in", Partition: 0}, Watermark: 1000, IdlenessTimeout: time.Minute}},
			RecordsIn:  map[string]int64{"in": 3}, RecordsOut: map[string]int64{"out": 1}, Lag: map[string]int64{"in": 0},
			Segments: []prom.StoreSegments{{Store: "win", Type: "timestamped-window", Segments: 3}}}
	}
	for _, level := range []prom.Level{prom.Info, prom.Debug} {
		reg := metrics.NewRegistry()
		reg.Counter(metrics.DroppedRecords, "reason", metrics.ReasonDeserialization).Add(2)
		m := prom.New(level, withEverything(sample), reg)
		m.Committed(10, 20*time.Millisecond)
		m.Late(watermark.Partition{Topic: "in", Partition: 0})
		meterEverything(reg, m)
		out := scrape(t, m)
		for _, f := range prom.Families {
			has := strings.Contains(out, "# TYPE "+f.Name+" ")
			if has != (f.Level <= level) {
				t.Errorf("level %s: %s exported = %v", level, f.Name, has)
			}
		}
		for _, want := range []string{`stoatflow_dropped_records_total{reason="deserialization"} 2`, `stoatflow_dropped_records_total{reason="late_window"} 0`,
			"stoatflow_client_state 4", "stoatflow_watermark_lag_seconds 0.005", "stoatflow_watermark_timestamp_seconds 1\n",
			`stoatflow_store_segments{store_name="win",store_type="timestamped-window"} 3`, "stoatflow_epoch_records_count 1",
			"stoatflow_standby_tasks 2", "stoatflow_standby_warmup_tasks 1", "stoatflow_standby_lag_max_records 7",
			`stoatflow_watermark_alignment_partitions_held{group="g"} 1`, "stoatflow_watermark_preview_partitions 1\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("level %s: scrape lacks %q", level, want)
			}
		}
	}
}

// TestNoSentinels scrapes an engine before its first watermark: the
// watermark, lag, per-partition time and spread series are absent, not -1
// or math.MinInt64, and come once there is a value.
func TestNoSentinels(t *testing.T) {
	p := watermark.PartitionState{Partition: watermark.Partition{Topic: "in", Partition: 0}, Watermark: watermark.Unset, LastEventTime: watermark.Unset}
	before := func() prom.Sample {
		return prom.Sample{State: "RUNNING", EventTime: true, Global: watermark.Unset, LagMs: -1, Partitions: []watermark.PartitionState{p}, Standbys: 1}
	}
	out := scrape(t, prom.New(prom.Debug, before, metrics.NewRegistry()))
	for _, name := range []string{prom.WatermarkTimestamp, prom.WatermarkLag, prom.PartitionWatermark, prom.PartitionLastEventTime, prom.OutOfOrderness,
		prom.StandbyLag, prom.StandbyLagMax} {
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") {
				t.Errorf("before the first watermark: %s", strings.TrimSpace(l))
			}
		}
	}
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "stoatflow_") && (strings.HasSuffix(l, " -1\n") || strings.Contains(l, "e+18")) {
			t.Errorf("a sentinel in the scrape: %s", strings.TrimSpace(l))
		}
	}
	after := func() prom.Sample {
		q := p
		q.Watermark, q.LastEventTime = 1_700_000_000_123, 1_700_000_000_500
		return prom.Sample{State: "RUNNING", EventTime: true, Global: 1_700_000_000_123, LagMs: 2500, Partitions: []watermark.PartitionState{q},
			Standbys: 1, StandbyLag: map[string]int64{"0_0": 0}}
	}
	out = scrape(t, prom.New(prom.Debug, after, metrics.NewRegistry()))
	for _, want := range []string{"stoatflow_watermark_timestamp_seconds 1.700000000123e+09", "stoatflow_watermark_lag_seconds 2.5",
		`stoatflow_watermark_partition_timestamp_seconds{partition="0",topic="in"} 1.700000000123e+09`,
		`stoatflow_watermark_partition_last_event_timestamp_seconds{partition="0",topic="in"} 1.7000000005e+09`,
		"stoatflow_watermark_out_of_orderness_seconds 0\n", `stoatflow_standby_lag_records{task="0_0"} 0`, "stoatflow_standby_lag_max_records 0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

func TestStateValue(t *testing.T) {
	for _, tc := range []struct {
		state  string
		paused bool
		want   float64
	}{{"RUNNING", false, 4}, {"RUNNING", true, 5}, {"REBALANCING", false, 2}, {"ERROR", false, 7}, {"CREATED", false, 0}} {
		if got := prom.StateValue(tc.state, tc.paused); got != tc.want {
			t.Errorf("%s paused=%v: %g, want %g", tc.state, tc.paused, got, tc.want)
		}
	}
	if _, err := prom.ParseLevel("verbose"); err == nil {
		t.Error("ParseLevel accepted verbose")
	}
	if l, err := prom.ParseLevel("DEBUG"); err != nil || l != prom.Debug {
		t.Error("ParseLevel refused DEBUG")
	}
}

// BenchmarkScrape is the CPU one /metrics scrape costs at debug level with
// 64 partitions: scrapes per second times this is the API's share of a
// core, independent of how busy the machine is.
func BenchmarkScrape(b *testing.B) {
	parts := make([]watermark.PartitionState, 64)
	for i := range parts {
		parts[i] = watermark.PartitionState{Partition: watermark.Partition{Topic: "in", Partition: int32(i)}, Watermark: int64(i), IdlenessTimeout: time.Minute}
	}
	m := prom.New(prom.Debug, func() prom.Sample {
		return prom.Sample{State: "RUNNING", EventTime: true, Global: 0, Partitions: parts, RecordsIn: map[string]int64{"in": 1}}
	}, metrics.NewRegistry())
	for i := range parts {
		m.Late(parts[i].Partition)
	}
	h := m.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	}
}

// withEverything adds to a sample what the families read from a running
// engine with RocksDB state: every RocksDB property, a partition's lag.
func withEverything(sample func() prom.Sample) func() prom.Sample {
	return func() prom.Sample {
		s := sample()
		s.PartitionLag = map[watermark.Partition]int64{{Topic: "in", Partition: 0}: 2}
		s.Standbys, s.Warmups, s.StandbyLag = 2, 1, map[string]int64{"0_1": 7, "0_2": 0}
		// A source partition held back by its watermark alignment group.
		s.Partitions = append(slices.Clone(s.Partitions), watermark.PartitionState{Partition: watermark.Partition{Topic: "fast", Partition: 0},
			Watermark: s.Global + 60_000, LastEventTime: watermark.Unset, Alignment: "g", AlignmentHeld: true,
			Previewing: true, Preview: s.Global + 120_000, HeadHeldSince: 1})
		s.RocksDB = map[string]uint64{}
		for prop := range prom.RocksProperties {
			s.RocksDB[prop] = 4096
		}
		return s
	}
}

// meterEverything does what a running engine does to the meters that are
// fed as it works: a task processes a sampled record through a processor
// to a sink, a store is written, the Kafka client's hooks see a request,
// a failed one, a failed record and a batch each way.
func meterEverything(reg *metrics.Registry, m *prom.Meters) {
	now := time.Now()
	tm := reg.ClaimTask("0_0", 0, []metrics.NodeSpec{{Name: "src", Kind: metrics.KindSource}, {Name: "count", Kind: metrics.KindProcessor}, {Name: "sink", Kind: metrics.KindSink}})
	tm.Process.Events.Add(1)
	tm.Process.Timing.Observe(3*time.Millisecond, now)
	for _, n := range tm.Nodes {
		n.Process.Events.Add(1)
		n.Process.Timing.Observe(time.Millisecond, now)
		n.E2E.Observe(250*time.Millisecond, now)
	}
	sm := reg.ClaimStore("counts")
	sm.Ops[metrics.OpPut].Events.Add(1)
	sm.Ops[metrics.OpPut].Timing.Observe(time.Microsecond, now)
	h := m.ClientHooks()
	h.(kgo.HookBrokerE2E).OnBrokerE2E(kgo.BrokerMetadata{}, 0, kgo.BrokerE2E{TimeToWrite: time.Millisecond, ReadWait: 2 * time.Millisecond})
	h.(kgo.HookBrokerE2E).OnBrokerE2E(kgo.BrokerMetadata{}, 1, kgo.BrokerE2E{ReadErr: io.ErrUnexpectedEOF})
	h.(kgo.HookProduceRecordUnbuffered).OnProduceRecordUnbuffered(&kgo.Record{Topic: "out"}, kerr.MessageTooLarge)
	h.(kgo.HookProduceBatchWritten).OnProduceBatchWritten(kgo.BrokerMetadata{}, "out", 0, kgo.ProduceBatchMetrics{NumRecords: 1, CompressedBytes: 100})
	h.(kgo.HookFetchBatchRead).OnFetchBatchRead(kgo.BrokerMetadata{}, "in", 0, kgo.FetchBatchMetrics{NumRecords: 1, CompressedBytes: 100})
}

// TestMetersWithoutSamplesAreAbsent: a task that has processed nothing
// yet has zero counts and empty summaries, but no minimum or maximum
// series (absent, not 0), and an engine without RocksDB state exports no
// RocksDB family, nor the Kafka client's before its first request.
func TestMetersWithoutSamplesAreAbsent(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.ClaimTask("0_0", 0, []metrics.NodeSpec{{Name: "src", Kind: metrics.KindSource}, {Name: "map", Kind: metrics.KindProcessor}, {Name: "sink", Kind: metrics.KindSink}})
	out := scrape(t, prom.New(prom.Debug, func() prom.Sample { return prom.Sample{State: "RUNNING"} }, reg))
	for _, want := range []string{`stoatflow_process_records_total{subtopology="0"} 0`, `stoatflow_process_latency_seconds_count{subtopology="0"} 0`,
		`stoatflow_record_e2e_latency_seconds_count{kind="sink",processor="sink"} 0`, `stoatflow_task_process_records_total{task="0_0"} 0`,
		`stoatflow_processor_process_records_total{processor="map",task="0_0"} 0`} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	absent := []string{prom.ProcessLatencyMax, prom.E2ELatencyMin, prom.E2ELatencyMax, prom.TaskProcessLatencyMax, prom.ProcessorLatencyMax,
		prom.StoreOperations, prom.KafkaRequestDuration, prom.KafkaRequestErrors, prom.KafkaRecordErrors, prom.ConsumerPartitionLag}
	for _, name := range prom.RocksProperties {
		absent = append(absent, name)
	}
	for _, name := range absent {
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+"_") {
				t.Errorf("a series of %s with nothing to say: %s", name, strings.TrimSpace(l))
			}
		}
	}
}
