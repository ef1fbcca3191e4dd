package replay

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/topofile"
)

// Fixture is a parsed fixture file.
type Fixture struct {
	// Path is the file as the caller named it.
	Path string
	// Topology is the topology reference: a file relative to the fixture
	// or the name of a registered Go topology.
	Topology    string
	Description string
	Driver      DriverSettings
	Steps       []Step
	Expect      Expect

	doc *yaml.Node
	// countAll is set by CountOnly: every output topic is counted.
	countAll bool
	// timesAsText is set when the fixture writes its first time as RFC
	// 3339, so that --update writes expected timestamps the same way.
	timesAsText bool
	topoNode    *yaml.Node
}

// DriverSettings configure the test driver.
type DriverSettings struct {
	// Lanes is the lane count timer checks judge over, or 0 for the
	// driver's default.
	Lanes int
	// CommitPerPipe overrides test.driver.commit-per-pipe when set.
	CommitPerPipe *bool
	// WallClock is the initial wall-clock time in epoch milliseconds.
	WallClock int64
	// Config holds configuration keys, applied over the topology's.
	Config map[string]string
}

// StepKind is what a step does.
type StepKind uint8

const (
	StepRecord StepKind = iota
	StepAdvanceWatermark
	StepAdvanceWallClock
	StepCommitBarrier
	StepRecordsFile
)

func (k StepKind) String() string {
	return [...]string{"record", "advance-watermark", "advance-wall-clock", "commit-barrier", "records-file"}[k]
}

// Step is one entry of a fixture's steps.
type Step struct {
	Kind StepKind
	// Index is the step's 1-based position; Line and Column where it
	// starts in the fixture.
	Index, Line, Column int
	Record              *Record
	// Time is the watermark to advance to, or the wall-clock time to move
	// to when Absolute; By the wall-clock advance otherwise.
	Time     int64
	By       time.Duration
	Absolute bool
	// File is a records file, joined to the fixture's directory.
	File string
	// Label names the step for expected records' after, or is empty.
	Label string
}

// Record is an input record.
type Record struct {
	Topic     string
	Key       Value
	Value     Value
	Timestamp int64
	// HasTimestamp is false when the record gives none: it is then
	// stamped with the driver's wall clock.
	HasTimestamp bool
	Headers      processor.Headers
}

// Expect is what a fixture expects.
type Expect struct {
	Outputs []TopicExpect
	Stores  []StoreExpect
	// Drops are dropped.records.total counts by reason; nil when the
	// fixture does not check them.
	Drops map[string]int64
	// DropOrder is the reasons in file order.
	DropOrder []string
}

// Order is how an output's records are compared with the expected ones.
type Order string

const (
	// InOrder compares the records in the order they were written.
	InOrder Order = "in-order"
	// Multiset compares them in any order: every expected record must be
	// matched by a written one of its own, and no written one left over.
	Multiset Order = "multiset"
	// PerKey compares, for every key, that key's records in the order they
	// were written; the order across keys is not compared.
	PerKey Order = "per-key"
)

var orders = []Order{InOrder, Multiset, PerKey}

// TopicExpect is the expected records of one output topic.
type TopicExpect struct {
	Topic   string
	Records []ExpectedRecord
	// Order is how Records are compared; InOrder unless the fixture says.
	Order Order
	// OrderGiven says the fixture says (order:).
	OrderGiven bool
	// CountOnly checks only how many records were written: Count.
	CountOnly bool
	Count     int
}

// ExpectedRecord is one expected output record; a timestamp, headers or
// a step left out are not compared.
type ExpectedRecord struct {
	Key, Value   Value
	Timestamp    int64
	HasTimestamp bool
	Headers      processor.Headers
	HasHeaders   bool
	// After, when above 0, is the 1-based index of the step during which
	// the record must have been written: it is not there after the step
	// before and is there after this one. AfterLabel is the step's label
	// when the fixture named it so.
	After      int
	AfterLabel string
	// Index is the record's 1-based position in its list.
	Index int
}

// StoreExpect is the expected entries of a state store.
type StoreExpect struct {
	Store   string
	Entries []ExpectedRecord
}

// Error is a problem in a fixture at a position. Column is 0 when only the
// line is known (YAML syntax errors).
type Error struct {
	File         string
	Line, Column int
	Err          error
}

func (e *Error) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case e.Column == 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads and parses the fixture at path.
func Load(path string) (*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fixture: %w", err)
	}
	return Parse(path, data)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// maxNodes bounds the nodes one fixture value may expand to through
