package replay

import (
	"bytes"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/golden"
)

// reportPaths are the fixtures the golden reports cover: passing, failing
// and broken ones.
var reportPaths = []string{"testdata/pass", "testdata/fail", "testdata/error"}

// knownExamples masks the list of registered examples, which grows (and
// includes the benchmark's in this binary).
var knownExamples = regexp.MustCompile(`\(known: [^)]*\)`)

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	got = knownExamples.ReplaceAllString(got, "(known: <examples>)")
	golden.Check(t, "./replay", filepath.Join("testdata", name), got)
}

func runReport(t *testing.T) []*Result {
	t.Helper()
	paths, err := Expand(reportPaths)
	if err != nil {
		t.Fatal(err)
	}
	var results []*Result
	for _, p := range paths {
		results = append(results, RunFile(p))
	}
	return results
}

func TestReports(t *testing.T) {
	results := runReport(t)
	tests := []struct {
		golden string
		write  func(*bytes.Buffer) error
	}{
		{"report.txt.golden", func(b *bytes.Buffer) error { return WriteText(b, results, TextOptions{}) }},
		{"report_color.txt.golden", func(b *bytes.Buffer) error { return WriteText(b, results, TextOptions{Color: true}) }},
		{"report.json.golden", func(b *bytes.Buffer) error { return WriteJSON(b, results, nil) }},
		{"report.junit.xml.golden", func(b *bytes.Buffer) error { return WriteJUnit(b, results) }},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.golden, b.String())
			// Byte-identical across runs: a second run renders the same.
			var again bytes.Buffer
			results = runReport(t)
			if err := tc.write(&again); err != nil {
				t.Fatal(err)
			}
			if again.String() != b.String() {
				t.Errorf("second run differs:\n%s\nfirst:\n%s", again.String(), b.String())
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	want := map[string]Status{
		"testdata/pass/uppercase.fixture.yaml":               Pass,
		"testdata/pass/word-count-jsonl.fixture.yaml":        Pass,
		"testdata/fail/altered.fixture.yaml":                 Fail,
		"testdata/fail/missing-topic.fixture.yaml":           Fail,
		"testdata/pass/timing.fixture.yaml":                  Pass,
		"testdata/pass/multiset.fixture.yaml":                Pass,
		"testdata/fail/timing.fixture.yaml":                  Fail,
		"testdata/fail/multiset.fixture.yaml":                Fail,
		"testdata/error/bad-serde.fixture.yaml":              Errored,
		"testdata/error/bad-jsonl.fixture.yaml":              Errored,
		"testdata/error/unknown-field.fixture.yaml":          Errored,
		"testdata/error/unknown-topology.fixture.yaml":       Errored,
		"../fixtures/go-examples/uppercase.fixture.yaml":     Pass,
		"../fixtures/go-examples/word-count.fixture.yaml":    Pass,
		"../fixtures/go-examples/enrich-orders.fixture.yaml": Pass,
	}
	for path, status := range want {
		if r := RunFile(path); r.Status != status {
			t.Errorf("%s: status %s, want %s (error %v)", path, r.Status, status, r.Err)
		}
	}
}

func TestStepErrorsNameTheStep(t *testing.T) {
	tests := []struct {
		path, code, want string
	}{
		{"testdata/error/bad-serde.fixture.yaml", CodeStep,
			"testdata/error/bad-serde.fixture.yaml:4:5: step 2 (record): value: serde string needs a string"},
		{"testdata/error/bad-jsonl.fixture.yaml", CodeStep,
			"testdata/error/bad-jsonl.fixture.yaml:3:5: step 1 (records-file): testdata/error/bad.jsonl:2:32: unknown field \"valu\""},
		{"testdata/error/unknown-topology.fixture.yaml", CodeTopology,
			`testdata/error/unknown-topology.fixture.yaml:1:11: resolve topology "no-such-example": not a .yaml file, and unknown example`},
		{"testdata/error/unknown-field.fixture.yaml", CodeFixture,
			"testdata/error/unknown-field.fixture.yaml:3:56: step 1: unknown field \"partition\""},
	}
	for _, tc := range tests {
		r := RunFile(tc.path)
		if r.Err == nil {
			t.Errorf("%s: no error, want code %s", tc.path, tc.code)
			continue
		}
		if r.Err.Code != tc.code || !strings.HasPrefix(r.Err.Error(), tc.want) {
			t.Errorf("%s: error %v (code %s)\nwant code %s, prefix %s", tc.path, r.Err, r.Err.Code, tc.code, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", "f.yaml:1:1: empty fixture"},
		{"syntax", "topology: a\nsteps: [\n", "f.yaml:2: yaml syntax:"},
		{"syntax in a flow list", "topology: a\nsteps: [\n  {topic: t},\n  {topic: t}\n  {topic: u}\n]\n", "f.yaml:5:3: yaml syntax: did not find expected ',' or ']'"},
		{"not a mapping", "- a\n", "f.yaml:1:1: fixture: want a mapping, got a list"},
		{"unknown top field", "topology: a\nsteps: []\nexpected: {}\n", `f.yaml:3:1: fixture: unknown field "expected" (want topology, description, driver, steps, expect)`},
		{"missing topology", "steps: []\n", "f.yaml:1:1: fixture: missing field topology"},
		{"missing steps", "topology: a\n", "f.yaml:1:1: fixture: missing field steps"},
		{"topology not a string", "topology: [a]\nsteps: []\n", "f.yaml:1:11: topology: want a string, got a list"},
		{"duplicate field", "topology: a\ntopology: b\nsteps: []\n", `f.yaml:2:1: fixture: field "topology" given twice`},
		{"bad lanes", "topology: a\ndriver: {lanes: 0}\nsteps: []\n", "f.yaml:2:17: driver lanes: want 1 to 65536 lanes, got 0"},
		{"bad commit-per-pipe", "topology: a\ndriver: {commit-per-pipe: maybe}\nsteps: []\n", `f.yaml:2:27: driver commit-per-pipe: want true or false, got the string "maybe"`},
		{"bad wall clock", "topology: a\ndriver: {wall-clock: yesterday}\nsteps: []\n", "f.yaml:2:22: driver wall-clock: want epoch milliseconds or an RFC 3339 time"},
		{"config not scalar", "topology: a\ndriver: {config: {k: [1]}}\nsteps: []\n", "f.yaml:2:22: driver config k: want a value, got a list"},
		{"steps not a list", "topology: a\nsteps: {}\n", "f.yaml:2:8: steps: want a list of steps, got a mapping"},
		{"bad step scalar", "topology: a\nsteps: [commit]\n", "f.yaml:2:9: step 1: want a record (a mapping with topic) or one of"},
		{"record without topic", "topology: a\nsteps:\n  - {key: a}\n", "f.yaml:3:5: step 1: a record needs a topic"},
		{"unknown record field", "topology: a\nsteps:\n  - {topic: t, keys: a}\n", `f.yaml:3:16: step 1: unknown field "keys" (want topic, key, value, timestamp, headers, label)`},
		{"mixed step", "topology: a\nsteps:\n  - {topic: t, advance-watermark: 1}\n", "f.yaml:3:16: step 1: advance-watermark must be the step's only field"},
		{"bad timestamp", "topology: a\nsteps:\n  - {topic: t, timestamp: soon}\n", `f.yaml:3:27: step 1 timestamp: want epoch milliseconds or an RFC 3339 time such as 2024-05-01T12:00:00Z, got "soon"`},
		{"bad watermark", "topology: a\nsteps:\n  - advance-watermark: [1]\n", "f.yaml:3:24: step 1 advance-watermark: want epoch milliseconds or an RFC 3339 time, got a list"},
		{"bad wall-clock step", "topology: a\nsteps:\n  - advance-wall-clock: fast\n", "f.yaml:3:25: step 1 advance-wall-clock: want a duration such as 30s or a time to move to"},
		{"negative wall-clock", "topology: a\nsteps:\n  - advance-wall-clock: -1s\n", "f.yaml:3:25: step 1 advance-wall-clock: negative duration -1s"},
		{"barrier with value", "topology: a\nsteps:\n  - commit-barrier: 1\n", "f.yaml:3:21: step 1: commit-barrier takes no value"},
		{"empty records file", "topology: a\nsteps:\n  - records-file: ''\n", "f.yaml:3:19: step 1 records-file: want a file name"},
		{"headers not strings", "topology: a\nsteps:\n  - {topic: t, headers: {a: [1]}}\n", "f.yaml:3:29: step 1 headers a: want a string or null, got a list"},
		{"huge integer", "topology: a\nsteps:\n  - {topic: t, key: !!int 99999999999999999999}\n", "f.yaml:3:21: step 1 key: want an integer that fits 64 bits"},
		{"nan", "topology: a\nsteps:\n  - {topic: t, key: .nan}\n", "f.yaml:3:21: step 1 key: want a finite number"},
		{"custom tag", "topology: a\nsteps:\n  - {topic: t, key: !foo x}\n", "f.yaml:3:21: step 1 key: unsupported YAML tag !foo"},
		{"unknown expect field", "topology: a\nsteps: []\nexpect: {output: {}}\n", `f.yaml:3:10: expect: unknown field "output" (want outputs, stores, drops)`},
		{"expect record field", "topology: a\nsteps: []\nexpect:\n  outputs:\n    t:\n      - {key: a, offset: 1}\n", `f.yaml:6:18: expect outputs t record 1: unknown field "offset" (want key, value, timestamp, headers, after)`},
		{"after past the steps", "topology: a\nsteps: [{topic: t}]\nexpect: {outputs: {t: [{key: a, after: 2}]}}\n", "f.yaml:3:40: expect outputs t record 1 after: want a step from 1 to 1 or a step label, got 2"},
		{"after unknown label", "topology: a\nsteps: [{topic: t, label: first}]\nexpect: {outputs: {t: [{key: a, after: frist}]}}\n", `f.yaml:3:40: expect outputs t record 1 after: no step is labelled "frist" (labels: first)`},
		{"after without labels", "topology: a\nsteps: [{topic: t}]\nexpect: {outputs: {t: [{after: x}]}}\n", `f.yaml:3:32: expect outputs t record 1 after: no step is labelled "x" (no step has a label)`},
		{"after a list", "topology: a\nsteps: [{topic: t}]\nexpect: {outputs: {t: [{after: [1]}]}}\n", "f.yaml:3:32: expect outputs t record 1 after: want a step number or a step label, got a list"},
		{"after in a store", "topology: a\nsteps: []\nexpect: {stores: {s: [{key: a, after: 1}]}}\n", `f.yaml:3:32: expect stores s record 1: unknown field "after" (want key, value, timestamp)`},
		{"numeric label", "topology: a\nsteps: [{topic: t, label: 5}]\n", "f.yaml:2:27: step 1 label: want a string, got 5"},
		{"number-like label", "topology: a\nsteps: [{topic: t, label: '5'}]\n", `f.yaml:2:27: step 1 label: want a name that is not a number (after: N names step N), got "5"`},
		{"label twice", "topology: a\nsteps: [{topic: t, label: x}, {advance-watermark: 1, label: x}]\n", `f.yaml:2:61: step 2 label: "x" already names step 1`},
		{"labelled step with two fields", "topology: a\nsteps: [{advance-watermark: 1, commit-barrier: null, label: x}]\n", "f.yaml:2:10: step 1: advance-watermark must be the step's only field (with label)"},
		{"unknown order", "topology: a\nsteps: []\nexpect: {outputs: {t: {order: sorted, records: []}}}\n", `f.yaml:3:31: expect outputs t order: want in-order, multiset or per-key, got "sorted"`},
		{"order without records", "topology: a\nsteps: []\nexpect: {outputs: {t: {order: multiset}}}\n", "f.yaml:3:23: expect outputs t: want a list of records, {order: ORDER, records: [...]} or {count: N}"},
		{"count with order", "topology: a\nsteps: []\nexpect: {outputs: {t: {count: 1, order: multiset}}}\n", "f.yaml:3:24: expect outputs t: count goes alone"},
		{"expect count", "topology: a\nsteps: []\nexpect: {outputs: {t: {count: -1}}}\n", "f.yaml:3:31: expect outputs t count: want a count of at least 0, got -1"},
		{"expect bad topic", "topology: a\nsteps: []\nexpect: {outputs: {t: 3}}\n", "f.yaml:3:23: expect outputs t: want a list of records, got 3"},
		{"store with headers", "topology: a\nsteps: []\nexpect: {stores: {s: [{key: a, headers: {}}]}}\n", `f.yaml:3:32: expect stores s record 1: unknown field "headers" (want key, value, timestamp)`},
		{"drops negative", "topology: a\nsteps: []\nexpect: {drops: {late_window: -2}}\n", "f.yaml:3:31: expect drops late_window: want a count of at least 0, got -2"},
		{"drops not int", "topology: a\nsteps: []\nexpect: {drops: {late_window: many}}\n", `f.yaml:3:31: expect drops late_window: want an integer, got the string "many"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.src))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant prefix %s", err, tc.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *replay.Error", err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	src := `topology: ./topology.yaml
description: everything
driver:
  lanes: 3
  commit-per-pipe: false
  wall-clock: 1970-01-01T00:00:01.5Z
  config: {a.b: 1, c: x}
steps:
  - {topic: t, key: {id: 1, tags: [a, null, true, 1.5]}, value: null, headers: {h: v, n: null}}
  - advance-watermark: 2000
  - advance-wall-clock: 1m30s
  - advance-wall-clock: 1970-01-01T00:10:00Z
  - commit-barrier
  - commit-barrier:
  - records-file: in/records.jsonl
expect:
  outputs:
    out:
      - {key: {key: a, start: 0, end: 1970-01-01T00:01:00Z}, value: 1, timestamp: 3, headers: {}}
    big: {count: 5}
  stores:
    s: [{key: a, value: b, timestamp: 1}]
  drops: {late_window: 2, null_key: 0}
`
	f, err := Parse("dir/f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Topology != "./topology.yaml" || f.Description != "everything" || f.Driver.Lanes != 3 || *f.Driver.CommitPerPipe || f.Driver.WallClock != 1500 {
		t.Errorf("header %+v", f)
	}
	if f.Driver.Config["a.b"] != "1" || f.Driver.Config["c"] != "x" {
		t.Errorf("config %v", f.Driver.Config)
	}
	kinds := []StepKind{StepRecord, StepAdvanceWatermark, StepAdvanceWallClock, StepAdvanceWallClock, StepCommitBarrier, StepCommitBarrier, StepRecordsFile}
	if len(f.Steps) != len(kinds) {
		t.Fatalf("%d steps, want %d", len(f.Steps), len(kinds))
	}
	for i, k := range kinds {
		if f.Steps[i].Kind != k || f.Steps[i].Index != i+1 {
			t.Errorf("step %d: %v (index %d), want %v", i+1, f.Steps[i].Kind, f.Steps[i].Index, k)
		}
	}
	rec := f.Steps[0].Record
	if got := canonical(rec.Key.any()); got != `{"id":1,"tags":["a",null,true,1.5]}` {
		t.Errorf("key %s", got)
	}
	if rec.Value.Kind != Null || rec.HasTimestamp || len(rec.Headers) != 2 || rec.Headers[1].Value != nil {
		t.Errorf("record %+v", rec)
	}
	if f.Steps[1].Time != 2000 || f.Steps[2].By.String() != "1m30s" || !f.Steps[3].Absolute || f.Steps[3].Time != 600_000 {
		t.Errorf("time steps %+v", f.Steps[1:4])
	}
	if f.Steps[6].File != filepath.Join("dir", "in", "records.jsonl") {
		t.Errorf("records file %s", f.Steps[6].File)
	}
	if !f.timesAsText {
		t.Error("first time was RFC 3339: timesAsText should be set")
	}
	e := f.Expect
	if len(e.Outputs) != 2 || e.Outputs[0].Topic != "out" || !e.Outputs[1].CountOnly || e.Outputs[1].Count != 5 {
		t.Fatalf("outputs %+v", e.Outputs)
	}
	r := e.Outputs[0].Records[0]
	if got := expectedKey(r, true); got != `{"end":60000,"key":"a","start":0}` {
		t.Errorf("windowed key %s", got)
	}
	if !r.HasHeaders || len(r.Headers) != 0 || !r.HasTimestamp {
		t.Errorf("expected record %+v", r)
	}
	if len(e.Stores) != 1 || e.Stores[0].Entries[0].Timestamp != 1 {
		t.Errorf("stores %+v", e.Stores)
	}
	if e.Drops["late_window"] != 2 || len(e.DropOrder) != 2 {
		t.Errorf("drops %v", e.Drops)
	}
}

func TestRecordsFileErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{`[1]`, "r.jsonl:1: want a JSON object"},
		{`{"topic":"t","key":}`, "r.jsonl:1: column 20: want a value"},
		{`{"topic":"t","key":tru}`, "r.jsonl:1:14: key: invalid JSON value tru"},
		{`{"topic":"t","key":01}`, "r.jsonl:1:14: key: invalid JSON value 01"},
		{`{"topic":"t","value":{"a":}}`, "r.jsonl:1:14: value: invalid JSON"},
		{`{"key":"k"}`, "r.jsonl:1: a record needs a topic"},
		{`{"topic":"t","topic":"u"}`, `r.jsonl:1:14: field "topic" given twice`},
		{`{"topic":"t","timestamp":1.5}`, "r.jsonl:1:14: timestamp: want epoch milliseconds or an RFC 3339 time, got 1.5"},
		{`{"topic":"t","headers":{"a":1}}`, "r.jsonl:1:14: headers: header a: want a string or null"},
		{`{"topic":"t"} x`, "r.jsonl:1: column 15: data after the object"},
		{`{"topic":"t","key":"a`, "r.jsonl:1: column 20: unterminated string"},
	}
	for _, tc := range tests {
		rf := newRecordsFile("r.jsonl", strings.NewReader(tc.line+"\n"))
		var rec Record
		err := rf.next(&rec)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v\nwant prefix %s", tc.line, err, tc.want)
		}
	}
}

func TestRecordsFileValues(t *testing.T) {
	src := `{"topic":"t","key":"a\"b","value":{"z":1, "a":[true,null]},"timestamp":"1970-01-01T00:00:00.007Z","headers":{"h":"v","n":null}}` + "\n" +
		"  \n" + `{"topic":"t","key":-1.5e3,"value":false}`
	rf := newRecordsFile("r.jsonl", strings.NewReader(src))
	var rec Record
	if err := rf.next(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.Key.Text != `a"b` || canonical(rec.Value.any()) != `{"a":[true,null],"z":1}` || rec.Timestamp != 7 || len(rec.Headers) != 2 {
		t.Errorf("first record %+v", rec)
	}
	if err := rf.next(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.Key.Kind != Number || rec.Key.Text != "-1.5e3" || rec.Value.Kind != Bool || rec.HasTimestamp || rf.line != 3 {
		t.Errorf("second record %+v (line %d)", rec, rf.line)
	}
}
