package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// Environment variables that choose the broker.
const (
	// ModeEnv selects the broker kind: "real" for Apache Kafka; empty or
	// "embedded" for the embedded broker.
	ModeEnv = "STOATCTL_TEST_KAFKA"
	// BootstrapEnv, in the real mode, names a running broker to use instead
	// of starting one. Start deletes every topic on it that is not
	// internal: point it at a broker kept for tests only.
	BootstrapEnv = "STOATCTL_TEST_BOOTSTRAP"
)

// Real reports whether the tests run against real Kafka.
func Real() bool { return os.Getenv(ModeEnv) == "real" }

// Kind names the broker kind the tests run against, for messages.
func Kind() string {
	if Real() {
		return "real Kafka"
	}
	return "embedded broker"
}

// EmbeddedOnly skips t in the real tier.
func EmbeddedOnly(t testing.TB) {
	t.Helper()
	if Real() {
		t.Skipf("runs on the embedded broker only (%s=real)", ModeEnv)
	}
}

// Parallel marks t as one that may run beside other parallel tests, on
// the embedded broker only: there each test has a broker of its own, while
// the real tier's tests share one broker that Start clears, so there they
// stay sequential. The long engine tests spend most of their time waiting
// on the broker, a child process or a timeout, so running them side by
// side shortens the suite without adding CPU.
func Parallel(t *testing.T) {
	t.Helper()
	if !Real() {
		t.Parallel()
	}
}

// Start returns the address of a broker on which topics exist, with the
// partition counts given, and nothing else the test did not make itself.
func Start(t testing.TB, topics map[string]int32) string {
	t.Helper()
	if !Real() {
		b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: topics})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b.Addr()
	}
	addr, err := realBroker()
	if err != nil {
		t.Fatalf("real Kafka: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := reset(ctx, addr, topics); err != nil {
		t.Fatalf("real Kafka at %s: %v", addr, err)
	}
	return addr
}

var shared struct {
	once sync.Once
	addr string
	err  error
}

// realBroker returns the shared real broker's address, starting it on the
// first call. The broker's folder is a temporary one of this process's, and
// scripts/kafka.sh's watchdog stops the broker once the process exits, so a
// test binary that dies leaves nothing running.
func realBroker() (string, error) {
	shared.once.Do(func() {
		if addr := os.Getenv(BootstrapEnv); addr != "" {
			shared.addr = addr
			return
		}
		root, err := RepoRoot()
		if err != nil {
			shared.err = err
			return
		}
		dir, err := os.MkdirTemp("", "stoatctl-test-kafka-")
		if err != nil {
			shared.err = err
			return
		}
		cmd := exec.Command(filepath.Join(root, "scripts", "kafka.sh"), "start", "--watch", fmt.Sprint(os.Getpid()))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "STOATCTL_KAFKA_DIR="+filepath.Join(dir, "kafka"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			shared.err = fmt.Errorf("scripts/kafka.sh start: %v\n%s", err, stderr.String())
			return
		}
		shared.addr = strings.TrimSpace(string(out))
	})
	return shared.addr, shared.err
}

// RepoRoot finds the repository root, the directory holding go.mod, from
// the working directory up (go test runs a test in its package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// reset deletes the topics and groups earlier tests left, then creates the
// topics asked for. Kafka deletes topics asynchronously, so creating one of
// the same name is retried until the old one is gone.
func reset(ctx context.Context, addr string, topics map[string]int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	if names := groups.Groups(); len(names) > 0 {
		// A group whose member is still in its session (a killed process)
		// cannot be deleted yet; its offsets go with its topics, and tests
		// do not share application ids, so it is left to expire.
		_, _ = adm.DeleteGroups(ctx, names...)
	}

	existing, err := adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var old []string
	for _, name := range existing.Names() {
		if !strings.HasPrefix(name, "__") {
			old = append(old, name)
		}
	}
	if len(old) > 0 {
		res, err := adm.DeleteTopics(ctx, old...)
		if err != nil {
			return fmt.Errorf("delete topics: %w", err)
		}
		for _, r := range res.Sorted() {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("delete topic %s: %w", r.Topic, r.Err)
			}
		}
		if err := waitGone(ctx, adm, old); err != nil {
			return err
		}
	}
	return CreateTopics(ctx, adm, topics)
}

