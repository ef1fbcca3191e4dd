package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

func windowedCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 2*time.Second)).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("win")).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	return b.Topology()
}

// TestWindowCloseOnceAcrossRestart counts tumbling windows emitted on
// close, stopping the engine halfway: the final barrier flushes what its
// stamp closed, the restart restores the store and the emit frontier, and
// every window is committed exactly once with its full count — the same
// set the driver emits for the same records.
func TestWindowCloseOnceAcrossRestart(t *testing.T) {
	var recs []kv
	for s := range 60 {
		for _, k := range []string{"a", "b", "c"} {
			recs = append(recs, kv{Key: k, Value: "x", Timestamp: int64(s)*1000 + 1})
		}
	}
	c := func(addr string) map[string]string {
		return cfg(addr, "windows", "stoatflow.watermark.max-out-of-orderness-ms", "0")
	}

	want := driverWindows(t, "windows", recs)
	if len(want) != 15 {
		t.Fatalf("driver emitted %d windows, want 15 (5 closed windows x 3 keys)", len(want))
	}

	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	half := len(recs) / 2
	for i, part := range [][]kv{recs[:half], recs[half:]} {
		produce(t, addr, "in", part)
		e, stop := runEngine(t, windowedCounts(), c(addr))
		eventually(t, 30*time.Second, func() string {
			return fmt.Sprintf("run %d processed %d of its %d records", i+1, e.Stats().Records, len(part))
		}, func() bool { return e.Stats().Records >= int64(len(part)) })
		if err := stop(); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	var got []string
	for _, r := range readCommitted(t, addr, "out", len(want), 20*time.Second) {
		got = append(got, fmt.Sprintf("%x=%x", r.Key, r.Value))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("engine committed %d window results:\n%q\ndriver:\n%q", len(got), got, want)
	}
}

// suppressedCounts counts tumbling windows, emitting every update, and
// holds the counts back with suppress until each window closes.
func suppressedCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 2*time.Second)),
		dsl.MaterializedAs[string, int64]("win")).
		Suppress(dsl.UntilWindowCloses(dsl.Unbounded())).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	return b.Topology()
}

// driverWindows pipes recs into windowedCounts on the test driver and
// returns its window results as "key=value" in hex.
func driverWindows(t *testing.T, app string, recs []kv) []string {
	return driverOutputOf(t, windowedCounts(), app, recs)
}

// driverOutputOf pipes recs into topo on the test driver and returns
// what it wrote to "out" as "key=value" in hex.
func driverOutputOf(t *testing.T, topo *topology.Topology, app string, recs []kv) []string {
	t.Helper()
	d, err := testdriver.New(topo, map[string]string{"application.id": app, "stoatflow.watermark.max-out-of-orderness-ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, r := range recs {
		if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte(r.Key), Value: []byte(r.Value), Timestamp: r.Timestamp}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, r := range d.ReadRaw("out") {
		out = append(out, fmt.Sprintf("%x=%x", r.Key, r.Value))
	}
	return out
}
