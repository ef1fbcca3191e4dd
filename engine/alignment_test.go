package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/inspect"
)

// alignedCounts counts the records of two sources, "slow" and "fast",
// merged, in 10 s windows emitted on close, written to out. With align
// both sources are in alignment group g with a maximum drift of 30 s,
// checked at every watermark recomputation.
func alignedCounts(align bool, out string) *topology.Topology {
	str := serde.String()
	strategy := watermark.ForMonotonousTimestamps()
	if align {
		strategy = strategy.WithWatermarkAlignment("g", 30*time.Second, 0)
	}
	b := dsl.NewBuilder()
	slow := dsl.Stream(b, dsl.ConsumedWith(str, str).WithWatermarkStrategy(strategy), "slow")
	fast := dsl.Stream(b, dsl.ConsumedWith(str, str).WithWatermarkStrategy(strategy), "fast")
	dsl.CountWindowed(slow.Merge(fast).GroupByKey().WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 0)).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("win")).
		ToStream().To(out, dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	return b.Topology()
}

// seconds are records of key k, one a second from from to to
// (inclusive), stamped in milliseconds from 1000 s on (produce stamps a
// zero timestamp with the wall clock).
func seconds(k string, from, to int64) []kv {
	var out []kv
	for s := from; s <= to; s++ {
		out = append(out, kv{Key: k, Value: "x", Timestamp: 1_000_000 + s*1000})
	}
	return out
}

// TestAlignmentPausesTheFastSource: with the fast source 350 s ahead of
// the slow one and a drift of 30 s, the fast source's partition is held
// (/watermarks over HTTP says so, and the metric), its fetch is paused (records
// written to it meanwhile are not read, while the slow source's are), and it is
// let go once the slow source is back within the drift. The output is the
// output of the same topology without alignment, run on the same input
// after the fact.
func TestAlignmentPausesTheFastSource(t *testing.T) {
	addr := startBroker(t, map[string]int32{"slow": 1, "fast": 1, "out-aligned": 1, "out-free": 1})
	produce(t, addr, "slow", seconds("s", 0, 50))
	produce(t, addr, "fast", seconds("f", 0, 400))
	e := engine.New(alignedCounts(true, "out-aligned"), cfg(addr, "aligned"), engine.WithLogger(testLogger(t)), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	defer stop()
	eventually(t, 10*time.Second, func() string { return "the API never listened" }, func() bool { return e.HTTPAddr() != "" })
	cl := inspect.NewClient("http://" + e.HTTPAddr())
	bg := context.Background()
	in := func(topic string) int64 { return e.Observe().RecordsIn[topic] }
	var w inspect.Watermarks
	held := func() bool {
		var err error
		w, err = cl.Watermarks(bg)
		return err == nil && w.Partitions["fast:0"].AlignmentHeld
	}
	eventually(t, 30*time.Second, func() string { return fmt.Sprintf("fast:0 never held: %+v", w) }, func() bool {
		return in("slow") == 51 && held()
	})
	if p := w.Partitions["fast:0"]; p.AlignmentGroup == nil || *p.AlignmentGroup != "g" || p.DriftFromGroupMinMs <= 30_000 || w.Partitions["slow:0"].AlignmentHeld {
		t.Fatalf("while held: %+v", w)
	}
	m, err := cl.Metrics(bg)
	if err != nil || !strings.Contains(m, `stoatflow_watermark_alignment_partitions_held{group="g"} 1`) {
		t.Fatalf("/metrics while held (%v) lacks the held partition:\n%s", err, m)
	}

	// Written to the held source first, then to the slow one, still
	// far behind: once the slow records are read, a fetch that took the
	// slow partition has passed the fast one by.
	fastBefore := in("fast")
	produce(t, addr, "fast", seconds("f", 401, 500))
	produce(t, addr, "slow", seconds("s", 51, 60))
	eventually(t, 30*time.Second, func() string { return fmt.Sprintf("slow read %d of 61", in("slow")) }, func() bool { return in("slow") == 61 })
	if got := in("fast"); got != fastBefore || !held() {
		t.Fatalf("held fast source read %d records (%d before), held %v", got, fastBefore, w.Partitions["fast:0"].AlignmentHeld)
	}

	// The slow source catches up: the fast one is let go and read to
	// its end. (It may be held again on the way: its 100 new records
	// can take it 100 s ahead of the slow source's records still in the
	// lanes.) Once both reach 1500 s nothing is held.
	produce(t, addr, "slow", seconds("s", 61, 500))
	eventually(t, 60*time.Second, func() string {
		return fmt.Sprintf("read slow %d, fast %d of 501 each; watermarks %+v", in("slow"), in("fast"), w)
	}, func() bool { return in("slow") == 501 && in("fast") == 501 && !held() && w.GlobalMs == 1_500_000 })
	m, err = cl.Metrics(bg)
	if err != nil || !strings.Contains(m, `stoatflow_watermark_alignment_partitions_held{group="g"} 0`) {
		t.Fatalf("/metrics after the hold (%v) lacks the group at 0:\n%s", err, m)
	}
	// Both sources at 1500 s close the windows up to [1490 s, 1500 s):
	// 50 per key from [1000 s, 1010 s) on.
	aligned := readCommitted(t, addr, "out-aligned", 100, 60*time.Second)
	stop()

	_, stopFree := runEngine(t, alignedCounts(false, "out-free"), cfg(addr, "free"))
	free := readCommitted(t, addr, "out-free", 100, 60*time.Second)
	if err := stopFree(); err != nil {
		t.Fatal(err)
	}
	sortKVs := func(rs []kv) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%q=%q", r.Key, r.Value))
		}
		slices.Sort(out)
		return out
	}
	if a, f := sortKVs(aligned), sortKVs(free); len(a) != 100 || !slices.Equal(a, f) {
		t.Fatalf("aligned output (%d records) differs from the free run's (%d):\n%v\n%v", len(a), len(f), a, f)
	}
}
