package broker_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// brokerChildEnv, when set to a data directory, makes the test binary run
// a broker on that directory as a child process: it prints the broker's
// address on stdout and runs until SIGTERM (a clean Close) or SIGKILL.
const brokerChildEnv = "STOATFLOW_BROKER_CHILD"

// Further settings of a broker child, as environment variables.
const (
	// killOnCommitEnv makes the child SIGKILL itself when it is asked to
	// commit a transaction, once the broker has logged the commit intent
	// and before kfake writes any marker.
	killOnCommitEnv = "STOATFLOW_BROKER_CHILD_KILL_ON_COMMIT"
	// killAtRepairEnv makes the child SIGKILL itself at that stage of the
	// repair of a cut-short commit, during Start.
	killAtRepairEnv = "STOATFLOW_BROKER_CHILD_KILL_AT_REPAIR"
)

// The topics the child broker seeds: txnTopic with one partition,
// pairTopic with two.
const (
	txnTopic  = "txn"
	pairTopic = "pair"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(brokerChildEnv); dir != "" {
		os.Exit(runBrokerChild(dir))
	}
	if broker.IsChild() {
		os.Exit(broker.ServeChild())
	}
	os.Exit(m.Run())
}

func runBrokerChild(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	die := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	if stage := os.Getenv(killAtRepairEnv); stage != "" {
		broker.SetRepairStage(func(s string) {
			if s == stage {
				die()
			}
		})
	}
	b, err := broker.Start(ctx, broker.Options{
		Port:       broker.RandomPort,
		DataDir:    dir,
		SeedTopics: map[string]int32{txnTopic: 1, pairTopic: 2},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker child:", err)
		return 1
	}
	if os.Getenv(killOnCommitEnv) != "" {
		// Added after Start's own hooks, so it runs after the intent is logged.
		b.Cluster().ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
			b.Cluster().KeepControl()
			if req.(*kmsg.EndTxnRequest).Commit {
				die()
			}
			return nil, nil, false
		})
	}
	fmt.Println(b.Addr())
	<-ctx.Done()
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "broker child:", err)
		return 1
	}
	return 0
}

// brokerChild is a broker running in a child process.
type brokerChild struct {
	cmd  *exec.Cmd
	addr string
}

// startBrokerChild starts a broker child on dir, with env added to its
// environment, and waits for its address.
func startBrokerChild(t *testing.T, dir string, env ...string) *brokerChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), brokerChildEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &brokerChild{cmd: cmd}
	t.Cleanup(func() { c.kill(t) })
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr <- strings.TrimSpace(line)
	}()
	select {
	case c.addr = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("broker child on %s printed no address in 30s", dir)
	}
	if c.addr == "" {
		t.Fatalf("broker child on %s exited before printing its address", dir)
	}
	return c
}

// waitKilled waits for the child to die of a SIGKILL it sent itself.
func (c *brokerChild) waitKilled(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker child did not die within 30s")
	}
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the broker child ended with %v, want a SIGKILL", c.cmd.ProcessState)
	}
}

// kill SIGKILLs the child: nothing of the broker's shutdown runs.
func (c *brokerChild) kill(t *testing.T) {
	if c.cmd.ProcessState != nil {
		return
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Errorf("kill broker child: %v", err)
	}
	_ = c.cmd.Wait()
}

// stop SIGTERMs the child, which closes the broker cleanly.
func (c *brokerChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("broker child after SIGTERM: %v", err)
	}
}

// txnProducer is a transactional producer on txnTopic.
func txnProducer(t *testing.T, addr, txid string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(txid), kgo.DefaultProduceTopic(txnTopic))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// inTxn begins a transaction, produces value in it and waits for the
// acknowledgement; with commit it then commits, without it leaves the
// transaction open.
func inTxn(t *testing.T, cl *kgo.Client, value string, commit bool) {
	t.Helper()
	ctx := t.Context()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin transaction for %s: %v", value, err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", value, err)
	}
	if !commit {
		return
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit %s: %v", value, err)
	}
}

// commitOne commits value in a transaction of its own under txid.
func commitOne(t *testing.T, addr, txid, value string) {
	t.Helper()
	cl := txnProducer(t, addr, txid)
	defer cl.Close()
	inTxn(t, cl, value, true)
}

// readTxnTopic reads txnTopic from the start with the isolation level
// given until it has seen last, and returns the values it read.
func readTxnTopic(t *testing.T, addr string, level kgo.IsolationLevel, last string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(txnTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	var got []string
	for !slices.Contains(got, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestOpenTransactionSurvivesKill is issue 11, item 1: a transaction left
// open by a broker killed with SIGKILL must not hide, from read_committed
// consumers, the transactions its transactional id commits after the
// restart, neither then nor after later restarts, killed or clean. kfake
// aborts such a transaction on reload without writing its abort marker;
// Start writes it (recoverTxns).
func TestOpenTransactionSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerChild(t, dir)

	a := txnProducer(t, b.addr, "tx-A")
	inTxn(t, a, "T1", true)
	inTxn(t, a, "T2", false) // written, never committed
	b.kill(t)
	a.Close()

	b = startBrokerChild(t, dir)
	commitOne(t, b.addr, "tx-A", "T3")
	commitOne(t, b.addr, "tx-B", "T4")
	check := func(when string, committed []string) {
		t.Helper()
		last := committed[len(committed)-1]
		if got := readTxnTopic(t, b.addr, kgo.ReadCommitted(), last); !slices.Equal(got, committed) {
			uncommitted := readTxnTopic(t, b.addr, kgo.ReadUncommitted(), last)
			t.Fatalf("%s: read_committed read %q, want %q (read_uncommitted reads %q)", when, got, committed, uncommitted)
		}
	}
	check("after the kill and a restart", []string{"T1", "T3", "T4"})

	// A second kill reloads the log the repair wrote to by replaying it.
	b.kill(t)
	b = startBrokerChild(t, dir)
	check("after a second kill and a restart", []string{"T1", "T3", "T4"})

	b.stop(t)
	b = startBrokerChild(t, dir)
	commitOne(t, b.addr, "tx-A", "T5")
	check("after a further clean restart", []string{"T1", "T3", "T4", "T5"})
}

// runChildUntilKilled runs a broker child on dir that is to kill itself
// before it prints its address (during Start's repair), and waits for
// that.
func runChildUntilKilled(t *testing.T, dir string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), brokerChildEnv+"="+dir), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	(&brokerChild{cmd: cmd}).waitKilled(t)
}

