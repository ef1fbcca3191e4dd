package cmd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestMigrateCommand runs stoatctl migrate in-process against state laid
// out as a stopped Kafka Streams word count leaves it (its counts
// changelog, its committed offsets with partition times): the plan, the
// plan as JSON, the refusals, a run and a verification.
func TestMigrateCommand(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"lines": 2, "word-counts": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fakeKafkaStreamsWordCount(t, b.Addr())
	topo := "../interop/topologies/word-count.yaml"
	base := []string{"migrate", "--from-application-id", "ks", "--application-id", "ours", "-t", topo, "-b", "ADDR"}
	type step struct {
		golden string
		args   []string
		code   int
	}
	steps := []step{
		{"dry_run", append(base, "--dry-run"), ExitOK},
		{"usage_no_from", []string{"migrate", "-t", topo, "-b", "ADDR"}, ExitUsage},
		{"state_dir_missing", append(base, "--from-state-dir", "testdata/no-such-state-dir", "--dry-run"), ExitFailure},
		{"usage_map", append(base, "--map", "counts"), ExitUsage},
		{"bad_map", append(base, "--map", "nope=counts", "--dry-run"), ExitFailure},
		{"refused", append(base, "--skip-store", "count", "--new-input", "lines", "-y"), ExitFailure},
		// Under -o json a refusal is data too: its problems on stdout.
		{"refused_json", append(base, "--skip-store", "count", "-o", "json", "-y"), ExitFailure},
		{"yes", append(base, "-y"), ExitOK},
		{"again", append(base, "-y"), ExitOK},
		{"verify_only", append(base, "--verify-only"), ExitOK},
		// Under -o json, stderr carries no progress: the report is on
		// stdout, and stderr is for errors.
		{"yes_json", []string{"migrate", "--from-application-id", "ks", "--application-id", "ours-json", "-t", topo, "-b", "ADDR", "-o", "json", "-y"}, ExitOK},
		// The way back, once ours has "run" (its offsets are the copied
		// ones): the plan, a usage error, the run, its verification.
		{"reverse_dry_run", append(base, "--reverse", "--dry-run"), ExitOK},
		{"usage_reverse_state_dir", append(base, "--reverse", "--from-state-dir", "x", "--dry-run"), ExitUsage},
		{"reverse", append(base, "--reverse", "-y"), ExitOK},
		{"reverse_verify_only", append(base, "--reverse", "--verify-only"), ExitOK},
	}
	if !isTerminal(os.Stdin) {
		steps = append(steps, step{"usage_no_yes", base, ExitUsage})
	}
	for _, st := range steps {
		t.Run(st.golden, func(t *testing.T) {
			args := make([]string, len(st.args))
			for i, a := range st.args {
				args[i] = strings.ReplaceAll(a, "ADDR", b.Addr())
			}
			var stdout, stderr bytes.Buffer
			code := Run(args, &stdout, &stderr)
			if code != st.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, st.code, stderr.String())
			}
			if code != ExitOK && stdout.Len() > 0 && st.golden != "refused_json" {
				t.Errorf("stoatctl %s failed but wrote to stdout:\n%s", strings.Join(args, " "), stdout.String())
			}
			checkGolden(t, "migrate_"+st.golden, maskProgress(maskBroker("")(transcript(args, code, stdout.String(), stderr.String()))))
		})
	}
}

// maskProgress hides the measured rate and time of migrate's last
// progress line.
func maskProgress(s string) string {
	return regexp.MustCompile(`\d+ records/s, done in \S+`).ReplaceAllString(s, "<rate> records/s, done in <time>")
}

// TestMigratePlanJSONShape decodes --dry-run -o json as a script would.
func TestMigratePlanJSONShape(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"lines": 2, "word-counts": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fakeKafkaStreamsWordCount(t, b.Addr())
	var stdout, stderr bytes.Buffer
	code := Run([]string{"migrate", "--from-application-id", "ks", "--application-id", "ours", "-t", "../interop/topologies/word-count.yaml",
		"-b", b.Addr(), "--dry-run", "-o", "json"}, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var plan struct {
		Stores []struct {
			Store      string `json:"store"`
			Partitions []struct {
				Records int64 `json:"records"`
			} `json:"partitions"`
		} `json:"stores"`
		Offsets []struct {
			Topic         string `json:"topic"`
			Offset        int64  `json:"offset"`
			PartitionTime int64  `json:"partitionTime"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if len(plan.Stores) != 1 || plan.Stores[0].Store != "counts" || len(plan.Stores[0].Partitions) != 2 ||
		plan.Stores[0].Partitions[0].Records+plan.Stores[0].Partitions[1].Records != 60 {
		t.Errorf("stores: %+v", plan.Stores)
	}
	if len(plan.Offsets) != 2 || plan.Offsets[0].Offset != 10 || plan.Offsets[0].PartitionTime != 5000 {
		t.Errorf("offsets: %+v", plan.Offsets)
	}
}

// fakeKafkaStreamsWordCount writes 20 words' counts (word wi counted i%5+1
// times) to ks-counts-changelog in Kafka Streams' placement and layout, and
// commits offsets 10 and 7 of lines with partition time 5000.
func fakeKafkaStreamsWordCount(t *testing.T, addr string, opts ...kgo.Opt) {
	t.Helper()
	ctx := context.Background()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	kafkatest.CreateTopic(t, adm, "ks-counts-changelog", 2, map[string]*string{"cleanup.policy": &compact})
	var recs []*kgo.Record
	for i := range 20 {
		for c := range i%5 + 1 {
			recs = append(recs, &kgo.Record{Topic: "ks-counts-changelog", Partition: int32(i % 2), Key: []byte("w" + strconv.Itoa(i)),
				Value: binary.BigEndian.AppendUint64(nil, uint64(c+1)), Timestamp: time.UnixMilli(int64(1000 + i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 5000}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "lines", Partition: 0, At: 10, LeaderEpoch: -1, Metadata: md})
	offs.Add(kadm.Offset{Topic: "lines", Partition: 1, At: 7, LeaderEpoch: -1, Metadata: md})
	if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
		t.Fatal(err)
	}
}