// aliases, so that a hostile file cannot blow up memory.
const maxNodes = 1 << 20

// Parse parses a fixture; path names it in errors and anchors relative
// records files.
func Parse(path string, data []byte) (*Fixture, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			// Inside a flow collection go-yaml names the line its context
			// starts at; the bad token's position is found.
			if l, c, ok := topofile.LocateFlowError(data, line, m[2]); ok {
				return nil, &Error{File: path, Line: l, Column: c, Err: fmt.Errorf("yaml syntax: %s", m[2])}
			}
			return nil, &Error{File: path, Line: line, Err: fmt.Errorf("yaml syntax: %s", m[2])}
		}
		return nil, &Error{File: path, Err: fmt.Errorf("yaml syntax: %s", strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	p := &parser{path: path, f: &Fixture{Path: path, doc: &doc}}
	if err := p.fixture(&doc); err != nil {
		return nil, err
	}
	p.f.doc = outline(&doc)
	return p.f, nil
}

// CountOnly makes f check only how many records each output topic got:
// an output listed with records expects as many as it lists, one not
// listed none. No written record is kept, so a slice of any size replays
// in little memory; `stoatctl replay --count-only` sets it.
func (f *Fixture) CountOnly() {
	f.countAll = true
	for i, t := range f.Expect.Outputs {
		if !t.CountOnly {
			f.Expect.Outputs[i] = TopicExpect{Topic: t.Topic, CountOnly: true, Count: len(t.Records), Order: InOrder}
		}
	}
}

// outline is what --update needs of a parsed document that it rewrites
// line by line (a block mapping, its keys at column 1): the root's keys
// with their positions, and none of the values' contents. A fixture of
// 100 k steps parses to a tree of some 300 MB, which the run need not
// hold. A document --update re-encodes whole is kept whole.
func outline(doc *yaml.Node) *yaml.Node {
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode || doc.Content[0].Style&yaml.FlowStyle != 0 {
		return doc
	}
	root := *doc.Content[0]
	root.Content = make([]*yaml.Node, len(doc.Content[0].Content))
	for i, n := range doc.Content[0].Content {
		if i%2 == 0 && n.Column != 1 {
			return doc
		}
		c := *n
		c.Content = nil
		root.Content[i] = &c
	}
	out := *doc
	out.Content = []*yaml.Node{&root}
	return &out
}

type parser struct {
	path    string
	f       *Fixture
	budget  int
	sawTime bool
	// labels maps step labels to step indexes; afters are the expected
	// records' after fields, resolved once every step is known.
	labels map[string]int
	afters []afterRef
}

// afterRef is an after field waiting for the steps: the node, and the
// output and record it belongs to.
type afterRef struct {
	n           *yaml.Node
	what        string
	topic, item int
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: p.path, Line: n.Line, Column: n.Column, Err: fmt.Errorf(format, args...)}
}

func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return fmt.Sprintf("the string %q", clip(n.Value))
		}
		return clip(n.Value)
	}
	return "nothing"
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// field is a mapping entry.
type field struct {
	key   string
	kn, v *yaml.Node
}

// fields reads a mapping whose keys must be among allowed, refusing
// unknown and repeated keys; what names the mapping in errors.
func (p *parser) fields(n *yaml.Node, what string, allowed ...string) ([]field, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s: want a mapping, got %s", what, describe(n))
	}
	var out []field
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			return nil, p.errf(kn, "%s: want a field name, got %s", what, describe(kn))
		}
		if allowed != nil && !slices.Contains(allowed, kn.Value) {
			return nil, p.errf(kn, "%s: unknown field %q (want %s)", what, kn.Value, strings.Join(allowed, ", "))
		}
		if slices.ContainsFunc(out, func(f field) bool { return f.key == kn.Value }) {
			return nil, p.errf(kn, "%s: field %q given twice", what, kn.Value)
		}
		out = append(out, field{kn.Value, kn, v})
	}
	return out, nil
}

