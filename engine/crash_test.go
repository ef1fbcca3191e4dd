package engine_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the crash and metamorphic tests' random choices: kill points, lane counts, configurations (0: a fresh one, printed)")

// crashSeed returns the seed of a crash test's random choices, -seed's or
// a fresh one, and logs it so that a failure can be replayed.
func crashSeed(t *testing.T) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d), broker: %s", seed, seed, kafkatest.Kind())
	return seed
}

// crashChildEnv, when set to a broker address, makes the test binary run
// the counting engine as a child process until it is killed.
const crashChildEnv = "STOATFLOW_CRASH_CHILD"

// crashLogEnv names the file a crash child logs to.
const crashLogEnv = "STOATFLOW_CRASH_LOG"

// printChildLogs logs, when t failed, the last lines of each child's log
// in dir (run-N.log), so that a failure shows what the runs did.
func printChildLogs(t *testing.T, dir string) {
	t.Cleanup(func() {
		keep := os.Getenv("STOATFLOW_KEEP_CHILD_LOGS")
		if !t.Failed() && keep == "" {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "run-*.log"))
		// In run order: run-2.log before run-10.log.
		slices.SortFunc(logs, func(a, b string) int {
			if c := cmp.Compare(len(a), len(b)); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		for _, path := range logs {
			b, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			if keep != "" {
				_ = os.MkdirAll(keep, 0o755)
				_ = os.WriteFile(filepath.Join(keep, filepath.Base(path)), b, 0o644)
			}
			if !t.Failed() {
				continue
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			t.Logf("%s, last %d of %d lines:\n%s", filepath.Base(path), min(len(lines), 25), len(lines), strings.Join(lines[max(0, len(lines)-25):], "\n"))
		}
	})
}

func TestMain(m *testing.M) {
	if addr := os.Getenv(crashChildEnv); addr != "" {
		os.Exit(runCrashChild(addr))
	}
	if addr := os.Getenv(scaleChildEnv); addr != "" {
		os.Exit(runScaleChild(addr))
	}
	if addr := os.Getenv(metaChildEnv); addr != "" {
		os.Exit(runMetaChild(addr))
	}
	if spec := os.Getenv(brokerChildEnv); spec != "" {
		os.Exit(runBrokerChild(spec))
	}
	if broker.IsChild() {
		os.Exit(broker.ServeChild())
	}
	// The engines of this test binary, and the children it starts (they
	// inherit the environment), keep their default state directories
	// (state.dir unset) in a temporary directory of the binary's own.
	// Another test binary on the host (another checkout's, CI's) running
	// the same application ids would otherwise hold default slots
	// (claimDefaultStateDir), and a crash test's restarted child could
	// take another slot, so another instance id, than the child it
	// replaces, and not fence its open transaction.
	tmp, err := os.MkdirTemp("", "stoatflow-engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

func runCrashChild(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c := cfg(addr, "crash", "num.stream.threads", os.Getenv("STOATFLOW_CRASH_LANES"),
		// Static membership: a restart takes its predecessor's place in
		// the group at once.
		"group.instance.id", "crash-1", "session.timeout.ms", "6000")
	if ms := os.Getenv("STOATFLOW_CRASH_TXN_TIMEOUT"); ms != "" {
		c["transaction.timeout.ms"] = ms
	}
	if ms := os.Getenv("STOATFLOW_CRASH_SESSION_TIMEOUT"); ms != "" {
		c["session.timeout.ms"] = ms
	}
	if store := os.Getenv("STOATFLOW_CRASH_STORE"); store != "" {
		c["default.dsl.store"] = store
		c["state.dir"] = os.Getenv("STOATFLOW_CRASH_STATE_DIR")
	}
	topo := counts()
	switch os.Getenv("STOATFLOW_CRASH_TOPOLOGY") {
	case "windows":
		topo = windowedCounts()
		c["stoatflow.watermark.max-out-of-orderness-ms"] = "0"
		c["application.id"] = "crash-windows"
	case "rekey":
		topo = rekeyedCounts()
		c["application.id"] = "crash-rekey"
	case "suppress":
		topo = suppressedCounts()
		c["stoatflow.watermark.max-out-of-orderness-ms"] = "0"
		c["application.id"] = "crash-suppress"
	case "join":
		topo = crashJoin()
		c["stoatflow.watermark.max-out-of-orderness-ms"] = "0"
		c["application.id"] = "crash-join"
	case "timers":
		topo = slotTimers()
		c["stoatflow.watermark.max-out-of-orderness-ms"] = "0"
		c["application.id"] = "crash-timers"
	}
	// Keys the failover tests set (standby_test.go): k=v;k=v, an empty
	// value removing the key.
	if extra := os.Getenv("STOATFLOW_CRASH_EXTRA"); extra != "" {
		for _, kv := range strings.Split(extra, ";") {
			k, v, _ := strings.Cut(kv, "=")
			if v == "" {
				delete(c, k)
				continue
			}
			c[k] = v
		}
	}
	log := testLogger(nil)
	if path := os.Getenv(crashLogEnv); path != "" {
		// Each run logs at INFO to a file of its own, which the parent
		// prints when the test fails: a child that hangs says where.
		f, err := os.Create(path)
		if err != nil {
			os.Stderr.WriteString("child: " + err.Error() + "\n")
			return 1
		}
		defer f.Close()
		level := slog.LevelInfo
		if os.Getenv("STOATFLOW_CRASH_DEBUG") != "" {
			level = slog.LevelDebug
		}
		log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level}))
	}
	e := engine.New(topo, c, engine.WithLogger(log))
	if err := e.Run(ctx); err != nil {
		os.Stderr.WriteString("child: " + err.Error() + "\n")
		return 1
	}
	// The parent may read what happened on the way (the pause test).
	st := e.Stats()
	fmt.Printf("stats committed=%d aborted=%d resets=%d\n", st.Committed, st.Aborted, st.Resets)
	return 0
}

// TestCrashExactlyOnce kills the engine with SIGKILL at random moments
// while it counts, restarts it each time, and requires the read-committed
// output to hold every count of every key exactly once.
func TestCrashExactlyOnce(t *testing.T) {
	kafkatest.Parallel(t)
	crashStores(t, crashCounts)
}

// crashStores runs a crash test over each store backend: the in-memory
// stores, rebuilt from the changelogs at every start, and RocksDB's,
// brought up to date from their checkpoints (or rebuilt when the lane
// count changed).
func crashStores(t *testing.T, run func(t *testing.T, store string)) {
	for _, store := range []string{"in_memory", "rocksDB"} {
		t.Run(store, func(t *testing.T) {
			if store == "rocksDB" && !rocks.Available() {
				t.Skip("built without cgo: no RocksDB")
			}
			if store == "rocksDB" && kafkatest.Real() {
				// The store backend is local: the embedded broker's run
				// tests it, and the real tier keeps its time for what the
				// broker changes.
				t.Skip("the RocksDB variant runs on the embedded broker only")
			}
			run(t, store)
		})
	}
}

func crashCounts(t *testing.T, store string) {
	keys, per, kills := 1000, 200, 10
	switch {
	case testing.Short():
		keys, per, kills = 200, 50, 4
	case kafkatest.Real():
		// A real broker is slower to fence, restore from and start a
		// transaction on than the embedded one: fewer records, and six
		// kills rather than ten.
		keys, per, kills = 500, 100, 6
	}
	addr := startKafka(t, map[string]int32{"in": 4, "out": 4})
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	got := crashAndRestart(t, addr, "counts", store, kills, in)
	checkCounts(t, got, keys, per)
}

// crashAndRestart feeds in to the child engine running topology topo in
// kills+1 slices, one as each run starts, so that every SIGKILL lands
// while records are flowing; the last run goes on until want output
// records (default: one per input record) are committed, and stops with
// SIGTERM.
func crashAndRestart(t *testing.T, addr, topo, store string, kills int, in []kv, want ...int) []kv {
	n := len(in)
	if len(want) > 0 {
		n = want[0]
	}
	slice := func(i int) []kv { return in[i*len(in)/(kills+1) : (i+1)*len(in)/(kills+1)] }
	rng := rand.New(rand.NewPCG(crashSeed(t), 7))
	dir := t.TempDir()
	printChildLogs(t, dir)
	runs := 0
	start := func(lanes int) *exec.Cmd {
		runs++
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+addr, "STOATFLOW_CRASH_LANES="+strconv.Itoa(lanes), "STOATFLOW_CRASH_TOPOLOGY="+topo,
			"STOATFLOW_CRASH_STORE="+store, "STOATFLOW_CRASH_STATE_DIR="+dir, crashLogEnv+"="+filepath.Join(dir, fmt.Sprintf("run-%d.log", runs)))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for i := range kills {
		cmd := start(1 + rng.IntN(8))
		produce(t, addr, "in", slice(i))
		time.Sleep(time.Duration(100+rng.IntN(1500)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		t.Logf("kill %d done", i+1)
	}
	cmd := start(4)
	produce(t, addr, "in", slice(kills))
	got := readCommitted(t, addr, "out", n, 3*time.Minute)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("last run: %v", err)
	}
	return got
}

// TestCrashWindowsExactlyOnce kills the engine while it counts tumbling
// windows emitted on close: after the restarts every window closed by the
// end is committed exactly once with its full count, the set the driver
// emits for the same records.
func TestCrashWindowsExactlyOnce(t *testing.T) {
	kafkatest.Parallel(t)
	crashStores(t, func(t *testing.T, store string) { crashWindowed(t, "windows", store, windowedCounts()) })
}

// TestCrashSuppressExactlyOnce is the windowed crash test with the final
// counts held back by suppress(untilWindowCloses) instead of emitted on
// close: the buffer's releases and their deletes must survive the kills
// together, so no window is released twice or never.
func TestCrashSuppressExactlyOnce(t *testing.T) {
	kafkatest.Parallel(t)
	crashStores(t, func(t *testing.T, store string) { crashWindowed(t, "suppress", store, suppressedCounts()) })
}

// crashWindowed runs the crash test for the child topology name (topo):
// 100 keys with a record a second each for 200 s, 6 kills, and the
// committed window results must be the driver's set.
func crashWindowed(t *testing.T, name, store string, topo *topology.Topology) {
	keys, steps, kills := 100, 200, 6
	if testing.Short() {
		keys, steps, kills = 20, 100, 3
	}
	var in []kv
	for s := range steps {
		for k := range keys {
			in = append(in, kv{Key: "k" + strconv.Itoa(k), Value: "x", Timestamp: int64(s)*1000 + 1})
		}
	}
	want := driverOutputOf(t, topo, "crash-"+name, in)
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	var got []string
	for _, r := range crashAndRestart(t, addr, name, store, kills, in, len(want)) {
		got = append(got, fmt.Sprintf("%x=%x", r.Key, r.Value))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("engine committed %d %s results, driver %d; first engine %q, first driver %q", len(got), name, len(want), head(got), head(want))
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestCrashRekeyExactlyOnce kills the engine while it counts values
// re-keyed through an in-memory boundary: records crossing between lanes,
// barrier alignment and the restore of the downstream sub-topology must
// keep every count exactly once.
func TestCrashRekeyExactlyOnce(t *testing.T) {
	kafkatest.Parallel(t)
	crashStores(t, crashRekey)
}

func crashRekey(t *testing.T, store string) {
	words, per, kills := 500, 100, 6
	if testing.Short() {
		words, per, kills = 100, 30, 3
	}
	var in []kv
	for i := range words * per {
		in = append(in, kv{Key: "line-" + strconv.Itoa(i), Value: "w" + strconv.Itoa(i%words)})
	}
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	got := crashAndRestart(t, addr, "rekey", store, kills, in)
	checkCounts(t, got, words, per)
}

// crashJoin is a windowed stream-stream inner join of "in" with itself,
// split by the value's first byte: "l..." records on the left, "r..." on
// the right, pairs of one key within 3 s joined. The grace is an hour, so
// that no record of an in-order input is late and the pairs are the
// driver's whatever the engine's watermark did.
func crashJoin() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	in := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
	left := in.Filter(func(_, v string) bool { return strings.HasPrefix(v, "l") })
	right := in.Filter(func(_, v string) bool { return strings.HasPrefix(v, "r") })
	dsl.JoinStream(left, right, func(_ string, l, r string) string { return l + "+" + r },
		window.JoinWindowsOfTimeDifferenceAndGrace(3*time.Second, time.Hour),
		dsl.StreamJoinedWith(str, str, str)).To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestCrashJoinExactlyOnce kills the engine twelve times while it joins a
// stream with itself (crashJoin) as records flow, on each store backend: the two
// sides' window stores survive the kills with the epochs that wrote them,
// so every pair the driver makes is committed exactly once (issue 37's
// crash test of a join on RocksDB under live load).
func TestCrashJoinExactlyOnce(t *testing.T) {
	kafkatest.Parallel(t)
	crashStores(t, func(t *testing.T, store string) {
		keys, steps, kills := 50, 150, 12
		if testing.Short() {
			keys, steps, kills = 20, 60, 3
		}
		var in []kv
		for s := range steps {
			side := "l"
			if s%2 == 1 {
				side = "r"
			}
			for k := range keys {
				in = append(in, kv{Key: "k" + strconv.Itoa(k), Value: side + strconv.Itoa(s), Timestamp: int64(s)*1000 + 1})
			}
		}
		want := driverOutputOf(t, crashJoin(), "crash-join", in)
		addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
		var got []string
		for _, r := range crashAndRestart(t, addr, "join", store, kills, in, len(want)) {
			got = append(got, fmt.Sprintf("%x=%x", r.Key, r.Value))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("engine committed %d pairs, driver %d; first engine %q, first driver %q", len(got), len(want), head(got), head(want))
		}
	})
}