// readPair reads pairTopic read_committed from the start until every
// partition has shown its sentinel value, and returns each partition's
// values before it.
func readPair(t *testing.T, addr string, sentinel string) map[int32][]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(pairTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	got := map[int32][]string{}
	seen := map[int32]bool{}
	for len(seen) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed read %q and no sentinel %q on every partition within 15s", got, sentinel)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			switch {
			case string(r.Value) == sentinel:
				seen[r.Partition] = true
			case !seen[r.Partition]:
				got[r.Partition] = append(got[r.Partition], string(r.Value))
			}
		})
	}
	return got
}

// commitPair commits, under txid, value to every partition of pairTopic
// in one transaction.
func commitPair(t *testing.T, addr, txid, value string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(txid), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: pairTopic, Partition: p, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
		t.Fatalf("commit %s: %v", value, err)
	}
}

// TestCommitCutShortByKill is the rest of issue 11, item 1: kfake writes a
// commit's markers partition by partition and then its offsets, so a
// SIGKILL inside EndTxn used to leave a transaction half visible with its
// offsets lost, and exactly-once broken above it. The broker logs a commit
// intent first and finishes the commit on the next start. Each case kills
// the broker the moment kfake is to handle the commit (with or without
// one partition's marker written before, as kfake would have written it),
// some kill the repair too, and every start must show both records of the
// transaction once and its offset committed, as must a later kill and
// restart, and the transactional id's next commit.
func TestCommitCutShortByKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		// marked writes pair[0]'s commit marker before the commit;
		// markedAll both partitions', so that only the offsets are left
		// for the repair to commit.
		marked, markedAll bool
		// repairKill kills the first restart at this repair stage.
		repairKill string
	}{
		{name: "no marker written"},
		{name: "one marker written", marked: true},
		{name: "every marker written", marked: true, markedAll: true},
		{name: "repair killed before its commit", marked: true, repairKill: "copied"},
		{name: "repair killed after its commit", repairKill: "committed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := startBrokerChild(t, dir, killOnCommitEnv+"=1")
			ctx := t.Context()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.TransactionalID("tx-C"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RequestRetries(1), kgo.RetryTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for p, v := range []string{"C1", "C2"} {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: pairTopic, Partition: int32(p), Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			adm := kadm.NewClient(cl)
			md, err := adm.Metadata(ctx, txnTopic)
			if err != nil {
				t.Fatal(err)
			}
			if err := broker.CommitTxnOffset(ctx, cl, "tx-C", "g", txnTopic, md.Topics[txnTopic].ID, 0, 7, "partition time 42"); err != nil {
				t.Fatal(err)
			}
			if tc.marked {
				pid, epoch, _ := cl.ProducerID(ctx)
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, true
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = pairTopic, []int32{0}
				if tc.markedAll {
					mt.Partitions = []int32{0, 1}
				}
				m.Topics = append(m.Topics, mt)
				req.Markers = append(req.Markers, m)
				if _, err := req.RequestWith(ctx, cl); err != nil {
					t.Fatal(err)
				}
			}
			ended := make(chan error, 1)
			go func() { ended <- cl.EndTransaction(ctx, kgo.TryCommit) }()
			b.waitKilled(t)
			<-ended // an error: the broker died under it
			cl.Close()

			if tc.repairKill != "" {
				runChildUntilKilled(t, dir, killAtRepairEnv+"="+tc.repairKill)
			}
			check := func(when string, want map[int32][]string, sentinel string) {
				t.Helper()
				commitPair(t, b.addr, "tx-S", sentinel)
				if got := readPair(t, b.addr, sentinel); !maps.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("%s: read_committed read %q, want %q", when, got, want)
				}
				offs, err := admin(t, b.addr).FetchOffsets(ctx, "g")
				if err != nil {
					t.Fatal(err)
				}
				o, ok := offs.Lookup(txnTopic, 0)
				if !ok || o.At != 7 || o.Metadata != "partition time 42" {
					t.Fatalf("%s: group g's offset of %s[0] is %+v, want 7 with its metadata", when, txnTopic, o)
				}
			}
			b = startBrokerChild(t, dir)
			check("after the restart", map[int32][]string{0: {"C1"}, 1: {"C2"}}, "S1")
			b.kill(t)
			b = startBrokerChild(t, dir)
			check("after a second kill and a restart", map[int32][]string{0: {"C1", "S1"}, 1: {"C2", "S1"}}, "S2")
			commitPair(t, b.addr, "tx-C", "C3")
			check("after the next commit of tx-C", map[int32][]string{0: {"C1", "S1", "S2", "C3"}, 1: {"C2", "S1", "S2", "C3"}}, "S3")
			if raw, err := os.ReadFile(filepath.Join(dir, broker.IntentFile)); err != nil || len(raw) == 0 {
				t.Logf("intent log after the run: %d bytes (%v)", len(raw), err)
			}
		})
	}
}