// waitGone waits until none of topics is listed any more.
func waitGone(ctx context.Context, adm *kadm.Client, topics []string) error {
	for {
		existing, err := adm.ListTopics(ctx)
		if err == nil && !slices.ContainsFunc(topics, existing.Has) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v still listed after deletion: %w", topics, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// keepForever is the config of the topics tests create: no retention.
// Tests stamp records with times long past (1970, 2024), which Apache
// Kafka deletes under its default retention of a week once it rolls the
// segment, and it rolls a segment at once when its records are that old.
var keepForever = map[string]*string{"retention.ms": ptr("-1")}

func ptr(s string) *string { return &s }

// CreateTopics creates topics with the given partition counts, the
// broker's default replication and no retention limit, retrying while a deleted topic of the same
// name is still on its way out. A topic that exists already is fine.
func CreateTopics(ctx context.Context, adm *kadm.Client, topics map[string]int32) error {
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := createTopic(ctx, adm, name, topics[name], keepForever); err != nil {
			return err
		}
	}
	return awaitLeaders(ctx, adm, names)
}

// CreateTopic creates one topic with its own configs (a changelog's
// cleanup.policy and retention.ms, say) and waits until the broker lists
// it with a leader for every partition. Apache Kafka answers CreateTopics
// before its metadata has caught up, so a test that lists topics right
// after a bare kadm CreateTopic can miss the one it made.
func CreateTopic(t testing.TB, adm *kadm.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createTopic(ctx, adm, name, partitions, configs); err != nil {
		t.Fatal(err)
	}
	if err := awaitLeaders(ctx, adm, []string{name}); err != nil {
		t.Fatal(err)
	}
}

func createTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32, configs map[string]*string) error {
	if partitions <= 0 {
		partitions = 1
	}
	for {
		res, err := adm.CreateTopic(ctx, partitions, -1, configs, name)
		if err == nil {
			err = res.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) && !markedForDeletion(res.ErrMessage) {
			return nil
		}
		if !retriable(err) {
			return fmt.Errorf("create topic %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create topic %s: %w (last: %v)", name, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitLeaders waits until every partition of names has a leader, so the
// first produce does not race the controller.
func awaitLeaders(ctx context.Context, adm *kadm.Client, names []string) error {
	if len(names) == 0 {
		return nil
	}
	for {
		md, err := adm.Metadata(ctx, names...)
		if err == nil && ready(md, names) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v have no leaders yet: %w", names, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(md kadm.Metadata, names []string) bool {
	for _, name := range names {
		td, ok := md.Topics[name]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

func markedForDeletion(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "deletion")
}

func retriable(err error) bool {
	var ke *kerr.Error
	return errors.Is(err, kerr.TopicAlreadyExists) || errors.As(err, &ke) && ke.Retriable
}

// AwaitStable waits until no transaction is open on any partition of
// topics: the last stable offset (what read_committed sees) has reached the
// end offset. Apache Kafka answers EndTxn once the coordinator has logged
// its decision and writes the partitions' markers after that, so a reader
// that lists offsets right after a commit can still see the old LSO; the
// embedded broker writes the markers before it answers.
func AwaitStable(t testing.TB, addr string, topics ...string) {
	t.Helper()
	adm := Admin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		end, err1 := adm.ListEndOffsets(ctx, topics...)
		stable, err2 := adm.ListCommittedOffsets(ctx, topics...)
		if err1 == nil && err2 == nil && end.Error() == nil && stable.Error() == nil && sameOffsets(end, stable) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topics %v: last stable offsets did not reach the end offsets within a minute", topics)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func sameOffsets(a, b kadm.ListedOffsets) bool {
	same := true
	a.Each(func(o kadm.ListedOffset) {
		if p, ok := b.Lookup(o.Topic, o.Partition); !ok || p.Offset != o.Offset {
			same = false
		}
	})
	return same
}

// CommittedToEnd reports whether group has committed every partition of
// topics up to its end offset (a partition that never held a record needs
// no commit), with the group's committed offsets.
func CommittedToEnd(ctx context.Context, adm *kadm.Client, group string, topics ...string) (bool, kadm.OffsetResponses, error) {
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return false, committed, err
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		if c, ok := committed.Lookup(o.Topic, o.Partition); o.Offset > 0 && (!ok || c.At < o.Offset) {
			done = false
		}
	})
	return done, committed, nil
}

// AwaitCommitted waits, up to a minute, until group has committed every
// partition of topics to its end.
func AwaitCommitted(t testing.TB, addr, group string, topics ...string) {
	t.Helper()
	adm := Admin(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if done, _, err := CommittedToEnd(ctx, adm, group, topics...); err == nil && done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s did not commit %v to their ends within a minute", group, topics)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Admin returns an admin client of the broker at addr, closed when t ends.
func Admin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// Crashable is a real broker of one test's own, which the test may kill
// and restart: a fault test must not take the shared broker down under
// the tests that follow.
//
// It is a cluster of two processes, a dedicated controller and a broker
// (scripts/kafka.sh start --split), as production KRaft clusters run, and
// only the broker is killed. A single combined node killed and restarted
// loses its controller too, and Apache Kafka then completes a transaction
// it recovers in PREPARE_COMMIT without writing its markers
// (docs/testing.md): a crash a cluster whose controller survives does not
// have.
type Crashable struct {
	root, dir, addr string
}

// StartCrashable starts a real broker and its controller for t alone
// (scripts/kafka.sh in a temporary folder), stopped when t ends. It skips
// t outside the real tier.
func StartCrashable(t testing.TB) *Crashable {
	t.Helper()
	if !Real() {
		t.Skip("needs a real Kafka broker of its own (" + ModeEnv + "=real)")
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := &Crashable{root: root, dir: filepath.Join(t.TempDir(), "kafka")}
	c.addr = strings.TrimSpace(c.run(t, "start", "--split", "--watch", fmt.Sprint(os.Getpid())))
	t.Cleanup(func() {
		if t.Failed() {
			c.logWarnings(t)
		}
		c.run(t, "stop")
	})
	return c
}

// logWarnings logs the WARN and ERROR lines of every incarnation's broker
// log and of the controller's (at most 200), for the post-mortem of a
// failed fault test: the folder goes with the test.
func (c *Crashable) logWarnings(t testing.TB) {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "broker*.log"))
	sort.Strings(logs) // broker.NANOS.log in order, then broker.log
	logs = append(logs, filepath.Join(c.dir, "controller.log"))
	var lines []string
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "] WARN ") || strings.Contains(line, "] ERROR ") {
				lines = append(lines, filepath.Base(l)+": "+line)
			}
		}
	}
	if len(lines) > 200 {
		lines = lines[len(lines)-200:]
	}
	t.Logf("broker warnings and errors (%d log files):\n%s", len(logs), strings.Join(lines, "\n"))
}

// Addr is the broker's bootstrap address; it stays the same across
// restarts.
func (c *Crashable) Addr() string { return c.addr }

// Kill SIGKILLs the broker; the controller lives on.
func (c *Crashable) Kill(t testing.TB) { t.Helper(); c.run(t, "kill") }

// Restart starts the killed broker again on its data, as after a crash,
// once the controller has fenced it (its session timed out, 3 s in
// kafka.sh's split mode; the script waits for the controller's log line).
// The broker then comes back as a new incarnation of a fenced broker and
// gets its partitions' leadership back only once it is unfenced, so the
// transaction coordinator it starts finds leaders for the markers of the
// transactions it recovers.
func (c *Crashable) Restart(t testing.TB) {
	t.Helper()
	c.run(t, "await-fence", "60")
	c.run(t, "restart")
}

func (c *Crashable) run(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.root, "scripts", "kafka.sh"), args...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), "STOATCTL_KAFKA_DIR="+c.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/kafka.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
