package topofile

import (
	"strings"
	"testing"
)

// TestFlowSyntaxErrorPosition: a syntax error inside a flow collection
// is reported at the token go-yaml could not take, not at the line where
// the collection's context starts (issue 16: 12:1 for a bad line 15).
func TestFlowSyntaxErrorPosition(t *testing.T) {
	head := "application-id: flow\nsources:\n  lines: {topic: lines, key-serde: string, value-serde: string}\npipelines:\n  p:\n    from: lines\n"
	tests := []struct {
		name, steps string
		want        string // the error's position and message
	}{
		{"missing comma between mappings",
			"    steps: [\n      {filter: value != \"\"},\n      {map-values: value}\n      {to: out}\n    ]\n",
			"f.yaml:10:7: invalid YAML: did not find expected ',' or ']'"},
		{"missing comma after a quoted item",
			"    steps: [{filter: 'value != \"\"'}, {to: {topic: out, key-serde: \"string\" value-serde: string}}]\n",
			"f.yaml:7:76: invalid YAML: did not find expected ',' or '}'"},
		{"wrong closing bracket",
			"    steps:\n      - to: {topic: out,\n             key-serde: string,\n             x: [1, 2\n             }\n",
			"f.yaml:11:14: invalid YAML: did not find expected ',' or ']'"},
		{"brackets in quotes and comments do not count",
			"    steps: [  # a [list] {of} steps\n      {filter: \"value != '[x'\"},\n      {to: out} {to: again}\n    ]\n",
			"f.yaml:9:17: invalid YAML: did not find expected ',' or ']'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(head+tc.steps), "")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Parse: %v\nwant %s\nfile:\n%s", err, tc.want, head+tc.steps)
			}
		})
	}
}

func TestLocateFlowErrorLeavesOthersAlone(t *testing.T) {
	data := []byte("a: [1, 2]\nb: {c: d}\n")
	for _, msg := range []string{"mapping values are not allowed in this context", "did not find expected ',' or ']'"} {
		if l, c, ok := LocateFlowError(data, 1, msg); ok {
			t.Errorf("%q on well-formed collections: %d:%d, want nothing", msg, l, c)
		}
	}
	if l, c, ok := LocateFlowError([]byte("a: [1,\n  2\n"), 1, "did not find expected ',' or ']'"); !ok || l != 1 || c != 4 {
		t.Errorf("unclosed list: %d:%d %v, want its bracket at 1:4", l, c, ok)
	}
}

// FuzzLocateFlowError: any bytes, no panic, and a position found is
// inside the input.
func FuzzLocateFlowError(f *testing.F) {
	f.Add([]byte("a: [1, {b: 'c'}\n  d]\n"), 1)
	f.Add([]byte("x: {\"q\\\"\" : [1 2]}"), 1)
	f.Fuzz(func(t *testing.T, data []byte, line int) {
		l, c, ok := LocateFlowError(data, line, "did not find expected ',' or ']'")
		if !ok {
			return
		}
		lines := strings.Split(string(data), "\n")
		if l < 1 || l > len(lines) || c < 1 || c > len(lines[l-1])+1 {
			t.Fatalf("position %d:%d outside the input (%d lines)", l, c, len(lines))
		}
	})
}
