package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// replayTests run `stoatctl replay` against the fixtures in
// testdata/replay and compare with testdata/<golden>.golden.
var replayTests = []struct {
	golden string
	args   []string
	code   int
}{
	{"replay_pass", []string{"replay", "testdata/replay/pass.fixture.yaml"}, ExitOK},
	{"replay_altered", []string{"replay", "testdata/replay/pass.fixture.yaml", "testdata/replay/altered.fixture.yaml"}, ExitFailure},
	{"replay_altered_json", []string{"replay", "-o", "json", "testdata/replay/altered.fixture.yaml"}, ExitFailure},
	{"replay_broken", []string{"replay", "testdata/replay/broken"}, ExitFailure},
	{"replay_usage_no_path", []string{"replay"}, ExitUsage},
	{"replay_usage_missing_file", []string{"replay", "testdata/replay/nope.fixture.yaml"}, ExitUsage},
	{"replay_usage_bad_flag", []string{"replay", "--updat", "testdata/replay"}, ExitUsage},
	{"replay_usage_bad_output", []string{"replay", "-o", "xml", "testdata/replay"}, ExitUsage},
	{"replay_usage_empty_dir", []string{"replay", "testdata/replay/empty"}, ExitUsage},
	{"replay_engine", []string{"replay", "--engine", "testdata/replay/pass.fixture.yaml", "testdata/replay/altered.fixture.yaml"}, ExitFailure},
	{"replay_engine_usage_update", []string{"replay", "--engine", "--update", "testdata/replay/pass.fixture.yaml"}, ExitUsage},
}

func TestReplayCommand(t *testing.T) {
	if err := os.MkdirAll("testdata/replay/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range replayTests {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stderr.String())
			}
			checkGolden(t, tc.golden, transcript(tc.args, code, stdout.String(), stderr.String()))
		})
	}
}

func TestReplayFixturesDirectoryPasses(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "../fixtures/go-examples"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("replay ../fixtures/go-examples exited %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// copyFixture copies a fixture from testdata/replay into a temporary
// directory, so --update can rewrite it.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata/replay", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayUpdateRewritesExpectations(t *testing.T) {
	path := copyFixture(t, "altered.fixture.yaml")
	before, _ := os.ReadFile(path)
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "--update", path}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("replay --update exited %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "UPDATED "+path) {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	after, _ := os.ReadFile(path)
	// The altered value is put right; the output, of two keys, is
	// written in the order the live engine keeps (per key), and drops are
	// written although the fixture did not check them.
	head, _, _ := strings.Cut(string(before), "expect:\n")
	want := head + "expect:\n  outputs:\n    shouted:\n      order: per-key\n      records:\n" +
		"        - {key: alice, value: HELLO, timestamp: 1000}\n        - {key: bob, value: BYE, timestamp: 2000}\n  drops: {}\n"
	if string(after) != want {
		t.Errorf("rewritten fixture:\n%s\nwant:\n%s", after, want)
	}
	// The rewritten fixture passes; a second update changes nothing.
	stdout.Reset()
	if code := Run([]string{"replay", "--update", path}, &stdout, &stderr); code != ExitOK || !strings.HasPrefix(stdout.String(), "PASS ") {
		t.Fatalf("replay after update exited %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if again, _ := os.ReadFile(path); string(again) != string(after) {
		t.Errorf("second update changed the file:\n%s", again)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("update left files behind: %v", entries)
	}
}

func TestReplayUpdateWritesNothingWhenARunFails(t *testing.T) {
	altered := copyFixture(t, "altered.fixture.yaml")
	broken := filepath.Join(filepath.Dir(altered), "bad.fixture.yaml")
	data, err := os.ReadFile("testdata/replay/broken/bad.fixture.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(altered)
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "--update", altered, broken}, &stdout, &stderr); code != ExitFailure {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "nothing written") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if after, _ := os.ReadFile(altered); string(after) != string(before) {
		t.Errorf("fixture rewritten although a run failed:\n%s", after)
	}
}

func TestReplayUpdateAddsMissingExpectSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.fixture.yaml")
	src := "topology: uppercase\n# no expectations yet\nsteps:\n  - {topic: sentences, key: k, value: v, timestamp: 5}"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "--update", path}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	got, _ := os.ReadFile(path)
	want := src + "\nexpect:\n  outputs:\n    shouted:\n      - {key: k, value: V, timestamp: 5}\n  drops: {}\n"
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestReplayUpdateWritesAnExpectationWhenAllIsDropped updates a recording
// whose every record is dropped: it passes as it stands (nothing written,
// nothing expected), and the update writes the expectation all the same,
// with the drops by reason. It once wrote nothing.
func TestReplayUpdateWritesAnExpectationWhenAllIsDropped(t *testing.T) {
	topo, err := filepath.Abs("../fixtures/clicks-per-minute/topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dropped.fixture.yaml")
	src := "topology: " + topo + "\nsteps:\n  - advance-watermark: 2024-05-01T10:05:00Z\n" +
		"  - {topic: clicks, key: alice, value: {page: /home, ts: \"2024-05-01T10:00:20Z\"}}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"replay", "--update", path}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	got, _ := os.ReadFile(path)
	want := src + "expect:\n  outputs: {}\n  drops:\n    late_window: 1\n"
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestReplayJUnit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "junit.xml")
	var stdout, stderr bytes.Buffer
	code := Run([]string{"replay", "--junit", file, "testdata/replay/pass.fixture.yaml", "testdata/replay/altered.fixture.yaml"}, &stdout, &stderr)
	if code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "replay_junit", string(data))
}

