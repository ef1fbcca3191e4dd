package migrate_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
	"github.com/stoatflow/stoatctl/migrate"
)

// The acceptance tests: state that real Kafka Streams 4.4 wrote on a real
// broker, migrated, and our topology carrying on from it. Each runs the
// mirror's Kafka Streams application twice: once left running over the
// whole input (the reference), once stopped after the first half and
// migrated, our topology then fed the second half. What we write after the
// cutover must be what the reference wrote over the second half.

func kafkaStreams(t *testing.T) *interop.Java {
	t.Helper()
	if !kafkatest.Real() {
		t.Skipf("needs a real Kafka broker and Kafka Streams (%s=real)", kafkatest.ModeEnv)
	}
	if testing.Short() {
		t.Skip("runs the Kafka Streams runner; skipped with -short")
	}
	root, err := kafkatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	j, err := interop.Build(root)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func mirror(t *testing.T, name string) interop.Mirror {
	for _, m := range interop.Mirrors {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no mirror %s", name)
	return interop.Mirror{}
}

// topicsFor gives every input one partition (the mirrors re-key, and one
// partition keeps the input's order, as interop's broker tests do) and
// every output two.
func topicsFor(m interop.Mirror) map[string]int32 {
	ts := map[string]int32{}
	for _, t := range m.Topics() {
		ts[t] = 1
	}
	for _, o := range m.Outputs {
		ts[o.Topic] = 2
	}
	return ts
}

// startKS runs m's Kafka Streams application as app, its state in
// stateDir (a temporary directory when empty). A stopped Kafka Streams
// stays in its group for its session timeout (it does not leave on close),
// which a cutover waits out: 6 s, the broker's minimum.
func startKS(t *testing.T, j *interop.Java, addr string, m interop.Mirror, app, stateDir string, h how) *interop.Proc {
	t.Helper()
	return j.StartKafkaStreams(t, m, app, addr, interop.RunOptions{StateDir: stateDir, SessionTimeoutMs: 6000, DefaultEmitInterval: h.tail > 0})
}

// outputEnds is where each output partition ends now.
func outputEnds(t *testing.T, addr string, m interop.Mirror) map[string]kafka.Positions {
	t.Helper()
	adm := kadm.NewClient(client(t, addr))
	ends := map[string]kafka.Positions{}
	for _, o := range m.Outputs {
		l, err := adm.ListEndOffsets(context.Background(), o.Topic)
		if err != nil {
			t.Fatal(err)
		}
		ends[o.Topic] = kafka.Positions{}
		l.Each(func(lo kadm.ListedOffset) { ends[o.Topic][lo.Partition] = lo.Offset })
	}
	return ends
}

// readFrom reads every output of m from the given positions to its end.
func readFrom(t *testing.T, addr string, m interop.Mirror, from map[string]kafka.Positions) []interop.Record {
	t.Helper()
	var recs []interop.Record
	for _, o := range m.Outputs {
		_, err := kafka.ReadToEnd(context.Background(), []string{addr}, o.Topic, from[o.Topic], func(r *kgo.Record) error {
			k, v, err := o.Decode(r.Key, r.Value)
			if err != nil {
				return err
			}
			recs = append(recs, interop.Record{Topic: o.Topic, Key: k, Value: v, Timestamp: r.Timestamp.UnixMilli()})
			return nil
		})
		if err != nil {
			t.Fatalf("read %s: %v", o.Topic, err)
		}
	}
	return recs
}

// partitionsFrom is, for every output record from the given positions to
// the end, the partition it is in, by topic and key bytes.
func partitionsFrom(t *testing.T, addr string, m interop.Mirror, from map[string]kafka.Positions) map[string]int32 {
	t.Helper()
	parts := map[string]int32{}
	for _, o := range m.Outputs {
		_, err := kafka.ReadToEnd(context.Background(), []string{addr}, o.Topic, from[o.Topic], func(r *kgo.Record) error {
			parts[o.Topic+" "+string(r.Key)] = r.Partition
			return nil
		})
		if err != nil {
			t.Fatalf("read %s: %v", o.Topic, err)
		}
	}
	return parts
}

// samePartitions: every key we wrote after the cutover is in the
// partition Kafka Streams left running wrote it to (windowed keys by the
// inner key, as its WindowedStreamPartitioner puts them).
func samePartitions(t *testing.T, c cutover) {
	t.Helper()
	checked := 0
	for k, p := range c.afterParts {
		want, ok := c.refParts[k]
		if !ok {
			continue
		}
		checked++
		if p != want {
			t.Errorf("%q: we wrote it to partition %d after the cutover, Kafka Streams to %d", k, p, want)
		}
	}
	t.Logf("%d keys in the partition Kafka Streams put them in", checked)
	if checked == 0 {
		t.Error("no key written both by us after the cutover and by Kafka Streams: the partitions were not compared")
	}
}

// loadMirror builds our side of m (a file under interop/, or a Go
// example) under application id app.
func loadMirror(t *testing.T, m interop.Mirror, app string) (*topofile.File, *topology.Built) {
	t.Helper()
	f, err := topofile.Resolve(m.Ours, "../interop")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Topology.Build(config.New(map[string]string{config.ApplicationID: app}))
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// runOurs runs our mirror in this process until stop.
func runOurs(t *testing.T, addr string, m interop.Mirror, app string) (stop func()) {
	t.Helper()
	f, _ := loadMirror(t, m, app)
	cfg := maps.Clone(f.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["application.id"], cfg["bootstrap.servers"], cfg["num.stream.threads"] = app, addr, "1"
	cfg[engine.BarrierIntervalMs] = "100"
	var log *slog.Logger
	if os.Getenv("MIGRATE_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := engine.New(f.Topology, cfg, engine.WithLogger(log))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("our engine: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// settle waits until the outputs have not grown for quiet: final results
// trail the watermark by a commit interval or two.
func settle(t *testing.T, addr string, m interop.Mirror, quiet time.Duration) {
	t.Helper()
	last, since := "", time.Now()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if now := fmt.Sprint(outputEnds(t, addr, m)); now != last {
			last, since = now, time.Now()
		} else if time.Since(since) > quiet {
			return
		}
	}
}

// awaitOutputs waits, at most a minute, until m's outputs hold at least
// want records past from; a shortfall is left for the test's comparison to
// report.
func awaitOutputs(t *testing.T, addr string, m interop.Mirror, from map[string]kafka.Positions, want int) {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		// A read is given its own copy of the positions.
		pos := map[string]kafka.Positions{}
		for topic, p := range from {
			pos[topic] = maps.Clone(p)
		}
		n := len(readFrom(t, addr, m, pos))
		if n >= want {
			t.Logf("%d output records after the cutover within %v (%d awaited)", n, time.Since(start).Round(time.Millisecond), want)
			return
		}
		if time.Since(start) > time.Minute {
			t.Logf("only %d output records after the cutover within a minute, %d awaited", n, want)
			return
		}
	}
}

// cutover is one acceptance run.
type cutover struct {
	// reference is what Kafka Streams, left running, wrote over the second
	// half; before is what the migrated one wrote over the first; after is
	// what ours wrote after the cutover.
	reference, before, after []interop.Record
	// referenceAll is what Kafka Streams left running wrote over both
	// halves.
	referenceAll []interop.Record
	// refParts and afterParts are the partitions of the reference's and
	// our records (partitionsFrom).
	refParts, afterParts map[string]int32
	plan                 *migrate.Plan
	report               *migrate.Report
}

// references caches what Kafka Streams left running writes over a second
// half, by mirror: the window subtests share one.
var (
	references     = map[string][]interop.Record{}
	referenceParts = map[string]map[string]int32{}
	referenceAll   = map[string][]interop.Record{}
)

// how a cutover migrates: with --emit-frontier, and from the stopped Kafka
// Streams' state directory with its changelog topics deleted first.
type how struct {
	emitFrontier, fromStateDir bool
	// split names an input split other than the mirror's usual one: the
	// reference over its second half is cached under it.
	split string
	// tail is how many of the first half's last records go to Kafka
	// Streams together, a second after the others; it then runs with its
	// own emit interval, looking for closed windows at most once a
	// second: at the first of them, not again. The others go in chunks of
	// pace ms of event time, a second apart, so that it looks at every
	// chunk's first record (a window that closed and was not looked at
	// within its retention is dropped by Kafka Streams' store unemitted).
	tail int
	pace int64
	// phased feeds each half run of topic by run of topic (the input
	// files put a half's table records before its stream records), each
	// run consumed before the next is produced, as the broker tests feed
	// a mirror's phases: which of two topics is fetched first would
	// otherwise decide what a stream-table join reads.
	phased bool
	// inOrder checks each Kafka Streams run against its
	// TopologyTestDriver over the same records in the file's order, and
	// runs it again (at most twice) when they differ: a running
	// application that fetches one topic ahead of the other (with
	// max.task.idle.ms at its default of 0, it does not wait for a topic
	// whose fetched lag was zero) takes a join's records out of order:
	// once in CI it took every order of the second half before its
	// payments and paired none of them (the driver fed in that order
	// writes exactly that). Our output is checked against Kafka Streams'
	// answer for the records in order, not against one such run.
	inOrder bool
}

// runs splits recs at every change of topic when h.phased; one run
// otherwise.
func runs(recs []interop.Record, h how) [][]interop.Record {
	if !h.phased {
		return [][]interop.Record{recs}
	}
	var out [][]interop.Record
	for i, r := range recs {
		if i == 0 || r.Topic != recs[i-1].Topic {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
	}
	return out
}

func runCutover(t *testing.T, j *interop.Java, m interop.Mirror, first, second []interop.Record, h how) cutover {
	t.Helper()
	var c cutover
	// The reference: Kafka Streams over both halves.
	// zero is where the outputs start; a fresh one for every read, which
	// moves the positions it is given.
	zero := func() map[string]kafka.Positions {
		z := map[string]kafka.Positions{}
		for _, o := range m.Outputs {
			z[o.Topic] = kafka.FromLogStart(0, 1)
		}
		return z
	}
	refKey := m.Name + h.split
	var driven driven
	if h.inOrder {
		driven = drive(t, j, m, first, second)
	}
	if ref, ok := references[refKey]; ok {
		c.reference, c.refParts, c.referenceAll = ref, referenceParts[refKey], referenceAll[refKey]
	} else {
		for attempt := 1; ; attempt++ {
			app := "ks-ref-" + m.Name + again(attempt)
			addr := kafkatest.Start(t, topicsFor(m))
			ks := startKS(t, j, addr, m, app, "", how{})
			for _, run := range runs(first, h) {
				interop.Produce(t, addr, run)
				interop.AwaitConsumed(t, addr, app, m.Topics(), ks.Out)
			}
			mid := outputEnds(t, addr, m)
			for _, run := range runs(second, h) {
				interop.Produce(t, addr, run)
				interop.AwaitConsumed(t, addr, app, m.Topics(), ks.Out)
			}
			ks.Stop(t)
			c.reference = readFrom(t, addr, m, mid)
			c.refParts = partitionsFrom(t, addr, m, mid)
			c.referenceAll = readFrom(t, addr, m, zero())
			if !h.inOrder || driven.agrees(t, "Kafka Streams left running over both halves", driven.all, c.referenceAll, attempt) {
				break
			}
		}
		references[refKey], referenceParts[refKey], referenceAll[refKey] = c.reference, c.refParts, c.referenceAll
	}

	// The cutover: Kafka Streams over the first half, stopped, migrated.
	var addr, from, ours, stateDir string
	var mid map[string]kafka.Positions
	for attempt := 1; ; attempt++ {
		addr = kafkatest.Start(t, topicsFor(m))
		from, ours = "ks-"+m.Name+again(attempt), "stoat-"+m.Name+again(attempt)
		if h.fromStateDir {
			// Application ids are not shared between tests: a group whose
			// member's session is still on cannot be deleted.
			from, ours = "ks-sd-"+m.Name+again(attempt), "stoat-sd-"+m.Name+again(attempt)
		}
		stateDir = t.TempDir()
		ks := startKS(t, j, addr, m, from, stateDir, h)
		for i, chunk := range paced(first, h) {
			if i > 0 {
				time.Sleep(1100 * time.Millisecond)
			}
			interop.Produce(t, addr, chunk)
			interop.AwaitConsumed(t, addr, from, m.Topics(), ks.Out)
		}
		ks.Stop(t)
		c.before = readFrom(t, addr, m, zero())
		mid = outputEnds(t, addr, m)
		if !h.inOrder || driven.agrees(t, "Kafka Streams over the first half", driven.first, c.before, attempt) {
			break
		}
	}

	_, built := loadMirror(t, m, ours)
	opts := migrate.Options{From: from, To: ours, Built: built, Seeds: []string{addr}, EmitFrontier: h.emitFrontier, WaitForGroups: 90 * time.Second}
	if h.fromStateDir {
		deleteChangelogs(t, addr, from)
		opts.StateDir, opts.RocksDBLibrary = stateDir, j.RocksDBJar()
	}
	var err error
	if c.plan, err = migrate.MakePlan(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = c.plan.WriteText(&b)
	t.Logf("plan:\n%s", b.String())
	if c.report, err = migrate.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	stop := runOurs(t, addr, m, ours)
	for _, run := range runs(second, h) {
		interop.Produce(t, addr, run)
		interop.AwaitConsumed(t, addr, ours, m.Topics(), &interop.Lines{})
	}
	// Window results trail the committed input by an epoch or two (the
	// repartition hop, then the epoch that finds their records committed):
	// wait for as many as a passing run writes at least before the quiet
	// period, so that late output shows in the log as a wait (once, in
	// CI, nothing was written after a cutover, and the quiet period alone
	// could not tell late from never).
	awaitOutputs(t, addr, m, mid, min(len(c.reference), len(c.referenceAll)-len(c.before)))
	settle(t, addr, m, 2*time.Second)
	stop()
	c.after = readFrom(t, addr, m, mid)
	c.afterParts = partitionsFrom(t, addr, m, mid)
	return c
}

// again is the suffix of the application ids of a Kafka Streams run's
// attempt: none for the first, "-2" for the second. A run that is
// repeated needs new ids: a group whose member's session is still on
// cannot be deleted.
func again(attempt int) string {
	if attempt == 1 {
		return ""
	}
	return fmt.Sprintf("-%d", attempt)
}

// driven is what Kafka Streams' TopologyTestDriver writes over the first
// half and over both halves, the records taken in the input's order.
type driven struct {
	first, all []interop.Record
}

// drive runs m's topology under the TopologyTestDriver over the first
// half and over both halves.
func drive(t *testing.T, j *interop.Java, m interop.Mirror, first, second []interop.Record) driven {
	t.Helper()
	run := func(name string, recs []interop.Record) []interop.Record {
		path := filepath.Join(t.TempDir(), name+".jsonl")
		if err := interop.WriteFile(path, recs); err != nil {
			t.Fatal(err)
		}
		return j.Driver(t, m, path)
	}
	return driven{first: run("first", first), all: run("all", slices.Concat(first, second))}
}

// agrees reports whether a running Kafka Streams (what) wrote, key by
// key, what the driver did (want); when it did not, it logs the keys that
// differ, and fails the test on the third attempt.
func (driven) agrees(t *testing.T, what string, want, got []interop.Record, attempt int) bool {
	t.Helper()
	w, g := interop.PerKey(want), interop.PerKey(got)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if !slices.Equal(w[k], g[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: driver %v, running %v", k, w[k], g[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if _, ok := w[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: driver nothing, running %v", k, g[k]))
		}
	}
	if len(diffs) == 0 {
		return true
	}
	msg := fmt.Sprintf("%s (attempt %d) differs from its TopologyTestDriver over the same records in order, at %d keys:\n%s",
		what, attempt, len(diffs), strings.Join(diffs, "\n"))
	if attempt >= 3 {
		t.Fatal(msg)
	}
	t.Log(msg + "\nrunning it again")
	return false
}

// paced splits the first half as h says: in chunks of h.pace ms of event
// time from its first record (and at every change of topic when
// h.phased), then its last h.tail records; one chunk without either.
func paced(first []interop.Record, h how) [][]interop.Record {
	head, tail := first[:len(first)-h.tail], first[len(first)-h.tail:]
	var chunks [][]interop.Record
	for i, r := range head {
		if i == 0 || h.pace > 0 && (r.Timestamp-head[0].Timestamp)/h.pace != (head[i-1].Timestamp-head[0].Timestamp)/h.pace ||
			h.phased && r.Topic != head[i-1].Topic {
			chunks = append(chunks, nil)
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], r)
	}
	if len(tail) > 0 {
		chunks = append(chunks, tail)
	}
	return chunks
}

// deleteChangelogs deletes the changelog topics of Kafka Streams
// application app and waits until they are gone.
func deleteChangelogs(t *testing.T, addr, app string) {
	t.Helper()
	adm := kadm.NewClient(client(t, addr))
	ctx := context.Background()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var changelogs []string
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, app+"-") && strings.HasSuffix(name, "-changelog") {
			changelogs = append(changelogs, name)
		}
	}
	if len(changelogs) == 0 {
		t.Fatalf("%s has no changelog topics to delete", app)
	}
	if _, err := adm.DeleteTopics(ctx, changelogs...); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		// A topic asked for by name is listed with an error once gone.
		left, err := adm.ListTopics(ctx, changelogs...)
		if err == nil && !slices.ContainsFunc(changelogs, func(n string) bool { d, ok := left[n]; return ok && d.Err == nil }) {
			t.Logf("deleted %v", changelogs)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("changelogs %v not gone within a minute", changelogs)
		}
	}
}

