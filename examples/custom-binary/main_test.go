package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/internal/golden"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/internal/syncbuf"
)

// buildOrders builds this program as a user would (go build), into a
// temporary directory, and returns the binary's path.
func buildOrders(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build the binary with")
	}
	bin := filepath.Join(t.TempDir(), "orders")
	if out, err := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run runs the binary to completion and returns its exit code, stdout and
// stderr.
func run(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatalf("orders %s: %v", strings.Join(args, " "), err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestCustomBinary builds the example and uses it as stoatctl: the
// registered Processor API topology is known to topology describe and
// list beside the bundled examples, the other commands are all there,
// and it migrates from a stopped Kafka Streams application and then runs
// on from the migrated totals.
func TestCustomBinary(t *testing.T) {
	bin := buildOrders(t)

	t.Run("describe", func(t *testing.T) {
		code, out, errOut := run(t, bin, "topology", "describe", "order-totals")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		golden.Check(t, "./examples/custom-binary", "testdata/describe.golden", out)
	})

	t.Run("list", func(t *testing.T) {
		code, out, errOut := run(t, bin, "topology", "list")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, name := range []string{"order-totals", "word-count", "uppercase"} {
			if !strings.Contains(out, "\n"+name+" ") {
				t.Errorf("topology list lacks %s:\n%s", name, out)
			}
		}
	})

	t.Run("commands", func(t *testing.T) {
		for _, args := range [][]string{
			{"migrate", "--help"}, {"run", "--help"}, {"replay", "--help"}, {"watch", "--help"}, {"topology", "--help"},
		} {
			code, out, errOut := run(t, bin, args...)
			if code != 0 || !strings.Contains(out, "Usage:") {
				t.Errorf("orders %s: exit %d, stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
			}
		}
		code, out, _ := run(t, bin, "migrate", "--help")
		if code != 0 || !strings.Contains(out, "--from-application-id") {
			t.Errorf("migrate --help: exit %d, no --from-application-id:\n%s", code, out)
		}
	})

	t.Run("try without sample input", func(t *testing.T) {
		code, _, errOut := run(t, bin, "topology", "try", "order-totals")
		if want := "example order-totals: no sample input to try"; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
		}
	})

	t.Run("migrate then run", func(t *testing.T) { testMigrateThenRun(t, bin) })
}

// testMigrateThenRun lays out what a stopped Kafka Streams order-totals
// application (application id "ks") leaves: its store's changelog (alice
// 100, bob 7) and its committed offsets on orders. The binary migrates it
// to application id order-totals, runs, and new orders add to the
// migrated totals.
func testMigrateThenRun(t *testing.T, bin string) {
	kafkatest.EmbeddedOnly(t)
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"orders": 2, "order-totals": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	kafkatest.CreateTopic(t, adm, "ks-order-totals-store-changelog", 2, map[string]*string{"cleanup.policy": &compact})
	// Kafka Streams puts a key's store record in the partition its input
	// had: murmur2 of the key, as the default partitioner does.
	var recs []*kgo.Record
	for _, kv := range []struct {
		key   string
		total uint64
	}{{"alice", 60}, {"alice", 100}, {"bob", 7}} {
		recs = append(recs, &kgo.Record{Topic: "ks-order-totals-store-changelog", Partition: partitionOf(kv.key, 2),
			Key: []byte(kv.key), Value: binary.BigEndian.AppendUint64(nil, kv.total), Timestamp: time.UnixMilli(1000)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 1000}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1, Metadata: md})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 0, LeaderEpoch: -1, Metadata: md})
	if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := run(t, bin, "migrate", "--from-application-id", "ks", "-t", "order-totals", "-b", b.Addr(), "-y")
	t.Logf("migrate:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("migrate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	runCmd := exec.Command(bin, "run", "-t", "order-totals", "-b", b.Addr(), "--http", "off",
		"--state-dir", t.TempDir(), "-X", "stoatflow.commit-barrier.interval-ms=100")
	stderr := &syncbuf.Buffer{}
	runCmd.Stderr = stderr
	if err := runCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runCmd.Process.Kill(); runCmd.Wait() })

	var orders []*kgo.Record
	for _, kv := range [][2]string{{"alice", "5"}, {"bob", "3"}, {"carol", "1"}} {
		orders = append(orders, &kgo.Record{Topic: "orders", Partition: partitionOf(kv[0], 2), Key: []byte(kv[0]), Value: []byte(kv[1])})
	}
	if err := cl.ProduceSync(ctx, orders...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := []string{"alice=105", "bob=10", "carol=1"}
	got := readTotals(t, b.Addr(), len(want))
	if !slices.Equal(got, want) {
		t.Fatalf("order-totals %q, want %q (the migrated totals plus the new orders); stderr:\n%s", got, want, stderr)
	}
	if err := runCmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := runCmd.Wait(); err != nil {
		t.Fatalf("run after SIGTERM: %v; stderr:\n%s", err, stderr)
	}
}

// readTotals reads n committed records of order-totals, sorted as
// key=total.
func readTotals(t *testing.T, addr string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("order-totals"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d totals before the deadline: %q", len(got), n, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%s=%d", r.Key, binary.BigEndian.Uint64(r.Value)))
		})
	}
	slices.Sort(got)
	return got
}

// partitionOf is the default partitioner's partition for key among n:
// murmur2, positive, modulo n.
func partitionOf(key string, n int32) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	return int32(p.Partition(&kgo.Record{Key: []byte(key)}, int(n)))
}
