package interop

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// The helpers the broker tests of this package and migrate's Kafka Streams
// cutovers share: running a process (the Kafka Streams runner, stoatctl
// run) until it says it is ready, feeding it records, waiting until its
// group has consumed them, and stopping it as an operator would.

// Lines collects a process's output lines, for failure messages.
type Lines struct {
	mu    sync.Mutex
	lines []string
}

// Add appends a line.
func (b *Lines) Add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, s)
}

func (b *Lines) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// Proc is a process started by Start: its output, and its exit.
type Proc struct {
	// Out is what the process printed, stdout and stderr together.
	Out    *Lines
	cmd    *exec.Cmd
	exited chan error
}

// Start starts cmd and waits until a line of its output contains ready
// (two minutes at most). The process is killed when the test ends, unless
// Stop stopped it first.
func Start(t testing.TB, cmd *exec.Cmd, ready string) *Proc {
	t.Helper()
	p := &Proc{Out: &Lines{}, cmd: cmd, exited: make(chan error, 1)}
	readyCh := make(chan struct{})
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		var once sync.Once
		for sc.Scan() {
			p.Out.Add(sc.Text())
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(readyCh) })
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-readyCh:
	case err := <-p.exited:
		t.Fatalf("%s exited before %q: %v\n%s", cmd.Path, ready, err, p.Out)
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: no %q within 2 minutes\n%s", cmd.Path, ready, p.Out)
	}
	return p
}

// Stop sends SIGTERM, which both Kafka Streams (the runner closes it) and
// stoatctl answer with a clean close and a final commit, and requires exit
// status 0 within 90 seconds.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("%s after SIGTERM: %v\n%s", p.cmd.Path, err, p.Out)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not stop within 90s of SIGTERM\n%s", p.cmd.Path, p.Out)
	}
}

// RunOptions are the runner's settings for a test run of a mirror.
type RunOptions struct {
	// StateDir is Kafka Streams' state.dir; a fresh temporary directory
	// when empty.
	StateDir string
	// SessionTimeoutMs, when set, is the consumer's session timeout: a
	// stopped Kafka Streams does not leave its group, so whoever takes its
	// partitions next waits this long (the broker's minimum is 6000).
	SessionTimeoutMs int
	// DefaultEmitInterval leaves Kafka Streams' own emit interval: a
	// window aggregation emitting on close looks for closed windows at
	// most once a second, not on every record, so windows closed since
	// its last look are pending when it stops.
	DefaultEmitInterval bool
}

// StartKafkaStreams runs mirror m's Kafka Streams application as app
// against the broker at addr, exactly-once with caching off, committing
// every 100 ms and looking for closed windows on every record (unless
// o.DefaultEmitInterval), and waits until it is RUNNING.
func (j *Java) StartKafkaStreams(t testing.TB, m Mirror, app, addr string, o RunOptions) *Proc {
	t.Helper()
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	args := []string{"run", "--topology", m.Name, "--application-id", app, "--bootstrap-servers", addr,
		"--state-dir", o.StateDir, "--cache-max-bytes", "0", "--commit-interval-ms", "100"}
	if !o.DefaultEmitInterval {
		args = append(args, "--emit-interval-ms", "0")
	}
	if o.SessionTimeoutMs > 0 {
		args = append(args, "--session-timeout-ms", strconv.Itoa(o.SessionTimeoutMs))
	}
	return Start(t, j.Runner(context.Background(), args...), "RUNNING")
}

// Driver runs mirror m's topology under Kafka Streams' TopologyTestDriver
// over the JSON Lines file input (through the runner's "driver" command,
// caching and emit intervals off) and returns what its sinks wrote. The
// driver takes the records one by one in the file's order, so its output
// is Kafka Streams' answer for that order, free of the fetch timing a
// running application depends on. An empty output fails: every input is
// made to produce some, so an empty one means a check would compare
// nothing.
func (j *Java) Driver(t testing.TB, m Mirror, input string) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := j.Runner(ctx, "driver", "--topology", m.Name, "--input", input)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("runner driver %s: %v\n%s", m.Name, err, stderr.String())
	}
	recs, err := ReadRecords("runner driver output", &stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatalf("Kafka Streams' driver wrote nothing for %s; stderr:\n%s", m.Name, stderr.String())
	}
	return recs
}

// Produce writes recs to the broker at addr, each key to the partition of
// its hash (Kafka's default partitioner), keys and values as the text of
// the JSON values.
func Produce(t testing.TB, addr string, recs []Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, r := range recs {
		rec := &kgo.Record{Topic: r.Topic, Timestamp: time.UnixMilli(r.Timestamp)}
		if r.Key != nil {
			rec.Key = []byte(fmt.Sprint(r.Key))
		}
		if r.Value != nil {
			rec.Value = []byte(fmt.Sprint(r.Value))
		}
		rs = append(rs, rec)
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// AwaitConsumed waits until group has committed every partition of topics
// to its end, and every other partition it commits (Kafka Streams'
// repartition topics) too, and its offsets have stood still for a second:
// by then everything the input causes has been processed, and under
// exactly-once its output committed. Kafka Streams commits past the commit
// markers that end a repartition topic (it commits its consumer's position
// once a task's buffer is empty), so the end is reached there as well. out
// goes into the failure message.
func AwaitConsumed(t testing.TB, addr, group string, topics []string, out fmt.Stringer) {
	t.Helper()
	adm := kafkatest.Admin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last string
	still := time.Now()
	for {
		// The group's committed offsets name its other topics (Kafka
		// Streams' repartition topics): they must reach their ends too.
		all := slices.Clone(topics)
		if committed, err := adm.FetchOffsets(ctx, group); err == nil {
			for topic := range committed {
				if !slices.Contains(all, topic) {
					all = append(all, topic)
				}
			}
		}
		done, committed, err := kafkatest.CommittedToEnd(ctx, adm, group, all...)
		if err == nil {
			if now := fmt.Sprint(committed.Sorted()); now != last {
				last, still = now, time.Now()
			}
			if done && time.Since(still) > time.Second {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s did not commit %v and its other topics to their ends within 2 minutes (committed: %s)\n%s", group, topics, last, out)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
