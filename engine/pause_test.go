package engine_test

import (
	"bytes"
	"context"
	"fmt"
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
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("engine: %v", err)
		}
	case <-time.After(35 * time.Second):
		t.Fatal("the engine did not stop within its 30 s shutdown deadline (+5 s)")
	}
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
