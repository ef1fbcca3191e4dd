package interop_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
)

// partitions of every output topic, and every input topic of a mirror
// that does not re-key, in the broker tests: more than one, so that Kafka
// Streams' tasks and our lanes split the keys.
const partitions = 2

// TestKafkaStreamsVsStoatctlOnKafka runs each mirror twice on a broker, on
// the same input produced the same way: once as a Kafka Streams 4.4
// application (the runner, exactly-once, caching off) and once with
// stoatctl run. It runs on the embedded broker (the test step) and on real
// Apache Kafka (the real tier): the embedded broker is held to Kafka
// Streams' own clients, which it long refused (engine/broker:
// createtopics.go). Each key's sequence of output records (value and
// timestamp) must be the same. It also checks what Kafka Streams left
// behind, which stoatctl migrate reads: changelog topics, committed offsets
// whose metadata our decoder reads, and a state directory with .checkpoint
// files; the test log lists them (go test -v).
func TestKafkaStreamsVsStoatctlOnKafka(t *testing.T) {
	j := java(t)
	for _, m := range interop.Mirrors {
		t.Run(m.Name, func(t *testing.T) {
			input, err := interop.ReadFile(j.Path("testdata", m.Name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			input = recent(input)

			addr := kafkatest.Start(t, topicsOf(m))
			stateDir := t.TempDir()
			app := "ks-" + m.Name
			ks := j.Runner(context.Background(), "run", "--topology", m.Name, "--application-id", app,
				"--bootstrap-servers", addr, "--state-dir", stateDir, "--cache-max-bytes", "0", "--commit-interval-ms", "100", "--emit-interval-ms", "0")
			runToEnd(t, ks, "RUNNING", addr, app, m, input)
			theirs := readOutputs(t, addr, m)
			reportKafkaStreamsState(t, addr, app, stateDir, m)

			addr = kafkatest.Start(t, topicsOf(m))
			app = "stoat-" + m.Name
			ref := m.Ours
			if strings.HasSuffix(ref, ".yaml") {
				ref = j.Path(ref)
			}
			// Two lanes split the keys as Kafka Streams' two tasks do. Behind
			// a re-key, one lane: lanes keep order per key, not per
			// partition, so the results of a new key could come in another
			// order, with other timestamps (docs/event-time.md: "Order is
			// kept per key, not per partition").
			lanes := "2"
			if m.Rekeys {
				lanes = "1"
			}
			ours := exec.Command(stoatctl, "run", "-t", ref, "-b", addr, "-X", "application.id="+app,
				"-X", "stoatflow.commit-barrier.interval-ms=100", "-X", "num.stream.threads="+lanes)
			runToEnd(t, ours, "to=RUNNING", addr, app, m, input)
			mine := readOutputs(t, addr, m)

			want, got := interop.PerKey(theirs), interop.PerKey(mine)
			if len(want) == 0 {
				t.Fatalf("Kafka Streams wrote nothing for %s", m.Name)
			}
			for _, k := range slices.Sorted(maps.Keys(want)) {
				same := slices.Equal(want[k], got[k])
				if m.Answers && !same {
					same = within(want[k], got[k]) && want[k][len(want[k])-1] == got[k][len(got[k])-1]
				}
				if !same {
					t.Errorf("%s: Kafka Streams wrote %v, stoatctl %v", k, want[k], got[k])
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: stoatctl wrote %v, Kafka Streams nothing", k, got[k])
				}
			}
		})
	}
}

// within says every row of want appears in got, in want's order (got may
// hold more).
func within[T comparable](want, got []T) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// recent moves the input's times by whole hours to a few hours ago. The
// files' times are fixed, for the driver tests; a broker deletes records
// older than a topic's retention.ms as soon as it rolls their segment, which
// it does at once for old times, and Kafka Streams gives windowed
// changelogs a retention of a day and some. Whole hours keep every window
// boundary where it was.
func recent(in []interop.Record) []interop.Record {
	const hour = int64(time.Hour / time.Millisecond)
	first := in[0].Timestamp
	for _, r := range in {
		first = min(first, r.Timestamp)
	}
	shift := (time.Now().UnixMilli()-3*hour)/hour*hour - first/hour*hour
	out := slices.Clone(in)
	for i := range out {
		out[i].Timestamp += shift
	}
	return out
}

func topicsOf(m interop.Mirror) map[string]int32 {
	ts := map[string]int32{}
	for _, topic := range m.Topics() {
		ts[topic] = partitions
		if m.Rekeys {
			ts[topic] = 1
		}
	}
	for _, out := range m.Outputs {
		ts[out.Topic] = partitions
	}
	return ts
}

// runToEnd starts cmd, waits until a line of its output contains ready,
// feeds the input phase by phase (each consumed and committed by group
// before the next is produced), then stops cmd with SIGTERM and requires
// exit status 0.
func runToEnd(t *testing.T, cmd *exec.Cmd, ready, addr, group string, m interop.Mirror, input []interop.Record) {
	t.Helper()
	p := interop.Start(t, cmd, ready)
	for _, phase := range m.Phases {
		var recs []interop.Record
		for _, r := range input {
			if slices.Contains(phase, r.Topic) {
				recs = append(recs, r)
			}
		}
		interop.Produce(t, addr, recs)
		interop.AwaitConsumed(t, addr, group, phase, p.Out)
	}
	p.Stop(t)
}

// readOutputs reads every output topic of m, read-committed, to its end.
func readOutputs(t *testing.T, addr string, m interop.Mirror) []interop.Record {
	t.Helper()
	var recs []interop.Record
	for _, out := range m.Outputs {
		_, err := kafka.ReadToEnd(context.Background(), []string{addr}, out.Topic, kafka.FromLogStart(partitionList()...), func(r *kgo.Record) error {
			k, v, err := out.Decode(r.Key, r.Value)
			if err != nil {
				return err
			}
			recs = append(recs, interop.Record{Topic: out.Topic, Key: k, Value: v, Timestamp: r.Timestamp.UnixMilli()})
			return nil
		})
		if err != nil {
			t.Fatalf("read %s: %v", out.Topic, err)
		}
	}
	return recs
}

func partitionList() []int32 {
	ps := make([]int32, partitions)
	for i := range ps {
		ps[i] = int32(i)
	}
	return ps
}

// reportKafkaStreamsState logs, and checks, what the Kafka Streams
// application left: its internal topics with their record counts, its
// committed offsets with metadata (which must decode as Kafka Streams'
// TopicPartitionMetadata), and its state directory.
func reportKafkaStreamsState(t *testing.T, addr, app, stateDir string, m interop.Mirror) {
	t.Helper()
	adm := kafkatest.Admin(t, addr)
	ctx := context.Background()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	changelogs := 0
	for _, name := range topics.Names() {
		if !strings.HasPrefix(name, app+"-") {
			continue
		}
		if strings.HasSuffix(name, "-changelog") {
			changelogs++
		}
		n := 0
		var ps []int32
		for p := range topics[name].Partitions {
			ps = append(ps, p)
		}
		if _, err := kafka.ReadToEnd(ctx, []string{addr}, name, kafka.FromLogStart(ps...), func(*kgo.Record) error { n++; return nil }); err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		lines = append(lines, fmt.Sprintf("topic %s: %d partitions, %d records", name, len(ps), n))
	}
	committed, err := adm.FetchOffsets(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range committed.Sorted() {
		md, err := kafka.DecodeTopicPartitionMetadata(o.Metadata)
		if err != nil {
			t.Errorf("committed offset %s[%d]@%d: metadata %q does not decode: %v", o.Topic, o.Partition, o.At, o.Metadata, err)
		}
		lines = append(lines, fmt.Sprintf("offset %s[%d] = %d, metadata %q (partition time %d)", o.Topic, o.Partition, o.At, o.Metadata, md.PartitionTime))
	}
	// Kafka Streams 4.3 and later keep a RocksDB store's changelog offsets
	// inside the store, in a column family of their own (KIP-1035); a
	// .checkpoint file is left only for stores that do not manage their
	// offsets. Every RocksDB instance (a directory with an OPTIONS file:
	// one per key-value store, one per segment of a window or session
	// store) is listed with its column families.
	checkpoints, stores, withOffsets := 0, 0, 0
	_ = filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stateDir, path)
		switch {
		case d.Name() == ".checkpoint":
			checkpoints++
			b, _ := os.ReadFile(path)
			lines = append(lines, fmt.Sprintf("state %s: %q", rel, b))
		case d.IsDir():
			cfs, ok := columnFamilies(path)
			if !ok {
				return nil
			}
			stores++
			if slices.Contains(cfs, "offsets") {
				withOffsets++
			}
			lines = append(lines, fmt.Sprintf("state %s/: RocksDB, column families %v", rel, cfs))
		}
		return nil
	})
	t.Logf("Kafka Streams %s (%s) left:\n  %s", m.Name, app, strings.Join(lines, "\n  "))
	if len(committed) == 0 {
		t.Errorf("Kafka Streams committed no offsets for %s", app)
	}
	if stores == 0 {
		t.Errorf("Kafka Streams left no RocksDB store under %s", stateDir)
	}
	if withOffsets+checkpoints == 0 {
		t.Errorf("Kafka Streams left its changelog offsets neither in an offsets column family nor in a .checkpoint file under %s", stateDir)
	}
	if changelogs == 0 {
		t.Errorf("Kafka Streams left no changelog topic for %s", app)
	}
}

// columnFamilies lists the column families of the RocksDB instance in dir,
// from its newest OPTIONS file; ok is false when dir holds no instance.
func columnFamilies(dir string) (cfs []string, ok bool) {
	names, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	if len(names) == 0 {
		return nil, false
	}
	slices.Sort(names) // OPTIONS-<file number>, zero-padded to six digits
	b, err := os.ReadFile(names[len(names)-1])
	if err != nil {
		return nil, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, found := strings.CutPrefix(strings.TrimSpace(line), "[CFOptions \""); found {
			cfs = append(cfs, strings.TrimSuffix(name, "\"]"))
		}
	}
	return cfs, true
}
