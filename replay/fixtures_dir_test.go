package replay_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/replay"
)

// fixturesDir holds the example topologies and their fixtures, which
// `stoatctl replay fixtures/` runs.
const fixturesDir = "../fixtures"

// report renders results as `stoatctl replay` prints them, without colour.
func report(t *testing.T, results ...*replay.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := replay.WriteText(&b, results, replay.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFixturesDir runs every fixture under fixtures/, found the way
// `stoatctl replay fixtures/` finds them, and fails on any that does not
// pass.
func TestFixturesDir(t *testing.T) {
	paths, err := replay.Expand([]string{fixturesDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		rel, err := filepath.Rel(fixturesDir, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			if r := replay.RunFile(path); r.Status != replay.Pass {
				t.Errorf("%s (go run . replay --update %s rewrites its expectations)\n%s",
					r.Status, path, report(t, r))
			}
		})
	}
}

// TestFixturesDirAlteredFails checks that the run above can fail: a copy
// of one fixture with one expected value changed must fail, with a diff
// naming the expected and the written record.
func TestFixturesDirAlteredFails(t *testing.T) {
	const name = "word-count"
	src := filepath.Join(fixturesDir, name)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The fixture names its topology as ./topology.yaml: copy both.
	for _, file := range []string{"topology.yaml", "counts.fixture.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	path := filepath.Join(dir, "counts.fixture.yaml")
	if r := replay.RunFile(path); r.Status != replay.Pass {
		t.Fatalf("unaltered copy: %s, want pass\n%s", r.Status, report(t, r))
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const (
		was = `{key: the, value: 2,`
		now = `{key: the, value: 7,`
	)
	if bytes.Count(data, []byte(was)) != 1 {
		t.Fatalf("%s: want exactly one %q to alter", path, was)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(was), []byte(now), 1), 0o644); err != nil {
		t.Fatal(err)
	}

	r := replay.RunFile(path)
	if r.Status != replay.Fail {
		t.Fatalf("altered copy: %s, want fail\n%s", r.Status, report(t, r))
	}
	for _, o := range r.Outputs {
		if o.Match != (o.Topic != "word-counts") {
			t.Errorf("output %s: match %v", o.Topic, o.Match)
		}
	}
	out := report(t, r)
	for _, want := range []string{
		"FAIL " + path,
		"output word-counts:",
		`- #5 key="the" value=7`,
		`+ #5 key="the" value=2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
