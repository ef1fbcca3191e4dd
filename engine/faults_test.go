package engine_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestCommitWithUnknownOutcome fails two EndTxn requests on the embedded
// broker, which then never ends the transaction: one with an error that
// franz-go answers by reporting an abort it never sent, one with an error
// it returns. Either way the transaction is still open on the broker, and
// an engine that carried on with the same producer would add the next
// epoch's records to it and commit the failed epoch's records next to
// their replay. The engine must notice, reconnect (fencing settles the
// open transaction) and reprocess: every count exactly once, and no
// silent stop.
func TestCommitWithUnknownOutcome(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const keys, per = 50, 40
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	var ends atomic.Int32
	failed := map[int32]int16{3: kerr.UnknownServerError.Code, 6: kerr.InvalidTxnState.Code}
	b.Cluster().ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		n := ends.Add(1)
		if n < 6 {
			b.Cluster().KeepControl()
		}
		req := kreq.(*kmsg.EndTxnRequest)
		code, ok := failed[n]
		if !ok || !req.Commit {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp, nil, true
	})
	e, stop := runEngine(t, counts(), cfg(b.Addr(), "unknown-outcome"))
	// The input arrives in chunks, so that there are epochs to fail.
	const chunks = 20
	for i := range chunks {
		before := ends.Load()
		produce(t, b.Addr(), "in", in[i*len(in)/chunks:(i+1)*len(in)/chunks])
		waitUntil(5*time.Second, func() bool { return ends.Load() > before })
	}
	got := readCommitted(t, b.Addr(), "out", len(in), 60*time.Second)
	if err := stop(); err != nil {
		t.Fatalf("engine: %v", err)
	}
	checkCounts(t, got, keys, per)
	if n := ends.Load(); n < 6 {
		t.Fatalf("%d EndTxn requests, want at least 6: the faults were not injected", n)
	}
	if n := e.Stats().Aborted; n < 2 {
		t.Errorf("%d epochs aborted, want at least the 2 whose commit failed", n)
	}
}

