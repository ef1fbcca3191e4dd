package engine_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// windowedCountsBesideTable is windowedCounts (10 s windows, 2 s grace,
// emitted on close) with a table read from "tbl" in the same topology,
// joined to nothing: what it adds is the table's partitions.
func windowedCountsBesideTable() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Table(b, "tbl", dsl.ConsumedWith(str, str), dsl.MaterializedAs[string, string]("tbl"))
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 2*time.Second)).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("win")).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	return b.Topology()
}

// TestEmptyTableHoldsNoWindow: a table whose partitions never had a
// record does not hold the stream's windows open until the idleness
// timeout (5 minutes by default): the window closes on the stream's own
// time, as in Kafka Streams, whose windows see only their own records.
func TestEmptyTableHoldsNoWindow(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "tbl": 2, "out": 2})
	_, stop := runEngine(t, windowedCountsBesideTable(), cfg(addr, "table-wm-empty", "num.stream.threads", "2",
		"stoatflow.watermark.max-out-of-orderness-ms", "0"))
	// Both stream partitions reach 20 s: the window [0, 10 s) closes at
	// 12 s.
	for p := range int32(2) {
		produceTo(t, addr, "in", p, 1_000, 20_000)
	}
	got := readCommitted(t, addr, "out", 2, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no window closed within 20 s: the empty table's partitions held the watermark")
	}
}

// TestTableAheadMakesNoStreamRecordLate: table updates stamped an hour
// ahead, while the stream is idle, do not move the watermark: the
// stream's next records, in order, are counted, not dropped as late
// (issue 39: two in-order records were dropped so).
func TestTableAheadMakesNoStreamRecordLate(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "tbl": 1, "out": 1})
	_, stop := runEngine(t, windowedCountsBesideTable(), cfg(addr, "table-wm-ahead", "num.stream.threads", "2",
		"stoatflow.watermark.max-out-of-orderness-ms", "0", config.WatermarkIdlenessTimeoutMs, "300"))
	produce(t, addr, "in", []kv{{Key: "a", Value: "x", Timestamp: 1_000}})
	// The table keeps being updated while the stream goes idle (300 ms
	// here): with the table's partitions in the watermark, it would
	// jump to the table's time once the stream idled.
	for i := range 15 {
		produce(t, addr, "tbl", []kv{{Key: "t", Value: "v", Timestamp: 3_600_000 + int64(i)}})
		time.Sleep(100 * time.Millisecond)
	}
	var in []kv
	for i := range 5 {
		in = append(in, kv{Key: "a", Value: strconv.Itoa(i), Timestamp: 2_000 + int64(i)*100})
	}
	// The window [0, 10 s) closes once the stream reaches 12 s.
	in = append(in, kv{Key: "z", Value: "x", Timestamp: 30_000})
	produce(t, addr, "in", in)
	got := readCommitted(t, addr, "out", 1, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var count int64 = -1
	for _, r := range got {
		if strings.HasPrefix(r.Key, "a") {
			count = 0
			for _, b := range []byte(r.Value) {
				count = count<<8 | int64(b)
			}
		}
	}
	if count != 6 {
		t.Fatalf("window [0, 10 s) of key a counted %d records, want 6 (none dropped as late); output %v", count, got)
	}
}
