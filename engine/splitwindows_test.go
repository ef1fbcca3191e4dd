package engine_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// keysOn returns n keys that the default partitioner puts on partition p
// of a topic of parts partitions, each starting with prefix.
func keysOn(prefix string, p, parts int32, n int) []string {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	var out []string
	for i := 0; len(out) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if part.Partition(&kgo.Record{Key: []byte(k)}, int(parts)) == int(p) {
			out = append(out, k)
		}
	}
	return out
}

// TestWindowsSplitKeepTheirFloors runs tumbling windows emitted on close
// on two instances, each with two of the four tasks and its own event
// time: instance a's partitions are a thousand seconds ahead of b's. When
// a stops, b takes a's tasks and resumes each task's floor from what the
// task committed (decision 0042), the lowest of its tasks'; with the one
// stamp the application kept before, b would resume a's floor, far past
// its own partitions' records, and drop every one it reads next as late.
// Every window is emitted once, with every record of it.
func TestWindowsSplitKeepTheirFloors(t *testing.T) {
	kafkatest.Parallel(t)
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	conf := func(id string) map[string]string {
		return cfg(addr, "split-windows", "stoatflow.instance.id", id, "session.timeout.ms", "6000",
			"stoatflow.watermark.max-out-of-orderness-ms", "0")
	}
	a, stopA := runEngine(t, windowedCounts(), conf("a"))
	b, stopB := runEngine(t, windowedCounts(), conf("b"))
	eventually(t, 60*time.Second, func() string {
		return fmt.Sprintf("a runs %v, b runs %v", a.Assignment()["in"], b.Assignment()["in"])
	}, func() bool { return len(a.Assignment()["in"]) == 2 && len(b.Assignment()["in"]) == 2 })

	var fast, slow []string
	for _, p := range a.Assignment()["in"] {
		fast = append(fast, keysOn("fast", p, 4, 2)...)
	}
	for _, p := range b.Assignment()["in"] {
		slow = append(slow, keysOn("slow", p, 4, 2)...)
	}
	const ahead = 1_000_000
	seconds := func(keys []string, base int64, from, to int) []kv {
		var out []kv
		for s := from; s < to; s++ {
			for _, k := range keys {
				out = append(out, kv{Key: k, Value: "x", Timestamp: base + int64(s)*1000 + 1})
			}
		}
		return out
	}
	// Forty seconds each: windows of 10 s with 2 s of grace close up to
	// [20 s, 30 s) on either side, three per key.
	produce(t, addr, "in", append(seconds(fast, ahead, 0, 40), seconds(slow, 0, 0, 40)...))
	first := 3 * (len(fast) + len(slow))
	readCommitted(t, addr, "out", first, 60*time.Second)

	if err := stopA(); err != nil {
		t.Fatalf("instance a: %v", err)
	}
	eventually(t, 60*time.Second, func() string { return fmt.Sprintf("b runs %v", b.Assignment()["in"]) },
		func() bool { return len(b.Assignment()["in"]) == 4 })
	// b's own partitions go on from where they were: windows up to
	// [60 s, 70 s) close, four more per slow key.
	produce(t, addr, "in", seconds(slow, 0, 40, 80))
	want := first + 4*len(slow)
	got := readCommitted(t, addr, "out", want, 60*time.Second)
	if err := stopB(); err != nil {
		t.Fatalf("instance b: %v", err)
	}
	seen := map[string]bool{}
	var windows []string
	for _, r := range got {
		k := []byte(r.Key)
		if len(k) < 8 || len(r.Value) != 8 {
			t.Fatalf("output %q=%q is not a windowed count", r.Key, r.Value)
		}
		w := fmt.Sprintf("%s@%d", k[:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:]))
		if seen[w] {
			t.Errorf("window %s emitted twice", w)
		}
		seen[w] = true
		windows = append(windows, w)
		if n := binary.BigEndian.Uint64([]byte(r.Value)); n != 10 {
			t.Errorf("window %s counted %d records, want 10", w, n)
		}
	}
	if len(got) != want {
		slices.Sort(windows)
		t.Fatalf("%d windows emitted, want %d: %q", len(got), want, windows)
	}
}

// rekeyedWindowedCounts re-keys each record by its value and counts the
// new keys in tumbling windows of 10 s (2 s grace) emitted on close.
func rekeyedWindowedCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.GroupBy(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string { return v }, dsl.GroupedWith(str, str))
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 2*time.Second)).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("win")).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	return b.Topology()
}