func (p *parser) fixture(doc *yaml.Node) error {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &Error{File: p.path, Line: 1, Column: 1, Err: errors.New("empty fixture: want a mapping with topology and steps")}
	}
	root := doc.Content[0]
	fs, err := p.fields(root, "fixture", "topology", "description", "driver", "steps", "expect")
	if err != nil {
		return err
	}
	var haveSteps bool
	for _, f := range fs {
		switch f.key {
		case "topology":
			if p.f.Topology, err = p.str(f.v, "topology"); err != nil {
				return err
			}
			if p.f.Topology == "" {
				return p.errf(f.v, "topology: want a file or a registered topology name, got an empty string")
			}
			p.f.topoNode = f.v
		case "description":
			if p.f.Description, err = p.str(f.v, "description"); err != nil {
				return err
			}
		case "driver":
			if err := p.driver(f.v); err != nil {
				return err
			}
		case "steps":
			haveSteps = true
			if err := p.steps(f.v); err != nil {
				return err
			}
		case "expect":
			if err := p.expect(f.v); err != nil {
				return err
			}
		}
	}
	if p.f.Topology == "" {
		return p.errf(root, "fixture: missing field topology (a topology file or registered name)")
	}
	if !haveSteps {
		return p.errf(root, "fixture: missing field steps")
	}
	return p.resolveAfters()
}

// resolveAfters turns every after field into a step index: a number is
// one, a name is the step of that label.
func (p *parser) resolveAfters() error {
	for _, a := range p.afters {
		r := &p.f.Expect.Outputs[a.topic].Records[a.item]
		n := resolve(a.n)
		switch {
		case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
			v, err := p.integer(n, a.what)
			if err != nil {
				return err
			}
			if v < 1 || v > int64(len(p.f.Steps)) {
				return p.errf(n, "%s: want a step from 1 to %d or a step label, got %d", a.what, len(p.f.Steps), v)
			}
			r.After = int(v)
		case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
			i, ok := p.labels[n.Value]
			if !ok {
				known := "no step has a label"
				if len(p.labels) > 0 {
					known = "labels: " + strings.Join(slices.Sorted(maps.Keys(p.labels)), ", ")
				}
				return p.errf(n, "%s: no step is labelled %q (%s)", a.what, n.Value, known)
			}
			r.After, r.AfterLabel = i, n.Value
		default:
			return p.errf(n, "%s: want a step number or a step label, got %s", a.what, describe(n))
		}
	}
	return nil
}

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", p.errf(n, "%s: want a string, got %s", what, describe(n))
	}
	return n.Value, nil
}

// text reads any scalar as its text, for configuration values.
func (p *parser) text(n *yaml.Node, what string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", p.errf(n, "%s: want a value, got %s", what, describe(n))
	}
	return n.Value, nil
}

func (p *parser) integer(n *yaml.Node, what string) (int64, error) {
	n = resolve(n)
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, p.errf(n, "%s: want an integer, got %s", what, describe(n))
	}
	return v, nil
}

func (p *parser) time(n *yaml.Node, what string) (int64, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int":
			var v int64
			if n.Decode(&v) == nil {
				p.noteTime(false)
				return v, nil
			}
		case "!!str", "!!timestamp":
			ms, err := parseTime(n.Value)
			if err != nil {
				return 0, p.errf(n, "%s: %v", what, err)
			}
			p.noteTime(true)
			return ms, nil
		}
	}
	return 0, p.errf(n, "%s: want epoch milliseconds or an RFC 3339 time, got %s", what, describe(n))
}

func (p *parser) noteTime(text bool) {
	if !p.sawTime {
		p.sawTime, p.f.timesAsText = true, text
	}
}

