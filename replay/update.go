package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Suffix marks fixture files in a directory.
const Suffix = ".fixture.yaml"

// ErrNoFixtures is returned by Expand for a directory without fixtures.
var ErrNoFixtures = errors.New("no " + Suffix + " files")

// Expand turns command-line paths into fixture files: a file as given, a
// directory into every *.fixture.yaml beneath it, sorted. Paths keep the
// form the caller gave them, so reports do not depend on the machine.
func Expand(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("fixture path: %w", err)
		}
		if !info.IsDir() {
			out = append(out, arg)
			continue
		}
		var found []string
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), Suffix) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("fixture path: %w", err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("fixture path %s: %w", arg, ErrNoFixtures)
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// UpdateOptions say what --update writes.
type UpdateOptions struct {
	// Timing writes, on every expected output record, the step it was
	// written during (after: N, or the step's label). Without it, after
	// is written only for outputs whose expectations already name steps.
	Timing bool
	// Counts writes every output as {count: N} instead of its records.
	Counts bool
	// CountAbove, when above 0, writes an output with more records than
	// that as {count: N}.
	CountAbove int
}

// rewriteAll says whether opts rewrite passing fixtures too: timing and
// counts change what a fixture checks, not only what it expects.
func (o UpdateOptions) rewriteAll() bool { return o.Timing || o.Counts }

// fillInComment is the comment replay record leaves where the expect
// section goes; Rewrite removes it when it writes the section.
const fillInComment = "# expect: run stoatctl replay --update on this file to fill in what the topology writes\n"

// Rewrite returns the fixture file's contents with its expect section
// replaced by what the run produced, or ok false when nothing changes.
// The rest of the file is kept byte for byte where the layout allows: the
// expect section's lines are cut out and replaced (with replay record's
// fill-in comment, when the fixture has no expect section yet); only a
// fixture written as one flow mapping is re-encoded whole.
func (r *Result) Rewrite(opts UpdateOptions) (data []byte, ok bool, err error) {
	if r.Status == Errored || r.fixture == nil {
		return nil, false, fmt.Errorf("update %s: the fixture did not run", r.Path)
	}
	if r.Status == Pass && !opts.rewriteAll() && r.fixture.hasExpect() {
		// A fixture without an expect section passes whatever the run
		// wrote (nothing, when every record was dropped): it is written
		// all the same, drops included.
		return nil, false, nil
	}
	data, err = r.rewrite(opts)
	if err != nil {
		return nil, false, err
	}
	orig, err := os.ReadFile(r.Path)
	if err != nil {
		return nil, false, fmt.Errorf("update %s: %w", r.Path, err)
	}
	return data, !bytes.Equal(data, orig), nil
}

func (r *Result) rewrite(opts UpdateOptions) ([]byte, error) {
	orig, err := os.ReadFile(r.Path)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", r.Path, err)
	}
	root := r.fixture.doc.Content[0]
	if root.Style&yaml.FlowStyle != 0 {
		return r.reencode(root, opts)
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	start, end := len(lines), len(lines)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "expect" {
			continue
		}
		start = root.Content[i].Line - 1
		if i+2 < len(root.Content) {
			end = root.Content[i+2].Line - 1
		}
		// Comment and blank lines just above the next field belong to it.
		for end > start+1 && isCommentOrBlank(lines[end-1]) {
			end--
		}
		if root.Content[i].Column != 1 {
			return r.reencode(root, opts)
		}
	}
	if start == len(lines) {
		// No expect section yet: replay record's comment asking for one
		// goes, at the end or followed only by blank lines.
		k := start
		for k > 0 && len(bytes.TrimSpace(lines[k-1])) == 0 {
			k--
		}
		if k > 0 && string(lines[k-1]) == fillInComment {
			lines = append(lines[:k-1:k-1], lines[k:]...)
			start, end = len(lines), len(lines)
		}
	}
	var b bytes.Buffer
	for _, l := range lines[:start] {
		b.Write(l)
	}
	if start == len(lines) && b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
	if err := r.writeExpect(&b, opts); err != nil {
		return nil, fmt.Errorf("update %s: %w", r.Path, err)
	}
	for _, l := range lines[end:] {
		b.Write(l)
	}
	return b.Bytes(), nil
}

