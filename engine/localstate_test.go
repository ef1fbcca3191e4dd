package engine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storeCfg is cfg with the stores of default.dsl.store in store, RocksDB's
// under dir.
func storeCfg(addr, app, store, dir string, extra ...string) map[string]string {
	c := cfg(addr, app, extra...)
	c["default.dsl.store"] = store
	c["state.dir"] = dir
	return c
}

func needRocks(t testing.TB) {
	t.Helper()
	if !rocks.Available() {
		t.Skip("built without cgo: no RocksDB")
	}
}

func keyed(keys, per int) []kv {
	var in []kv
	for i := range keys * per {
		in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
	}
	return in
}

// TestLocalStateRestart stops the counting engine cleanly and starts it
// again over the same state directory: with RocksDB stores the second
// start restores nothing, with in-memory stores every changelog record;
// either way the counts go on exactly once.
func TestLocalStateRestart(t *testing.T) {
	needRocks(t)
	const keys, per = 200, 5
	for _, c := range []struct {
		store     string
		restored2 func(n int64) bool
		want      string
	}{
		{"rocksDB", func(n int64) bool { return n == 0 }, "0"},
		{"in_memory", func(n int64) bool { return n >= keys }, "at least one per key"},
	} {
		t.Run(c.store, func(t *testing.T) {
			addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
			dir := t.TempDir()
			conf := storeCfg(addr, "restart", c.store, dir)
			var got []kv
			for run := range 2 {
				e, stop := runEngine(t, counts(), conf)
				produce(t, addr, "in", keyed(keys, per))
				got = readCommitted(t, addr, "out", (run+1)*keys*per, 30*time.Second)
				if err := stop(); err != nil {
					t.Fatalf("run %d: %v", run+1, err)
				}
				n := e.Stats().Restored
				t.Logf("run %d restored %d records", run+1, n)
				if m := e.Metrics().Value(metrics.RestoredRecords, "store", "counts"); m != n {
					t.Fatalf("run %d: metric %s says %d records, the stats %d", run+1, metrics.RestoredRecords, m, n)
				}
				if run == 1 && !c.restored2(n) {
					t.Fatalf("the restart restored %d records, want %s", n, c.want)
				}
			}
			checkCounts(t, got, keys, 2*per)
		})
	}
}

// TestLocalStateAheadOfChangelog starts the engine over a state directory
// whose checkpoint is ahead of its changelog (a new broker, as after a
// wiped topic): the state is rebuilt from the changelog, not trusted, so
// the counts start again from 1.
func TestLocalStateAheadOfChangelog(t *testing.T) {
	needRocks(t)
	const keys, per = 50, 4
	dir := t.TempDir()
	for run := range 2 {
		addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
		_, stop := runEngine(t, counts(), storeCfg(addr, "ahead", "rocksDB", dir))
		produce(t, addr, "in", keyed(keys, per))
		got := readCommitted(t, addr, "out", keys*per, 30*time.Second)
		if err := stop(); err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		checkCounts(t, got, keys, per)
	}
}

// TestLocalStateAbortedEpoch fails the commit of an epoch through the
// embedded broker's control hooks: the epoch aborts, the lanes reset, and
// with RocksDB stores nothing is restored (the databases hold exactly what
// committed, and the aborted epoch's changelog records are not read), while
// in-memory stores are rebuilt from the changelogs. The counts are exact
// either way.
func TestLocalStateAbortedEpoch(t *testing.T) {
	needRocks(t)
	kafkatest.EmbeddedOnly(t)
	for _, store := range []string{"rocksDB", "in_memory"} {
		t.Run(store, func(t *testing.T) {
			b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 4, "out": 4}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			const keys, per = 50, 20
			in := keyed(keys, per)
			var ends atomic.Int32
			b.Cluster().ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				n := ends.Add(1)
				req := kreq.(*kmsg.EndTxnRequest)
				if n < 4 {
					b.Cluster().KeepControl()
				}
				if n != 4 || !req.Commit {
					return nil, nil, false
				}
				resp := req.ResponseKind().(*kmsg.EndTxnResponse)
				resp.ErrorCode = kerr.UnknownServerError.Code
				return resp, nil, true
			})
			e, stop := runEngine(t, counts(), storeCfg(b.Addr(), "aborted", store, t.TempDir()))
			const chunks = 10
			for i := range chunks {
				before := ends.Load()
				produce(t, b.Addr(), "in", in[i*len(in)/chunks:(i+1)*len(in)/chunks])
				waitUntil(5*time.Second, func() bool { return ends.Load() > before })
			}
			got := readCommitted(t, b.Addr(), "out", len(in), 60*time.Second)
			if err := stop(); err != nil {
				t.Fatalf("engine: %v", err)
			}
			checkCounts(t, got, keys, per)
			st := e.Stats()
			t.Logf("%s: %d epochs aborted, %d resets, %d records restored", store, st.Aborted, st.Resets, st.Restored)
			if st.Aborted < 1 {
				t.Fatalf("no epoch aborted: the fault was not injected (%d EndTxn)", ends.Load())
			}
			switch {
			case store == "rocksDB" && st.Restored != 0:
				t.Fatalf("RocksDB stores restored %d records after the abort, want 0", st.Restored)
			case store == "in_memory" && st.Restored == 0:
				t.Fatalf("in-memory stores restored nothing after the abort: the reset did not rebuild them")
			}
		})
	}
}

