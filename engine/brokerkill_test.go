package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// brokerChildEnv, set to "DIR PORT", makes the test binary run an embedded
// broker on that data directory and port as a child process, until
// SIGTERM or SIGKILL.
const brokerChildEnv = "STOATFLOW_BROKER_CHILD"

func runBrokerChild(spec string) int {
	var dir string
	var port int
	if _, err := fmt.Sscanf(spec, "%s %d", &dir, &port); err != nil {
		fmt.Fprintln(os.Stderr, "broker child:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	b, err := broker.Start(ctx, broker.Options{Port: port, DataDir: dir, SyncWrites: true,
		SeedTopics: map[string]int32{"in": 4, "out": 4},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker child:", err)
		return 1
	}
	fmt.Println(b.Addr())
	<-ctx.Done()
	_ = b.Close()
	return 0
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startBrokerChild starts the broker child on dir and port and returns
// once it prints its address.
func startBrokerChild(t *testing.T, dir string, port int) *exec.Cmd {
	t.Helper()
	for attempt := 0; ; attempt++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), brokerChildEnv+"="+dir+" "+strconv.Itoa(port))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			return cmd
		}
		// The port may still be held by the killed predecessor's
		// socket for a moment.
		_ = cmd.Wait()
		if attempt >= 20 {
			t.Fatalf("the broker child did not start on port %d", port)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestBrokerKillExactlyOnce SIGKILLs the embedded broker (its data on
// disk) ten times at random points while the engine counts and input
// arrives, restarting it on the same port and directory each time. The
// engine must ride every outage out, and the committed output be exact.
func TestBrokerKillExactlyOnce(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	if os.Getenv("STOATCTL_TEST_EMBEDDED_BROKER_KILL") == "" {
		// Once in about 18 runs, a kill landed inside kfake's EndTxn, which
		// writes the commit markers partition by partition and the
		// offsets after them, with no commit record first: the restarted
		// broker then holds a transaction committed in some partitions
		// and not in others (a key's counts 3..6 twice). That is the
		// broker's atomicity, not the engine's (the same test on Apache
		// Kafka, TestRealBrokerKillExactlyOnce, runs in the real tier).
		// Open: docs/decisions/0003, docs/testing.md.
		t.Skip("the embedded broker's EndTxn is not atomic under SIGKILL (docs/decisions/0003); STOATCTL_TEST_EMBEDDED_BROKER_KILL=1 runs it")
	}
	const kills, keys, per = 10, 200, 22
	rng := rand.New(rand.NewPCG(crashSeed(t), 11))
	dir, port := t.TempDir(), freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	b := startBrokerChild(t, dir, port)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	slice := func(i int) []kv { return in[i*len(in)/(kills+1) : (i+1)*len(in)/(kills+1)] }
	e, stop := runEngine(t, counts(), cfg(addr, "broker-kill", "session.timeout.ms", "6000"))
	for i := range kills {
		produce(t, addr, "in", slice(i))
		time.Sleep(time.Duration(100+rng.IntN(1500)) * time.Millisecond)
		_ = b.Process.Kill()
		_ = b.Wait()
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		b = startBrokerChild(t, dir, port)
		t.Logf("broker kill %d done; engine state %v, %d epochs committed, %d aborted", i+1, e.State(), e.Stats().Committed, e.Stats().Aborted)
	}
	produce(t, addr, "in", slice(kills))
	got := readCommitted(t, addr, "out", len(in), 3*time.Minute)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("engine: %v", err)
		}
	case <-time.After(35 * time.Second):
		t.Fatalf("the engine did not stop within its 30 s shutdown deadline (+5 s)")
	}
	checkCounts(t, got, keys, per)
	checkCountsWithKcat(t, addr, keys, per)
}

// checkCountsWithKcat reads the output read-committed with kcat, a client
// that shares no code with the engine: each key must have exactly per
// results.
func checkCountsWithKcat(t *testing.T, addr string, keys, per int) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Log("kcat is not installed; the independent check is skipped (scripts/test.sh installs it)")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-b", addr, "-C", "-t", "out", "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%k\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	n := map[string]int{}
	for _, k := range strings.Fields(string(out)) {
		n[k]++
	}
	if len(n) != keys {
		t.Fatalf("kcat read %d keys, want %d", len(n), keys)
	}
	for k, c := range n {
		if c != per {
			t.Fatalf("kcat read %d results for key %s, want %d", c, k, per)
		}
	}
}

// TestRealBrokerKillExactlyOnce is TestBrokerKillExactlyOnce on Apache
// Kafka: a broker of the test's own, SIGKILLed ten times at seeded random
// points while input arrives and the engine counts, restarted each time on
// its data (log recovery, coordinators reloading). Real tier only.
func TestRealBrokerKillExactlyOnce(t *testing.T) {
	kb := kafkatest.StartCrashable(t)
	const kills, keys, per = 10, 200, 22
	rng := rand.New(rand.NewPCG(crashSeed(t), 13))
	addr := kb.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kafkatest.CreateTopics(ctx, kafkatest.Admin(t, addr), map[string]int32{"in": 4, "out": 4}); err != nil {
		t.Fatal(err)
	}
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	slice := func(i int) []kv { return in[i*len(in)/(kills+1) : (i+1)*len(in)/(kills+1)] }
	e, stop := runEngine(t, counts(), cfg(addr, "real-broker-kill", "session.timeout.ms", "10000"))
	for i := range kills {
		produce(t, addr, "in", slice(i))
		time.Sleep(time.Duration(100+rng.IntN(1500)) * time.Millisecond)
		kb.Kill(t)
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		kb.Restart(t)
		t.Logf("broker kill %d done; engine state %v, %d epochs committed, %d aborted", i+1, e.State(), e.Stats().Committed, e.Stats().Aborted)
	}
	produce(t, addr, "in", slice(kills))
	got := readCommitted(t, addr, "out", len(in), 3*time.Minute)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("engine: %v", err)
		}
	case <-time.After(35 * time.Second):
		t.Fatalf("the engine did not stop within its 30 s shutdown deadline (+5 s)")
	}
	checkCounts(t, got, keys, per)
	checkCountsWithKcat(t, addr, keys, per)
}

// TestStopWhileBrokerIsDown stops the engine while its broker is dead and
// stays dead: the final barrier cannot commit, and Run must still return
// within its shutdown deadline (3 s here) plus 5 s, not wait on the
// commit.
func TestStopWhileBrokerIsDown(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	dir, port := t.TempDir(), freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	b := startBrokerChild(t, dir, port)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	var in []kv
	for i := range 2000 {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%50), Value: "x"})
	}
	e, stop := runEngine(t, counts(), cfg(addr, "stop-broker-down", engine.ShutdownTimeoutMs, "3000"))
	produce(t, addr, "in", in)
	eventually(t, 30*time.Second, func() string { return "nothing committed" }, func() bool { return e.Stats().Committed > 0 })
	produce(t, addr, "in", in)
	_ = b.Process.Kill()
	_ = b.Wait()
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		t.Logf("stopped in %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(8 * time.Second):
		t.Fatalf("the engine did not stop within 8 s of a stop with its broker down (state %v)", e.State())
	}
}
