package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
)

// TestDriverDifferential feeds each mirror's input to Kafka Streams'
// TopologyTestDriver (through the runner) and to our test driver (through
// stoatctl replay, with Kafka Streams' output as the fixture's
// expectation): the outputs must be equal record for record, in order,
// timestamps included.
func TestDriverDifferential(t *testing.T) {
	if kafkatest.Real() {
		t.Skip("broker-free; runs in the embedded tier")
	}
	j := java(t)
	for _, m := range interop.Mirrors {
		t.Run(m.Name, func(t *testing.T) {
			input := j.Path("testdata", m.Name+".jsonl")
			want := j.Driver(t, m, input)
			fixture := writeFixture(t, j, m, input, want)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			cmd := exec.CommandContext(ctx, stoatctl, "replay", fixture)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				fx, _ := os.ReadFile(fixture)
				t.Fatalf("stoatctl replay differs from Kafka Streams' TopologyTestDriver (%v):\n%s\nfixture:\n%s", err, out.String(), fx)
			}
		})
	}
}

// writeFixture writes a replay fixture that feeds input to our topology
// and expects want, Kafka Streams' output.
func writeFixture(t *testing.T, j *interop.Java, m interop.Mirror, input string, want []interop.Record) string {
	t.Helper()
	dir := t.TempDir()
	ref := m.Ours
	if strings.HasSuffix(ref, ".yaml") {
		rel, err := filepath.Rel(dir, j.Path(ref))
		if err != nil {
			t.Fatal(err)
		}
		ref = rel
	}
	data, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "input.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Kafka Streams' TopologyTestDriver output for interop mirror %s.\n", m.Name)
	fmt.Fprintf(&b, "topology: %s\nsteps:\n  - records-file: input.jsonl\nexpect:\n  outputs:\n", ref)
	byTopic := map[string][]interop.Record{}
	for _, r := range want {
		byTopic[r.Topic] = append(byTopic[r.Topic], r)
	}
	for _, out := range m.Outputs {
		recs := byTopic[out.Topic]
		delete(byTopic, out.Topic)
		if len(recs) == 0 {
			fmt.Fprintf(&b, "    %s: []\n", out.Topic)
			continue
		}
		fmt.Fprintf(&b, "    %s:\n", out.Topic)
		for _, r := range recs {
			// JSON is YAML: each record is a flow mapping.
			fmt.Fprintf(&b, "      - {key: %s, value: %s, timestamp: %d}\n", interop.Canonical(r.Key), interop.Canonical(r.Value), r.Timestamp)
		}
	}
	for topic := range byTopic {
		t.Fatalf("Kafka Streams wrote to %s, which mirror %s does not list", topic, m.Name)
	}
	path := filepath.Join(dir, m.Name+".fixture.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
