package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/inspect"
)

// TestRekeyThroughTopicOnTwoInstances: with stoatflow.topology.rekey=topic
// a re-keying count (refused on a second instance when it re-keys in
// memory) runs on two instances that split both the input's and the
// repartition topic's partitions, while records arrive and the second
// instance joins and leaves. Every count of every new key is committed
// exactly once, and the repartition topic is purged below what was
// committed.
func TestRekeyThroughTopicOnTwoInstances(t *testing.T) {
	const values, per = 60, 40
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	batch := func(round int) []kv {
		var in []kv
		for i := range values * per / 4 {
			n := round*values*per/4 + i
			in = append(in, kv{Key: "k" + strconv.Itoa(n%37), Value: "k" + strconv.Itoa(n%values)})
		}
		return in
	}
	c := func(id string) map[string]string {
		return cfg(addr, "rekey-topic", "stoatflow.instance.id", id, "session.timeout.ms", "10000",
			config.TopologyRekey, config.RekeyTopic, config.RepartitionPurgeIntervalMs, "200")
	}
	owned := func(name string, e *engine.Engine, topic string, n int) []int32 {
		t.Helper()
		var ps []int32
		eventually(t, 60*time.Second, func() string {
			return fmt.Sprintf("instance %s runs %s partitions %v, want %d of them", name, topic, ps, n)
		},
			func() bool { ps = e.Assignment()[topic]; return len(ps) == n })
		return ps
	}
	const repartition = "rekey-topic-by-value-repartition"
	a, stopA := runEngine(t, rekeyedCounts(), c("a"))
	owned("a", a, "in", 4)
	produce(t, addr, "in", batch(0))
	b, stopB := runEngine(t, rekeyedCounts(), c("b"))
	produce(t, addr, "in", batch(1))
	owned("a", a, "in", 2)
	owned("b", b, "in", 2)
	// The downstream tasks are spread too: b runs some of the
	// repartition topic's partitions.
	owned("b", b, repartition, 2)
	// Each runs the count's tasks of its repartition partitions, none
	// both (Engine.Tasks, /info's tasks).
	eventually(t, 30*time.Second, func() string { return fmt.Sprintf("tasks a %v, b %v", a.Tasks(), b.Tasks()) }, func() bool {
		ta, tb := a.Tasks(), b.Tasks()
		if len(ta) != 2 || len(tb) != 2 {
			return false
		}
		for _, id := range ta {
			if slices.Contains(tb, id) {
				return false
			}
		}
		return true
	})
	produce(t, addr, "in", batch(2))
	if err := stopB(); err != nil {
		t.Fatalf("instance b: %v", err)
	}
	owned("a", a, "in", 4)
	produce(t, addr, "in", batch(3))
	got := readCommitted(t, addr, "out", values*per, 60*time.Second)
	checkCounts(t, got, values, per)

	// Purged: the repartition topic's log start moved past its first
	// records on some partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var starts kadm.ListedOffsets
	eventually(t, 30*time.Second, func() string { return fmt.Sprintf("repartition topic not purged: log starts %v", starts) }, func() bool {
		starts, err = adm.ListStartOffsets(context.Background(), repartition)
		if err != nil {
			t.Fatal(err)
		}
		moved := false
		starts.Each(func(o kadm.ListedOffset) { moved = moved || o.Offset > 0 })
		return moved
	})
	if err := stopA(); err != nil {
		t.Fatalf("instance a: %v", err)
	}
}

// TestTopologyEndpointThroughTopics: under rekey=topic the running
// engine's /topology text describes its boundaries as it runs them, a
// sink and a source of a repartition topic, not as in-memory boundaries.
func TestTopologyEndpointThroughTopics(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	e := engine.New(rekeyedCounts(), cfg(addr, "describe-topic", config.TopologyRekey, config.RekeyTopic),
		engine.WithLogger(testLogger(t)), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, 20*time.Second, func() string { return "never running" }, func() bool { return e.State() == engine.Running })
	text, err := inspect.NewClient("http://"+e.HTTPAddr()).Topology(context.Background(), "text")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(text); !strings.Contains(s, "(topic: by-value-repartition)") || !strings.Contains(s, "(topics: [by-value-repartition])") ||
		strings.Contains(s, "in-memory boundary") {
		t.Fatalf("/topology under rekey=topic:\n%s\nwant the sink and the source of by-value-repartition, no in-memory boundary", s)
	}
}
