package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/topics"
)

// TestTopicCommand runs topic create and list in-process, one step after
// the other, against an embedded broker over TCP, and compares each
// step's transcript with testdata/topic_<step>.golden ("ADDR" in the
// arguments is the broker's address, masked in the transcript).
func TestTopicCommand(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	steps := []struct {
		golden string
		args   []string
		code   int
	}{
		{"list_empty", []string{"topic", "list", "-b", "ADDR"}, ExitOK},
		{"create_default", []string{"topic", "create", "audit", "-b", "ADDR"}, ExitOK},
		{"create", []string{"topic", "create", "orders", "-b", "ADDR", "--partitions", "3", "--replication-factor", "1", "--config", "retention.ms=-1", "--config", "cleanup.policy=compact"}, ExitOK},
		{"create_json", []string{"topic", "create", "payments", "-b", "ADDR", "-p", "2", "-o", "json"}, ExitOK},
		{"create_dry_run", []string{"topic", "create", "later", "-b", "ADDR", "-p", "4", "--dry-run"}, ExitOK},
		{"create_exists", []string{"topic", "create", "orders", "-b", "ADDR"}, ExitFailure},
		{"create_if_not_exists", []string{"topic", "create", "orders", "-b", "ADDR", "--if-not-exists"}, ExitOK},
		{"create_replication_too_high", []string{"topic", "create", "wide", "-b", "ADDR", "-r", "3"}, ExitFailure},
		{"list", []string{"topic", "list", "-b", "ADDR"}, ExitOK},
		{"list_named_json", []string{"topic", "list", "orders", "-b", "ADDR", "-o", "json"}, ExitOK},
		{"list_missing", []string{"topic", "list", "nope", "-b", "ADDR"}, ExitFailure},

		{"usage_create_no_name", []string{"topic", "create", "-b", "ADDR"}, ExitUsage},
		{"usage_create_bad_name", []string{"topic", "create", "a/b", "-b", "ADDR"}, ExitUsage},
		{"usage_create_partitions", []string{"topic", "create", "t", "-b", "ADDR", "-p", "0"}, ExitUsage},
		{"usage_create_config", []string{"topic", "create", "t", "-b", "ADDR", "--config", "retention.ms"}, ExitUsage},
		{"usage_bootstrap", []string{"topic", "list", "-b", "localhost"}, ExitUsage},
		{"usage_output", []string{"topic", "list", "-b", "ADDR", "-o", "xml"}, ExitUsage},
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
			if code == ExitOK && stderr.Len() > 0 {
				t.Errorf("stoatctl %s succeeded but wrote to stderr:\n%s", strings.Join(args, " "), stderr.String())
			}
			if code != ExitOK && stdout.Len() > 0 {
				t.Errorf("stoatctl %s failed but wrote to stdout:\n%s", strings.Join(args, " "), stdout.String())
			}
			checkGolden(t, "topic_"+st.golden, maskBroker("")(transcript(args, code, stdout.String(), stderr.String())))
		})
	}

	// What the steps did, seen by the broker itself.
	have, err := b.Topics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != 3 || have["audit"] != 1 || have["orders"] != 3 || have["payments"] != 2 {
		t.Errorf("the broker has %v, want audit (1), orders (3) and payments (2), and not the dry run's", have)
	}
}

// TestTopicListJSONShape decodes list -o json as a script would.
func TestTopicListJSONShape(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, NumBrokers: 3, SeedTopics: map[string]int32{"t": 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"topic", "list", "-b", b.Addr(), "-o", "json"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got []topics.Topic
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("list -o json: %v\n%s", err, stdout.String())
	}
	if len(got) != 1 || got[0].Name != "t" || got[0].ReplicationFactor != 3 || len(got[0].Partitions) != 3 {
		t.Fatalf("list -o json = %+v, want t with 3 partitions of 3 replicas", got)
	}
	for i, p := range got[0].Partitions {
		if p.ID != int32(i) || len(p.Replicas) != 3 || p.Leader < 0 {
			t.Errorf("partition %d = %+v, want partition %d with a leader and 3 replicas", i, p, i)
		}
	}
}
