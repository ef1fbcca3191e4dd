package cmd

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestTopicRead is the acceptance test of topic read: the word-count
// example runs on a broker over TCP (the embedded one, or real Kafka in
// the real tier) until it has committed its input, then topic read prints
// what it wrote, decoded with the topology's serdes, in every format;
// each transcript is compared with testdata/topic_read_<step>.golden.
// Offsets are masked: transaction markers take offsets, and how many
// transactions the engine commits depends on timing.
func TestTopicRead(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 1, "word-counts": 1})
	runWordCount(t, addr, "the quick brown fox", "the lazy dog", "The fox")

	steps := []struct {
		golden string
		args   []string
		code   int
	}{
		{"word_counts_json", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--topology", "word-count", "-o", "json"}, ExitOK},
		{"word_counts_table", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--topology", "word-count"}, ExitOK},
		{"word_counts_yaml_limit", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--topology", "word-count", "-o", "yaml", "--limit", "2"}, ExitOK},
		{"word_counts_from_time", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--topology", "word-count", "--from", "1970-01-01T00:00:03Z", "-o", "json"}, ExitOK},
		{"lines_source_serdes", []string{"topic", "read", "-b", "ADDR", "-t", "lines", "--topology", "word-count", "-o", "json"}, ExitOK},
		{"word_counts_serde_flags", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--key-serde", "string", "--value-serde", "long", "--limit", "1"}, ExitOK},
		{"word_counts_raw", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--limit", "1", "-o", "json"}, ExitOK},
		{"undecodable", []string{"topic", "read", "-b", "ADDR", "-t", "word-counts", "--value-serde", "int32"}, ExitFailure},
		{"missing_topic", []string{"topic", "read", "-b", "ADDR", "-t", "nope"}, ExitFailure},

		{"usage_no_topic", []string{"topic", "read", "-b", "ADDR"}, ExitUsage},
		{"usage_topic_not_in_topology", []string{"topic", "read", "-b", "ADDR", "-t", "orders", "--topology", "word-count"}, ExitUsage},
		{"usage_unknown_serde", []string{"topic", "read", "-b", "ADDR", "-t", "lines", "--value-serde", "lng"}, ExitUsage},
		{"usage_follow_to", []string{"topic", "read", "-b", "ADDR", "-t", "lines", "-f", "--to", "end"}, ExitUsage},
		{"usage_bad_from", []string{"topic", "read", "-b", "ADDR", "-t", "lines", "--from", "yesterday"}, ExitUsage},
	}
	offsets := regexp.MustCompile(`("offset": ?|offset: |\n0 +)\d+`)
	for _, st := range steps {
		t.Run(st.golden, func(t *testing.T) {
			args := make([]string, len(st.args))
			for i, a := range st.args {
				args[i] = strings.ReplaceAll(a, "ADDR", addr)
			}
			var stdout, stderr bytes.Buffer
			code := Run(args, &stdout, &stderr)
			if code != st.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, st.code, stderr.String())
			}
			if code == ExitOK && stderr.Len() > 0 {
				t.Errorf("stoatctl %s succeeded but wrote to stderr:\n%s", strings.Join(args, " "), stderr.String())
			}
			if st.code == ExitUsage && stdout.Len() > 0 {
				t.Errorf("stoatctl %s is a usage error but wrote to stdout:\n%s", strings.Join(args, " "), stdout.String())
			}
			got := transcript(args, code, stdout.String(), stderr.String())
			got = strings.ReplaceAll(got, addr, "ADDR")
			got = offsets.ReplaceAllString(got, "${1}N")
			checkGolden(t, "topic_read_"+st.golden, got)
		})
	}
}

// runWordCount runs the word-count example on the broker at addr until it
// has committed lines, one record per line, stamped 1 s, 2 s, ...
func runWordCount(t *testing.T, addr string, lines ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, l := range lines {
		r := &kgo.Record{Topic: "lines", Key: []byte{byte('1' + i)}, Value: []byte(l), Timestamp: time.UnixMilli(int64(i+1) * 1000)}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := topofile.Resolve("word-count", ".")
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config
	cfg["bootstrap.servers"] = addr
	cfg["stoatflow.commit-barrier.interval-ms"] = "100"
	// One lane, so that the output order across keys is the same on
	// every run.
	cfg["num.stream.threads"] = "1"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- engine.New(f.Topology, cfg).Run(ctx) }()
	// Wait for the commit or for the engine to stop, whichever comes
	// first: an engine that failed at start must be reported as such,
	// not as a commit that never came.
	adm := kafkatest.Admin(t, addr)
	for deadline := time.Now().Add(time.Minute); ; {
		if ok, _, err := kafkatest.CommittedToEnd(t.Context(), adm, f.ApplicationID, "lines"); err == nil && ok {
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("word-count stopped before committing its input: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("group %s did not commit lines to its end within a minute (engine still running)", f.ApplicationID)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("word-count: %v", err)
	}
}

// TestTopicReadFollow: -f prints what is there, then what is committed
// later, as it comes, and stops cleanly (exit 0) when interrupted.
func TestTopicReadFollow(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"events": 1})
	produceRecords(t, addr, "events", "a:first")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, []string{"topic", "read", "-b", addr, "-t", "events", "-f", "-o", "json"}, &stdout, &stderr)
	}()
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(stdout.String(), s) {
			if time.Now().After(deadline) {
				t.Fatalf("topic read -f never printed %q:\n%s\nstderr:\n%s", s, stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(`"value":"first"`)
	produceRecords(t, addr, "events", "b:second")
	waitFor(`"key":"b","value":"second"`)
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("topic read -f, interrupted: exit %d, want 0\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("topic read -f did not stop")
	}
}
