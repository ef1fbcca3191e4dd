package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/syncbuf"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTo writes one record with key "a" per timestamp to partition p.
func produceTo(t testing.TB, addr, topic string, p int32, timestamps ...int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), produceWithin)
	defer cancel()
	for _, ts := range timestamps {
		rec := &kgo.Record{Key: []byte("a"), Value: []byte("x"), Partition: p, Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce to %s[%d] within %s: %v", topic, p, produceWithin, err)
		}
	}
}

// TestAPIServesTheRunningEngine runs a windowed count on two partitions
// with the REST API on a free port and reads it over HTTP: /watermarks
// per partition, readiness, /info, /metrics and pause/resume.
func TestAPIServesTheRunningEngine(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 1})
	base := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	c := cfg(addr, "api", "stoatflow.watermark.max-out-of-orderness-ms", "0", "stoatflow.watermark.idleness-timeout-ms", "120000",
		engine.MetricsRecordingLevel, "debug")
	e := engine.New(windowedCounts(), c, engine.WithLogger(testLogger(t)), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}),
		engine.WithVersion("v9.8.7"), engine.WithCommit("0123456789ab"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	eventually(t, 10*time.Second, func() string { return "the API never listened" }, func() bool { return e.HTTPAddr() != "" })
	cl := inspect.NewClient("http://" + e.HTTPAddr())
	bg := context.Background()
	eventually(t, 20*time.Second, func() string { return "never ready" }, func() bool {
		resp, err := http.Get("http://" + e.HTTPAddr() + "/health/readiness")
		if err != nil {
			return false
		}
		resp.Body.Close()
		// Readiness waits for the group's assignment
		// (TestNotReadyBeforeTheGroupAssigns); the partitions are
		// registered with it.
		w, err := cl.Watermarks(bg)
		return resp.StatusCode == 200 && err == nil && len(w.Partitions) == 2
	})
	// Registered, nothing read: 200 with the minimum and N/A.
	w, err := cl.Watermarks(bg)
	if err != nil {
		t.Fatal(err)
	}
	if w.GlobalMs != inspect.MinWatermark || w.GlobalIso != inspect.NotAvailable || len(w.Partitions) != 2 {
		t.Fatalf("before any record: %+v", w)
	}
	if p := w.Partitions["in:1"]; p.Idle || p.IdlenessTimeoutMs != 120000 || p.LastEventTimeIso != inspect.NotAvailable || p.AlignmentGroup != nil {
		t.Fatalf("in:1 before any record: %+v", p)
	}
	// Both partitions deliver; the global watermark is the lower one.
	produceTo(t, addr, "in", 0, base+30_000, base+40_000)
	produceTo(t, addr, "in", 1, base+10_000)
	eventually(t, 20*time.Second, func() string { return fmt.Sprintf("watermarks %+v", w) }, func() bool {
		w, err = cl.Watermarks(bg)
		return err == nil && w.GlobalMs == base+10_000
	})
	if p := w.Partitions["in:0"]; p.WatermarkMs != base+40_000 || p.LastEventTimeMs != base+40_000 || p.WatermarkIso != "2026-09-22T10:00:40Z" || p.Idle {
		t.Fatalf("in:0: %+v", p)
	}
	info, err := cl.Info(bg)
	if err != nil {
		t.Fatal(err)
	}
	if info.ApplicationID != "api" || info.State != "RUNNING" || info.Version != "v9.8.7" || info.Commit != "0123456789ab" || info.Lanes != 4 || len(info.Partitions["in"]) != 2 || !info.EventTimeTracking ||
		info.GlobalMs == nil || *info.GlobalMs != base+10_000 {
		t.Fatalf("info: %+v", info)
	}
	m, err := cl.Metrics(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("stoatflow_watermark_timestamp_seconds %g", float64(base+10_000)/1000),
		"stoatflow_client_state 4", `stoatflow_dropped_records_total{reason="late_window"} 0`, "stoatflow_topology_event_time_tracking 1",
		`stoatflow_records_in_total{topic="in"} 3`, `stoatflow_watermark_partition_timestamp_seconds{partition="0",topic="in"}`,
		"stoatflow_commit_duration_seconds_count", "stoatflow_timer_lane_mismatch_total 0",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// A late record is dropped and counted. Lateness is judged against
	// the floor, the watermark stamped on the last barrier a lane
	// crossed, so the late record goes in only once the watermark's move
	// to base+50 s has been committed: the windows it closed, [10 s, 20 s)
	// to [30 s, 40 s), are then in the output.
	produceTo(t, addr, "in", 1, base+20_000)
	produceTo(t, addr, "in", 1, base+50_000)
	produceTo(t, addr, "in", 0, base+60_000)
	readCommitted(t, addr, "out", 3, 20*time.Second)
	produceTo(t, addr, "in", 1, base+1_000)
	eventually(t, 20*time.Second, func() string { return "no late drop counted" }, func() bool {
		m, _ = cl.Metrics(bg)
		return strings.Contains(m, `stoatflow_dropped_records_total{reason="late_window"} 1`)
	})

	ctl, err := cl.Pause(bg, "test")
	if err != nil || !ctl.Paused {
		t.Fatalf("pause: %+v %v", ctl, err)
	}
	m, _ = cl.Metrics(bg)
	if !strings.Contains(m, "stoatflow_client_state 5") {
		t.Error("a paused engine's client state is not 5")
	}
	before := e.Observe().RecordsIn["in"]
	produceTo(t, addr, "in", 0, base+70_000)
	// Nothing may be read for half a second: a wait that should time out.
	if waitUntil(500*time.Millisecond, func() bool { return e.Observe().RecordsIn["in"] != before }) {
		t.Fatalf("paused engine read %d records", e.Observe().RecordsIn["in"]-before)
	}
	if ctl, err = cl.Resume(bg, ""); err != nil || ctl.Paused {
		t.Fatalf("resume: %+v %v", ctl, err)
	}
	eventually(t, 10*time.Second, func() string { return "resumed engine read nothing" }, func() bool { return e.Observe().RecordsIn["in"] > before })

	// Errors are JSON with a stable code.
	resp, err := http.Post("http://"+e.HTTPAddr()+"/pause", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":"bad_request"`) {
		t.Fatalf("malformed body: %d %s", resp.StatusCode, b)
	}
	var ae *inspect.APIError
	if _, err := inspect.NewClient("http://" + e.HTTPAddr() + "/nope").Info(bg); !errors.As(err, &ae) || ae.Body.Code != inspect.CodeNotFound {
		t.Fatalf("unknown path: %v", err)
	}
}

// TestAPIAddressInUse: a taken address fails Run at once, naming it.
func TestAPIAddressInUse(t *testing.T) {
	first := engine.New(uppercase(), cfg("127.0.0.1:1", "busy"), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, 10*time.Second, func() string { return "the API never listened" }, func() bool { return first.HTTPAddr() != "" })
	err := engine.New(uppercase(), cfg("127.0.0.1:1", "busy"), engine.WithHTTP(engine.HTTP{Addr: first.HTTPAddr()})).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), first.HTTPAddr()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want the address in use named", err)
	}
	err = engine.New(uppercase(), cfg("127.0.0.1:1", "open"), engine.WithHTTP(engine.HTTP{Addr: "0.0.0.0:0"})).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("err = %v, want a token required beyond loopback", err)
	}
}