func TestReplayNoColorWhenNotATerminal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	Run([]string{"replay", "testdata/replay/altered.fixture.yaml"}, &stdout, &stderr)
	if strings.Contains(stdout.String(), "\x1b[") {
		t.Errorf("colour written to a buffer:\n%q", stdout.String())
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if useColor(f) {
		t.Error("a regular file is not a terminal")
	}
}

// TestReplayUpdateModes runs replay --update in each of its modes on a
// copy of a fixture and compares the transcript and the rewritten file
// with testdata/replay_update_<name>.golden.
func TestReplayUpdateModes(t *testing.T) {
	tests := []struct {
		name, fixture string
		args          []string
		code          int
	}{
		// The fill-in comment replay record leaves goes.
		{"records", "update-modes.fixture.yaml", []string{"--update"}, ExitOK},
		{"timing", "update-modes.fixture.yaml", []string{"--update=timing"}, ExitOK},
		{"counts", "update-modes.fixture.yaml", []string{"--update=counts"}, ExitOK},
		{"count_above", "update-modes.fixture.yaml", []string{"--update", "--update-count-above", "3"}, ExitOK},
		// An output keeps its order, and its steps when it checks them.
		{"keeps_order_and_steps", "per-key-timed.fixture.yaml", []string{"--update"}, ExitOK},
		// Timing rewrites a passing fixture too.
		{"timing_passing", "pass.fixture.yaml", []string{"--update=timing"}, ExitOK},
		{"usage_unknown_mode", "pass.fixture.yaml", []string{"--update=sometimes"}, ExitUsage},
		{"usage_timing_and_counts", "pass.fixture.yaml", []string{"--update=timing,counts"}, ExitUsage},
		{"usage_count_above_alone", "pass.fixture.yaml", []string{"--update-count-above", "3"}, ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFixture(t, tc.fixture)
			args := append(append([]string{"replay"}, tc.args...), path)
			var stdout, stderr bytes.Buffer
			code := Run(args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, tc.code, stderr.String())
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := transcript(args, code, stdout.String(), stderr.String()) + "-- " + tc.fixture + " --\n" + string(data)
			checkGolden(t, "replay_update_"+tc.name, strings.ReplaceAll(got, filepath.Dir(path), "TMP"))
			if code != ExitOK {
				return
			}
			// What was written passes.
			stdout.Reset()
			if code := Run([]string{"replay", path}, &stdout, &stderr); code != ExitOK {
				t.Errorf("the rewritten fixture does not pass:\n%s", stdout.String())
			}
		})
	}
}
