package config

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"equals", "a=1\nb = 2\n", map[string]string{"a": "1", "b": "2"}, ""},
		{"colon and space", "a: 1\nb 2\nc\t3", map[string]string{"a": "1", "b": "2", "c": "3"}, ""},
		{"comments and blanks", "# c\n! c\n\n   \n  # indented\na=1", map[string]string{"a": "1"}, ""},
		{"key without value", "a\nb=", map[string]string{"a": "", "b": ""}, ""},
		{"value keeps separators", "a=b=c:d e", map[string]string{"a": "b=c:d e"}, ""},
		{"continuation", "sasl.jaas.config=org.Module required \\\n    username=\"u\" \\\n    password=\"p\";", map[string]string{"sasl.jaas.config": `org.Module required username="u" password="p";`}, ""},
		{"even backslashes do not continue", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}, ""},
		{"escapes", `a=tab\there\nnl\u0041\:\=\\`, map[string]string{"a": "tab\there\nnlA:=\\"}, ""},
		{"escaped key separator", `my\ key=v`, map[string]string{"my key": "v"}, ""},
		{"last wins", "a=1\na=2", map[string]string{"a": "2"}, ""},
		{"crlf", "a=1\r\nb=2\r", map[string]string{"a": "1", "b": "2"}, ""},
		{"trailing continuation", "a=1\\", map[string]string{"a": "1"}, ""},
		{"bad unicode escape", "k=\\u12", nil, `f:1: key k: value: malformed \uXXXX escape`},
		{"bad unicode in key", "\\uZZZZ=1", nil, `f:1: key: malformed \uXXXX escape`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProperties("f", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPropertyLinesAndLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.properties")
	data := "# a Kafka Streams file\napplication.id=wc\n\nsasl.jaas.config=x \\\n  y;\nnum.stream.threads: 2\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ApplicationID: "wc", "sasl.jaas.config": "x y;", NumStreamThreads: "2"}
	if !maps.Equal(got, want) {
		t.Errorf("LoadFile = %v, want %v", got, want)
	}
	lines := FileKeyLines(path, []byte(data))
	if lines[ApplicationID] != 2 || lines["sasl.jaas.config"] != 4 || lines[NumStreamThreads] != 6 {
		t.Errorf("lines = %v", lines)
	}
}

// FuzzParseProperties: any bytes parse or fail without a panic, and what
// parses is found again when its keys and values are written back escaped.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"a=1", "a: b\\\n c", "# x\n!y\nk v", `\u0041=\t`, "a=\\u12", "k\\ey=v\\\\"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseProperties("f", data)
		if err != nil {
			return
		}
		var b strings.Builder
		for k, v := range got {
			b.WriteString(escapeProperty(k, true) + "=" + escapeProperty(v, false) + "\n")
		}
		again, err := ParseProperties("f", []byte(b.String()))
		if err != nil {
			t.Fatalf("written back %q: %v", b.String(), err)
		}
		if !maps.Equal(got, again) {
			t.Fatalf("written back: got %q, want %q", again, got)
		}
	})
}

// escapeProperty writes s so that ParseProperties reads it back.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		r := s[i]
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteByte(r)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		default:
			b.WriteByte(r)
		}
	}
	return b.String()
}