// TestAPIWithoutEventTime: a processing-time topology answers /watermarks
// with 503 no_event_time, /info leaves the watermark out when
// runtime.endpoints.info.show-watermarks is false, and /topology gives
// the description as text and as JSON.
func TestAPIWithoutEventTime(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	e := engine.New(uppercase(), cfg(addr, "api-pt", engine.InfoShowWatermarks, "false"), engine.WithLogger(testLogger(t)),
		engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, 20*time.Second, func() string { return "never running" }, func() bool { return e.State() == engine.Running && len(e.Assignment()) > 0 })
	url := "http://" + e.HTTPAddr()
	cl := inspect.NewClient(url)
	var ae *inspect.APIError
	if _, err := cl.Watermarks(context.Background()); !errors.As(err, &ae) || ae.Status != 503 || ae.Body.Code != inspect.CodeNoEventTime {
		t.Fatalf("/watermarks: %v, want 503 no_event_time", err)
	}
	info, err := cl.Info(context.Background())
	if err != nil || info.GlobalMs != nil || info.GlobalIso != nil || info.EventTimeTracking {
		t.Fatalf("/info: %+v %v, want no watermark", info, err)
	}
	text, err := cl.Topology(context.Background(), "text")
	if err != nil || !strings.HasPrefix(string(text), "Topologies:") {
		t.Fatalf("/topology text: %q %v", text, err)
	}
	doc, err := cl.Topology(context.Background(), "json")
	if err != nil || !strings.Contains(string(doc), `"subtopologies"`) || !strings.Contains(string(doc), `"topics": [`) {
		t.Fatalf("/topology json: %s %v", doc, err)
	}
	if m, _ := cl.Metrics(context.Background()); !strings.Contains(m, "stoatflow_topology_event_time_tracking 0") {
		t.Error("event time tracking does not read 0")
	}
}

