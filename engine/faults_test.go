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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/dsl"
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
			return strings.Repeat("x", 1_000_000)
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
	})
}

// TestSameTransactionalIDIsFenced runs two instances with one application
// id and the same stoatflow.instance.id, so one transactional id: each
// start fences the other. An instance fenced again and again must stop
// with ErrFenced, saying what to change; the other goes on, and every
// record comes out exactly once.
func TestSameTransactionalIDIsFenced(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	var in []kv
	for i := range 4000 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%97), Value: strconv.Itoa(i)})
	}
	type run struct {
		e    *engine.Engine
		done chan error
	}
	start := func() run {
		e := engine.New(uppercase(), cfg(addr, "same-id", "stoatflow.instance.id", "twin"), engine.WithLogger(testLogger(t)))
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		r := run{e, make(chan error, 1)}
		go func() { r.done <- e.Run(ctx) }()
		return r
	}
	a := start()
	produce(t, addr, "in", in[:1000])
	b := start()
	var fenced error
	var survivor run
	next := 1000 // the input produced so far
	for i := 1; fenced == nil; i++ {
		if next < len(in) {
			produce(t, addr, "in", in[next:next+250])
			next += 250
		}
		select {
		case err := <-a.done:
			fenced, survivor = err, b
		case err := <-b.done:
			fenced, survivor = err, a
		case <-time.After(250 * time.Millisecond):
		}
		if i > 400 {
			t.Fatal("neither instance stopped within 100 s while both use one transactional id")
		}
	}
	if !errors.Is(fenced, engine.ErrFenced) {
		t.Fatalf("the stopped instance returned %v, want ErrFenced", fenced)
	}
	for _, want := range []string{"transactional id same-id-twin", "stoatflow.instance.id"} {
		if !strings.Contains(fenced.Error(), want) {
			t.Errorf("error %q does not say %q", fenced, want)
		}
	}
	produce(t, addr, "in", in[next:])
	got := readCommitted(t, addr, "out", len(in), 90*time.Second)
	select {
	case err := <-survivor.done:
		t.Fatalf("the other instance stopped too: %v", err)
	default:
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
