// Package output renders command results in the format a user picks with
// -o/--output: text for people, json and yaml for scripts.
//
// A Format is a pflag.Value restricted to the formats a command supports,
// so that a bad -o value is refused while flags are parsed, as the usage
// error it is.
package output

import (
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
	JSON = "json"
	YAML = "yaml"
)

// Format is the value of an -o/--output flag.
type Format struct {
	value   string
	allowed []string
}

// NewFormat returns a format set to its first allowed value.
func NewFormat(allowed ...string) *Format {
	if len(allowed) == 0 {
		panic("output: NewFormat needs at least one format")
	}
	return &Format{value: allowed[0], allowed: allowed}
}

// String returns the chosen format.
func (f *Format) String() string { return f.value }

// Set validates and sets the format; it implements pflag.Value.
func (f *Format) Set(s string) error {
	if !slices.Contains(f.allowed, s) {
		return fmt.Errorf("unknown output format %q (want %s)", s, f.Usage())
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

// Write renders v in the chosen format. text writes the text form; json
// and yaml marshal v.
func (f *Format) Write(w io.Writer, v any, text func(io.Writer) error) error {
	switch f.value {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case YAML:
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	default:
		return text(w)
	}
}