func (p *parser) driver(n *yaml.Node) error {
	fs, err := p.fields(n, "driver", "lanes", "commit-per-pipe", "wall-clock", "config")
	if err != nil {
		return err
	}
	d := &p.f.Driver
	for _, f := range fs {
		switch f.key {
		case "lanes":
			v, err := p.integer(f.v, "driver lanes")
			if err != nil {
				return err
			}
			if v < 1 || v > 1<<16 {
				return p.errf(f.v, "driver lanes: want 1 to 65536 lanes, got %d", v)
			}
			d.Lanes = int(v)
		case "commit-per-pipe":
			var b bool
			if v := resolve(f.v); v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&b) != nil {
				return p.errf(v, "driver commit-per-pipe: want true or false, got %s", describe(v))
			}
			d.CommitPerPipe = &b
		case "wall-clock":
			if d.WallClock, err = p.time(f.v, "driver wall-clock"); err != nil {
				return err
			}
		case "config":
			cs, err := p.fields(f.v, "driver config")
			if err != nil {
				return err
			}
			d.Config = map[string]string{}
			for _, c := range cs {
				if d.Config[c.key], err = p.text(c.v, "driver config "+c.key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var stepKeys = []string{"advance-watermark", "advance-wall-clock", "commit-barrier", "records-file"}

func (p *parser) steps(n *yaml.Node) error {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, "steps: want a list of steps, got %s", describe(n))
	}
	for i, sn := range n.Content {
		st, err := p.step(sn, i+1)
		if err != nil {
			return err
		}
		p.f.Steps = append(p.f.Steps, st)
	}
	return nil
}

func (p *parser) step(n *yaml.Node, index int) (Step, error) {
	st := Step{Index: index, Line: n.Line, Column: n.Column}
	what := fmt.Sprintf("step %d", index)
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Value == "commit-barrier" {
		st.Kind = StepCommitBarrier
		return st, nil
	}
	if n.Kind != yaml.MappingNode {
		return st, p.errf(n, "%s: want a record (a mapping with topic) or one of %s, got %s", what, strings.Join(stepKeys, ", "), describe(n))
	}
	fs, err := p.fields(n, what)
	if err != nil {
		return st, err
	}
	// label may go with any step; it names the step for after.
	if i := slices.IndexFunc(fs, func(f field) bool { return f.key == "label" }); i >= 0 {
		if st.Label, err = p.label(fs[i].v, what); err != nil {
			return st, err
		}
		if prev, dup := p.labels[st.Label]; dup {
			return st, p.errf(fs[i].v, "%s label: %q already names step %d", what, st.Label, prev)
		}
		if p.labels == nil {
			p.labels = map[string]int{}
		}
		p.labels[st.Label] = index
		fs = slices.Delete(fs, i, i+1)
	}
	for _, f := range fs {
		if slices.Contains(stepKeys, f.key) && len(fs) > 1 {
			return st, p.errf(f.kn, "%s: %s must be the step's only field (with label)", what, f.key)
		}
	}
	if len(fs) == 1 && slices.Contains(stepKeys, fs[0].key) {
		f := fs[0]
		switch f.key {
		case "advance-watermark":
			st.Kind = StepAdvanceWatermark
			st.Time, err = p.time(f.v, what+" advance-watermark")
		case "advance-wall-clock":
			st.Kind = StepAdvanceWallClock
			err = p.wallClock(f.v, &st, what)
		case "commit-barrier":
			st.Kind = StepCommitBarrier
			if v := resolve(f.v); v.Kind != yaml.ScalarNode || v.ShortTag() != "!!null" {
				err = p.errf(v, "%s: commit-barrier takes no value, got %s", what, describe(v))
			}
		case "records-file":
			st.Kind = StepRecordsFile
			var file string
			if file, err = p.str(f.v, what+" records-file"); err == nil {
				if file == "" {
					return st, p.errf(f.v, "%s records-file: want a file name, got an empty string", what)
				}
				st.File = file
				if !filepath.IsAbs(file) {
					st.File = filepath.Join(filepath.Dir(p.path), file)
				}
			}
		}
		return st, err
	}
	st.Kind = StepRecord
	st.Record, err = p.record(fs, n, what)
	return st, err
}

// label reads a step label: a name that is not a number, so that after: 5
// and after: "5" cannot be told apart by accident.
func (p *parser) label(n *yaml.Node, what string) (string, error) {
	l, err := p.str(n, what+" label")
	if err != nil {
		return "", err
	}
	if l == "" {
		return "", p.errf(n, "%s label: want a name, got an empty string", what)
	}
	if _, err := strconv.Atoi(l); err == nil {
		return "", p.errf(n, "%s label: want a name that is not a number (after: N names step N), got %q", what, l)
	}
	return l, nil
}

func (p *parser) wallClock(n *yaml.Node, st *Step, what string) error {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if d, err := time.ParseDuration(n.Value); err == nil {
			if d < 0 {
				return p.errf(n, "%s advance-wall-clock: negative duration %s", what, n.Value)
			}
			st.By = d
			return nil
		}
	}
	ms, err := p.time(n, what+" advance-wall-clock")
	if err != nil {
		return p.errf(n, "%s advance-wall-clock: want a duration such as 30s or a time to move to, got %s", what, describe(n))
	}
	st.Time, st.Absolute = ms, true
	return nil
}

func (p *parser) record(fs []field, n *yaml.Node, what string) (*Record, error) {
	allowed := []string{"topic", "key", "value", "timestamp", "headers", "label"}
	for _, f := range fs {
		if !slices.Contains(allowed, f.key) {
			return nil, p.errf(f.kn, "%s: unknown field %q (want %s)", what, f.key, strings.Join(allowed, ", "))
		}
	}
	var err error
	r := &Record{}
	for _, f := range fs {
		switch f.key {
		case "topic":
			if r.Topic, err = p.str(f.v, what+" topic"); err == nil && r.Topic == "" {
				err = p.errf(f.v, "%s topic: want a topic name, got an empty string", what)
			}
		case "key":
			r.Key, err = p.value(f.v, what+" key")
		case "value":
			r.Value, err = p.value(f.v, what+" value")
		case "timestamp":
			r.HasTimestamp = true
			r.Timestamp, err = p.time(f.v, what+" timestamp")
		case "headers":
			r.Headers, err = p.headers(f.v, what+" headers")
		}
		if err != nil {
			return nil, err
		}
	}
	if r.Topic == "" {
		return nil, p.errf(n, "%s: a record needs a topic (or the step must be one of %s)", what, strings.Join(stepKeys, ", "))
	}
	return r, nil
}

func (p *parser) headers(n *yaml.Node, what string) (processor.Headers, error) {
	fs, err := p.fields(n, what)
	if err != nil {
		return nil, err
	}
	hs := processor.Headers{}
	for _, f := range fs {
		v := resolve(f.v)
		if v.Kind != yaml.ScalarNode {
			return nil, p.errf(v, "%s %s: want a string or null, got %s", what, f.key, describe(v))
		}
		h := processor.Header{Key: f.key}
		switch v.ShortTag() {
		case "!!null":
		case "!!binary":
			if h.Value, err = binary(v); err != nil {
				return nil, p.errf(v, "%s %s: %v", what, f.key, err)
			}
		default:
			h.Value = []byte(v.Value)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// binary decodes a !!binary scalar: base64, line breaks allowed, as YAML
// writes long ones. Bytes a string cannot hold (not UTF-8) are written
// this way, by replay record for one.
func binary(n *yaml.Node) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), ""))
	if err != nil {
		return nil, fmt.Errorf("!!binary: want base64, got %s", clip(n.Value))
	}
	return b, nil
}

