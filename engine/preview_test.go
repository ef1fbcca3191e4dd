package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/inspect"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTogether writes recs to "in" in one transaction, so that a
// read-committed reader sees them all at once, in one fetch.
func produceTogether(t *testing.T, addr string, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("preview-producer"), kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), produceWithin)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", len(recs), err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit the produce: %v", err)
	}
}

// TestPreviewOfAWaitingHead: in one poll, in:1's only record, an hour
// ahead, waits behind 3000 older records of in:0 while barriers are cut
// within the poll (the barrier clock moves a second a look, and the lane
// is stopped so the poll stays half dispatched). /watermarks, over HTTP,
// shows in:1's previewWatermarkMs and headHeldSinceMs, and the global
// watermark moves to in:0's time although in:1 has processed nothing:
// the preview counts as if the head were processed. Once the poll is
// dispatched, the preview goes.
func TestPreviewOfAWaitingHead(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 1})
	const base = int64(1_000_000_000)
	gate := make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release)
	// The lane stops before its 1202nd record (the warm-up one and 1200
	// of in:0's): the dispatcher, which may run at most the lane's queue
	// (1024) and a batch (256) ahead of it, stops before in:1's head,
	// after barriers cut within the poll.
	var processed atomic.Int64
	stopLane := func(_, _ int, barrier bool) {
		if !barrier && processed.Add(1) > 1201 {
			<-gate
		}
	}
	var clock atomic.Int64
	e := engine.New(windowedCounts(), cfg(addr, "preview", "num.stream.threads", "1", "stoatflow.watermark.max-out-of-orderness-ms", "0"),
		engine.WithLogger(testLogger(t)), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}),
		engine.WithBarrierClock(func() int64 { return clock.Add(1000) }), engine.WithProbe(&engine.Probe{}, stopLane))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		release()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	eventually(t, 10*time.Second, func() string { return "the API never listened" }, func() bool { return e.HTTPAddr() != "" })
	cl := inspect.NewClient("http://" + e.HTTPAddr())
	bg := context.Background()

	// The warm-up record is processed and committed: no barrier is in
	// flight when the poll below is dispatched.
	produceTo(t, addr, "in", 0, base)
	eventually(t, 30*time.Second, func() string { return "the warm-up record was not committed" }, func() bool {
		return e.Stats().Committed > 0 && processed.Load() == 1
	})
	recs := []*kgo.Record{{Key: []byte("a"), Value: []byte("x"), Partition: 1, Timestamp: time.UnixMilli(base + 3_600_000)}}
	for i := range int64(3000) {
		recs = append(recs, &kgo.Record{Key: []byte("a"), Value: []byte("x"), Partition: 0, Timestamp: time.UnixMilli(base + 1 + i)})
	}
	produceTogether(t, addr, recs)

	var w inspect.Watermarks
	eventually(t, 30*time.Second, func() string { return fmt.Sprintf("no preview: %+v", w) }, func() bool {
		var err error
		w, err = cl.Watermarks(bg)
		return err == nil && w.Partitions["in:1"].PreviewWatermarkMs != nil
	})
	p1, p0 := w.Partitions["in:1"], w.Partitions["in:0"]
	if *p1.PreviewWatermarkMs != base+3_600_000 || p1.PreviewWatermarkIso == nil || p1.HeadHeldSinceMs == nil || p1.WatermarkMs != inspect.MinWatermark {
		t.Fatalf("in:1 while its head waits: %+v", p1)
	}
	if p0.PreviewWatermarkMs != nil || p0.WatermarkMs < base || p0.WatermarkMs > base+3000 {
		t.Fatalf("in:0, which dispatches: %+v", p0)
	}
	// in:1 has no watermark of its own yet: without its preview the
	// minimum would stand at none.
	if w.GlobalMs != p0.WatermarkMs {
		t.Fatalf("global %d while in:1 previews, want in:0's %d", w.GlobalMs, p0.WatermarkMs)
	}
	m, err := cl.Metrics(bg)
	if err != nil || !strings.Contains(m, "stoatflow_watermark_preview_partitions 1\n") {
		t.Fatalf("/metrics while previewing (%v) lacks one preview partition", err)
	}

	release()
	eventually(t, 30*time.Second, func() string { return fmt.Sprintf("the preview stayed: %+v", w) }, func() bool {
		var err error
		w, err = cl.Watermarks(bg)
		p := w.Partitions["in:1"]
		return err == nil && p.PreviewWatermarkMs == nil && p.HeadHeldSinceMs == nil && p.WatermarkMs == base+3_600_000
	})
	m, err = cl.Metrics(bg)
	if err != nil || !strings.Contains(m, "stoatflow_watermark_preview_partitions 0\n") {
		t.Fatalf("/metrics after the poll (%v) still shows a preview", err)
	}
}
