package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestNotReadyBeforeTheGroupAssigns holds the group's first SyncGroup
// answer (the assignment) on the broker: until it is let through the
// engine has no partitions, so /health/readiness must say 503 and the
// state must not be RUNNING; once it is, readiness comes up with both
// partitions held.
func TestNotReadyBeforeTheGroupAssigns(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 2, "out": 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	release := make(chan struct{})
	var held, seen atomic.Bool
	b.Cluster().ControlKey(int16(kmsg.SyncGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if held.CompareAndSwap(false, true) {
			seen.Store(true)
			b.Cluster().SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	e := engine.New(uppercase(), cfg(b.Addr(), "ready-app"), engine.WithLogger(testLogger(t)), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	ready := func() int {
		resp, err := http.Get("http://" + e.HTTPAddr() + "/health/readiness")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	eventually(t, 20*time.Second, func() string { return "the group never sent SyncGroup" }, func() bool { return seen.Load() && e.HTTPAddr() != "" })
	// The engine has had every chance to call itself ready; it holds
	// nothing, so it must not.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if code := ready(); code != http.StatusServiceUnavailable {
			t.Fatalf("readiness %d with the assignment held back (state %s, assignment %v), want 503", code, e.State(), e.Assignment())
		}
		if st := e.State(); st == engine.Running {
			t.Fatalf("state %s with the assignment held back", st)
		}
	}
	close(release)
	eventually(t, 20*time.Second, func() string { return "never ready after the assignment" }, func() bool { return ready() == http.StatusOK })
	if a := e.Assignment(); len(a["in"]) != 2 {
		t.Fatalf("ready with assignment %v, want both partitions of in", a)
	}
}

// TestStartsWhileTheCoordinatorIsNotAvailable: a fresh cluster answers
// FindCoordinator with COORDINATOR_NOT_AVAILABLE until it has made
// __consumer_offsets. A topology that must run as one instance describes
// its group at start; that answer is to be waited out, not a failure (it
// failed TestTopicRead on a fresh real broker).
func TestStartsWhileTheCoordinatorIsNotAvailable(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 1, "out": 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	var refused atomic.Int32
	b.Cluster().ControlKey(int16(kmsg.FindCoordinator), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if refused.Add(1) > 3 {
			return nil, nil, false // the control is dropped: answered as usual from now on
		}
		b.Cluster().KeepControl()
		req := kreq.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		keys := req.CoordinatorKeys
		if len(keys) == 0 {
			keys = []string{req.CoordinatorKey}
		}
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, k := range keys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode = k, kerr.CoordinatorNotAvailable.Code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil, true
	})
	produceTo(t, b.Addr(), "in", 0, 1000)
	e, stop := runEngine(t, windowedCounts(), cfg(b.Addr(), "coordinator-app"))
	eventually(t, 20*time.Second, func() string { return fmt.Sprintf("state %s, %d records", e.State(), e.Stats().Records) }, func() bool {
		return e.Stats().Records == 1 || e.State() == engine.Error
	})
	if err := stop(); err != nil {
		t.Fatalf("engine: %v", err)
	}
	if n := refused.Load(); n < 4 {
		t.Fatalf("FindCoordinator asked %d times, want the 3 refusals and one answer", n)
	}
}

// TestReadyWithNothingAssigned: a second instance on a one-partition
// topic is told, by a completed rebalance, that it holds nothing; that is
// an assignment too, and it is ready, while the first keeps the
// partition.
func TestReadyWithNothingAssigned(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
	first, _ := runEngine(t, uppercase(), cfg(addr, "spare-app", "stoatflow.instance.id", "a"))
	eventually(t, 20*time.Second, func() string { return "the first instance never held in" }, func() bool {
		return first.State() == engine.Running && len(first.Assignment()["in"]) == 1
	})
	second, _ := runEngine(t, uppercase(), cfg(addr, "spare-app", "stoatflow.instance.id", "b"))
	eventually(t, 30*time.Second, func() string {
		return fmt.Sprintf("second: state %s assignment %v; first: state %s assignment %v", second.State(), second.Assignment(), first.State(), first.Assignment())
	}, func() bool {
		return second.State() == engine.Running && len(second.Assignment()) == 0 && first.State() == engine.Running && len(first.Assignment()["in"]) == 1
	})
}
