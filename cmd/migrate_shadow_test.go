package cmd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/syncbuf"
)

// maskShadow hides what a shadow run measures: its duration, and the
// point lines, whose number depends on the machine's pace.
func maskShadow(s string) string {
	s = regexp.MustCompile(`aligned points, [0-9.]+ s`).ReplaceAllString(s, "aligned points, <seconds> s")
	s = regexp.MustCompile(`\d+ aligned points`).ReplaceAllString(s, "<n> aligned points")
	s = regexp.MustCompile(`(?m)^point \d+: .*\n`).ReplaceAllString(s, "")
	return s
}

// TestMigrateShadowCommand runs stoatctl migrate shadow in-process beside
// a Kafka Streams word count played by hand on the embedded broker (its
// counts changelog and committed offsets as in TestMigrateCommand): its
// help, a usage error, a run with nothing new to compare (text and JSON),
// and a run during which "Kafka Streams" processes lines and gets one
// count wrong, which exits 1 and lists it with both records.
func TestMigrateShadowCommand(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"lines": 2, "word-counts": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fakeKafkaStreamsWordCount(t, b.Addr())
	topo := "../interop/topologies/word-count.yaml"
	base := []string{"migrate", "shadow", "--from-application-id", "ks", "-t", topo, "-b", b.Addr(), "--interval", "50ms", "-X", "stoatflow.commit-barrier.interval-ms=100"}
	for _, st := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"help", []string{"migrate", "shadow", "--help"}, ExitOK},
		{"usage_no_from", []string{"migrate", "shadow", "-t", topo, "-b", b.Addr()}, ExitUsage},
		{"nothing_new", append(base, "--shadow-id", "quiet", "--for", "300ms"), ExitOK},
		// A shadow id that has run is refused: its state is not Kafka
		// Streams'.
		{"run_before", append(base, "--shadow-id", "quiet", "--for", "300ms"), ExitShadowIncomplete},
		// A shadow id under Kafka Streams' prefix would pass for its
		// internal topics at the cutover.
		{"under_prefix", append(base, "--shadow-id", "ks-shadow", "--for", "300ms"), ExitShadowIncomplete},
	} {
		t.Run(st.golden, func(t *testing.T) {
			var stdout, stderr syncbuf.Buffer
			code := Run(st.args, &stdout, &stderr)
			if code != st.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, st.code, stderr.String())
			}
			checkGolden(t, "migrate_shadow_"+st.golden, maskShadow(maskBroker("")(transcript(st.args, code, stdout.String(), stderr.String()))))
		})
	}

	t.Run("json", func(t *testing.T) {
		var stdout, stderr syncbuf.Buffer
		code := Run(append(base, "--shadow-id", "quiet-json", "--for", "300ms", "-o", "json"), &stdout, &stderr)
		if code != ExitOK || stderr.String() != "" {
			t.Fatalf("exit %d, stderr (want none under -o json):\n%s", code, stderr.String())
		}
		var rep struct {
			OK      bool   `json:"ok"`
			Shadow  string `json:"shadow_application_id"`
			Points  int    `json:"points"`
			Outputs []struct {
				Topic  string `json:"topic"`
				Shadow string `json:"shadow_topic"`
			} `json:"outputs"`
			Unexpected  int               `json:"unexpected"`
			Differences []json.RawMessage `json:"differences"`
		}
		if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
			t.Fatalf("%v\n%s", err, stdout.String())
		}
		if !rep.OK || rep.Shadow != "quiet-json" || rep.Points < 1 || len(rep.Outputs) != 1 || rep.Outputs[0].Shadow != "quiet-json-output-word-counts" ||
			rep.Unexpected != 0 || rep.Differences == nil {
			t.Fatalf("report: %+v\n%s", rep, stdout.String())
		}
	})

	t.Run("differences", func(t *testing.T) {
		args := append(base, "--shadow-id", "wrong", "--records", "2")
		var stdout, stderr syncbuf.Buffer
		done := make(chan int, 1)
		go func() { done <- Run(args, &stdout, &stderr) }()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(stderr.String(), "point 1:") {
			select {
			case code := <-done:
				t.Fatalf("exited %d before its first point:\n%s", code, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no point within a minute:\n%s", stderr.String())
			}
		}
		// Kafka Streams processes two lines after the seed (lines 0..9
		// and 0..6 were counted before it; fillers stand for them here),
		// one word each, and writes the first's count one too high. The
		// seed has word wi counted i%5+1 times in partition i%2, so the
		// words are two whose task that partition is.
		var words []string
		var counts []int64
		for i := 0; len(words) < 2; i++ {
			if w := "w" + strconv.Itoa(i); lane.For([]byte(w), 2) == i%2 {
				words, counts = append(words, w), append(counts, int64(i%5+2))
			}
		}
		ctx := context.Background()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ts := time.UnixMilli(6000)
		var in []*kgo.Record
		for range 10 {
			in = append(in, &kgo.Record{Topic: "lines", Partition: 0, Value: []byte("filler"), Timestamp: ts})
		}
		for range 7 {
			in = append(in, &kgo.Record{Topic: "lines", Partition: 1, Value: []byte("filler"), Timestamp: ts})
		}
		long := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
		var out []*kgo.Record
		for i, w := range words {
			in = append(in, &kgo.Record{Topic: "lines", Partition: int32(i), Value: []byte(w), Timestamp: ts})
			v := counts[i]
			if i == 0 {
				v++
			}
			out = append(out, &kgo.Record{Topic: "word-counts", Partition: int32(lane.For([]byte(w), 2)), Key: []byte(w), Value: long(v), Timestamp: ts})
		}
		if err := cl.ProduceSync(ctx, append(in, out...)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		md, _ := kafka.TopicPartitionMetadata{PartitionTime: 5000}.Encode()
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: "lines", Partition: 0, At: 11, LeaderEpoch: -1, Metadata: md})
		offs.Add(kadm.Offset{Topic: "lines", Partition: 1, At: 8, LeaderEpoch: -1, Metadata: md})
		if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "ks", offs); err != nil {
			t.Fatal(err)
		}
		var code int
		select {
		case code = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("still running:\n%s", stderr.String())
		}
		if code != ExitFailure {
			t.Errorf("exit %d, want %d\nstderr:\n%s", code, ExitFailure, stderr.String())
		}
		checkGolden(t, "migrate_shadow_differences", maskShadow(maskBroker("")(transcript(args, code, stdout.String(), stderr.String()))))
	})
}
