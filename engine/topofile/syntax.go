package topofile

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is one problem with a topology file, at the position of the YAML
// node at fault.
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

// Error reads "file:line:column: message".
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// maxErrors bounds how many problems one load reports: past that, the rest
// are mostly echoes of the first ones.
const maxErrors = 20

// fields is a YAML mapping whose keys were checked against the ones allowed.
type fields struct {
	keys   map[string]*yaml.Node
	values map[string]*yaml.Node
	order  []string
}

func (f fields) has(k string) bool { return f.values[k] != nil }

func (f fields) get(k string) *yaml.Node { return f.values[k] }

// key returns the key node of the first of ks present, for errors about the
// presence of a field rather than its value.
func (f fields) key(ks ...string) *yaml.Node {
	for _, k := range ks {
		if n := f.keys[k]; n != nil {
			return n
		}
	}
	return nil
}

// deref follows aliases, bounded so that a crafted document cannot loop.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

// mapping checks that n is a mapping whose keys are all in allowed and
// appear once. An empty value (null) is an empty mapping.
func (c *compiler) mapping(n *yaml.Node, what string, allowed ...string) (fields, bool) {
	f := fields{keys: map[string]*yaml.Node{}, values: map[string]*yaml.Node{}}
	n = deref(n)
	if isNull(n) {
		return f, true
	}
	if n.Kind != yaml.MappingNode {
		c.errf(n, "%s: expected a mapping, got %s", what, kindName(n))
		return f, false
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			c.errf(k, "%s: expected a field name, got %s", what, kindName(k))
			ok = false
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			c.errf(k, "unknown field %q in %s (expected one of: %s)", k.Value, what, strings.Join(allowed, ", "))
			ok = false
			continue
		}
		if prev := f.keys[k.Value]; prev != nil {
			c.errf(k, "%s: field %q given twice (first at line %d)", what, k.Value, prev.Line)
			ok = false
			continue
		}
		f.keys[k.Value], f.values[k.Value] = k, v
		f.order = append(f.order, k.Value)
	}
	return f, ok
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Style == 0)
}

// scalar reads n as a string. Numbers and booleans are taken as written, so
// an expression such as `true` or a topic such as 2024 needs no quotes.
func (c *compiler) scalar(n *yaml.Node, what string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		got := "nothing"
		if n != nil {
			got = kindName(n)
		}
		c.errf(n, "%s: expected a value, got %s", what, got)
		return "", false
	}
	return n.Value, true
}

// requiredString reads field k of f, which must be present; parent is the
// mapping, where the error points when it is missing.
func (c *compiler) requiredString(f fields, parent *yaml.Node, k, what string) (string, bool) {
	n := f.get(k)
	if n == nil {
		c.errf(parent, "%s: missing field %q", what, k)
		return "", false
	}
	s, ok := c.scalar(n, what+" "+k)
	if ok && s == "" {
		c.errf(n, "%s %s: must not be empty", what, k)
		return "", false
	}
	return s, ok
}

// stringList reads a name or a list of names.
func (c *compiler) stringList(n *yaml.Node, what string) ([]string, bool) {
	n = deref(n)
	if n != nil && n.Kind == yaml.SequenceNode {
		out := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			s, ok := c.scalar(item, what)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			c.errf(n, "%s: expected at least one name", what)
			return nil, false
		}
		return out, true
	}
	s, ok := c.scalar(n, what)
	if !ok {
		return nil, false
	}
	return []string{s}, true
}

// duration reads a Go duration ("5m", "30s", "100ms"); 0 needs no unit.
func (c *compiler) duration(n *yaml.Node, what string) (time.Duration, bool) {
	s, ok := c.scalar(n, what)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.errf(n, "%s: expected a duration such as 500ms, 30s or 5m, got %q", what, s)
		return 0, false
	}
	if d < 0 {
		c.errf(n, "%s: duration %s must not be negative", what, s)
		return 0, false
	}
	return d, true
}

func (c *compiler) optDuration(f fields, k, what string) (time.Duration, bool) {
	if !f.has(k) {
		return 0, true
	}
	return c.duration(f.get(k), what+" "+k)
}

func (c *compiler) intField(n *yaml.Node, what string, lo, hi int64) (int64, bool) {
	s, ok := c.scalar(n, what)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil || i < lo || i > hi {
		bound := fmt.Sprintf("at least %d", lo)
		if hi < math.MaxInt64 {
			bound = fmt.Sprintf("between %d and %d", lo, hi)
		}
		c.errf(n, "%s: expected a whole number %s, got %q", what, bound, s)
		return 0, false
	}
	return i, true
}

// oneOf reads a scalar that must be one of choices.
func (c *compiler) oneOf(n *yaml.Node, what string, choices ...string) (string, bool) {
	s, ok := c.scalar(n, what)
	if !ok {
		return "", false
	}
	if !slices.Contains(choices, s) {
		c.errf(n, "%s: expected one of %s, got %q", what, strings.Join(choices, ", "), s)
		return "", false
	}
	return s, true
}

// yamlLine finds the line in go-yaml's syntax errors, which carry no
// column.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError positions a go-yaml parse error. The parser reports a line
// only; the column is that of the line's first non-blank character, which
// is where an editor's eye should go.
func syntaxError(file string, data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, col := 1, 1
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		lines := strings.Split(string(data), "\n")
		if line >= 1 && line <= len(lines) {
			text := lines[line-1]
			col = len(text) - len(strings.TrimLeft(text, " \t")) + 1
		}
	}
	// Inside a flow collection go-yaml names where the collection's
	// context starts; the bad token is found here.
	if l, c, ok := LocateFlowError(data, line, msg); ok {
		line, col = l, c
	}
	return &Error{File: file, Line: line, Column: col, Msg: "invalid YAML: " + msg}
}