// value reads a key or value.
func (p *parser) value(n *yaml.Node, what string) (Value, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		return p.scalar(n, what)
	}
	p.budget = maxNodes
	t, err := p.tree(n, what, 0)
	if err != nil {
		return Value{}, err
	}
	return Value{Kind: Compound, Tree: t}, nil
}

func (p *parser) scalar(n *yaml.Node, what string) (Value, error) {
	switch n.ShortTag() {
	case "!!null":
		return Value{Kind: Null}, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return Value{}, p.errf(n, "%s: %v", what, err)
		}
		return Value{Kind: Bool, Text: strconv.FormatBool(b)}, nil
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			return Value{}, p.errf(n, "%s: want an integer that fits 64 bits, got %s", what, clip(n.Value))
		}
		return Value{Kind: Number, Text: strconv.FormatInt(v, 10)}, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return Value{}, p.errf(n, "%s: want a finite number, got %s", what, clip(n.Value))
		}
		return Value{Kind: Number, Text: strconv.FormatFloat(f, 'g', -1, 64)}, nil
	case "!!str", "!!timestamp":
		return Value{Kind: String, Text: n.Value}, nil
	case "!!binary":
		b, err := binary(n)
		if err != nil {
			return Value{}, p.errf(n, "%s: %v", what, err)
		}
		return Value{Kind: String, Text: string(b)}, nil
	}
	return Value{}, p.errf(n, "%s: unsupported YAML tag %s (want a string, number, boolean, null, mapping or list)", what, n.Tag)
}

