package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// pauseFor is how long a paused engine stays stopped: past its 3 s
// transaction timeout, after which kfake's timer aborts the transaction.
const pauseFor = 6 * time.Second

// TestEnginePausedPastTransactionTimeout stops the engine's process
// (SIGSTOP, as a long GC pause or a frozen VM would) for longer than its
// transaction timeout, three times, each the moment it has opened a
// transaction on the broker (the embedded broker's control hook on a
// transactional produce sends the signal), and lets it go on (SIGCONT). The
// broker aborts the open transaction and fences the producer meanwhile
// (the group keeps the member: its session timeout is longer than a
// pause). On waking the engine must notice, recover and reprocess: every
// count exactly once, checked by franz-go and by kcat, and every pause
// noticed.
func TestEnginePausedPastTransactionTimeout(t *testing.T) {
	kafkatest.Parallel(t)
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	addr := b.Addr()
	const pauses, keys, per = 3, 100, 40
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+addr, "STOATFLOW_CRASH_LANES=4", "STOATFLOW_CRASH_TOPOLOGY=counts",
		"STOATFLOW_CRASH_TXN_TIMEOUT=3000", "STOATFLOW_CRASH_SESSION_TIMEOUT=45000")
	cmd.Stderr = os.Stderr
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var armed atomic.Bool
	stopped := make(chan struct{}, 1)
	// franz-go adds partitions to a transaction with its first produce
	// to them (KIP-890), so the first transactional produce opens it.
	b.Cluster().ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if req := kreq.(*kmsg.ProduceRequest); req.TransactionID != nil && armed.CompareAndSwap(true, false) {
			_ = cmd.Process.Signal(syscall.SIGSTOP)
			stopped <- struct{}{}
		}
		return nil, nil, false
	})
	slice := func(i int) []kv { return in[i*len(in)/(pauses+1) : (i+1)*len(in)/(pauses+1)] }
	for i := range pauses {
		armed.Store(true)
		produce(t, addr, "in", slice(i))
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("pause %d: the engine opened no transaction within 30 s", i+1)
		}
		time.Sleep(pauseFor)
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		t.Logf("pause %d done (%v)", i+1, pauseFor)
	}
	produce(t, addr, "in", slice(pauses))
	got := readCommitted(t, addr, "out", len(in), 3*time.Minute)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	stopsInTime(t, cmd.Wait)
	checkCounts(t, got, keys, per)
	checkCountsWithKcat(t, addr, keys, per)
	var committed, aborted, resets int
	if _, err := fmt.Sscanf(stdout.String(), "stats committed=%d aborted=%d resets=%d", &committed, &aborted, &resets); err != nil {
		t.Fatalf("the engine's stats: %v (stdout %q)", err, stdout.String())
	}
	t.Logf("%d epochs committed, %d aborted, %d resets", committed, aborted, resets)
	// Each transaction the broker aborted under the stopped engine must
	// have been noticed: an aborted epoch, or a reset when the abort was
	// met while recovering from the pause before.
	if aborted == 0 || aborted+resets < pauses {
		t.Errorf("%d epochs aborted and %d resets, want at least one abort and %d in all: one per transaction the broker aborted under the stopped engine", aborted, resets, pauses)
	}
}

// TestBrokerPausedPastTransactionTimeout stops the embedded broker's
// process (SIGSTOP) for longer than the engine's transaction timeout,
// three times at seeded moments while input trickles in, and lets it go
// on: every connection hangs meanwhile (the test's producer's too), and on
// waking the broker finds a transaction the engine had open past its
// timeout and aborts it. The engine
// must ride it out: every count exactly once, checked by franz-go and
// kcat, and Run still stops cleanly.
func TestBrokerPausedPastTransactionTimeout(t *testing.T) {
	kafkatest.Parallel(t)
	kafkatest.EmbeddedOnly(t)
	rng := rand.New(rand.NewPCG(crashSeed(t), 23))
	dir, port := t.TempDir(), freePort(t)
	b := startBrokerChild(t, dir, port)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	const pauses, keys, per = 3, 100, 30
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	slice := func(i int) []kv { return in[i*len(in)/(pauses+1) : (i+1)*len(in)/(pauses+1)] }
	e, stop := runEngine(t, counts(), cfg(addr, "broker-paused", "transaction.timeout.ms", "3000", "session.timeout.ms", "45000"))
	for i := range pauses {
		// The slice trickles in over about two seconds, and the broker
		// stops in the middle of it, while the engine is mid-epoch.
		trickled := make(chan struct{})
		go func() {
			defer close(trickled)
			recs := slice(i)
			for j := 0; j < len(recs); j += 25 {
				produce(t, addr, "in", recs[j:min(j+25, len(recs))])
				time.Sleep(60 * time.Millisecond)
			}
		}()
		// The crash point: a seeded share of the slice processed.
		at := e.Stats().Records + int64(rng.IntN(len(slice(i))))
		waitUntil(5*time.Second, func() bool { return e.Stats().Records >= at })
		if err := b.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pauseFor)
		if err := b.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		<-trickled
		t.Logf("pause %d done; engine %v, %d epochs committed, %d aborted", i+1, e.State(), e.Stats().Committed, e.Stats().Aborted)
	}
	produce(t, addr, "in", slice(pauses))
	got := readCommitted(t, addr, "out", len(in), 2*time.Minute)
	stopsInTime(t, stop)
	checkCounts(t, got, keys, per)
	checkCountsWithKcat(t, addr, keys, per)
}