// TestRekeyedWindowsWaitForEveryWriter re-keys through a repartition
// topic into windows emitted on close, on two instances: a's input
// partitions run 80 s of event time ahead of b's. Every window holds
// records from both. The windows may close only as far as the slowest
// task writing the repartition topic has come, which each tells the
// readers in markers (decision 0042): had the repartition partitions'
// watermarks followed the timestamps read from them, a's records would
// have closed every window before b's arrived, and b's would be dropped
// as late. Then a stops, b takes its tasks over, resuming the marks a
// committed, and b's input catches up: every window is emitted once,
// with all its records.
func TestRekeyedWindowsWaitForEveryWriter(t *testing.T) {
	kafkatest.Parallel(t)
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	conf := func(id string) map[string]string {
		return cfg(addr, "rekeyed-windows", "stoatflow.instance.id", id, "session.timeout.ms", "6000",
			"stoatflow.watermark.max-out-of-orderness-ms", "0", config.TopologyRekey, config.RekeyTopic)
	}
	a, stopA := runEngine(t, rekeyedWindowedCounts(), conf("a"))
	b, stopB := runEngine(t, rekeyedWindowedCounts(), conf("b"))
	eventually(t, 60*time.Second, func() string {
		return fmt.Sprintf("a runs %v, b runs %v", a.Assignment(), b.Assignment())
	}, func() bool { return len(a.Assignment()["in"]) == 2 && len(b.Assignment()["in"]) == 2 })
	var fast, slow []string
	for _, p := range a.Assignment()["in"] {
		fast = append(fast, keysOn("fast", p, 4, 2)...)
	}
	for _, p := range b.Assignment()["in"] {
		slow = append(slow, keysOn("slow", p, 4, 2)...)
	}
	// Each key writes one record a second; the values, the new keys,
	// go round five, so each (value, window) counts two records per key.
	seconds := func(keys []string, from, to int) []kv {
		var out []kv
		for s := from; s < to; s++ {
			for _, k := range keys {
				out = append(out, kv{Key: k, Value: "v" + strconv.Itoa(s%5), Timestamp: int64(s)*1000 + 1})
			}
		}
		return out
	}
	produce(t, addr, "in", append(seconds(fast, 0, 100), seconds(slow, 0, 20)...))
	// b's input has reached 19 s: only [0 s, 10 s) may close.
	readCommitted(t, addr, "out", 5, 60*time.Second)
	// Every reader of the repartition topic has heard from its four
	// writers, and says so in GET /watermarks.
	eventually(t, 30*time.Second, func() string {
		return fmt.Sprintf("writers as a sees them %v, as b sees them %v", a.Observe().Writers, b.Observe().Writers)
	}, func() bool {
		n := 0
		for _, e := range []*engine.Engine{a, b} {
			doc, err := engine.WatermarksDocument(e.Observe())
			if err != nil {
				return false
			}
			for name, p := range doc.Partitions {
				if !strings.Contains(name, "-repartition:") {
					continue
				}
				if p.Writers == nil || len(p.Writers.Tasks) != 4 || len(p.Writers.NotTold) != 0 {
					return false
				}
				n++
			}
		}
		return n == 4
	})

	if err := stopA(); err != nil {
		t.Fatalf("instance a: %v", err)
	}
	eventually(t, 60*time.Second, func() string { return fmt.Sprintf("b runs %v", b.Assignment()) },
		func() bool { return len(b.Assignment()["in"]) == 4 })
	produce(t, addr, "in", seconds(slow, 20, 100))
	// Up to [80 s, 90 s) close: nine windows of five values.
	const want = 45
	got := readCommitted(t, addr, "out", want, 60*time.Second)
	if err := stopB(); err != nil {
		t.Fatalf("instance b: %v", err)
	}
	perWindow := uint64(2 * (len(fast) + len(slow)))
	seen := map[string]bool{}
	var windows []string
	for _, r := range got {
		k := []byte(r.Key)
		w := fmt.Sprintf("%s@%d", k[:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:]))
		if seen[w] {
			t.Errorf("window %s emitted twice", w)
		}
		seen[w] = true
		windows = append(windows, w)
		if n := binary.BigEndian.Uint64([]byte(r.Value)); n != perWindow {
			t.Errorf("window %s counted %d records, want %d", w, n, perWindow)
		}
	}
	if len(got) != want {
		slices.Sort(windows)
		t.Fatalf("%d windows emitted, want %d: %q", len(got), want, windows)
	}
}
