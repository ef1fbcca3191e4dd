package broker_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// brokerChildEnv, when set to a data directory, makes the test binary run
// a broker on that directory as a child process: it prints the broker's
// address on stdout and runs until SIGTERM (a clean Close) or SIGKILL.
const brokerChildEnv = "STOATFLOW_BROKER_CHILD"

// txnTopic is the one-partition topic the child broker seeds.
const txnTopic = "txn"

func TestMain(m *testing.M) {
	if dir := os.Getenv(brokerChildEnv); dir != "" {
		os.Exit(runBrokerChild(dir))
	}
	os.Exit(m.Run())
}

func runBrokerChild(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	b, err := broker.Start(ctx, broker.Options{
		Port:       broker.RandomPort,
		DataDir:    dir,
		SeedTopics: map[string]int32{txnTopic: 1},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "broker child:", err)
		return 1
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

// startBrokerChild starts a broker child on dir and waits for its address.
func startBrokerChild(t *testing.T, dir string) *brokerChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), brokerChildEnv+"="+dir)
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
