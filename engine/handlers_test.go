package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// longs reads 8-byte longs and writes them doubled: a record whose value
// is not 8 bytes does not deserialize.
func longs() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.MapValues(dsl.Stream(b, dsl.ConsumedWith(str, serde.Int64()), "in"), func(_ string, v int64) int64 { return 2 * v }).
		To("out", dsl.ProducedWith(str, serde.Int64()))
	return b.Topology()
}

func long(v int64) string {
	b, _ := serde.Int64().Serialize("", v)
	return string(b)
}

func TestDeadLetterTopicKeepsTheBadRecord(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1, "dlq": 1})
	produce(t, addr, "in", []kv{{Key: "a", Value: long(1)}, {Key: "b", Value: "bad"}, {Key: "c", Value: long(3)}})
	_, stop := runEngine(t, longs(), cfg(addr, "dlq-app",
		"default.deserialization.exception.handler", "dead-letter", "errors.dead.letter.queue.topic.name", "dlq"))
	out := readCommitted(t, addr, "out", 2, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// a and c may sit on different lanes, which write in either order.
	slices.SortFunc(out, func(x, y kv) int { return strings.Compare(x.Key, y.Key) })
	if len(out) != 2 || out[0].Key != "a" || out[0].Value != long(2) || out[1].Key != "c" || out[1].Value != long(6) {
		t.Fatalf("output %v, want a=2 and c=6", out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("dlq"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var dead *kgo.Record
	for dead == nil && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { dead = r })
	}
	if dead == nil {
		t.Fatal("nothing in the dead-letter topic")
	}
	h := map[string]string{}
	for _, x := range dead.Headers {
		h[x.Key] = string(x.Value)
	}
	if string(dead.Key) != "b" || string(dead.Value) != "bad" || h["__streams.errors.topic"] != "in" ||
		h["__streams.errors.partition"] != "0" || h["__streams.errors.offset"] != "1" || h["__streams.errors.message"] == "" {
		t.Fatalf("dead letter %s=%q headers %v", dead.Key, dead.Value, h)
	}
}

// TestFailingRecordStopsWithoutCommittingPastIt: under the default
// handler a record that does not deserialize stops the engine with an
// error naming where it is and the handler that would skip it, the state
// goes from RUNNING straight to ERROR (leaving the group on the way out
// is no rebalance), and the committed offset stays before the record.
func TestFailingRecordStopsWithoutCommittingPastIt(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	produce(t, addr, "in", []kv{{Key: "a", Value: long(1)}, {Key: "b", Value: long(2)}})
	e := engine.New(longs(), cfg(addr, "fail-app"), engine.WithLogger(testLogger(t)))
	var mu sync.Mutex
	var states []engine.State
	e.OnStateChange(func(_, s engine.State) {
		mu.Lock()
		states = append(states, s)
		mu.Unlock()
	})
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	eventually(t, 20*time.Second, func() string { return fmt.Sprintf("the engine processed %d of the 2 good records", e.Stats().Records) },
		func() bool { return e.Stats().Records >= 2 })
	produce(t, addr, "in", []kv{{Key: "c", Value: "bad"}, {Key: "d", Value: long(4)}})
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the engine did not stop on the bad record within 30s")
	}
	if err == nil || !strings.Contains(err.Error(), "topic in partition 0 offset 2") {
		t.Fatalf("engine stopped with %v, want an error naming topic in partition 0 offset 2", err)
	}
	if !strings.Contains(err.Error(), "default.deserialization.exception.handler") {
		t.Fatalf("engine stopped with %v, want it to name default.deserialization.exception.handler", err)
	}
	if e.State() != engine.Error {
		t.Fatalf("state %s, want ERROR", e.State())
	}
	mu.Lock()
	got := slices.Clone(states)
	mu.Unlock()
	if n := len(got); n < 2 || got[n-2] != engine.Running || got[n-1] != engine.Error {
		t.Fatalf("states %v, want RUNNING then ERROR at the end", got)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "fail-app")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup("in", 0)
	if !ok || o.At > 2 {
		t.Fatalf("committed offset %v (found %v), want at most 2, the failing record", o.At, ok)
	}
	if got := readCommitted(t, addr, "out", 2, 3*time.Second); len(got) != 2 {
		t.Fatalf("output %v, want the two records before the bad one", got)
	}
	_ = errors.New
}

// panicky doubles 8-byte longs and panics on 13: a processor with a bug.
func panicky() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.MapValues(dsl.Stream(b, dsl.ConsumedWith(str, serde.Int64()), "in"), func(_ string, v int64) int64 {
		if v == 13 {
			panic("unlucky value")
		}
		return 2 * v
	}, dsl.Name("double")).To("out", dsl.ProducedWith(str, serde.Int64()))
	return b.Topology()
}

// TestProcessorPanicGoesToTheHandler: a processor that panics is a
// processing error, not the end of the process. Under fail the engine
// stops with an error naming the processor and the record's topic,
// partition and offset, and commits nothing past it; under continue the
// record is skipped and counted, and the rest goes on.
func TestProcessorPanicGoesToTheHandler(t *testing.T) {
	for _, handler := range []string{"fail", "continue"} {
		t.Run(handler, func(t *testing.T) {
			addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
			produce(t, addr, "in", []kv{{Key: "a", Value: long(1)}})
			e := engine.New(panicky(), cfg(addr, "panic-"+handler, "processing.exception.handler", handler), engine.WithLogger(testLogger(t)))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			readCommitted(t, addr, "out", 1, 20*time.Second)
			produce(t, addr, "in", []kv{{Key: "b", Value: long(13)}, {Key: "c", Value: long(3)}})
			if handler == "continue" {
				got := readCommitted(t, addr, "out", 2, 20*time.Second)
				cancel()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("run: %v", err)
				}
				if len(got) != 2 || got[0].Value != long(2) || got[1].Value != long(6) {
					t.Fatalf("output %v, want a=2 and c=6", got)
				}
				if n := e.Metrics().Value("dropped.records.total", "reason", "processing_error"); n != 1 {
					t.Fatalf("dropped.records.total{reason=processing_error} = %d, want 1", n)
				}
				return
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the engine did not stop on the panic within 30s")
			}
			for _, want := range []string{"processor double", "topic in partition 0 offset 1", "panic: unlucky value"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("engine stopped with %v, want an error naming %q", err, want)
				}
			}
			var pe *task.PanicError
			if !errors.As(err, &pe) || len(pe.Stack) == 0 {
				t.Fatalf("engine stopped with %v, want a task.PanicError with its stack", err)
			}
			if got := readCommitted(t, addr, "out", 1, 3*time.Second); len(got) != 1 {
				t.Fatalf("output %v, want the one record before the panic", got)
			}
		})
	}
}
