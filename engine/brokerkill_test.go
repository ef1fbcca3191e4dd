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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	// SIGUSR1 arms a kill inside the next commit: the child then SIGKILLs
	// itself when an EndTxn that commits arrives, after the broker has
	// logged its commit intent and before kfake writes a marker, the
	// moment that used to leave a transaction half committed.
	armed := make(chan os.Signal, 1)
	signal.Notify(armed, syscall.SIGUSR1)
	var inCommit atomic.Bool
	go func() {
		for range armed {
			inCommit.Store(true)
		}
	}()
	b.Cluster().ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		if req.(*kmsg.EndTxnRequest).Commit && inCommit.Load() {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return nil, nil, false
	})
	fmt.Println(b.Addr())
	<-ctx.Done()
	_ = b.Close()
	return 0
}

// awaitDeath waits for a broker child armed to die inside its next commit;
// if no commit comes within 10 s (the engine is recovering), it SIGKILLs
// the child there and then.
func awaitDeath(t *testing.T, b *exec.Cmd) {
	t.Helper()
	died := make(chan struct{})
	go func() { _ = b.Wait(); close(died) }()
	select {
	case <-died:
	case <-time.After(10 * time.Second):
		t.Log("no commit came within 10 s of arming the kill; killing the broker now")
		_ = b.Process.Kill()
		<-died
	}
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
// once it prints its address. A killed predecessor's socket may hold the
// port for a moment: it first waits until the port can be bound.
func startBrokerChild(t *testing.T, dir string, port int) *exec.Cmd {
	t.Helper()
	eventually(t, 10*time.Second, func() string { return fmt.Sprintf("port %d still in use", port) }, func() bool {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			ln.Close()
		}
		return err == nil
	})
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
	if sc := bufio.NewScanner(out); !sc.Scan() {
		_ = cmd.Wait()
		t.Fatalf("the broker child did not start on port %d", port)
	}
	return cmd
}

// killBrokerUnderLoad is the body of the broker-kill tests: input arrives
// in kills+1 slices; after each of the first kills slices, once the engine
// has committed a seeded share of it (the crash point), the broker is
// killed and restarted. The output must then be exact, read back by
// franz-go and by kcat, and the engine must stop within its deadline.
//
// arm, when not nil, is called once each slice is produced; when it
// returns true it has armed the broker to die inside its next commit (the
// commit of that slice's records, as a rule), and kill then waits for that
// death rather than sending a SIGKILL at the crash point.
func killBrokerUnderLoad(t *testing.T, addr, app string, rng *rand.Rand, arm func() bool, kill func(armed bool), restart func()) {
	const kills, keys, per = 10, 200, 22
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	slice := func(i int) []kv { return in[i*len(in)/(kills+1) : (i+1)*len(in)/(kills+1)] }
	e, stop := runEngine(t, counts(), cfg(addr, app, "session.timeout.ms", "10000"))
	for i := range kills {
		at := e.Stats().Records + int64(rng.IntN(len(slice(i))))
		produce(t, addr, "in", slice(i))
		// Armed only once the slice is in: a broker that died inside a
		// commit while the test still produced would leave the produce
		// waiting for a broker that only the test restarts.
		armed := arm != nil && arm()
		if !armed {
			// The crash point: a seeded number of this slice's records
			// committed, or a few seconds if the engine is still
			// recovering from the last kill (then the kill lands during
			// recovery).
			waitUntil(5*time.Second, func() bool { return e.Stats().Records >= at })
		}
		kill(armed)
		restart()
		t.Logf("broker kill %d done (inside a commit: %v); engine state %v, %d epochs committed, %d aborted", i+1, armed, e.State(), e.Stats().Committed, e.Stats().Aborted)
	}
	produce(t, addr, "in", slice(kills))
	got := readCommitted(t, addr, "out", len(in), 3*time.Minute)
	stopsInTime(t, stop)
	checkCounts(t, got, keys, per)
	checkCountsWithKcat(t, addr, keys, per)
}

// TestBrokerKillExactlyOnce SIGKILLs the embedded broker (its data on
// disk) ten times at random points while the engine counts and input
// arrives, restarting it on the same port and directory each time. The
// engine must ride every outage out, and the committed output be exact.
//
// Half the kills (seeded) land inside a commit: the broker dies as an
// EndTxn that commits arrives, which kfake alone would have left committed
// in some partitions only (docs/decisions/0003, 0012).
func TestBrokerKillExactlyOnce(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	rng := rand.New(rand.NewPCG(crashSeed(t), 11))
	dir, port := t.TempDir(), freePort(t)
	b := startBrokerChild(t, dir, port)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	killBrokerUnderLoad(t, "127.0.0.1:"+strconv.Itoa(port), "broker-kill", rng,
		func() bool {
			if rng.IntN(2) != 0 {
				return false
			}
			if err := b.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			return true
		},
		func(armed bool) {
			if armed {
				awaitDeath(t, b)
				return
			}
			_ = b.Process.Kill()
			_ = b.Wait()
		},
		func() { b = startBrokerChild(t, dir, port) })
}