func (p *parser) tree(n *yaml.Node, what string, depth int) (any, error) {
	n = resolve(n)
	if p.budget--; p.budget < 0 || depth > 100 {
		return nil, p.errf(n, "%s: value too large or too deeply nested", what)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := p.scalar(n, what)
		if err != nil {
			return nil, err
		}
		switch v.Kind {
		case String:
			return v.Text, nil
		case Number:
			return json.Number(v.Text), nil
		case Bool:
			return v.Text == "true", nil
		}
		return nil, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := p.tree(c, what, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		fs, err := p.fields(n, what)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(fs))
		for _, f := range fs {
			if out[f.key], err = p.tree(f.v, what, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, p.errf(n, "%s: want a value, got %s", what, describe(n))
}

func (p *parser) expect(n *yaml.Node) error {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	fs, err := p.fields(n, "expect", "outputs", "stores", "drops")
	if err != nil {
		return err
	}
	e := &p.f.Expect
	for _, f := range fs {
		switch f.key {
		case "outputs":
			ts, err := p.fields(f.v, "expect outputs")
			if err != nil {
				return err
			}
			for _, t := range ts {
				te, err := p.topicExpect(t.v, "expect outputs "+t.key, len(e.Outputs))
				if err != nil {
					return err
				}
				te.Topic = t.key
				e.Outputs = append(e.Outputs, te)
			}
		case "stores":
			ss, err := p.fields(f.v, "expect stores")
			if err != nil {
				return err
			}
			for _, s := range ss {
				what := "expect stores " + s.key
				entries, err := p.expectedList(s.v, what, -1, "key", "value", "timestamp")
				if err != nil {
					return err
				}
				e.Stores = append(e.Stores, StoreExpect{Store: s.key, Entries: entries})
			}
		case "drops":
			ds, err := p.fields(f.v, "expect drops")
			if err != nil {
				return err
			}
			e.Drops = map[string]int64{}
			for _, d := range ds {
				v, err := p.integer(d.v, "expect drops "+d.key)
				if err != nil {
					return err
				}
				if v < 0 {
					return p.errf(d.v, "expect drops %s: want a count of at least 0, got %d", d.key, v)
				}
				e.Drops[d.key] = v
				e.DropOrder = append(e.DropOrder, d.key)
			}
		}
	}
	return nil
}

// topicExpect reads an output's expectation: a list of records (in
// order), {order: ORDER, records: [...]}, or {count: N}. topic is the
// output's index in Expect.Outputs, for after fields.
func (p *parser) topicExpect(n *yaml.Node, what string, topic int) (TopicExpect, error) {
	n = resolve(n)
	te := TopicExpect{Order: InOrder}
	if n.Kind != yaml.MappingNode {
		rs, err := p.expectedList(n, what, topic, "key", "value", "timestamp", "headers", "after")
		te.Records = rs
		return te, err
	}
	fs, err := p.fields(n, what, "count", "order", "records")
	if err != nil {
		return TopicExpect{}, err
	}
	var haveRecords bool
	for _, f := range fs {
		switch f.key {
		case "count":
			if len(fs) > 1 {
				return TopicExpect{}, p.errf(f.kn, "%s: count goes alone (a count has no order or records)", what)
			}
			c, err := p.integer(f.v, what+" count")
			if err == nil && (c < 0 || c > math.MaxInt32) {
				err = p.errf(f.v, "%s count: want a count of at least 0, got %d", what, c)
			}
			return TopicExpect{CountOnly: true, Count: int(c), Order: InOrder}, err
		case "order":
			o, err := p.str(f.v, what+" order")
			if err != nil {
				return TopicExpect{}, err
			}
			te.OrderGiven = true
			if te.Order = Order(o); !slices.Contains(orders, te.Order) {
				return TopicExpect{}, p.errf(f.v, "%s order: want in-order, multiset or per-key, got %q", what, o)
			}
		case "records":
			haveRecords = true
			if te.Records, err = p.expectedList(f.v, what, topic, "key", "value", "timestamp", "headers", "after"); err != nil {
				return TopicExpect{}, err
			}
		}
	}
	if !haveRecords {
		return TopicExpect{}, p.errf(n, "%s: want a list of records, {order: ORDER, records: [...]} or {count: N}", what)
	}
	return te, nil
}

func (p *parser) expectedList(n *yaml.Node, what string, topic int, allowed ...string) ([]ExpectedRecord, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s: want a list of records, got %s", what, describe(n))
	}
	out := make([]ExpectedRecord, 0, len(n.Content))
	for i, rn := range n.Content {
		w := fmt.Sprintf("%s record %d", what, i+1)
		fs, err := p.fields(rn, w, allowed...)
		if err != nil {
			return nil, err
		}
		r := ExpectedRecord{Index: i + 1}
		for _, f := range fs {
			switch f.key {
			case "after":
				p.afters = append(p.afters, afterRef{n: f.v, what: w + " after", topic: topic, item: i})
			case "key":
				r.Key, err = p.value(f.v, w+" key")
			case "value":
				r.Value, err = p.value(f.v, w+" value")
			case "timestamp":
				r.HasTimestamp = true
				r.Timestamp, err = p.time(f.v, w+" timestamp")
			case "headers":
				r.HasHeaders = true
				r.Headers, err = p.headers(f.v, w+" headers")
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}
