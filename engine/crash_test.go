package engine_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
)

// crashChildEnv, when set to a broker address, makes the test binary run
// the counting engine as a child process until it is killed.
const crashChildEnv = "STOATFLOW_CRASH_CHILD"

func TestMain(m *testing.M) {
	if addr := os.Getenv(crashChildEnv); addr != "" {
		os.Exit(runCrashChild(addr))
	}
	os.Exit(m.Run())
}

func runCrashChild(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c := cfg(addr, "crash", "num.stream.threads", os.Getenv("STOATFLOW_CRASH_LANES"),
		// Static membership: a restart takes its predecessor's place in
		// the group at once.
		"group.instance.id", "crash-1", "session.timeout.ms", "6000")
	if err := engine.New(counts(), c, engine.WithLogger(testLogger(nil))).Run(ctx); err != nil {
		os.Stderr.WriteString("child: " + err.Error() + "\n")
		return 1
	}
	return 0
}

// TestCrashExactlyOnce kills the engine with SIGKILL at random moments
// while it counts, restarts it each time, and requires the read-committed
// output to hold every count of every key exactly once.
func TestCrashExactlyOnce(t *testing.T) {
	keys, per, kills := 1000, 200, 10
	if testing.Short() {
		keys, per, kills = 200, 50, 4
	}
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	produce(t, addr, "in", in)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	start := func(lanes int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+addr, "STOATFLOW_CRASH_LANES="+strconv.Itoa(lanes))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for i := range kills {
		cmd := start(1 + rng.IntN(8))
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		t.Logf("kill %d done", i+1)
	}
	cmd := start(4)
	got := readCommitted(t, addr, "out", len(in), 3*time.Minute)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("last run: %v", err)
	}
	checkCounts(t, got, keys, per)
}