func samePerKey(t *testing.T, want, got []interop.Record) {
	t.Helper()
	w, g := interop.PerKey(want), interop.PerKey(got)
	if len(w) == 0 {
		t.Fatal("Kafka Streams wrote nothing over the second half")
	}
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if !slices.Equal(w[k], g[k]) {
			t.Errorf("%s: Kafka Streams wrote %v, we wrote %v after the cutover", k, w[k], g[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if _, ok := w[k]; !ok {
			t.Errorf("%s: we wrote %v after the cutover, Kafka Streams nothing", k, g[k])
		}
	}
}

func halves(in []interop.Record) ([]interop.Record, []interop.Record) {
	return in[:len(in)/2], in[len(in)/2:]
}

func TestKafkaStreamsCutoverWordCount(t *testing.T) {
	j := kafkaStreams(t)
	m := mirror(t, "word-count")
	in, err := interop.ReadFile(j.Path("testdata", "word-count.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := halves(shift(in))
	c := runCutover(t, j, m, first, second, how{})
	if !c.report.Verify.OK || c.report.Translated == 0 {
		t.Fatalf("report: %+v", c.report)
	}
	samePerKey(t, c.reference, c.after)
	samePartitions(t, c)
}

// TestKafkaStreamsCutoverMirrors runs the cutover for the other mirrors
// with state: a session count (a session merging across the cutover), a
// timestamped table, a Processor API store, and a stream-table join whose
// orders after the cutover find the customers Kafka Streams' table held
// (without the table's state they would all be "?").
func TestKafkaStreamsCutoverMirrors(t *testing.T) {
	j := kafkaStreams(t)
	for _, name := range []string{"session-count", "table", "processor-store", "stream-table-join"} {
		t.Run(name, func(t *testing.T) {
			m := mirror(t, name)
			in, err := interop.ReadFile(j.Path("testdata", name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			first, second := halves(shift(in))
			// A join of two topics is checked against the driver (see
			// how.inOrder); the others read one.
			c := runCutover(t, j, m, first, second, how{inOrder: len(m.Topics()) > 1})
			if !c.report.Verify.OK || c.report.Translated == 0 {
				t.Fatalf("report: %+v", c.report)
			}
			samePerKey(t, c.reference, c.after)
			samePartitions(t, c)
		})
	}
}

// TestKafkaStreamsCutoverSuppress: Kafka Streams stopped with windows in
// its suppress buffer (untilWindowCloses); the buffer is translated from
// its V3 changelog into ours, and the windows it held are released after
// the cutover as Kafka Streams left running releases them, counting the
// second half's logins.
func TestKafkaStreamsCutoverSuppress(t *testing.T) {
	j := kafkaStreams(t)
	m := mirror(t, "suppress")
	in, err := interop.ReadFile(j.Path("testdata", "suppress.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := halves(shift(in))
	c := runCutover(t, j, m, first, second, how{})
	if !c.report.Verify.OK {
		t.Fatalf("report: %+v", c.report)
	}
	// The verification counts the keys each store holds: the windows
	// still buffered, for the suppress buffer.
	buffered := 0
	for i, sp := range c.plan.Stores {
		if sp.Kind == migrate.SuppressBuffer {
			buffered += c.report.Verify.Stores[i].Keys
		}
	}
	t.Logf("%d windows buffered at the cutover", buffered)
	if buffered == 0 {
		t.Fatalf("the suppress buffer held nothing at the cutover: the test proves nothing (report %+v)", c.report.Verify)
	}
	samePerKey(t, c.reference, c.after)
	samePartitions(t, c)
}

// clicks is the window-close input: a click every seven seconds for ten
// minutes on three pages, one-minute windows with ten seconds of grace.
// The second half opens with a click for a window that closed before the
// cutover (Kafka Streams drops it as late, and so must we) and one for a
// window still open.
func clicks(base int64) (first, second []interop.Record) {
	pages := []string{"/home", "/cart", "/help"}
	for i := range 86 {
		t := int64(i * 7_000)
		r := interop.Record{Topic: "clicks", Key: fmt.Sprintf("u%d", i%4), Value: pages[i%3], Timestamp: base + t}
		if t < 300_000 {
			first = append(first, r)
		} else {
			second = append(second, r)
		}
	}
	late := interop.Record{Topic: "clicks", Key: "late", Value: "/home", Timestamp: base + 200_000}
	open := interop.Record{Topic: "clicks", Key: "open", Value: "/home", Timestamp: base + 245_000}
	return first, append([]interop.Record{late, open}, second...)
}

func TestKafkaStreamsCutoverWindowClose(t *testing.T) {
	j := kafkaStreams(t)
	m := mirror(t, "window-close")
	base := inputHour
	first, second := clicks(base)

	t.Run("emit-frontier", func(t *testing.T) {
		c := runCutover(t, j, m, first, second, how{emitFrontier: true})
		if !c.report.Verify.OK {
			t.Fatalf("report: %+v", c.report)
		}
		samePerKey(t, c.reference, c.after)
		samePartitions(t, c)
		// Nothing Kafka Streams emitted before the cutover is emitted again.
		emitted := interop.PerKey(c.before)
		for k, v := range interop.PerKey(c.after) {
			if _, ok := emitted[k]; ok {
				t.Errorf("%s: emitted before the cutover and again after it: %v", k, v)
			}
		}
		// The late click was dropped by both; the open window counted it.
		if c.plan.Floor == nil || c.plan.Floor.Value != base+294_000 {
			t.Errorf("floor %+v, want %d", c.plan.Floor, base+294_000)
		}
	})
	t.Run("no emit-frontier", func(t *testing.T) {
		c := runCutover(t, j, m, first, second, how{})
		emitted := interop.PerKey(c.before)
		var burst, rest []interop.Record
		for _, r := range c.after {
			if _, ok := emitted[r.Topic+" "+interop.Canonical(r.Key)]; ok {
				burst = append(burst, r)
			} else {
				rest = append(rest, r)
			}
		}
		predicted := c.plan.Stores[0].Frontier.ReEmitted
		t.Logf("burst of %d re-emitted windows, %d predicted by the plan", len(burst), predicted)
		if len(burst) == 0 || int64(len(burst)) != predicted {
			t.Errorf("re-emitted %d windows, the plan predicted %d: %v", len(burst), predicted, burst)
		}
		samePerKey(t, c.reference, rest)
		// The burst repeats what Kafka Streams emitted: the late click, for
		// the /home window [180 s, 240 s) Kafka Streams had closed, was dropped
		// by the seeded floor, not counted into the re-emitted window (without
		// the floor this fails: /home counts 4 where Kafka Streams emitted 3).
		for k, vs := range interop.PerKey(burst) {
			if want := emitted[k][len(emitted[k])-1]; vs[0] != want {
				t.Errorf("%s: re-emitted %v, Kafka Streams emitted %s before the cutover", k, vs, want)
			}
		}
	})
}

// TestKafkaStreamsCutoverPendingWindows: for a tumbling, a sliding and a
// session window emitted on close, a cutover 1 s after a window closed.
// Kafka Streams runs with its own emit interval and gets the first half's
// last two records together, a second after the others: it looks for
// closed windows at the first and, at most once a second, not at the
// second, so the windows that closed between them (at 4:10 for the
// tumbling [3:00, 4:00)) are pending at the cutover. Every window is
// emitted once across the cutover, as Kafka Streams left running emits it
// (before or after the cutover, as it looked), none is emitted twice, and
// the plan's pending count is the number of windows closed at the cutover
// that we emitted after it.
func TestKafkaStreamsCutoverPendingWindows(t *testing.T) {
	j := kafkaStreams(t)
	base := inputHour
	cut := base + 251_000
	// The clicks of the window mirror (the late and open ones left out),
	// split at the cut, with a click at it.
	clicksAt := func() (first, second []interop.Record) {
		all, rest := clicks(base)
		for _, r := range append(all, rest[2:]...) {
			if r.Timestamp < cut {
				first = append(first, r)
			} else {
				second = append(second, r)
			}
		}
		return append(first, interop.Record{Topic: "clicks", Key: "u9", Value: "/home", Timestamp: cut}), second
	}
	// Page views in bursts: user u<b%4> at b*60 s, +5 s, +10 s, whose
	// session closes at b*60 s + 50 s; the one of burst 3 at 3:50. Views
	// of user z at 3:45 and at 3:51, the cut. User t views a page every
	// 5 s (one session to the end), so that Kafka Streams left running
	// looks at every session before its store drops it, unemitted (a
	// session's segment, a minute by its end, goes once stream time is 40
	// s past the segment's end: z's closes at 4:31 and goes at 4:40).
	sessionCut := base + 231_000
	views := func() (first, second []interop.Record) {
		var all []interop.Record
		for b := range int64(10) {
			for _, d := range []int64{0, 5_000, 10_000} {
				all = append(all, interop.Record{Topic: "page-views", Key: fmt.Sprintf("u%d", b%4), Value: "/p", Timestamp: base + b*60_000 + d})
			}
		}
		for ts := int64(0); ts < 600_000; ts += 5_000 {
			all = append(all, interop.Record{Topic: "page-views", Key: "t", Value: "/p", Timestamp: base + ts + 1})
		}
		slices.SortStableFunc(all, func(a, b interop.Record) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		for _, r := range all {
			if r.Timestamp < base+225_000 {
				first = append(first, r)
			} else {
				second = append(second, r)
			}
		}
		first = append(first, interop.Record{Topic: "page-views", Key: "z", Value: "/p", Timestamp: base + 225_000},
			interop.Record{Topic: "page-views", Key: "z", Value: "/p", Timestamp: sessionCut})
		return first, second
	}
	windowStart := func(k []byte) int64 { return int64(binary.BigEndian.Uint64(k[len(k)-8:])) }
	for _, tc := range []struct {
		mirror interop.Mirror
		input  func() (first, second []interop.Record)
		// closeOf is a result key's close time; cut the last record's.
		closeOf func(key []byte) int64
		cut     int64
		pace    int64
	}{
		{mirror: mirror(t, "window-close"), input: clicksAt, closeOf: func(k []byte) int64 { return windowStart(k) + 70_000 }, cut: cut, pace: 50_000},
		{mirror: interop.Mirror{Name: "sliding-close", Ours: "topologies/sliding-close.yaml", Phases: [][]string{{"clicks"}}, Rekeys: true,
			Outputs: []interop.Output{{Topic: "clicks-sliding", Key: interop.TimeWindowed, Value: interop.Long, WindowSize: 60_000}}},
			input: clicksAt, closeOf: func(k []byte) int64 { return windowStart(k) + 60_000 + 1 + 10_000 }, cut: cut, pace: 50_000},
		{mirror: interop.Mirror{Name: "session-close", Ours: "topologies/session-close.yaml", Phases: [][]string{{"page-views"}},
			Outputs: []interop.Output{{Topic: "session-close-counts", Key: interop.SessionWindowed, Value: interop.Long}}},
			// A session key ends with its end, then its start.
			input: views, closeOf: func(k []byte) int64 { return int64(binary.BigEndian.Uint64(k[len(k)-16:])) + 40_000 }, cut: sessionCut, pace: 60_000},
	} {
		t.Run(tc.mirror.Name, func(t *testing.T) {
			m := tc.mirror
			first, second := tc.input()
			c := runCutover(t, j, m, first, second, how{emitFrontier: true, split: "/pending", tail: 2, pace: tc.pace})
			if !c.report.Verify.OK {
				t.Fatalf("report: %+v", c.report)
			}
			samePerKey(t, c.referenceAll, append(slices.Clone(c.before), c.after...))
			samePartitions(t, c)
			emitted := interop.PerKey(c.before)
			for k, v := range interop.PerKey(c.after) {
				if _, ok := emitted[k]; ok {
					t.Errorf("%s: emitted before the cutover and again after it: %v", k, v)
				}
			}
			closed := int64(0)
			for k := range c.afterParts {
				if _, key, _ := strings.Cut(k, " "); tc.closeOf([]byte(key)) <= tc.cut {
					closed++
				}
			}
			fp := c.plan.Stores[0].Frontier
			t.Logf("%d windows pending at the cutover by the plan, %d closed windows emitted after it", fp.Pending, closed)
			if fp.Pending == 0 {
				t.Errorf("no window pending at the cutover (frontier %+v, floor %+v): the test proves nothing", fp, c.plan.Floor)
			}
			if fp.Pending != closed || fp.ReEmittedWithFrontier != 0 {
				t.Errorf("the plan said %d pending and %d emitted again; we emitted %d windows closed at the cutover", fp.Pending, fp.ReEmittedWithFrontier, closed)
			}
		})
	}
}

// inputHour is the whole hour, three hours ago, that the Kafka Streams
// tests move their input to (a broker deletes records older than
// retention.ms; see interop's recent). It is taken once per test binary:
// the reference runs are cached per mirror (references) and shared by the
// tests, so every test must move its input alike, even in a run that
// crosses an hour (one did, in CI at 02:00, and every timestamp differed
// by an hour from the cached reference's).
var inputHour = time.Now().Add(-3*time.Hour).UnixMilli() / 3_600_000 * 3_600_000

// shift moves the input's times to inputHour, by whole hours.
func shift(in []interop.Record) []interop.Record {
	const hour = int64(time.Hour / time.Millisecond)
	first := in[0].Timestamp
	for _, r := range in {
		first = min(first, r.Timestamp)
	}
	d := inputHour - first/hour*hour
	out := slices.Clone(in)
	for i := range out {
		out[i].Timestamp += d
	}
	return out
}

// TestKafkaStreamsCutoverFromStateDir is the offline path: Kafka Streams
// stopped, its changelog topics deleted, its stores read from its state
// directory (RocksDB 10, through the rocksdbjni jar it ran with). The
// window count emitted on close (time-ordered window segments, the emit
// frontier and the floor from the committed offsets) and the word count (a
// timestamped key-value store, behind a re-key) carry on as Kafka Streams
// left running does.
func TestKafkaStreamsCutoverFromStateDir(t *testing.T) {
	j := kafkaStreams(t)
	t.Run("window-close", func(t *testing.T) {
		m := mirror(t, "window-close")
		base := inputHour
		first, second := clicks(base)
		c := runCutover(t, j, m, first, second, how{emitFrontier: true, fromStateDir: true})
		if !c.report.Verify.OK || c.report.Translated == 0 || c.plan.Stores[0].StateDir == "" {
			t.Fatalf("report: %+v", c.report)
		}
		samePerKey(t, c.reference, c.after)
		emitted := interop.PerKey(c.before)
		for k, v := range interop.PerKey(c.after) {
			if _, ok := emitted[k]; ok {
				t.Errorf("%s: emitted before the cutover and again after it: %v", k, v)
			}
		}
	})
	t.Run("word-count", func(t *testing.T) {
		m := mirror(t, "word-count")
		in, err := interop.ReadFile(j.Path("testdata", "word-count.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		first, second := halves(shift(in))
		c := runCutover(t, j, m, first, second, how{fromStateDir: true})
		if !c.report.Verify.OK || c.report.Translated == 0 || c.plan.Stores[0].StateDir == "" {
			t.Fatalf("report: %+v", c.report)
		}
		samePerKey(t, c.reference, c.after)
	})
}

// windowCloseAs is the window mirror's topology with old replaced by new.
func windowCloseAs(t *testing.T, old, new string) *topology.Built {
	t.Helper()
	b, err := os.ReadFile("../interop/topologies/window-close.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("window-close.yaml has no %q", old)
	}
	return loadYAML(t, strings.Replace(string(b), old, new, 1))
}

// TestKafkaStreamsRefusals: state real Kafka Streams left (the window
// mirror stopped after the first half), and our topology wrong in each of
// the ways issue 42 measured: each migration is refused, listing the
// problems, and writes nothing (no topic of ours, no offset of our group).
func TestKafkaStreamsRefusals(t *testing.T) {
	j := kafkaStreams(t)
	m := mirror(t, "window-close")
	topics := topicsFor(m)
	topics["lines"] = 1
	addr := kafkatest.Start(t, topics)
	first, _ := clicks(inputHour)
	// An application id of its own: Kafka Streams' members do not leave
	// their group when they close, so the group of the application
	// stopped here stays until its session times out, and a later test
	// could not commit offsets for the same group ("ks") until then.
	const app = "ks-refusals"
	ks := startKS(t, j, addr, m, app, "", how{})
	interop.Produce(t, addr, first)
	interop.AwaitConsumed(t, addr, app, m.Topics(), ks.Out)
	ks.Stop(t)
	interop.Produce(t, addr, []interop.Record{{Topic: "lines", Key: "l", Value: "a b", Timestamp: inputHour}})
	adm := kadm.NewClient(client(t, addr))
	for _, tc := range []struct {
		name  string
		ours  func(t *testing.T) *topology.Built
		codes []string
	}{
		{"store name typo", func(t *testing.T) *topology.Built {
			return windowCloseAs(t, "store: clicks-per-minute-store", "store: clicks-per-minute-stor")
		}, []string{migrate.ProblemStoreUnmapped, migrate.ProblemStoreUnfed}},
		{"wrong topology", func(t *testing.T) *topology.Built { _, b := load(t, "word-count", "ours"); return b },
			[]string{migrate.ProblemInputNotRead, migrate.ProblemInputNotCommitted, migrate.ProblemStoreUnmapped, migrate.ProblemStoreUnfed}},
		{"hopping", func(t *testing.T) *topology.Built {
			return windowCloseAs(t, "type: tumbling, size: 1m", "type: hopping, size: 1m, advance: 30s")
		}, []string{migrate.ProblemWindowHop}},
		{"longer window, no grace", func(t *testing.T) *topology.Built {
			return windowCloseAs(t, "size: 1m, grace: 10s", "size: 70s, grace: 0s")
		}, []string{migrate.ProblemWindowGrid}},
		{"more grace", func(t *testing.T) *topology.Built {
			return windowCloseAs(t, "grace: 10s", "grace: 20s")
		}, []string{migrate.ProblemRetention}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := migrate.Run(context.Background(), migrate.Options{From: app, To: "ours", Built: tc.ours(t), Seeds: []string{addr}, EmitFrontier: true})
			var refusal *migrate.RefusalError
			if !errors.As(err, &refusal) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			t.Log(err)
			var codes []string
			for _, p := range refusal.Problems {
				codes = append(codes, p.Code)
			}
			if !slices.Equal(codes, tc.codes) {
				t.Errorf("problems %v, want %v", codes, tc.codes)
			}
			assertNothingWritten(t, adm)
		})
	}
}

// joinMirrors are the runner's stream-stream joins (orders with payments
// within 10 s, grace 5 s: inner, left, outer), kept for
// TestKafkaStreamsCutoverJoins; all read testdata/stream-stream-join.jsonl.
var joinMirrors = []interop.Mirror{
	{Name: "stream-stream-join", Ours: "topologies/stream-stream-join.yaml", Phases: [][]string{{"orders", "payments"}},
		Outputs: []interop.Output{{Topic: "orders-paid", Key: interop.String, Value: interop.String}}},
	{Name: "stream-stream-left-join", Ours: "topologies/stream-stream-left-join.yaml", Phases: [][]string{{"orders", "payments"}},
		Outputs: []interop.Output{{Topic: "orders-paid", Key: interop.String, Value: interop.String}}},
	{Name: "stream-stream-outer-join", Ours: "topologies/stream-stream-outer-join.yaml", Phases: [][]string{{"orders", "payments"}},
		Outputs: []interop.Output{{Topic: "orders-paid", Key: interop.String, Value: interop.String}}},
}

// TestKafkaStreamsCutoverJoins cuts an inner, a left and an outer
// stream-stream join over mid-window: orders of the first half paid in
// the second make pairs across the cutover, and orders of the first half
// left unpaid (and, for the outer join, payments with no order) have
// their null-joins emitted after it. The join's stores (both sides'
// window stores and the shared store of unmatched records) are translated,
// and what we write after the cutover is, key by key, what Kafka Streams
// left running wrote over the second half: no pair lost or doubled, no
// null-join emitted twice or lost. The left join is cut over a second
// time from Kafka Streams' state directory, its changelogs deleted.
func TestKafkaStreamsCutoverJoins(t *testing.T) {
	j := kafkaStreams(t)
	in, err := interop.ReadFile(j.Path("testdata", "stream-stream-join.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := halves(shift(in))
	before := map[any]bool{}
	for _, r := range first {
		if r.Topic == "orders" {
			before[r.Key] = true
		}
	}
	for _, tc := range []struct {
		m            interop.Mirror
		fromStateDir bool
	}{{m: joinMirrors[0]}, {m: joinMirrors[1]}, {m: joinMirrors[2]}, {m: joinMirrors[1], fromStateDir: true}} {
		m := tc.m
		name := m.Name
		if tc.fromStateDir {
			name += "/from-state-dir"
		}
		t.Run(name, func(t *testing.T) {
			c := runCutover(t, j, m, first, second, how{fromStateDir: tc.fromStateDir, inOrder: true})
			if !c.report.Verify.OK || c.report.Translated == 0 {
				t.Fatalf("report: %+v", c.report)
			}
			for _, sp := range c.plan.Stores {
				if (sp.StateDir != "") != tc.fromStateDir {
					t.Errorf("store %s read from the state directory %q", sp.Source, sp.StateDir)
				}
			}
			stores := map[string]migrate.Kind{}
			for _, sp := range c.plan.Stores {
				stores[sp.Source] = sp.Kind
			}
			want := map[string]migrate.Kind{"pairs-this-join-store": migrate.Window, "pairs-other-join-store": migrate.Window}
			switch m.Name {
			case "stream-stream-left-join":
				want = map[string]migrate.Kind{"pairs-this-join-store": migrate.Window, "pairs-outer-other-join-store": migrate.Window, "pairs-left-shared-join-store": migrate.JoinOuter}
			case "stream-stream-outer-join":
				want = map[string]migrate.Kind{"pairs-outer-this-join-store": migrate.Window, "pairs-outer-other-join-store": migrate.Window, "pairs-outer-shared-join-store": migrate.JoinOuter}
			}
			if !maps.Equal(stores, want) {
				t.Errorf("stores translated %v, want %v", stores, want)
			}
			// The cut must fall mid-window: results after it of orders
			// Kafka Streams read before it.
			straddling := 0
			for _, r := range c.after {
				if before[r.Key] {
					straddling++
				}
			}
			if straddling == 0 {
				t.Errorf("no result after the cutover of an order before it: the test cuts no window")
			}
			t.Logf("%d results after the cutover, %d of orders before it", len(c.after), straddling)
			samePerKey(t, c.reference, c.after)
			samePartitions(t, c)
		})
	}
}

// TestKafkaStreamsCutoverVersioned: Kafka Streams 4.4 with a versioned
// table (Stores.persistentVersionedKeyValueStore, an hour of history) that
// a stream-table join reads as of each order's time, stopped after the
// first half and migrated: its changelog is carried version by version,
// and the orders of the second half that Kafka Streams left running
// priced from the first half's history (o5 at 32 s reads p1's version of
// 30 s, though p1's last record before the cutover is its version of 20
// s; o8 at 26.5 s reads p2's first version, o9 p3's deletion) are priced
// so by us.
func TestKafkaStreamsCutoverVersioned(t *testing.T) {
	j := kafkaStreams(t)
	m := mirror(t, "versioned-table-join")
	in, err := interop.ReadFile(j.Path("testdata", m.Name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := halves(shift(in))
	c := runCutover(t, j, m, first, second, how{phased: true})
	if !c.report.Verify.OK || c.report.Translated == 0 {
		t.Fatalf("report: %+v", c.report)
	}
	if len(c.plan.Stores) != 1 || c.plan.Stores[0].Kind != migrate.Versioned || c.plan.Stores[0].Source != "prices-store" {
		t.Fatalf("stores translated %+v, want prices-store as a versioned store", c.plan.Stores)
	}
	for _, want := range []string{"o5@12", "o8@20", "o9@?"} {
		if !slices.ContainsFunc(c.after, func(r interop.Record) bool { return r.Value == want }) {
			t.Errorf("we wrote no %s after the cutover: %v", want, c.after)
		}
	}
	samePerKey(t, c.reference, c.after)
	samePartitions(t, c)
}

// TestKafkaStreamsCutoverForeignKeyJoin: Kafka Streams 4.4 with a
// foreign-key join (orders by customer id, TableJoined.as("oc")), inner
// and left, stopped after the first half and migrated: its subscription
// store is translated into ours, our resolver's copy of the orders
// filled from its orders store, and what we write after the cutover is,
// key by key, what Kafka Streams left running wrote over the second half.
// o4 subscribed to c9 before the cutover, when c9 did not exist; c9's
// arrival after it joins o4 only through the translated subscription, and
// c1's change reaches o3 (not o1, which moved to c2) only through the
// subscriptions and the primary store.
func TestKafkaStreamsCutoverForeignKeyJoin(t *testing.T) {
	j := kafkaStreams(t)
	for _, name := range []string{"fk-join", "fk-left-join"} {
		t.Run(name, func(t *testing.T) {
			m := mirror(t, name)
			in, err := interop.ReadFile(j.Path("testdata", m.Name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			first, second := halves(shift(in))
			c := runCutover(t, j, m, first, second, how{phased: true})
			if !c.report.Verify.OK || c.report.Translated == 0 {
				t.Fatalf("report: %+v", c.report)
			}
			stores := map[string]string{}
			for _, sp := range c.plan.Stores {
				stores[sp.Store] = sp.Source + " " + string(sp.Kind)
			}
			want := map[string]string{"orders-store": "orders-store key-value", "customers-store": "customers-store key-value",
				"oc-subscription-store": "oc-subscription-store fk-subscription", "oc-rows": "oc-rows key-value",
				"oc-subscription-response-resolver-primary-store": "orders-store key-value"}
			if !maps.Equal(stores, want) {
				t.Errorf("stores translated %v, want %v", stores, want)
			}
			for _, want := range []string{"c9/Ivy", "c1/Ann3"} {
				if !slices.ContainsFunc(c.after, func(r interop.Record) bool { return r.Value == want }) {
					t.Errorf("we wrote no %s after the cutover: %v", want, c.after)
				}
			}
			samePerKey(t, c.reference, c.after)
			samePartitions(t, c)
		})
	}
}

// TestKafkaStreamsCutoverGraceJoin: the same versioned join with a grace
// period of 5 s (versioned-grace-join), cut over with orders held in Kafka
// Streams' buffer: its buffer is translated into ours, and the held orders
// leave ours after the cutover, joined as Kafka Streams left running joins
// them.
func TestKafkaStreamsCutoverGraceJoin(t *testing.T) {
	j := kafkaStreams(t)
	m := mirror(t, "versioned-grace-join")
	in, err := interop.ReadFile(j.Path("testdata", m.Name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := halves(shift(in))
	c := runCutover(t, j, m, first, second, how{phased: true})
	if !c.report.Verify.OK || c.report.Translated == 0 {
		t.Fatalf("report: %+v", c.report)
	}
	held := -1
	for i, sp := range c.plan.Stores {
		if sp.Kind == migrate.JoinBuffer {
			held = c.report.Verify.Stores[i].Keys
		}
	}
	t.Logf("%d orders held in the buffer at the cutover", held)
	if held <= 0 {
		t.Fatalf("no order held in the join's buffer at the cutover (%d): the test proves nothing; stores %+v", held, c.plan.Stores)
	}
	samePerKey(t, c.reference, c.after)
	samePartitions(t, c)
}
