package engine_test

import (
	"context"
	"errors"
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
	deadline := time.Now().Add(20 * time.Second)
	for e.Stats().Records < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
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
