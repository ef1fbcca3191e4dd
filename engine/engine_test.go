package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// startBroker starts an embedded broker with topics for a test that runs
// on the embedded broker only; in the real-Kafka tier the test is skipped.
func startBroker(t testing.TB, topics map[string]int32) string {
	t.Helper()
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Addr()
}

// eventually checks cond every 10 ms until it holds, and fails the test
// with what when it still does not after within.
func eventually(t testing.TB, within time.Duration, what func() string, cond func() bool) {
	t.Helper()
	if !waitUntil(within, cond) {
		t.Fatal(what())
	}
}

// waitUntil checks cond every 10 ms until it holds or within passes, and
// says whether it held.
func waitUntil(within time.Duration, cond func() bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
	return true
}

// startKafka gives a test that runs in both tiers its broker: embedded by
// default, real Kafka under STOATCTL_TEST_KAFKA=real (internal/kafkatest).
func startKafka(t testing.TB, topics map[string]int32) string {
	t.Helper()
	return kafkatest.Start(t, topics)
}

type kv struct {
	Key, Value string
	Partition  int32
	Timestamp  int64
	// NullValue produces a tombstone.
	NullValue bool
}

// produce writes records, each to the partition its key hashes to.
func produce(t testing.TB, addr, topic string, recs []kv) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, r := range recs {
		rec := &kgo.Record{Key: []byte(r.Key), Value: []byte(r.Value)}
		if r.NullValue {
			rec.Value = nil
		}
		if r.Timestamp > 0 {
			rec.Timestamp = time.UnixMilli(r.Timestamp)
		}
		rs = append(rs, rec)
	}
	// franz-go retries a produce for as long as its context lasts: a
	// broker that died under it would hang the test until go test's own
	// timeout, which names no test.
	ctx, cancel := context.WithTimeout(context.Background(), produceWithin)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s within %s: %v", len(rs), topic, produceWithin, err)
	}
}

// produceWithin bounds a test's produce.
const produceWithin = 2 * time.Minute

// readCommitted reads topic read-committed until want records arrived or
// the deadline passed, then waits a little more to catch duplicates.
func readCommitted(t testing.TB, addr, topic string, want int, within time.Duration) []kv {
	t.Helper()
	cl := committedReader(t, addr, topic)
	defer cl.Close()
	var out []kv
	deadline := time.Now().Add(within)
	extra := time.Time{}
	for {
		if len(out) >= want && extra.IsZero() {
			extra = time.Now().Add(500 * time.Millisecond)
		}
		if (!extra.IsZero() && time.Now().After(extra)) || time.Now().After(deadline) {
			return out
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, kv{Key: string(r.Key), Value: string(r.Value), Partition: r.Partition, Timestamp: r.Timestamp.UnixMilli()})
		})
	}
}

// committedReader is a client that reads topic read-committed from its
// start.
func committedReader(t testing.TB, addr, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("ENGINE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// runEngine runs topo until the returned stop is called; stop returns
// Run's error.
func runEngine(t testing.TB, topo *topology.Topology, cfg map[string]string, opts ...engine.Option) (*engine.Engine, func() error) {
	t.Helper()
	e := engine.New(topo, cfg, append([]engine.Option{engine.WithLogger(testLogger(t))}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once bool
	var result error
	stop := func() error {
		if once {
			return result
		}
		once = true
		cancel()
		select {
		case result = <-done:
		case <-time.After(60 * time.Second):
			result = errors.New("engine did not stop within 60s")
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return e, stop
}

func uppercase() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.MapValues(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string { return "<" + v + ">" }).
		To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

func counts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey().Count(dsl.MaterializedAs[string, int64]("counts")).
		ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
	return b.Topology()
}

func cfg(addr, app string, extra ...string) map[string]string {
	c := map[string]string{"application.id": app, "bootstrap.servers": addr, "num.stream.threads": "4",
		engine.BarrierIntervalMs: "100", engine.BarrierMinIntervalMs: "50"}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}

func TestStatelessExactlyOnce(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	var in []kv
	for i := range 500 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%37), Value: strconv.Itoa(i)})
	}
	produce(t, addr, "in", in)
	_, stop := runEngine(t, uppercase(), cfg(addr, "upper"))
	got := readCommitted(t, addr, "out", len(in), 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d records, want %d", len(got), len(in))
	}
	// Per key, the order of the input is kept.
	last := map[string]int{}
	for _, r := range got {
		n, err := strconv.Atoi(r.Value[1 : len(r.Value)-1])
		if err != nil {
			t.Fatalf("value %q", r.Value)
		}
		if prev, ok := last[r.Key]; ok && n <= prev {
			t.Fatalf("key %s: %d after %d", r.Key, n, prev)
		}
		last[r.Key] = n
	}
}

func TestCountRestoresAcrossRestart(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 3, "out": 3})
	var in []kv
	for i := range 300 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%10), Value: "x"})
	}
	produce(t, addr, "in", in[:150])
	_, stop := runEngine(t, counts(), cfg(addr, "count"))
	got := readCommitted(t, addr, "out", 150, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 150 {
		t.Fatalf("first run: %d records, want 150", len(got))
	}
	produce(t, addr, "in", in[150:])
	_, stop = runEngine(t, counts(), cfg(addr, "count", "num.stream.threads", "3"))
	got = readCommitted(t, addr, "out", 300, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, got, 10, 30)
}

