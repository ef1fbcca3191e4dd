package output

import (
	"bytes"
	"io"
	"testing"
)

func TestFormat(t *testing.T) {
	type row struct {
		Name  string   `json:"name" yaml:"name"`
		Items []string `json:"items" yaml:"items"`
	}
	v := row{Name: "x", Items: []string{"a", "b"}}
	text := func(w io.Writer) error { _, err := io.WriteString(w, "x: a, b\n"); return err }
	tests := []struct{ format, want string }{
		{"text", "x: a, b\n"},
		{"json", "{\n  \"name\": \"x\",\n  \"items\": [\n    \"a\",\n    \"b\"\n  ]\n}\n"},
		{"yaml", "name: x\nitems:\n  - a\n  - b\n"},
	}
	for _, tc := range tests {
		f := NewFormat(Text, JSON, YAML)
		if err := f.Set(tc.format); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := f.Write(&buf, v, text); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("-o %s:\n%q\nwant\n%q", tc.format, buf.String(), tc.want)
		}
	}
}

func TestFormatRefusesUnknown(t *testing.T) {
	f := NewFormat(Text, JSON)
	err := f.Set("yaml")
	if err == nil || err.Error() != `unknown output format "yaml" (want text|json)` {
		t.Fatalf("Set(yaml) = %v", err)
	}
	if f.String() != Text {
		t.Fatalf("a refused value changed the format to %s", f)
	}
}
