package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// e2eRun is `stoatctl run` of the event-time test topology, in-process,
// with its log in JSON lines.
type e2eRun struct {
	t        *testing.T
	api      *inspect.Client
	url      string
	broker   string
	stderr   *syncBuffer
	cancel   func()
	done     chan int
	producer *kgo.Client
	stopped  bool
}

func (r *e2eRun) get(path string) (int, []byte) {
	r.t.Helper()
	resp, err := http.Get(r.url + path)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (r *e2eRun) produce(partition int32, ts int64) {
	r.t.Helper()
	rec := &kgo.Record{Topic: "clicks", Partition: partition, Key: []byte("ann"), Value: []byte("click"), Timestamp: time.UnixMilli(ts)}
	if err := r.producer.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *e2eRun) watermarks() inspect.Watermarks {
	r.t.Helper()
	w, err := r.api.Watermarks(context.Background())
	if err != nil {
		r.t.Fatalf("GET /watermarks: %v\nlog:\n%s", err, r.stderr.String())
	}
	return w
}

// logLines are the JSON lines of the log with msg.
func (r *e2eRun) logLines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stderr.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (r *e2eRun) until(within time.Duration, what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not within %s\nlog:\n%s", what, within, r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// promtoolCheck runs promtool check metrics on a scrape and accepts
// nothing it says: no lint (docs/metrics.md), no error.
func promtoolCheck(t *testing.T, scrape string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; CI needs Debian's prometheus package (scripts/test.sh installs it)")
		}
		t.Log("promtool is not installed (Debian's prometheus package); skipping promtool check metrics")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
	if err != nil {
		t.Errorf("promtool check metrics exited %d: %s", exit.ExitCode(), out)
	}
}

// TestRunServesWatermarks is issue 12's end-to-end test: stoatctl run on
// the embedded broker, a windowed count on a two-partition topic, read
// through the REST API while one partition stays silent until it idles
// out and the other delivers records, then old timestamps.
func TestRunServesWatermarks(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	httpAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	r := &e2eRun{t: t, url: "http://" + httpAddr, api: inspect.NewClient("http://" + httpAddr), stderr: stderr, cancel: cancel, done: make(chan int, 1)}
	args := []string{"run", "-t", "testdata/eventtime-topology.yaml", "--broker-port", "0", "--partitions", "2", "--http", httpAddr,
		"--log-format", "json", "-X", "num.stream.threads=2", "-X", "stoatflow.commit-barrier.interval-ms=100",
		"-X", "stoatflow.log.stall-warning-ms=2000", "-X", "stoatflow.log.progress-interval-ms=2000",
		"-X", "stoatflow.metrics.recording.level=debug", "--state-dir", t.TempDir()}
	go func() { r.done <- RunContext(ctx, args, stdout, stderr) }()
	defer func() {
		if !r.stopped {
			cancel()
			<-r.done
		}
	}()

	// Start: every answer is 503 until the partitions register; readiness
	// is down until the engine runs.
	// The API listens before the engine connects; ask as soon as it does
	// (the first answer comes within a millisecond of it listening).
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := r.get("/watermarks")
		if code != 0 {
			var e inspect.Error
			if code != 503 || json.Unmarshal(body, &e) != nil || e.Code != inspect.CodeNotInitialised {
				t.Errorf("first /watermarks answer: %d %s, want 503 not_initialised", code, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API never listened\nlog:\n%s", stderr.String())
		}
		time.Sleep(time.Millisecond)
	}
	var seen []string
	r.until(30*time.Second, "two partitions registered", func() bool {
		code, body := r.get("/watermarks")
		ready, _ := r.get("/health/readiness")
		if len(seen) == 0 || seen[len(seen)-1] != fmt.Sprint(ready) {
			seen = append(seen, fmt.Sprint(ready))
		}
		var w inspect.Watermarks
		return code == 200 && json.Unmarshal(body, &w) == nil && len(w.Partitions) == 2 && ready == 200
	})
	if seen[0] != "503" || seen[len(seen)-1] != "200" {
		t.Errorf("readiness answers %v, want 503 first and 200 once running", seen)
	}
	r.broker = strings.TrimSpace(stdout.String())
	var err error
	r.producer, err = kgo.NewClient(kgo.SeedBrokers(r.broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.producer.Close()

	// Registered, nothing read: 200 with the minimum and N/A.
	w := r.watermarks()
	if w.GlobalMs != inspect.MinWatermark || w.GlobalIso != "N/A" || w.AlignmentBinding != nil || len(w.AlignmentGroupMins) != 0 {
		t.Fatalf("before any record: %+v", w)
	}
	for _, k := range []string{"clicks:0", "clicks:1"} {
		p := w.Partitions[k]
		// Never written: it has waited since the engine registered it,
		// by the engine's own clock (what watch judges it by).
		if p.WaitingSinceMs == nil || p.SinceAdvanceMs == nil || *p.SinceAdvanceMs < 0 || *p.WaitingSinceMs <= 0 {
			t.Errorf("%s before any record: waitingSinceMs %v sinceAdvanceMs %v, want both", k, p.WaitingSinceMs, p.SinceAdvanceMs)
		}
		p.WaitingSinceMs, p.SinceAdvanceMs = nil, nil
		want := inspect.PartitionWatermark{WatermarkMs: inspect.MinWatermark, WatermarkIso: "N/A", LastEventTimeMs: inspect.MinWatermark,
			LastEventTimeIso: "N/A", IdlenessTimeoutMs: 4000}
		if fmt.Sprint(p) != fmt.Sprint(want) {
			t.Errorf("%s before any record: %+v, want %+v", k, p, want)
		}
	}

	// Phase A: clicks:0 delivers, clicks:1 is silent but not idle yet, so
	// the watermark stays unset and clicks:1 pins it.
	base := time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	ts := base
	for r.watermarks().Partitions["clicks:1"].Idle == false {
		r.produce(0, ts)
		ts += 1000
		time.Sleep(250 * time.Millisecond)
		if ts > base+60_000 {
			t.Fatalf("clicks:1 never idled out\nlog:\n%s", stderr.String())
		}
	}
	last := ts - 1000
	r.until(10*time.Second, "the watermark to reach clicks:0's", func() bool { return r.watermarks().GlobalMs == last })
	w = r.watermarks()
	p0, p1 := w.Partitions["clicks:0"], w.Partitions["clicks:1"]
	if w.GlobalIso != inspect.Iso(last) || p0.WatermarkMs != last || p0.LastEventTimeMs != last || p0.Idle || p0.IdlenessTimeoutMs != 4000 ||
		p0.WatermarkIso != inspect.Iso(last) || p0.AlignmentGroup != nil || p0.AlignmentHeld || p0.DriftFromGroupMinMs != 0 || p0.PreviewWatermarkMs != nil {
		t.Errorf("clicks:0 once clicks:1 idled: %+v (global %d, want %d)", p0, w.GlobalMs, last)
	}
	if !p1.Idle || p1.WatermarkMs != inspect.MinWatermark || p1.LastEventTimeIso != "N/A" {
		t.Errorf("clicks:1 once idle: %+v", p1)
	}
	// When each moved and idled, in the engine's wall clock: clicks:0's
	// watermark moved with its last record, clicks:1 idled after its
	// timeout and never moved.
	now := time.Now().UnixMilli()
	if a := p0.LastAdvanceMs; a == nil || *a > now || *a < now-60_000 || p0.IdleSinceMs != nil {
		t.Errorf("clicks:0's lastAdvanceMs %v (now %d), idleSinceMs %v: want a move within the last minute, not idle", p0.LastAdvanceMs, now, p0.IdleSinceMs)
	}
	if p1.LastAdvanceMs != nil || p1.IdleSinceMs == nil || *p1.IdleSinceMs > now {
		t.Errorf("clicks:1's lastAdvanceMs %v, idleSinceMs %v: want never moved, idle since before now (%d)", p1.LastAdvanceMs, p1.IdleSinceMs, now)
	}
	if pin, _ := inspect.Pinning(w); pin != "clicks:0" {
		t.Errorf("pinning partition %q, want clicks:0", pin)
	}
	stalls := r.logLines("watermark has not moved while records arrive")
	if len(stalls) == 0 || stalls[0]["pinned_by"] != "clicks:1" || stalls[0]["runbook"] != "docs/runbook.md#idle-eligible" {
		t.Errorf("no stall warning naming clicks:1 and the idle-eligible branch: %v\nlog:\n%s", stalls, stderr.String())
	}

	// A record for a closed window is dropped and counted.
	r.produce(0, base)
	r.until(10*time.Second, "the late drop counted", func() bool {
		m, _ := r.api.Metrics(context.Background())
		return strings.Contains(m, `stoatflow_dropped_records_total{reason="late_window"} 1`)
	})

	// Phase B: clicks:0 is live but delivers nothing newer: the watermark
	// stands still and the warning names clicks:0, old timestamps.
	r.until(15*time.Second, "a stall warning naming clicks:0", func() bool {
		r.produce(0, last)
		time.Sleep(200 * time.Millisecond)
		for _, l := range r.logLines("watermark has not moved while records arrive") {
			if l["pinned_by"] == "clicks:0" && l["runbook"] == "docs/runbook.md#old-timestamps" {
				return true
			}
		}
		return false
	})
	if got := r.watermarks().GlobalMs; got != last {
		t.Errorf("the watermark moved to %d under old timestamps", got)
	}

	// The scrape passes promtool; the engine's state reads RUNNING.
	m, err := r.api.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stoatflow_client_state 4", fmt.Sprintf("stoatflow_watermark_timestamp_seconds %g", float64(last)/1000),
		`stoatflow_watermark_partitions{state="idle"} 1`, "stoatflow_topology_event_time_tracking 1", `stoatflow_consumer_lag_records{topic="clicks"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	// The record path's, the store's, RocksDB's and the Kafka client's
	// families have series: promtool sees them too.
	for _, want := range []string{`stoatflow_process_records_total{subtopology="0"}`, `stoatflow_process_latency_seconds_count{subtopology="0"}`,
		`stoatflow_record_e2e_latency_seconds_count{kind="source",`, `stoatflow_record_e2e_latency_max_seconds{kind="source",`,
		`stoatflow_record_e2e_latency_seconds_count{kind="sink",`, `stoatflow_task_process_records_total{task="0_0"}`,
		`stoatflow_task_process_latency_seconds_sum{task="0_1"}`, `stoatflow_processor_process_records_total{processor=`,
		`stoatflow_processor_process_latency_seconds_count{processor=`, `stoatflow_store_operations_total{operation="put",store_name="counts"}`,
		`stoatflow_store_operation_latency_seconds_count{operation="get",store_name="counts"}`, "stoatflow_rocksdb_estimated_keys ",
		"stoatflow_rocksdb_memtable_size_bytes ", "stoatflow_rocksdb_block_cache_usage_bytes ",
		`stoatflow_kafka_request_duration_seconds_bucket{request="fetch",`, `stoatflow_kafka_request_duration_seconds_bucket{request="produce",`,
		`stoatflow_kafka_request_duration_seconds_count{request="end_txn"}`, `stoatflow_kafka_fetch_bytes_total{topic="clicks"}`,
		`stoatflow_kafka_produce_bytes_total{topic="counts"}`, `stoatflow_consumer_partition_lag_records{partition="0",topic="clicks"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	promtoolCheck(t, m)

	// Pause stops reading; resume reads what came meanwhile.
	if c, err := r.api.Pause(context.Background(), "e2e"); err != nil || !c.Paused {
		t.Fatalf("pause: %+v %v", c, err)
	}
	if m, _ := r.api.Metrics(context.Background()); !strings.Contains(m, "stoatflow_client_state 5") {
		t.Error("paused: stoatflow_client_state is not 5")
	}
	in := func() string {
		fams, _ := r.api.Metrics(context.Background())
		for _, l := range strings.Split(fams, "\n") {
			if strings.HasPrefix(l, `stoatflow_records_in_total{topic="clicks"}`) {
				return l
			}
		}
		return ""
	}
	before := in()
	r.produce(0, last+1000)
	// Nothing may be read for 600 ms: a wait that should time out.
	for deadline := time.Now().Add(600 * time.Millisecond); time.Now().Before(deadline) && in() == before; {
		time.Sleep(20 * time.Millisecond)
	}
	if after := in(); after != before {
		t.Errorf("a paused engine read records: %s, then %s", before, after)
	}
	if c, err := r.api.Resume(context.Background(), ""); err != nil || c.Paused {
		t.Fatalf("resume: %+v %v", c, err)
	}
	r.until(10*time.Second, "the watermark moved after resume", func() bool { return r.watermarks().GlobalMs == last+1000 })

	// The log: a start summary, the API's address, restoration, progress.
	for _, msg := range []string{"effective configuration", "engine starting", "topics ready", "REST API listening", "restoring state from the changelogs", "state restored", "progress"} {
		if len(r.logLines(msg)) == 0 {
			t.Errorf("the log has no %q line", msg)
		}
	}
	if l := r.logLines("progress"); len(l) > 0 && (l[len(l)-1]["lag.clicks"] == nil || l[len(l)-1]["watermark"] == nil) {
		t.Errorf("the progress line lacks the lag per input or the watermark: %v", l[len(l)-1])
	}
	if l := r.logLines("REST API listening"); len(l) > 0 && l[0]["url"] != r.url {
		t.Errorf("REST API listening at %v, want %s", l[0]["url"], r.url)
	}

	cancel()
	r.stopped = true
	select {
	case code := <-r.done:
		if code != ExitOK {
			t.Errorf("stopped run exited %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
	if code, _ := r.get("/health/liveness"); code != 0 {
		t.Errorf("the API still answers after the run stopped (%d)", code)
	}
}

// TestRunHTTPAddressInUse: stoatctl run fails at once, exit 1, naming the
// address, when its API's address is taken.
func TestRunHTTPAddressInUse(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	up := serve(t, fixedEngine{})
	addr := strings.TrimPrefix(up, "http://")
	var stdout, stderr syncBuffer
	code := RunContext(context.Background(), []string{"run", "-t", "testdata/eventtime-topology.yaml", "--broker-port", "0", "--http", addr}, &stdout, &stderr)
	if code != ExitFailure || !strings.Contains(stderr.String(), addr) || !strings.Contains(stderr.String(), "address already in use") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if stdout.String() != "" {
		t.Errorf("the embedded broker started before the address was found taken: %q", stdout.String())
	}
	code = RunContext(context.Background(), []string{"run", "-t", "testdata/eventtime-topology.yaml", "--http", "0.0.0.0:0"}, &stdout, &stderr)
	if code != ExitUsage || !strings.Contains(stderr.String(), "--http-token") {
		t.Fatalf("beyond loopback without a token: exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestRunDefaultHTTPAddressTaken: with the default --http taken (another
// instance on this host), run serves its REST API on a free port instead,
// says so, and logs the address; a taken address given with --http still
// fails (TestRunHTTPAddressInUse).
func TestRunDefaultHTTPAddressTaken(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	// Held here, or already held by something else: taken either way.
	if l, err := net.Listen("tcp", defaultHTTPAddr); err == nil {
		t.Cleanup(func() { l.Close() })
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, []string{"run", "-t", "testdata/eventtime-topology.yaml", "--broker-port", "0", "--state-dir", t.TempDir(), "--log-format", "json"}, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	listening := regexp.MustCompile(`"msg":"REST API listening","url":"(http://[^"]+)"`)
	deadline := time.Now().Add(30 * time.Second)
	var url string
	for url == "" {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("run exited %d before serving:\n%s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no REST API listening line in 30s:\n%s", stderr.String())
		}
	}
	if url == "http://"+defaultHTTPAddr {
		t.Fatalf("serving on the taken default %s", url)
	}
	if !strings.Contains(stderr.String(), "--http "+defaultHTTPAddr+" is in use: serving the REST API on a free port instead") {
		t.Errorf("stderr does not say the default was taken:\n%s", stderr.String())
	}
	resp, err := http.Get(url + "/health/liveness")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("liveness on %s: %d", url, resp.StatusCode)
	}
}