// TestFatalCommitStopsLoadedEngine fails a commit for good (the cluster
// refuses the transactional id) while the lanes' queues are full: the
// dispatcher is blocked handing records to lanes that are blocked handing
// results to the committer. The failure must wake them all and end Run
// with the error, not leave the engine RUNNING and deaf to a stop.
func TestFatalCommitStopsLoadedEngine(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// Input keeps arriving while the engine runs, so the lanes are busy
	// when the commit fails.
	var chunk []kv
	for i := range 5000 {
		chunk = append(chunk, kv{Key: "k" + strconv.Itoa(i%1000), Value: "x"})
	}
	stopProducing := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for {
			select {
			case <-stopProducing:
				return
			default:
				produce(t, b.Addr(), "in", chunk)
			}
		}
	}()
	defer func() { close(stopProducing); <-produced }()
	var ends atomic.Int32
	b.Cluster().ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if ends.Add(1) < 5 {
			b.Cluster().KeepControl()
			return nil, nil, false
		}
		resp := kreq.(*kmsg.EndTxnRequest).ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil, true
	})
	e := engine.New(counts(), cfg(b.Addr(), "fatal-commit", engine.LaneQueueSize, "64"), engine.WithLogger(testLogger(t)))
	done := make(chan error, 1)
	go func() { done <- e.Run(t.Context()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED") {
			t.Fatalf("Run returned %v, want the commit's error", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Run still running 60s after its commit failed for good (state %v)", e.State())
	}
}

// inflate passes values through, but makes "big" a value of a million
// bytes: over what a topic takes by default.
func inflate() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.MapValues(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string {
		if v == "big" {
			// Over max.request.size's default (Kafka's 1048576 bytes)
			// and the broker's message.max.bytes (1048588).
			return strings.Repeat("x", 1_100_000)
		}
		return v
	}).To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestOversizedOutput: a sink record over the topic's limit is handled
// once, as default.production.exception.handler says, instead of aborting
// and replaying its epoch forever: fail stops the engine with an error
// naming the sink, the size and the input record; continue skips it and
// commits everything else exactly once.
func TestOversizedOutput(t *testing.T) {
	in := []kv{{Key: "k", Value: "a0"}, {Key: "k", Value: "a1"}, {Key: "k", Value: "big"}, {Key: "k", Value: "a2"}, {Key: "k", Value: "a3"}}
	t.Run("fail", func(t *testing.T) {
		addr := startKafka(t, map[string]int32{"in": 1, "out": 1})
		produce(t, addr, "in", in)
		e := engine.New(inflate(), cfg(addr, "oversized-fail"), engine.WithLogger(testLogger(t)))
		done := make(chan error, 1)
		go func() { done <- e.Run(t.Context()) }()
		select {
		case err := <-done:
			var tooLarge *engine.RecordTooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("Run returned %v, want a RecordTooLargeError", err)
			}
			for _, want := range []string{"for out[0]", "while processing in[0]@2", "default.production.exception.handler=continue"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("Run still running 60s after an oversized output (state %v, %d epochs aborted)", e.State(), e.Stats().Aborted)
		}
	})
	t.Run("continue", func(t *testing.T) {
		addr := startKafka(t, map[string]int32{"in": 1, "out": 1})
		produce(t, addr, "in", in)
		e, stop := runEngine(t, inflate(), cfg(addr, "oversized-continue", "default.production.exception.handler", "continue"))
		got := readCommitted(t, addr, "out", len(in)-1, 60*time.Second)
		if err := stop(); err != nil {
			t.Fatalf("engine: %v", err)
		}
		var values []string
		for _, r := range got {
			values = append(values, r.Value)
		}
		if want := []string{"a0", "a1", "a2", "a3"}; !slices.Equal(values, want) {
			t.Errorf("output %q, want %q", values, want)
		}
		if n := e.Stats().Aborted; n != 0 {
			t.Errorf("%d epochs aborted, want 0", n)
		}
		// The skipped record is a drop, counted by its reason.
		var skipped int64
		e.Metrics().Each(func(l metrics.Labelled, v int64) {
			if l.Name == metrics.DroppedRecords && metrics.Label(l.Labels, "reason") == engine.ReasonProduction {
				skipped += v
			}
		})
		if skipped != 1 {
			t.Errorf("dropped records (reason %s) = %d, want 1", engine.ReasonProduction, skipped)
		}
	})
	t.Run("dead-letter", func(t *testing.T) {
		addr := startKafka(t, map[string]int32{"in": 1, "out": 1, "dlq": 1})
		produce(t, addr, "in", in)
		e, stop := runEngine(t, inflate(), cfg(addr, "oversized-dlq", "default.production.exception.handler", "dead-letter",
			"errors.dead.letter.queue.topic.name", "dlq"))
		got := readCommitted(t, addr, "out", len(in)-1, 60*time.Second)
		// The output is all committed, and the dead letter with it: read
		// for a while past it, to see a second one if there is one.
		letters := readCommittedRecords(t, addr, "dlq", 2, 3*time.Second)
		if err := stop(); err != nil {
			t.Fatalf("engine: %v", err)
		}
		var values []string
		for _, r := range got {
			values = append(values, r.Value)
		}
		if want := []string{"a0", "a1", "a2", "a3"}; !slices.Equal(values, want) {
			t.Errorf("output %q, want %q", values, want)
		}
		if len(letters) != 1 {
			t.Fatalf("%d dead letters, want 1", len(letters))
		}
		dl := letters[0]
		if string(dl.Key) != "k" || string(dl.Value) != "big" {
			t.Errorf("dead letter %q=%q, want the input record k=big", dl.Key, dl.Value)
		}
		headers := map[string]string{}
		for _, h := range dl.Headers {
			headers[h.Key] = string(h.Value)
		}
		for k, want := range map[string]string{"__streams.errors.exception": "RecordTooLargeException", "__streams.errors.topic": "in",
			"__streams.errors.partition": "0", "__streams.errors.offset": "2"} {
			if headers[k] != want {
				t.Errorf("dead letter header %s = %q, want %q", k, headers[k], want)
			}
		}
		if !strings.Contains(headers["__streams.errors.message"], "for out[0]") {
			t.Errorf("dead letter message %q does not name the sink", headers["__streams.errors.message"])
		}
		if n := e.Stats().Aborted; n != 0 {
			t.Errorf("%d epochs aborted, want 0", n)
		}
	})
}

// TestSecondInstanceWithSameIDIsRefused runs two instances with one
// application id and the same stoatflow.instance.id, so one
// transactional id. The second must not fence the first: it finds a live
// member with its own id, waits a session timeout for it to leave (as a
// crashed predecessor would), and refuses to start, naming the member.
// The first goes on, and every record comes out exactly once.
func TestSecondInstanceWithSameIDIsRefused(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	var in []kv
	for i := range 2000 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%97), Value: strconv.Itoa(i)})
	}
	c := cfg(addr, "same-id", "stoatflow.instance.id", "twin", "session.timeout.ms", "6000")
	a, stopA := runEngine(t, uppercase(), c)
	produce(t, addr, "in", in[:1000])
	readCommitted(t, addr, "out", 1000, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	err := engine.New(uppercase(), c, engine.WithLogger(testLogger(t))).Run(ctx)
	var inUse *engine.InstanceInUseError
	if !errors.As(err, &inUse) || !errors.Is(err, engine.ErrInstanceInUse) {
		t.Fatalf("the second instance returned %v, want an InstanceInUseError", err)
	}
	if took := time.Since(began); took < 6*time.Second {
		t.Errorf("refused after %s, before the session timeout (6 s) a crashed predecessor's member could take to leave", took)
	}
	for _, want := range []string{"stoatflow.instance.id=twin", "transactional id same-id-twin", "client same-id-twin", inUse.Member} {
		if want == "" || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	produce(t, addr, "in", in[1000:])
	got := readCommitted(t, addr, "out", len(in), 60*time.Second)
	if err := stopA(); err != nil {
		t.Fatalf("the first instance: %v", err)
	}
	if n := a.Stats().Aborted; n != 0 {
		t.Errorf("the first instance aborted %d epochs; the refused start must not fence it", n)
	}
	seen := map[string]int{}
	for _, r := range got {
		seen[r.Value]++
	}
	for _, r := range in {
		if n := seen["<"+r.Value+">"]; n != 1 {
			t.Fatalf("value %s came out %d times, want once", r.Value, n)
		}
	}
}

// TestFencedAgainAndAgainStops fences a running instance from outside
// its group: a producer with the instance's transactional id initialises
// it three times, each once the instance recovered from the one before.
// The instance must stop with ErrFenced, saying that no member of its
// group holds the id and what to change, and what it committed must hold
// each record at most once.
func TestFencedAgainAndAgainStops(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	var in []kv
	for i := range 4000 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%97), Value: strconv.Itoa(i)})
	}
	e := engine.New(uppercase(), cfg(addr, "fenced", "stoatflow.instance.id", "solo"), engine.WithLogger(testLogger(t)))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	produce(t, addr, "in", in[:100])
	readCommitted(t, addr, "out", 100, 30*time.Second)
	var err error
	for fence, next := 0, 100; err == nil; fence++ {
		if fence > 10 {
			t.Fatal("fenced ten times and still running; want ErrFenced after three")
		}
		// Fence only once the instance runs again on a session of its own
		// (a commit since the last reset): a producer initialised while it
		// still recovers is fenced by it, not the other way round.
		for committed := e.Stats().Committed; e.Stats().Committed == committed && err == nil; {
			if next+60 > len(in) {
				t.Fatalf("fence %d: the instance committed nothing over %d records", fence+1, next)
			}
			produce(t, addr, "in", in[next:next+10])
			next += 10
			select {
			case err = <-done:
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err != nil {
			break
		}
		resets := e.Stats().Resets
		cl, cerr := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("fenced-solo"))
		if cerr != nil {
			t.Fatal(cerr)
		}
		if _, _, perr := cl.ProducerID(context.Background()); perr != nil {
			t.Fatalf("outside producer: %v", perr)
		}
		cl.Close()
		// The instance meets the fence at its next transaction.
		produce(t, addr, "in", in[next:next+50])
		next += 50
		deadline := time.After(30 * time.Second)
	wait:
		for e.Stats().Resets == resets {
			select {
			case err = <-done:
				break wait
			case <-deadline:
				t.Fatalf("fence %d: the instance neither reset nor stopped within 30 s", fence+1)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("the instance returned %v, want ErrFenced", err)
	}
	for _, want := range []string{"transactional id fenced-solo", "a producer outside the group", "stoatflow.instance.id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	seen := map[string]int{}
	for _, r := range readCommitted(t, addr, "out", len(in)+1, 3*time.Second) {
		if seen[r.Value]++; seen[r.Value] > 1 {
			t.Fatalf("value %s came out twice", r.Value)
		}
	}
}

// readCommittedRecords reads topic read-committed until want records
// arrived or within passed, headers and all.
func readCommittedRecords(t testing.TB, addr, topic string, want int, within time.Duration) []*kgo.Record {
	t.Helper()
	cl := committedReader(t, addr, topic)
	defer cl.Close()
	var out []*kgo.Record
	for deadline := time.Now().Add(within); len(out) < want && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
		cancel()
	}
	return out
}
