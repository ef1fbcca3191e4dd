package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	type row struct {
		Name   string   `json:"name"`
		Items  []string `json:"items"`
		Big    int64    `json:"bigNumber"`
		Quoted string   `json:"quoted"`
	}
	v := row{Name: "x", Items: []string{"a", "b"}, Big: 1<<62 + 1, Quoted: "true"}
	text := func(w io.Writer) error { _, err := io.WriteString(w, "x: a, b\n"); return err }
	tests := []struct{ format, want string }{
		{"text", "x: a, b\n"},
		{"json", "{\n  \"name\": \"x\",\n  \"items\": [\n    \"a\",\n    \"b\"\n  ],\n  \"bigNumber\": 4611686018427387905,\n  \"quoted\": \"true\"\n}\n"},
		// The JSON keys in the JSON order, the number exact, and a
		// string that reads as a bool quoted.
		{"yaml", "name: x\nitems:\n  - a\n  - b\nbigNumber: 4611686018427387905\nquoted: \"true\"\n"},
	}
	for _, tc := range tests {
		f := New()
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
	f := New()
	err := f.Set("table")
	if err == nil || err.Error() != `unknown output format "table" (want text|json|yaml)` {
		t.Fatalf("Set(table) = %v", err)
	}
	if f.String() != Text {
		t.Fatalf("a refused value changed the format to %s", f)
	}
}

func TestTabularTakesText(t *testing.T) {
	f := NewTabular()
	if f.String() != Table || f.Usage() != "table|text|json|yaml" {
		t.Fatalf("NewTabular() = %s, %s", f, f.Usage())
	}
	for _, s := range []string{"json", "text"} {
		if err := f.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if f.String() != Table || !f.IsText() {
		t.Fatalf("-o text on a table command reads back as %s", f)
	}
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	tb := NewTable(&buf, "KEY", "VALUE")
	tb.Row("a", "one")
	tb.Row("longer", "two\tthree")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "KEY     VALUE\na       one\nlonger  two three\n"
	if buf.String() != want {
		t.Fatalf("table:\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	tb = NewCompactTable(&buf)
	tb.Row("a", "b", "c")
	tb.Row("aa", "b", "c")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "a  b c\naa b c\n"; buf.String() != want {
		t.Fatalf("compact table:\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestUnreachable(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, dialErr := net.Dial("tcp", addr)
	_, httpErr := http.Get("http://" + addr + "/info")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"dial", fmt.Errorf("list topics: unable to dial: %w", dialErr), true},
		{"http", fmt.Errorf("inspect: %w", httpErr), true},
		{"marked", fmt.Errorf("watch: %w", ErrUnreachable), true},
		{"other", errors.New("topic exists"), false},
	}
	for _, tc := range tests {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable(%v) = %v", tc.name, tc.err, got)
		}
	}
	if dialErr == nil || !strings.Contains(dialErr.Error(), "refused") {
		t.Logf("dial to a closed port gave %v", dialErr)
	}
}
