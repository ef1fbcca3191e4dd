package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

func TestReplayRecordUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-t", "sentences"}, "--bootstrap-server"},
		{[]string{"-b", " , "}, "--bootstrap-server"},
		{[]string{"-b", "localhost:1"}, "missing flag: --topic"},
		{[]string{"-b", "localhost:1", "-t", ""}, "--topic"},
		{[]string{"-b", "localhost:1", "-t", "s", "--from", "yesterday"}, "--from"},
		{[]string{"-b", "localhost:1", "-t", "s", "--to", "offset:-3"}, "--to"},
		{[]string{"-b", "localhost:1", "-t", "s", "--limit", "-1"}, "--limit"},
		{[]string{"-b", "localhost:1", "-t", "s", "--limit", "many"}, "--limit"},
		{[]string{"-b", "localhost:1", "-t", "s", "--topology", "no-such-topology"}, "--topology"},
		{[]string{"-b", "localhost:1", "-t", "s", "--records-file", "/abs.jsonl"}, "--records-file"},
		{[]string{"-b", "localhost:1", "-t", "s", "--bogus"}, "--bogus"},
		{[]string{"-b", "localhost:1", "-t", "s", "extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		args := append([]string{"replay", "record"}, tt.args...)
		var stdout, stderr bytes.Buffer
		if code := Run(args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, ExitUsage, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
			t.Errorf("stoatctl %s: stdout %q, stderr %q, want it to name %s", strings.Join(args, " "), stdout.String(), stderr.String(), tt.want)
		}
	}
}

// TestReplayRecordThenReplay records a topic through the command, once to
// stdout and once to a file with a records file, and replays the result
// with --update and then plainly.
func TestReplayRecordThenReplay(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"sentences": 3})
	produceRecords(t, addr, "sentences", "alice:hello, world", "bob:   ", "carol:bye")

	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "record", "-b", addr, "-t", "sentences", "--topology", "uppercase", "--limit", "2"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("replay record exited %d\n%s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n  - {topic:"); n != 2 {
		t.Errorf("--limit 2 wrote %d records:\n%s", n, stdout.String())
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "sentences.fixture.yaml")
	stdout.Reset()
	stderr.Reset()
	args := []string{"replay", "record", "-b", addr, "-t", "sentences", "--topology", "uppercase", "-o", out, "--records-file", "sentences.jsonl"}
	if code := Run(args, &stdout, &stderr); code != ExitOK {
		t.Fatalf("replay record exited %d\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("replay record -o FILE wrote to stdout: %q", stdout.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "sentences.jsonl"))
	if err != nil || bytes.Count(data, []byte("\n")) != 3 {
		t.Fatalf("records file: %v\n%s", err, data)
	}
	for _, step := range [][]string{{"replay", "--update", out}, {"replay", out}} {
		stdout.Reset()
		stderr.Reset()
		if code := Run(step, &stdout, &stderr); code != ExitOK {
			t.Fatalf("stoatctl %s exited %d\n%s%s", strings.Join(step, " "), code, stdout.String(), stderr.String())
		}
	}
	fixture, _ := os.ReadFile(out)
	if !strings.Contains(string(fixture), "HELLO, WORLD") || strings.Contains(string(fixture), "value: '   '") {
		t.Errorf("updated fixture:\n%s", fixture)
	}
}
