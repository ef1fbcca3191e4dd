package engine_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/assign"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestStopWhileProducesHangUnderBackPressure: the broker stops answering
// the engine's produce and transaction requests while its fetches still
// flow, in the middle of a backlog. The committer hangs producing the
// epoch, the lanes wait to hand it their reports, the dispatcher waits
// for room in the lanes with input to spare. Every one of those waits must
// see the stop: Run returns within the shutdown deadline (3 s) plus 5 s.
func TestStopWhileProducesHangUnderBackPressure(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const backlog = 400000
	var in []kv
	for i := range backlog {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%500), Value: "x"})
	}
	produce(t, b.Addr(), "in", in)

	// The hole: once the engine's fifth produce request came, produce,
	// end and add-partitions requests sleep until released; everything
	// else is answered.
	var hole atomic.Bool
	var produced atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	for _, key := range []kmsg.Key{kmsg.Produce, kmsg.EndTxn, kmsg.AddPartitionsToTxn, kmsg.TxnOffsetCommit, kmsg.AddOffsetsToTxn} {
		b.Cluster().ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			b.Cluster().KeepControl()
			if key == kmsg.Produce && produced.Add(1) == 5 {
				hole.Store(true)
			}
			if hole.Load() {
				b.Cluster().SleepControl(func() { <-release })
			}
			return nil, nil, false
		})
	}
	e, stop := runEngine(t, counts(), cfg(b.Addr(), "stop-produce-hang", engine.ShutdownTimeoutMs, "3000",
		"num.stream.threads", "2", engine.LaneQueueSize, "64", engine.CommitHeldRecords, "256", engine.BufferMemory, "65536"))
	eventually(t, 60*time.Second, func() string { return "the hole did not open" }, hole.Load)
	// Long enough for every queue to fill behind the hanging commit.
	time.Sleep(3 * time.Second)
	stopsWithinDeadline(t, e, stop, "its commit hanging under back-pressure")
	once.Do(func() { close(release) })
}

// TestStopAfterRebalanceWhileProducesHang: the broker stops answering the
// engine's produce and transaction requests under a trickle of input, and
// another member joins the group: partitions are revoked while the
// epoch's commit hangs, and the runtime resets. Neither the reset nor
// anything else may wait forever on the hanging commit: a stop returns
// within the shutdown deadline (3 s) plus 5 s.
func TestStopAfterRebalanceWhileProducesHang(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	var hole atomic.Bool
	var held atomic.Int32 // requests the hole holds
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	for _, key := range []kmsg.Key{kmsg.Produce, kmsg.EndTxn, kmsg.AddPartitionsToTxn, kmsg.TxnOffsetCommit, kmsg.AddOffsetsToTxn} {
		b.Cluster().ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			b.Cluster().KeepControl()
			if p, ok := req.(*kmsg.ProduceRequest); ok && p.TransactionID == nil {
				// The test's own input gets through.
				return nil, nil, false
			}
			if hole.Load() {
				held.Add(1)
				b.Cluster().SleepControl(func() { <-release })
			}
			return nil, nil, false
		})
	}
	var in []kv
	for i := range 2000 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%50), Value: "x"})
	}
	produce(t, b.Addr(), "in", in)
	e, stop := runEngine(t, counts(), cfg(b.Addr(), "stop-rebalance-hang", engine.ShutdownTimeoutMs, "3000"))
	eventually(t, 30*time.Second, func() string { return "nothing committed" }, func() bool { return e.Stats().Committed > 0 })
	hole.Store(true)
	// The engine's next epoch hangs in its produce.
	produce(t, b.Addr(), "in", in[:200])
	eventually(t, 30*time.Second, func() string { return "no request of the engine's next epoch reached the hole" }, func() bool { return held.Load() > 0 })
	// Another member joins: the engine's partitions are revoked. It
	// offers the engine's group protocol: a member that offers another
	// is refused (INCONSISTENT_GROUP_PROTOCOL) and rebalances nothing.
	other, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("stop-rebalance-hang"), kgo.ConsumeTopics("in"),
		kgo.Balancers(assign.New(assign.Options{Subtopologies: map[string]int{"in": 0}})))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	pollCtx, pollCancel := context.WithCancel(context.Background())
	defer pollCancel()
	go func() {
		for pollCtx.Err() == nil {
			other.PollFetches(pollCtx)
		}
	}()
	// The rebalance is under way: it waits on the engine, whose commit
	// hangs (franz-go's session lets a revocation through only between
	// transactions).
	adm := kafkatest.Admin(t, b.Addr())
	state := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, "stop-rebalance-hang")
		if err != nil {
			return err.Error()
		}
		return gs["stop-rebalance-hang"].State
	}
	eventually(t, 30*time.Second, func() string { return "the group is " + state() + ", not rebalancing" },
		func() bool { return state() == "PreparingRebalance" })
	stopsWithinDeadline(t, e, stop, "rebalanced while its commit hangs")
	once.Do(func() { close(release) })
}
