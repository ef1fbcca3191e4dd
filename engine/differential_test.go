package engine_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/testdriver"
)

// TestDifferentialDriverVsEngine runs every bundled example through the
// test driver and through the live engine on the embedded broker with 1,
// 4 and 16 lanes, and requires the same committed output per key, in the
// same order per key.
//
// Inputs are produced one run of same-topic records at a time, each run
// committed before the next is produced: across topics the engine
// dispatches oldest head first within what one poll returned, so without
// the wait a table update and a stream record produced back to back may
// meet in either order (Kafka Streams has the same race, which
// max.task.idle.ms narrows).
func TestDifferentialDriverVsEngine(t *testing.T) {
	for _, ex := range examples.All() {
		want := driverOutput(t, ex)
		for _, lanes := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("%s/lanes=%d", ex.Name, lanes), func(t *testing.T) {
				got := engineOutput(t, ex, lanes)
				for _, topic := range slices.Sorted(maps.Keys(want)) {
					w, g := want[topic], got[topic]
					for _, k := range slices.Sorted(maps.Keys(w)) {
						if !slices.Equal(w[k], g[k]) {
							t.Errorf("%s key %q: engine %q, driver %q", topic, k, g[k], w[k])
						}
					}
					for k := range g {
						if _, ok := w[k]; !ok {
							t.Errorf("%s key %q: engine wrote %q, driver nothing", topic, k, g[k])
						}
					}
				}
			})
		}
	}
}

// perKey is an output topic's values by key, in order.
type perKey map[string][]string

func driverOutput(t *testing.T, ex examples.Example) map[string]perKey {
	d, err := testdriver.New(ex.Build(), ex.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, in := range ex.Inputs {
		if err := d.PipeRaw(in.Topic, testdriver.RawRecord{Key: []byte(in.Key), Value: []byte(in.Value), Timestamp: in.Timestamp}); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]perKey{}
	for _, o := range ex.Outputs {
		pk := perKey{}
		for _, r := range d.ReadRaw(o.Topic) {
			pk[string(r.Key)] = append(pk[string(r.Key)], string(r.Value))
		}
		out[o.Topic] = pk
	}
	return out
}

func engineOutput(t *testing.T, ex examples.Example, lanes int) map[string]perKey {
	topics := map[string]int32{}
	for _, tp := range ex.InputTopics() {
		topics[tp] = 4
	}
	for _, o := range ex.Outputs {
		topics[o.Topic] = 4
	}
	addr := startBroker(t, topics)
	c := cfg(addr, ex.Name, "num.stream.threads", fmt.Sprint(lanes))
	for k, v := range ex.Config {
		if k != "application.id" {
			c[k] = v
		}
	}
	e, stop := runEngine(t, ex.Build(), c)
	produced := 0
	for i := 0; i < len(ex.Inputs); {
		j := i
		var run []kv
		for ; j < len(ex.Inputs) && ex.Inputs[j].Topic == ex.Inputs[i].Topic; j++ {
			in := ex.Inputs[j]
			run = append(run, kv{Key: in.Key, Value: in.Value, Timestamp: in.Timestamp})
		}
		produce(t, addr, ex.Inputs[i].Topic, run)
		produced += len(run)
		deadline := time.Now().Add(30 * time.Second)
		for e.Stats().Records < int64(produced) {
			if time.Now().After(deadline) {
				t.Fatalf("engine committed %d of %d records", e.Stats().Records, produced)
			}
			time.Sleep(10 * time.Millisecond)
		}
		i = j
	}
	out := map[string]perKey{}
	for _, o := range ex.Outputs {
		// Everything is committed; an empty read says the output is.
		pk := perKey{}
		for _, r := range readCommitted(t, addr, o.Topic, 1<<30, 2*time.Second) {
			pk[r.Key] = append(pk[r.Key], r.Value)
		}
		out[o.Topic] = pk
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	_ = engine.Running
	return out
}
