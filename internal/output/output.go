// Package output is stoatctl's command-line convention, kept in one place so
// that every command follows it:
//
//   - Format: the value of -o/--output. Every command takes text|json|yaml;
//     a command whose text is a table takes table|text|json|yaml, table and
//     text being the same output. JSON keys are camelCase, as the REST API's
//     are; yaml is the JSON document with the same keys, in the same order.
//   - TableWriter (NewTable): the one table renderer, for every command that prints one.
//   - Exit codes (exit.go): 0 ok, 1 failure, 2 usage error, 3 unreachable
//     (no broker or REST endpoint answered), and Code, which maps an error to
//     them.
//
// docs/cli.md is the user's page for all of it.
//
// A Format is a pflag.Value restricted to the formats a command supports,
// so that a bad -o value is refused while flags are parsed, as the usage
// error it is.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Formats.
const (
	Text = "text"
	// Table is text where the text is a table; -o text gives it too.
	Table = "table"
	JSON  = "json"
	YAML  = "yaml"
)

// Format is the value of an -o/--output flag.
type Format struct {
	value   string
	allowed []string
}

// New returns the format of a command whose text is not a table:
// text|json|yaml, text by default.
func New() *Format {
	return &Format{value: Text, allowed: []string{Text, JSON, YAML}}
}

// NewTabular returns the format of a command whose text is a table:
// table|text|json|yaml, table by default. text is accepted as a synonym,
// so that -o text works on every command, and reads back as table.
func NewTabular() *Format {
	return &Format{value: Table, allowed: []string{Table, Text, JSON, YAML}}
}

// String returns the chosen format.
func (f *Format) String() string { return f.value }

// Set validates and sets the format; it implements pflag.Value.
func (f *Format) Set(s string) error {
	if !slices.Contains(f.allowed, s) {
		return fmt.Errorf("unknown output format %q (want %s)", s, f.Usage())
	}
	if s == Text && slices.Contains(f.allowed, Table) {
		s = Table
	}
	f.value = s
	return nil
}

// Type names the flag's value in help text.
func (f *Format) Type() string { return "format" }

// Usage lists the allowed formats: "text|json|yaml".
func (f *Format) Usage() string { return strings.Join(f.allowed, "|") }

// Allowed returns the allowed formats, for shell completion.
func (f *Format) Allowed() []string { return slices.Clone(f.allowed) }

// IsText reports whether the format is for people (text or table).
func (f *Format) IsText() bool { return f.value == Text || f.value == Table }

// Write renders v in the chosen format. text and table write the text
// form; json marshals v; yaml is the JSON document as YAML.
func (f *Format) Write(w io.Writer, v any, text func(io.Writer) error) error {
	switch f.value {
	case JSON:
		return WriteJSON(w, v)
	case YAML:
		return WriteYAML(w, v)
	default:
		return text(w)
	}
}

// WriteJSON writes v as indented JSON, HTML characters unescaped.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteYAML writes v as YAML with the keys, key order and numbers of its
// JSON form. It goes through JSON rather than yaml tags so that the two
// formats cannot drift apart (a struct with json tags only would otherwise
// print Go field names lower-cased), and an int64 past 2^53 stays exact.
func WriteYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return JSONToYAML(w, b)
}

// JSONToYAML writes the JSON document b as YAML, for a package that
// writes its own JSON (replay's report).
func JSONToYAML(w io.Writer, b []byte) error {
	// JSON is YAML: parsed as YAML it keeps its key order and the exact
	// text of its numbers.
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("json as yaml: %w", err)
	}
	blockStyle(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// blockStyle drops the flow style and quotes parsing JSON gave the nodes:
// the encoder then writes block YAML and quotes only the strings that
// would otherwise read as another type ("true", "12").
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