// writeExpect writes the expect section expectNode describes, in the same
// layout, but record by record: each output record is encoded on its own
// and forgotten, so that the section of a large replay never exists as a
// YAML tree, which takes tens of times the memory of the text.
func (r *Result) writeExpect(w *bytes.Buffer, opts UpdateOptions) error {
	w.WriteString("expect:\n  outputs:")
	if len(r.Outputs) == 0 {
		w.WriteString(" {}")
	}
	w.WriteString("\n")
	for _, t := range r.Outputs {
		key, err := flowText(str(t.Topic))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "    %s:", key)
		switch {
		case t.CountOnly || opts.Counts || opts.CountAbove > 0 && t.ActualCount > opts.CountAbove:
			fmt.Fprintf(w, " {count: %d}\n", t.ActualCount)
			continue
		}
		order := t.updateOrder()
		if len(t.Actual) == 0 && order == InOrder {
			w.WriteString(" []\n")
			continue
		}
		w.WriteString("\n")
		indent := "      "
		if order != InOrder {
			fmt.Fprintf(w, "      order: %s\n      records:", order)
			if len(t.Actual) == 0 {
				w.WriteString(" []")
			}
			w.WriteString("\n")
			indent = "        "
		}
		steps := opts.Timing || timed(t.Expected)
		for _, a := range t.Actual {
			n := r.recordNode(a, true)
			if steps && a.Step > 0 {
				n.Content = append(n.Content, str("after"), r.stepNode(a.Step))
			}
			line, err := flowText(n)
			if err != nil {
				return err
			}
			// A flow node is one line as yaml.v3 writes them (no wrapping,
			// newlines escaped); should one ever span lines, its
			// continuations go under it.
			fmt.Fprintf(w, "%s- %s\n", indent, strings.ReplaceAll(line, "\n", "\n"+indent+"  "))
		}
	}
	// Stores and drops are as small as the fixture's own lists: encoded
	// as a tree, indented under expect.
	rest := r.expectNode(UpdateOptions{Counts: true})
	rest.Content = rest.Content[2:]
	if len(rest.Content) == 0 {
		return nil
	}
	data, err := encodeNode(rest)
	if err != nil {
		return err
	}
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) > 0 {
			w.WriteString("  ")
			w.Write(l)
		}
	}
	return nil
}

// flowText encodes one node on one line, without its newline.
func flowText(n *yaml.Node) (string, error) {
	data, err := encodeNode(n)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

func isCommentOrBlank(l []byte) bool {
	t := bytes.TrimSpace(l)
	return len(t) == 0 || t[0] == '#'
}

func (r *Result) reencode(root *yaml.Node, opts UpdateOptions) ([]byte, error) {
	n := r.expectNode(opts)
	replaced := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "expect" {
			root.Content[i+1], replaced = n, true
		}
	}
	if !replaced {
		root.Content = append(root.Content, str("expect"), n)
	}
	root.Style = 0
	data, err := encodeNode(r.fixture.doc)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", r.Path, err)
	}
	return data, nil
}

func encodeNode(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// expectNode is the expect section a run's results call for: every
// output topic with what it got (count-only topics stay count-only, and
// an output keeps its order), the stores the fixture lists with their
// entries, and drop counts when the fixture checks them.
func (r *Result) expectNode(opts UpdateOptions) *yaml.Node {
	e := &yaml.Node{Kind: yaml.MappingNode}
	outs := &yaml.Node{Kind: yaml.MappingNode}
	for _, t := range r.Outputs {
		var v *yaml.Node
		if t.CountOnly || opts.Counts || opts.CountAbove > 0 && t.ActualCount > opts.CountAbove {
			v = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{str("count"), num(int64(t.ActualCount))}}
		} else {
			v = &yaml.Node{Kind: yaml.SequenceNode}
			steps := opts.Timing || timed(t.Expected)
			for _, a := range t.Actual {
				n := r.recordNode(a, true)
				if steps && a.Step > 0 {
					n.Content = append(n.Content, str("after"), r.stepNode(a.Step))
				}
				v.Content = append(v.Content, n)
			}
			if len(t.Actual) == 0 {
				v.Style = yaml.FlowStyle
			}
			if order := t.updateOrder(); order != InOrder {
				v = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("order"), str(string(order)), str("records"), v}}
			}
		}
		outs.Content = append(outs.Content, str(t.Topic), v)
	}
	e.Content = append(e.Content, str("outputs"), outs)
	if len(r.Stores) > 0 {
		stores := &yaml.Node{Kind: yaml.MappingNode}
		for _, s := range r.Stores {
			v := &yaml.Node{Kind: yaml.SequenceNode}
			for _, a := range s.Actual {
				v.Content = append(v.Content, r.recordNode(a, false))
			}
			if len(s.Actual) == 0 {
				v.Style = yaml.FlowStyle
			}
			stores.Content = append(stores.Content, str(s.Store), v)
		}
		e.Content = append(e.Content, str("stores"), stores)
	}
	if d := r.Drops; d != nil {
		drops := &yaml.Node{Kind: yaml.MappingNode}
		for _, reason := range d.Reasons {
			if _, listed := d.Expected[reason]; listed || d.Actual[reason] != 0 {
				drops.Content = append(drops.Content, str(reason), num(d.Actual[reason]))
			}
		}
		if len(drops.Content) == 0 {
			drops.Style = yaml.FlowStyle
		}
		e.Content = append(e.Content, str("drops"), drops)
	} else if r.dropped != nil {
		drops := &yaml.Node{Kind: yaml.MappingNode}
		for _, reason := range slices.Sorted(maps.Keys(r.dropped)) {
			drops.Content = append(drops.Content, str(reason), num(r.dropped[reason]))
		}
		if len(drops.Content) == 0 {
			drops.Style = yaml.FlowStyle
		}
		e.Content = append(e.Content, str("drops"), drops)
	}
	return e
}

