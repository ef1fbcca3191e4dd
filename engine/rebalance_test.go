package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// TestRebalanceExactlyOnce runs two instances in one group while records
// arrive: the second joins mid-stream and takes partitions (and their
// state, restored from the changelogs) from the first, then the first
// leaves and hands them back. Every count of every key must be committed
// exactly once.
func TestRebalanceExactlyOnce(t *testing.T) {
	const keys, per = 100, 60
	addr := startKafka(t, map[string]int32{"in": 6, "out": 6})
	batch := func(round int) []kv {
		var in []kv
		for i := range keys * per / 6 {
			in = append(in, kv{Key: "k" + strconv.Itoa((round*keys*per/6+i)%keys), Value: "x"})
		}
		return in
	}
	waitRecords := func(e *engine.Engine, n int64) {
		waitUntil(30*time.Second, func() bool { return e.Stats().Records >= n })
	}
	// owned waits until e's lanes run exactly n of the six partitions, and
	// returns them.
	owned := func(name string, e *engine.Engine, n int) []int32 {
		t.Helper()
		var ps []int32
		eventually(t, 60*time.Second, func() string { return fmt.Sprintf("instance %s runs partitions %v, want %d of them", name, ps, n) },
			func() bool { ps = e.Assignment()["in"]; return len(ps) == n })
		return ps
	}
	// Default instance ids: each instance keeps its own in its state
	// directory, so the two neither share a transactional id nor fence
	// each other.
	dirA, dirB := t.TempDir(), t.TempDir()
	a, stopA := runEngine(t, counts(), cfg(addr, "rebalance", "state.dir", dirA))
	owned("a", a, 6)
	produce(t, addr, "in", batch(0))
	waitRecords(a, int64(keys*per/6))
	produce(t, addr, "in", batch(1))
	b, stopB := runEngine(t, counts(), cfg(addr, "rebalance", "state.dir", dirB))
	produce(t, addr, "in", batch(2))
	// The group splits the partitions: each instance runs three, none
	// both, so state really moved to b (restored from the changelogs).
	psA, psB := owned("a", a, 3), owned("b", b, 3)
	if both := slices.DeleteFunc(slices.Clone(psA), func(p int32) bool { return !slices.Contains(psB, p) }); len(both) > 0 {
		t.Fatalf("partitions %v run on both instances (a %v, b %v)", both, psA, psB)
	}
	produce(t, addr, "in", batch(3))
	if err := stopA(); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	// And back: b takes a's partitions.
	owned("b", b, 6)
	produce(t, addr, "in", batch(4))
	produce(t, addr, "in", batch(5))
	got := readCommitted(t, addr, "out", keys*per, 60*time.Second)
	if err := stopB(); err != nil {
		t.Fatalf("second instance: %v", err)
	}
	checkCounts(t, got, keys, per)
	idA, errA := os.ReadFile(filepath.Join(dirA, "rebalance", "instance.id"))
	idB, errB := os.ReadFile(filepath.Join(dirB, "rebalance", "instance.id"))
	if errA != nil || errB != nil || len(idA) == 0 || string(idA) == string(idB) {
		t.Errorf("kept instance ids %q (%v) and %q (%v): want two different ids", idA, errA, idB, errB)
	}
	if n := a.Stats().Aborted + b.Stats().Aborted; n > 2 {
		// A rebalance can abort an epoch in flight; a shared
		// transactional id would abort one at every start of the other.
		t.Errorf("%d epochs aborted between the instances", n)
	}
}

// TestRevocationWhileIdleAbortsNothing: an instance that gives partitions
// up while it has no transaction open commits its next epoch. franz-go
// remembers the revocation until a transaction ends and would abort that
// epoch for nothing (and hide a further revocation from the engine); the
// runtime settles the session at every reset.
func TestRevocationWhileIdleAbortsNothing(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 6, "out": 6})
	owned := func(name string, e *engine.Engine, n int) {
		t.Helper()
		var ps []int32
		eventually(t, 60*time.Second, func() string { return fmt.Sprintf("instance %s runs partitions %v, want %d of them", name, ps, n) },
			func() bool { ps = e.Assignment()["in"]; return len(ps) == n })
	}
	a, stopA := runEngine(t, counts(), cfg(addr, "idle-revoke", "stoatflow.instance.id", "a"))
	owned("a", a, 6)
	b, stopB := runEngine(t, counts(), cfg(addr, "idle-revoke", "stoatflow.instance.id", "b"))
	owned("a", a, 3)
	owned("b", b, 3)
	var in []kv
	for i := range 600 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%60), Value: "x"})
	}
	produce(t, addr, "in", in)
	got := readCommitted(t, addr, "out", len(in), 60*time.Second)
	for name, stop := range map[string]func() error{"a": stopA, "b": stopB} {
		if err := stop(); err != nil {
			t.Fatalf("instance %s: %v", name, err)
		}
	}
	checkCounts(t, got, 60, 10)
	if n := a.Stats().Aborted; n != 0 {
		t.Errorf("instance a aborted %d epochs after giving partitions up while idle, want 0", n)
	}
}

func rekeyedCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.GroupBy(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string { return v }, dsl.GroupedWith(str, str)).
		Count(dsl.MaterializedAs[string, int64]("by-value")).ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
	return b.Topology()
}

// TestSecondInstanceRefusedBehindBoundary: a topology that re-keys in
// memory cannot be split across instances, so a second one refuses to
// start instead of computing counts over half of the keys' records.
func TestSecondInstanceRefusedBehindBoundary(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	produce(t, addr, "in", []kv{{Key: "a", Value: "x"}})
	a, stopA := runEngine(t, rekeyedCounts(), cfg(addr, "rekey", "stoatflow.instance.id", "a", "session.timeout.ms", "6000"))
	waitUntil(20*time.Second, func() bool { return a.Stats().Records >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The second waits a session timeout for the first to leave (as a
	// crashed one would), then refuses.
	err := engine.New(rekeyedCounts(), cfg(addr, "rekey", "stoatflow.instance.id", "b", "session.timeout.ms", "6000")).Run(ctx)
	if !errors.Is(err, engine.ErrSplitBoundary) {
		t.Fatalf("second instance: got %v, want ErrSplitBoundary", err)
	}
	if !strings.Contains(err.Error(), "repartition") {
		t.Fatalf("error %q does not say what to do", err)
	}
	if err := stopA(); err != nil {
		t.Fatalf("first instance: %v", err)
	}
}

// TestRestartAfterCrashIsNotRefused: the member a killed instance leaves
// in the group expires with its session; the restart waits for that and
// runs, rather than taking its own predecessor for a second instance.
func TestRestartAfterCrashIsNotRefused(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	produce(t, addr, "in", []kv{{Key: "a", Value: "x"}, {Key: "b", Value: "y"}})
	// A group member that never leaves, as a SIGKILL leaves one: a static
	// member does not leave the group when it closes.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("restart"), kgo.ConsumeTopics("in"),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(time.Second), kgo.InstanceID("ghost"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	cl.PollFetches(ctx)
	cancel()
	cl.Close()
	e, stop := runEngine(t, rekeyedCounts(), cfg(addr, "restart", "session.timeout.ms", "6000"))
	got := readCommitted(t, addr, "out", 2, 40*time.Second)
	if err := stop(); err != nil {
		t.Fatalf("restart: %v (state %s)", err, e.State())
	}
	if len(got) != 2 {
		t.Fatalf("output %v, want 2 counts", got)
	}
}