var restoredLine = regexp.MustCompile(`msg="state store restored".* records=(\d+)`)

// TestLocalStateKillRestoresTail kills the counting engine with SIGKILL
// while it processes a second batch, after the first has committed: the
// restart restores at most the second batch's changelog records (what the
// last checkpoint lacks), never the first's, and the counts are exact.
func TestLocalStateKillRestoresTail(t *testing.T) {
	needRocks(t)
	const keys, per = 200, 10
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	dir := t.TempDir()
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var logs bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+addr, "STOATFLOW_CRASH_LANES=4", "STOATFLOW_CRASH_TOPOLOGY=counts",
			"STOATFLOW_CRASH_STORE=rocksDB", "STOATFLOW_CRASH_STATE_DIR="+dir, "ENGINE_TEST_LOG=1")
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &logs
	}
	restored := func(logs string) (n int, lines int) {
		for _, m := range restoredLine.FindAllStringSubmatch(logs, -1) {
			v, _ := strconv.Atoi(m[1])
			n += v
			lines++
		}
		return n, lines
	}
	cmd, _ := start()
	produce(t, addr, "in", keyed(keys, per))
	readCommitted(t, addr, "out", keys*per, 30*time.Second)
	// Kill in the middle of a second batch, once some of it committed:
	// the lane databases commit after each transaction and in epoch
	// order, so the first batch's local commits are all in by then.
	produce(t, addr, "in", keyed(keys, per))
	readCommitted(t, addr, "out", keys*per+1, 30*time.Second)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	cmd, logs := start()
	got := readCommitted(t, addr, "out", 2*keys*per, 60*time.Second)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("restarted engine: %v\n%s", err, logs)
	}
	checkCounts(t, got, keys, 2*per)
	n, lines := restored(logs.String())
	t.Logf("the restart restored %d changelog records (%d restore log lines)", n, lines)
	if lines == 0 {
		t.Fatalf("no restore log line:\n%s", logs)
	}
	if n > keys*per {
		t.Fatalf("the restart restored %d records, more than the %d written after the last checkpoint", n, keys*per)
	}
}

// TestLocalStateOfAnotherApplication: a lane directory that holds another
// application's state (copied or moved there) stops the start with an
// error naming the directory, and is left as it was.
func TestLocalStateOfAnotherApplication(t *testing.T) {
	needRocks(t)
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	dir := t.TempDir()
	_, stop := runEngine(t, counts(), storeCfg(addr, "first", "rocksDB", dir, "num.stream.threads", "1"))
	produce(t, addr, "in", keyed(10, 1))
	readCommitted(t, addr, "out", 10, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "first"), filepath.Join(dir, "second")); err != nil {
		t.Fatal(err)
	}
	e := engine.New(counts(), storeCfg(addr, "second", "rocksDB", dir, "num.stream.threads", "1"), engine.WithLogger(testLogger(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := e.Run(ctx)
	lane := filepath.Join(dir, "second", "0_0")
	if !errors.Is(err, engine.ErrForeignState) || !strings.Contains(err.Error(), lane) {
		t.Fatalf("Run over another application's state: %v; want ErrForeignState naming %s", err, lane)
	}
}

// twoCounts counts "in" twice: into store "kept", kept in RocksDB whatever
// default.dsl.store says (state.RocksDB), and into store "plain", which
// follows default.dsl.store.
func twoCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	s := dsl.Stream(b, dsl.ConsumedWith(str, str), "in")
	s.GroupByKey().Count(dsl.MaterializedAs[string, int64]("kept").WithStoreSupplier(state.RocksDB())).
		ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
	s.GroupByKey().Count(dsl.MaterializedAs[string, int64]("plain")).
		ToStream().To("out2", dsl.ProducedWith(str, serde.Int64()))
	return b.Topology()
}

// TestLocalStatePerStore: under default.dsl.store=in_memory a store built
// with state.RocksDB is still kept in RocksDB: a clean restart restores
// nothing into it and every record into the in-memory one, and both go on
// counting exactly once.
func TestLocalStatePerStore(t *testing.T) {
	needRocks(t)
	const keys, per = 50, 3
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4, "out2": 4})
	conf := storeCfg(addr, "per-store", "in_memory", t.TempDir())
	var got, got2 []kv
	for run := range 2 {
		e, stop := runEngine(t, twoCounts(), conf)
		produce(t, addr, "in", keyed(keys, per))
		got = readCommitted(t, addr, "out", (run+1)*keys*per, 30*time.Second)
		got2 = readCommitted(t, addr, "out2", (run+1)*keys*per, 30*time.Second)
		if err := stop(); err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		kept := e.Metrics().Value(metrics.RestoredRecords, "store", "kept")
		plain := e.Metrics().Value(metrics.RestoredRecords, "store", "plain")
		t.Logf("run %d restored %d records into kept (RocksDB), %d into plain (in memory)", run+1, kept, plain)
		if run == 1 && (kept != 0 || plain < keys) {
			t.Fatalf("the restart restored %d records into the RocksDB store (want 0) and %d into the in-memory one (want at least %d)", kept, plain, keys)
		}
	}
	checkCounts(t, got, keys, 2*per)
	checkCounts(t, got2, keys, 2*per)
}
