package config

import (
	"strings"
	"testing"
)

func TestParseFlattensAndPositionsErrors(t *testing.T) {
	got, err := Parse("c.yaml", []byte("application.id: app\nstoatflow:\n  commit-barrier:\n    interval-ms: 250\nnum.stream.threads: 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"application.id": "app", "stoatflow.commit-barrier.interval-ms": "250", "num.stream.threads": "4"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"a: [1, 2]\n", "c.yaml:1:4: key a: want a scalar value"},
		{"a: 1\na: 2\n", "c.yaml:2:1: key a is set twice"},
		{"- a\n", "c.yaml:1:1: want a mapping"},
		{"a:\n", "c.yaml:1:3: key a has no value"},
		{"a: b: c\n", "c.yaml: yaml:"},
	} {
		_, err := Parse("c.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("a: 1\nb:\n  c: d\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Parse("fuzz.yaml", data)
	})
}