// checkCounts checks that every key counted 1..per exactly once.
func checkCounts(t testing.TB, got []kv, keys, per int) {
	t.Helper()
	seen := map[string][]int64{}
	for _, r := range got {
		n := int64(0)
		for _, b := range []byte(r.Value) {
			n = n<<8 | int64(b)
		}
		seen[r.Key] = append(seen[r.Key], n)
	}
	if len(seen) != keys {
		t.Fatalf("%d keys, want %d", len(seen), keys)
	}
	for k, ns := range seen {
		sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
		for i, n := range ns {
			if n != int64(i+1) {
				t.Fatalf("key %s: counts %v, want 1..%d once each", k, ns, per)
			}
		}
		if len(ns) != per {
			t.Fatalf("key %s: %d counts, want %d", k, len(ns), per)
		}
	}
}

// onMessage is a log handler that closes seen at the first record with
// message msg, and drops every record.
type onMessage struct {
	msg  string
	seen chan struct{}
	once sync.Once
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *onMessage) WithGroup(string) slog.Handler      { return h }

// TestMonitorKeysAreChecked: the progress-log and stall-warning intervals
// are read like every other millisecond key: a value that is not a whole
// number, or is negative, stops Run before it starts, naming the key
// (they fell back to their defaults silently).
func TestMonitorKeysAreChecked(t *testing.T) {
	for _, tc := range []struct{ key, value string }{
		{engine.ProgressLogIntervalMs, "-5"},
		{engine.ProgressLogIntervalMs, "soon"},
		{engine.StallWarningMs, "-1"},
		{engine.StallWarningMs, "1.5"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			e := engine.New(uppercase(), cfg("127.0.0.1:1", "monitor-keys", tc.key, tc.value))
			err := e.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Run with %s=%s: %v, want an error naming the key", tc.key, tc.value, err)
			}
			t.Log(err)
			if s := e.State(); s != engine.Error {
				t.Fatalf("state %v, want ERROR", s)
			}
		})
	}
}

func TestMissingSourceTopicIsAStartError(t *testing.T) {
	addr := startBroker(t, nil)
	e := engine.New(uppercase(), cfg(addr, "missing"))
	err := e.Run(context.Background())
	if !errors.Is(err, engine.ErrMissingTopic) {
		t.Fatalf("got %v, want ErrMissingTopic", err)
	}
	var mt *engine.MissingTopicError
	if !errors.As(err, &mt) || !slices.Equal(mt.Topics, []string{"in"}) {
		t.Fatalf("error %q: missing topics %+v, want exactly [in]", err, mt)
	}
	if !strings.Contains(err.Error(), ": in (") {
		t.Fatalf("error %q does not name topic in", err)
	}
}

// TestSourceTopicCreatedJustAfterStart: a source topic that appears in
// the brokers' metadata after the engine first found it missing (on
// Apache Kafka, a topic created just before: its broker learns of it from
// the controller a little later) is waited for, not a start error.
func TestSourceTopicCreatedJustAfterStart(t *testing.T) {
	addr := startBroker(t, map[string]int32{"out": 1})
	// The topic is created once the engine has found it missing.
	missed := &onMessage{msg: "source topics not found yet, asking again", seen: make(chan struct{})}
	_, stop := runEngine(t, uppercase(), cfg(addr, "late-topic"), engine.WithLogger(slog.New(missed)))
	select {
	case <-missed.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the engine did not find the topic missing within 30s")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 2, -1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	produce(t, addr, "in", []kv{{Key: "k", Value: "v"}})
	if got := readCommitted(t, addr, "out", 1, 30*time.Second); len(got) != 1 || got[0].Value != "<v>" {
		t.Fatalf("output %v, want one <v>", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func logLevel() slog.Level {
	if os.Getenv("ENGINE_TEST_LOG") == "debug" {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// TestStopDuringStartIsClean: a caller that cancels while the engine is
// still connecting (SIGINT during start-up) gets a clean stop, not an
// error; nothing was processed, so nothing is lost.
func TestStopDuringStartIsClean(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 1, "out": 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := engine.New(uppercase(), cfg(addr, "stop-at-start"), engine.WithLogger(testLogger(t)))
	if err := e.Run(ctx); err != nil {
		t.Fatalf("Run with a cancelled context: %v, want a clean stop", err)
	}
	if s := e.State(); s != engine.NotRunning {
		t.Fatalf("state %s, want %s", s, engine.NotRunning)
	}
}
