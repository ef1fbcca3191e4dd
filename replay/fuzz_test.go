package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseFixture feeds the parser arbitrary bytes: it must return a
// fixture or an error, never panic, and its errors must name the file.
func FuzzParseFixture(f *testing.F) {
	for _, dir := range []string{"testdata/pass", "testdata/fail", "testdata/error", "../fixtures/go-examples"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.fixture.yaml"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("topology: a\nsteps:\n  - &r {topic: t, key: *r}\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fx, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if fx.Topology == "" {
			t.Fatal("parsed a fixture without a topology")
		}
		for _, st := range fx.Steps {
			if st.Kind == StepRecord && st.Record == nil {
				t.Fatal("record step without a record")
			}
			if st.Record != nil {
				_ = canonical(st.Record.Key.any())
				_ = canonical(st.Record.Value.any())
			}
		}
	})
}

// FuzzRecordsFile does the same for a records file's lines.
func FuzzRecordsFile(f *testing.F) {
	f.Add([]byte(`{"topic":"t","key":"a","value":{"b":[1,2]},"timestamp":1,"headers":{"h":"v"}}`))
	f.Add([]byte(`{"topic":"t","key":"\u00e9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf := newRecordsFile("r.jsonl", strings.NewReader(string(data)))
		var rec Record
		for range 100 {
			if err := rf.next(&rec); err != nil {
				return
			}
			_ = canonical(rec.Value.any())
		}
	})
}