// updateOrder is the order --update writes for t: the fixture's, else
// per-key when the records have more than one key, because the live
// engine keeps each key's order and no order across keys (its lanes and
// partitions split them), else in-order.
func (t *TopicResult) updateOrder() Order {
	if t.orderGiven && t.Order != "" {
		return t.Order
	}
	keys := map[string]bool{}
	for _, a := range t.Actual {
		if keys[canonical(a.Key)] = true; len(keys) > 1 {
			return PerKey
		}
	}
	return InOrder
}

// hasExpect says whether the fixture file has an expect section.
func (f *Fixture) hasExpect() bool {
	if f.doc == nil || len(f.doc.Content) == 0 {
		return false
	}
	root := f.doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "expect" {
			return true
		}
	}
	return false
}

func (r *Result) recordNode(a Actual, headers bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	n.Content = append(n.Content, str("key"), dataNode(a.Key), str("value"), dataNode(a.Value))
	if a.HasTimestamp {
		ts := num(a.Timestamp)
		if r.fixture.timesAsText {
			ts = str(formatTime(a.Timestamp))
		}
		n.Content = append(n.Content, str("timestamp"), ts)
	}
	if headers && len(a.Headers) > 0 {
		hs := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		for _, h := range a.Headers {
			v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
			if h.Value != nil {
				v = str(string(h.Value))
			}
			hs.Content = append(hs.Content, str(h.Key), v)
		}
		n.Content = append(n.Content, str("headers"), hs)
	}
	return n
}

// stepNode names step i as after does: by its label when it has one.
func (r *Result) stepNode(i int) *yaml.Node {
	if l := r.fixture.Steps[i-1].Label; l != "" {
		return str(l)
	}
	return num(int64(i))
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func num(n int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(n, 10)}
}

// dataNode writes normalized plain data as flow-style YAML.
func dataNode(v any) *yaml.Node {
	switch x := normalize(v).(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case string:
		return str(x)
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case int64:
		return num(x)
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'g', -1, 64)}
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, e := range x {
			n.Content = append(n.Content, dataNode(e))
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		keys := slices.Sorted(maps.Keys(x))
		// Windowed keys read best as key, start, end.
		if len(x) == 3 && x["key"] != nil && x["start"] != nil && x["end"] != nil {
			keys = []string{"key", "start", "end"}
		}
		for _, k := range keys {
			n.Content = append(n.Content, str(k), dataNode(x[k]))
		}
		return n
	}
	return str(fmt.Sprint(v))
}

// WriteFile replaces path with data atomically: a temporary file in the
// same directory, renamed over it, so a crash leaves the old file or the
// new one, never half of either.
func WriteFile(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("update %s: %w", path, err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return fmt.Errorf("update %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	return nil
}

// UpdateAll rewrites the expect sections of every fixture that failed
// (every fixture, with opts.Timing or opts.Counts),
// and writes nothing at all when any fixture could not run: a half-updated
// suite would hide that run's problem. It returns the paths it rewrote.
func UpdateAll(results []*Result, opts UpdateOptions) (map[string]bool, error) {
	for _, r := range results {
		if r.Status == Errored {
			return nil, fmt.Errorf("update: nothing written: %s did not run", r.Path)
		}
	}
	type write struct {
		path string
		data []byte
	}
	var writes []write
	for _, r := range results {
		data, ok, err := r.Rewrite(opts)
		if err != nil {
			return nil, fmt.Errorf("update: nothing written: %w", err)
		}
		if ok {
			writes = append(writes, write{r.Path, data})
		}
	}
	updated := map[string]bool{}
	for _, w := range writes {
		if err := WriteFile(w.path, w.data); err != nil {
			return updated, err
		}
		updated[w.path] = true
	}
	return updated, nil
}
