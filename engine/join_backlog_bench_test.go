package engine_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// BenchmarkJoinBacklog runs orders-payments' shape in Go (a left
// stream-stream join, ten minutes either way, one minute of grace) over a
// backlog waiting before the start: n orders and their n payments (50 k
// each; 5 k with -short; STOATFLOW_BENCH_RECORDS sets n), each order's
// payment a second after it. It reports the input records committed per
// second on RocksDB and in memory, and their ratio.
func BenchmarkJoinBacklog(b *testing.B) {
	needRocks(b)
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	if v, err := strconv.Atoi(os.Getenv("STOATFLOW_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	orders, payments := make([]kv, n), make([]kv, n)
	for i := range n {
		k := fmt.Sprintf("o%08d", i)
		orders[i] = kv{Key: k, Value: "order-" + k, Timestamp: base + int64(i)}
		payments[i] = kv{Key: k, Value: "payment-" + k, Timestamp: base + int64(i) + 1000}
	}
	for b.Loop() {
		addr := startBroker(b, map[string]int32{"orders": 4, "payments": 4, "out-in_memory": 4, "out-rocksDB": 4})
		produce(b, addr, "orders", orders)
		produce(b, addr, "payments", payments)
		rates := map[string]float64{}
		for _, store := range []string{"in_memory", "rocksDB"} {
			c := storeCfg(addr, "bench-join-"+store, store, b.TempDir(), "num.stream.threads", "2",
				engine.BarrierIntervalMs, "500", engine.BarrierMinIntervalMs, "150")
			rates[store], _ = runEngineOver(b, benchJoin("out-"+store), c, 2*n)
		}
		b.ReportMetric(rates["in_memory"], "in-memory-rec/s")
		b.ReportMetric(rates["rocksDB"], "rocksdb-rec/s")
		b.ReportMetric(rates["rocksDB"]/rates["in_memory"], "ratio")
	}
}

func benchJoin(out string) *topology.Topology {
	str := serde.String()
	bld := dsl.NewBuilder()
	orders := dsl.Stream(bld, dsl.ConsumedWith(str, str), "orders")
	payments := dsl.Stream(bld, dsl.ConsumedWith(str, str), "payments")
	dsl.LeftJoinStream(orders, payments, func(_, o, p string) string { return o + "|" + p },
		window.JoinWindowsOfTimeDifferenceAndGrace(10*time.Minute, time.Minute), dsl.StreamJoinedWith(str, str, str)).
		To(out, dsl.ProducedWith(str, str))
	return bld.Topology()
}
