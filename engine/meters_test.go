package engine_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/internal/faultproxy"
)

// sumSeries adds up the values of the scrape's series whose line starts
// with prefix (a family name and, optionally, the start of its labels);
// found says there was one.
func sumSeries(scrape, prefix string) (sum float64, found bool) {
	for l := range strings.Lines(scrape) {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// TestMetersOfARunningEngine runs a count on two partitions at debug
// level, with its state in RocksDB and a wall clock two seconds past
// every record's timestamp, while a client scrapes /metrics all along
// (under -race, the lanes write the meters as the scrape reads them).
// Every record is counted per sub-topology, per task and at the count's
// processor and store; the sampled end-to-end latency at the source and
// at the sink is those two seconds; RocksDB's, the Kafka client's and the
// per-partition lag's series are there.
func TestMetersOfARunningEngine(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 1})
	const n = 200
	wall := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	c := cfg(addr, "meters", engine.MetricsRecordingLevel, "debug", "default.dsl.store", "rocksDB", "state.dir", t.TempDir())
	e := engine.New(counts(), c, engine.WithLogger(testLogger(t)), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}),
		engine.WithWallClock(func() int64 { return wall }))
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
	get := func() string {
		resp, err := http.Get("http://" + e.HTTPAddr() + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	stop, scraped := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				scraped <- n
				return
			default:
			}
			if get() != "" {
				n++
			}
		}
	}()
	ts := make([]int64, n/2)
	for i := range ts {
		ts[i] = wall - 2000
	}
	produceTo(t, addr, "in", 0, ts...)
	produceTo(t, addr, "in", 1, ts...)
	readCommitted(t, addr, "out", n, 30*time.Second)
	var m string
	eventually(t, 10*time.Second, func() string { return "the counts never reached the meters:\n" + m }, func() bool {
		m = get()
		v, _ := sumSeries(m, `stoatflow_process_records_total{subtopology="0"}`)
		return v == n
	})
	close(stop)
	if k := <-scraped; k < 2 {
		t.Errorf("scraped %d times while the engine worked", k)
	}
	for _, tc := range []struct {
		prefix string
		want   float64 // -1: any value
	}{
		{"stoatflow_task_process_records_total{", n},
		{`stoatflow_processor_process_records_total{processor="KSTREAM-AGGREGATE-0000000001"`, n},
		{`stoatflow_store_operations_total{operation="get",store_name="counts"}`, n},
		{`stoatflow_store_operations_total{operation="put",store_name="counts"}`, n},
		{`stoatflow_record_e2e_latency_min_seconds{kind="source"`, 2},
		{`stoatflow_record_e2e_latency_max_seconds{kind="source"`, 2},
		{`stoatflow_record_e2e_latency_min_seconds{kind="sink"`, 2},
		{`stoatflow_record_e2e_latency_max_seconds{kind="sink"`, 2},
		{`stoatflow_consumer_partition_lag_records{partition="0",topic="in"}`, 0},
		{`stoatflow_consumer_partition_lag_records{partition="1",topic="in"}`, 0},
		{"stoatflow_rocksdb_estimated_keys ", -1},
		{"stoatflow_rocksdb_memtable_size_bytes ", -1},
		{`stoatflow_kafka_request_duration_seconds_count{request="produce"}`, -1},
		{`stoatflow_kafka_request_duration_seconds_count{request="fetch"}`, -1},
		{`stoatflow_kafka_fetch_bytes_total{topic="in"}`, -1},
		{`stoatflow_kafka_produce_bytes_total{topic="out"}`, -1},
	} {
		v, ok := sumSeries(m, tc.prefix)
		if !ok || (tc.want >= 0 && v != tc.want) || (tc.want < 0 && v <= 0) {
			t.Errorf("%s: %g (found %v), want %g", tc.prefix, v, ok, tc.want)
		}
	}
	if t.Failed() {
		t.Logf("the last scrape:\n%s", m)
	}
}

// TestKafkaRequestErrorsAreCounted cuts the engine's connections to its
// broker (internal/faultproxy between them): the requests that fail on
// the connection are counted by request type, where the scrape had no
// such series before, and the engine goes on.
func TestKafkaRequestErrorsAreCounted(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 1})
	px, err := faultproxy.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	e, stop := runEngine(t, counts(), cfg(addr, "kafka-errors"), engine.WithDialer(px.Dial))
	defer stopsInTime(t, stop)
	scrape := func() string {
		rec := httptest.NewRecorder()
		e.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	produceTo(t, addr, "in", 0, 1, 2, 3)
	readCommitted(t, addr, "out", 3, 30*time.Second)
	if m := scrape(); strings.Contains(m, "stoatflow_kafka_request_errors_total{") {
		t.Fatalf("request errors before any fault:\n%s", m)
	}
	// The consumer always has a fetch waiting on the broker: a cut fails
	// it. Cut until the count shows one (a cut between two requests fails
	// none).
	eventually(t, 20*time.Second, func() string { return "no request error counted" }, func() bool {
		px.Cut()
		v, _ := sumSeries(scrape(), "stoatflow_kafka_request_errors_total{")
		return v > 0
	})
	produceTo(t, addr, "in", 1, 4, 5)
	readCommitted(t, addr, "out", 5, 30*time.Second)
}
