package engine_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// mergedInOrder merges "in" and "side" in one sub-topology and notes the
// timestamp each record carries (its value's prefix) in the order the
// one lane processes them.
func mergedInOrder(seen *[]int64, mu *sync.Mutex) *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	in := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
	side := dsl.Stream(b, dsl.ConsumedWith(str, str), "side")
	in.Merge(side).Peek(func(_, v string) {
		ts, err := strconv.ParseInt(v[:strings.IndexByte(v, '|')], 10, 64)
		if err != nil {
			panic(err)
		}
		mu.Lock()
		*seen = append(*seen, ts)
		mu.Unlock()
	}).To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// timedRecords are n records of one key, event time from base in steps
// of step ms, each value its timestamp and topic, padded so that a fetch holds a
// few thousand of them.
func timedRecords(topic string, n int, base, step int64) []kv {
	pad := strings.Repeat("x", 200)
	recs := make([]kv, n)
	for i := range recs {
		ts := base + int64(i)*step
		recs[i] = kv{Key: "k", Value: fmt.Sprintf("%d|%s|%s", ts, topic, pad), Timestamp: ts}
	}
	return recs
}

// TestTaskTakesItsInputsInTimestampOrder: a task that reads two topics
// takes their records in timestamp order across polls, as Kafka Streams'
// task does, though one topic's records cover four times the event time
// of the other's in the same bytes: when one input's fetched records run
// out while more wait on the broker, the task waits for them instead of
// going on with the other input's newer records. Without the wait the
// faster topic ran ahead at every poll. And a task does not wait for an
// input with nothing on the broker.
func TestTaskTakesItsInputsInTimestampOrder(t *testing.T) {
	const base = 1_767_225_600_000 // 2026-01-01
	for _, c := range []struct {
		name string
		// pending is how many records of a partition the dispatcher
		// holds before it pauses the partition's fetch; 0 the default.
		pending int
	}{{name: "both backlogged"}, {name: "both backlogged, fetches paused", pending: 50}} {
		t.Run(c.name, func(t *testing.T) { inTimestampOrder(t, c.pending) })
	}
	t.Run("one input empty", func(t *testing.T) {
		const n = 2_000
		addr := startKafka(t, map[string]int32{"in": 1, "side": 1, "out": 1})
		produce(t, addr, "in", timedRecords("in", n, base, 1))
		var mu sync.Mutex
		var seen []int64
		_, stop := runEngine(t, mergedInOrder(&seen, &mu), cfg(addr, "task-order-empty", "num.stream.threads", "1"))
		readCommitted(t, addr, "out", n, 30*time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// inTimestampOrder runs "in" and "side" backlogged, "side" four times
// faster in event time, through the merge on one lane and checks that
// every record came out once and that none was processed after a newer
// one. pending, when not 0, is the dispatcher's pause threshold.
func inTimestampOrder(t *testing.T, pending int) {
	const base = 1_767_225_600_000 // 2026-01-01
	const n = 20_000
	if pending > 0 {
		engine.SetMaxPendingRecords(t, pending)
	}
	addr := startKafka(t, map[string]int32{"in": 1, "side": 1, "out": 1})
	produce(t, addr, "in", timedRecords("in", n, base, 1))
	produce(t, addr, "side", timedRecords("side", n, base, 4))
	var mu sync.Mutex
	var seen []int64
	_, stop := runEngine(t, mergedInOrder(&seen, &mu), cfg(addr, "task-order", "num.stream.threads", "1", "max.partition.fetch.bytes", "65536"))
	out := readCommitted(t, addr, "out", 2*n, 60*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, r := range out {
		distinct[r.Value] = true
	}
	if len(distinct) != 2*n {
		t.Fatalf("%d distinct records out of %d, want %d", len(distinct), len(out), 2*n)
	}
	mu.Lock()
	defer mu.Unlock()
	inversions, first := 0, -1
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			if first < 0 {
				first = i
			}
			inversions++
		}
	}
	if inversions > 0 {
		t.Fatalf("%d of %d records went before an older one; the first, %d, at %d after %d", inversions, len(seen), first, seen[first], seen[first-1])
	}
}
