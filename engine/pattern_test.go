package engine_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

func fromPattern(re string) *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.StreamPattern(b, dsl.ConsumedWith(str, str), regexp.MustCompile(re)).To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestPatternSourceReadsMatchingTopics: a pattern source reads every
// topic that matches when the engine starts.
func TestPatternSourceReadsMatchingTopics(t *testing.T) {
	addr := startBroker(t, map[string]int32{"clicks-eu": 2, "clicks-us": 1, "views": 1, "out": 1})
	produce(t, addr, "clicks-eu", []kv{{Key: "a", Value: "eu"}})
	produce(t, addr, "clicks-us", []kv{{Key: "b", Value: "us"}})
	produce(t, addr, "views", []kv{{Key: "c", Value: "view"}})
	_, stop := runEngine(t, fromPattern(`^clicks-.*`), cfg(addr, "pattern"))
	got := readCommitted(t, addr, "out", 2, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, r := range got {
		values = append(values, r.Value)
	}
	slices.Sort(values)
	if !slices.Equal(values, []string{"eu", "us"}) {
		t.Fatalf("read %q, want eu and us", values)
	}
}

func TestPatternMatchingNothingIsAStartError(t *testing.T) {
	addr := startBroker(t, map[string]int32{"views": 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := engine.New(fromPattern(`^clicks-.*`), cfg(addr, "nothing")).Run(ctx)
	if !errors.Is(err, engine.ErrMissingTopic) {
		t.Fatalf("got %v, want ErrMissingTopic", err)
	}
}