// stopsInTime calls stop (Run's stop, or the wait for a child engine
// sent SIGTERM) and fails t unless it returns nil within the engine's
// 30 s shutdown deadline plus 5 s.
func stopsInTime(t *testing.T, stop func() error) {
	t.Helper()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("engine: %v", err)
		}
	case <-time.After(35 * time.Second):
		t.Fatal("the engine did not stop within its 30 s shutdown deadline (+5 s)")
	}
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
//
// The broker has a controller process of its own that is not killed, as
// in a production KRaft cluster, and each restart waits until the
// controller has fenced the dead broker. A single combined node killed
// whole can complete a transaction it recovers in PREPARE_COMMIT without
// writing its markers, leaving it hanging in every partition
// (docs/testing.md): Apache Kafka's behaviour, which this test used to
// meet about every other run.
func TestRealBrokerKillExactlyOnce(t *testing.T) {
	kb := kafkatest.StartCrashable(t)
	rng := rand.New(rand.NewPCG(crashSeed(t), 13))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kafkatest.CreateTopics(ctx, kafkatest.Admin(t, kb.Addr()), map[string]int32{"in": 4, "out": 4}); err != nil {
		t.Fatal(err)
	}
	killBrokerUnderLoad(t, kb.Addr(), "real-broker-kill", rng, nil, func(bool) { kb.Kill(t) }, func() { kb.Restart(t) })
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

// TestBrokerRestartsAreNotATwin SIGKILLs and restarts the embedded broker
// three times within about half a minute while input flows and the engine
// counts. A restart aborts and fences the open transaction, so the engine
// meets three fencings within a minute: that is the brokers coming back,
// not another instance with its transactional id, and it must reconnect
// each time and go on, with exact output (issue 37: the third fencing
// stopped the engine, blaming a twin that did not exist).
func TestBrokerRestartsAreNotATwin(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	const restarts, keys, per = 3, 50, 120
	dir, port := t.TempDir(), freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	b := startBrokerChild(t, dir, port)
	t.Cleanup(func() { _ = b.Process.Kill(); _ = b.Wait() })
	e, stop := runEngine(t, counts(), cfg(addr, "broker-restarts", "session.timeout.ms", "10000"))
	// Input flows all along, a record every 3 ms, so that a
	// transaction is open whenever the broker dies.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range keys * per {
			cl.Produce(context.Background(), &kgo.Record{Key: []byte("k" + strconv.Itoa(i%keys)), Value: []byte("x")}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Error(err)
				}
			})
			time.Sleep(3 * time.Millisecond)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	for i := range restarts {
		// The engine has committed since the last restart: it saw the
		// brokers come back.
		committed := e.Stats().Committed
		eventually(t, time.Minute, func() string { return fmt.Sprintf("nothing committed after restart %d", i) }, func() bool { return e.Stats().Committed > committed+2 })
		_ = b.Process.Kill()
		_ = b.Wait()
		b = startBrokerChild(t, dir, port)
		t.Logf("restart %d at %s; engine state %v, %d epochs committed, %d aborted", i+1, time.Since(start).Round(time.Millisecond), e.State(), e.Stats().Committed, e.Stats().Aborted)
	}
	<-produced
	// The test's producer is idempotent, but the embedded broker does not
	// keep producer sequences across a SIGKILL: a produce retried across
	// a restart may be written twice. The input as written is the truth
	// the counts are held to.
	input := readCommitted(t, addr, "in", keys*per, time.Minute)
	want := map[string]int64{}
	for _, r := range input {
		want[r.Key]++
	}
	total := 0
	for _, n := range want {
		total += int(n)
	}
	got := readCommitted(t, addr, "out", total, 3*time.Minute)
	t.Logf("%d input records (%d produced), %d epochs committed, %d aborted, %d resets", total, keys*per, e.Stats().Committed, e.Stats().Aborted, e.Stats().Resets)
	if s := e.State(); s == engine.Error || s == engine.NotRunning {
		t.Fatalf("the engine is %v after %d broker restarts", s, restarts)
	}
	stopsInTime(t, stop)
	counts := map[string][]int64{}
	for _, r := range got {
		n := int64(0)
		for _, b := range []byte(r.Value) {
			n = n<<8 | int64(b)
		}
		counts[r.Key] = append(counts[r.Key], n)
	}
	for k, n := range want {
		ns := counts[k]
		slices.Sort(ns)
		for i, c := range ns {
			if c != int64(i+1) || len(ns) != int(n) {
				t.Fatalf("key %s: counts %v, want 1..%d once each", k, ns, n)
			}
		}
	}
	if len(counts) != len(want) {
		t.Fatalf("%d keys counted, want %d", len(counts), len(want))
	}
}