// TestObserveRestoration: a restart restores the counts' store from its
// changelog, and Observe counts what it applied.
func TestObserveRestoration(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 1})
	var recs []kv
	for i := range 40 {
		recs = append(recs, kv{Key: fmt.Sprintf("k%d", i%8), Value: "x"})
	}
	produce(t, addr, "in", recs)
	e, stop := runEngine(t, counts(), cfg(addr, "restore-obs"))
	eventually(t, 20*time.Second, func() string { return "not committed" }, func() bool { return e.Stats().Records == 40 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if o := e.Observe(); o.Restored != 0 || o.RecordsIn["in"] != 40 || o.RecordsOut["out"] != 40 {
		t.Fatalf("first run: restored %d, in %v, out %v", o.Restored, o.RecordsIn, o.RecordsOut)
	}
	e, stop = runEngine(t, counts(), cfg(addr, "restore-obs"))
	eventually(t, 20*time.Second, func() string { return fmt.Sprintf("restored %d", e.Observe().Restored) }, func() bool {
		o := e.Observe()
		return o.State == engine.Running && len(o.Assignment["in"]) == 2 && o.Restored >= 8
	})
	if o := e.Observe(); o.Restoring || o.RestoreRemaining != 0 {
		t.Errorf("after restoring: restoring %v, remaining %d", o.Restoring, o.RestoreRemaining)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer is a log a running engine writes while a test reads it.
type lockedBuffer = syncbuf.Buffer

// TestLateRecordLineNamesTheSourceRecord: behind a re-key boundary, the
// debug line of a late drop names the source topic, partition and offset
// of the record, not the in-memory boundary's.
func TestLateRecordLineNamesTheSourceRecord(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.SelectKey(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string { return v }).
		GroupByKey(dsl.GroupedWith(str, str))
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 0)), dsl.MaterializedAs[string, int64]("w")).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	var log lockedBuffer
	e := engine.New(b.Topology(), cfg(addr, "late-origin", "stoatflow.watermark.max-out-of-orderness-ms", "0"),
		engine.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	base := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	produce(t, addr, "in", []kv{{Key: "k", Value: "page", Timestamp: base + 60_000}})
	eventually(t, 20*time.Second, func() string { return "no watermark" }, func() bool { return e.Stats().Watermark >= base+60_000 })
	produce(t, addr, "in", []kv{{Key: "k", Value: "page", Timestamp: base + 1}})
	eventually(t, 20*time.Second, func() string { return "no late line:\n" + log.String() }, func() bool {
		return strings.Contains(log.String(), "skipping record for a closed window")
	})
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "skipping record for a closed window") && !strings.Contains(l, "topic=in partition=0 offset=1") {
			t.Errorf("late line does not name in[0]@1: %s", l)
		}
	}
}

// TestWatermarksDocumentSinceAdvance: /watermarks says, by the engine's
// clock (the view's time), how long each partition's watermark has stood
// still: since it last moved, or, for one that never moved here (never
// written), since it was registered, which waitingSinceMs gives.
func TestWatermarksDocumentSinceAdvance(t *testing.T) {
	never := watermark.PartitionState{Partition: watermark.Partition{Topic: "in", Partition: 0}, Watermark: watermark.Unset, LastEventTime: watermark.Unset, Registered: 1_000}
	moved := watermark.PartitionState{Partition: watermark.Partition{Topic: "in", Partition: 1}, Watermark: 500, LastEventTime: 500, Registered: 1_000, LastAdvance: 50_000}
	doc, err := engine.WatermarksDocument(engine.Observation{Initialised: true, EventTime: true, Global: watermark.Unset, ViewAt: 61_000,
		Partitions: []watermark.PartitionState{never, moved}})
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := doc.Partitions["in:0"], doc.Partitions["in:1"]
	if p0.SinceAdvanceMs == nil || *p0.SinceAdvanceMs != 60_000 || p0.WaitingSinceMs == nil || *p0.WaitingSinceMs != 1_000 || p0.LastAdvanceMs != nil {
		t.Errorf("never written: since %v waiting since %v last advance %v", p0.SinceAdvanceMs, p0.WaitingSinceMs, p0.LastAdvanceMs)
	}
	if p1.SinceAdvanceMs == nil || *p1.SinceAdvanceMs != 11_000 || p1.WaitingSinceMs != nil {
		t.Errorf("moved: since %v waiting since %v", p1.SinceAdvanceMs, p1.WaitingSinceMs)
	}
}
