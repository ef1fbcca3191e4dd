package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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
	args := []string{"replay", "record", "-b", addr, "-t", "sentences", "--topology", "uppercase", "--out", out, "--records-file", "sentences.jsonl"}
	if code := Run(args, &stdout, &stderr); code != ExitOK {
		t.Fatalf("replay record exited %d\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("replay record --out FILE wrote to stdout: %q", stdout.String())
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

// TestReplayRecordOut is the transcript of where replay record writes:
// --out FILE, making the fixture's folder; the old -o, with a warning;
// and a topic the topology does not read, refused. Each is compared with
// testdata/replay_record_<name>.golden (TMP the temporary directory, ADDR
// the broker).
func TestReplayRecordOut(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"sentences": 1, "lines": 1})
	produceRecords(t, addr, "sentences", "alice:hello", "bob:bye")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		file string // written, relative to dir
	}{
		{"out_new_folder", []string{"--topology", "uppercase", "--out", "TMP/fixtures/uppercase/prod.fixture.yaml"}, ExitOK, "fixtures/uppercase/prod.fixture.yaml"},
		{"out_records_file_folder", []string{"--topology", "uppercase", "--out", "TMP/f/prod.fixture.yaml", "--records-file", "data/prod.jsonl"}, ExitOK, "f/data/prod.jsonl"},
		{"old_o", []string{"--topology", "uppercase", "-o", "TMP/old.fixture.yaml"}, ExitOK, "old.fixture.yaml"},
		{"usage_out_and_o", []string{"--out", "TMP/a.fixture.yaml", "-o", "TMP/b.fixture.yaml"}, ExitUsage, ""},
		{"usage_topic_not_a_source", []string{"--topology", "uppercase", "-t", "lines"}, ExitUsage, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"replay", "record", "-b", addr}
			if !slices.Contains(tc.args, "-t") {
				args = append(args, "-t", "sentences")
			}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "TMP", dir))
			}
			var stdout, stderr bytes.Buffer
			code := Run(args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			got := strings.NewReplacer(dir, "TMP", addr, "ADDR").Replace(transcript(args, code, stdout.String(), stderr.String()))
			checkGolden(t, "replay_record_"+tc.name, got)
			if tc.file != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.file)); err != nil {
					t.Errorf("not written: %v", err)
				}
			}
		})
	}
	// A recorded fixture, filled in by --update, loses the comment that
	// asked for it.
	path := filepath.Join(dir, "fixtures/uppercase/prod.fixture.yaml")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "--update", path}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("replay --update: %d\n%s%s", code, stdout.String(), stderr.String())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "# expect: run stoatctl replay --update") || !strings.Contains(string(data), "HELLO") {
		t.Errorf("updated recorded fixture:\n%s", data)
	}
}
