package engine_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
)

// TestCaughtUpInputCutsAtTheMinimumInterval: a steady input the engine
// keeps up with (its polls never empty, so the drained rule never fires)
// is committed at the minimum barrier interval, not the full one: with
// a 3 s interval and 100 ms minimum, 2.5 s of a record every 5 ms commit
// in many epochs, not in one or two, and every record comes out.
func TestCaughtUpInputCutsAtTheMinimumInterval(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	e, stop := runEngine(t, uppercase(), cfg(addr, "cadence", "num.stream.threads", "2",
		engine.BarrierIntervalMs, "3000", engine.BarrierMinIntervalMs, "100"))
	produce(t, addr, "in", []kv{{Key: "k", Value: "first"}})
	readCommitted(t, addr, "out", 1, 30*time.Second)
	before := e.Stats().Committed

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	n := 1
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); n++ {
		<-tick.C
		cl.Produce(ctx, &kgo.Record{Key: []byte("k" + strconv.Itoa(n%7)), Value: []byte(strconv.Itoa(n))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	epochs := e.Stats().Committed - before
	t.Logf("%d records over 2.5 s in %d epochs", n-1, epochs)
	if epochs < 6 {
		t.Errorf("%d epochs committed over 2.5 s of steady input, want at least 6 (a 3 s interval cut gives 1 or 2)", epochs)
	}
	if got := readCommitted(t, addr, "out", n, 30*time.Second); len(got) != n {
		t.Fatalf("%d records out, want %d", len(got), n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
