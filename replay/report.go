package replay

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
)

// diffContext is how many matching records a diff shows around a difference.
const diffContext = 2

// TextOptions style the text report.
type TextOptions struct {
	// Color marks failures red and additions green with ANSI escapes.
	Color bool
	// Updated lists the fixtures --update rewrote; they print as UPDATED.
	Updated map[string]bool
}

type painter bool

func (p painter) paint(code, s string) string {
	if !p {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

const (
	red   = "31"
	green = "32"
	bold  = "1"
)

// Summary counts results.
type Summary struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errors  int `json:"errors"`
	Updated int `json:"updated,omitempty"`
	// Timing counts the passed fixtures that differ from the driver only
	// in timing (engine mode's TimingOnly).
	Timing int `json:"timing,omitempty"`
}

// Summarize counts results by status.
func Summarize(results []*Result) Summary {
	s := Summary{Total: len(results)}
	for _, r := range results {
		switch r.Status {
		case Pass:
			s.Passed++
		case TimingOnly:
			s.Passed++
			s.Timing++
		case Fail:
			s.Failed++
		default:
			s.Errors++
		}
	}
	return s
}

// WriteText writes a line per fixture, the differences of those that
// failed and a summary.
func WriteText(w io.Writer, results []*Result, o TextOptions) error {
	p := painter(o.Color)
	var b strings.Builder
	updated, failedUpdated := 0, 0
	for _, r := range results {
		switch {
		case o.Updated[r.Path]:
			updated++
			if r.Status == Fail {
				failedUpdated++
			}
			fmt.Fprintf(&b, "%s %s\n", p.paint(green, "UPDATED"), r.Path)
		case r.Status == Pass:
			fmt.Fprintf(&b, "%s %s\n", p.paint(green, "PASS"), r.Path)
			r.writeSkipped(&b)
		case r.Status == TimingOnly:
			fmt.Fprintf(&b, "%s %s\n", p.paint(green, "TIMING"), r.Path)
			b.WriteString("  differs from the driver only in timing: the live engine emits at barriers, the driver per step\n")
			r.writeMismatches(&b, p)
			r.writeSkipped(&b)
		case r.Status == Fail:
			fmt.Fprintf(&b, "%s %s\n", p.paint(red+";"+bold, "FAIL"), r.Path)
			r.writeMismatches(&b, p)
		default:
			fmt.Fprintf(&b, "%s %s\n", p.paint(red+";"+bold, "ERROR"), r.Path)
			fmt.Fprintf(&b, "  %s\n", indent(r.Err.Error(), "  "))
		}
	}
	s := Summarize(results)
	s.Failed -= failedUpdated
	fmt.Fprintf(&b, "\n%d %s: %d passed, %d failed, %d %s", s.Total, plural(s.Total, "fixture", "fixtures"), s.Passed, s.Failed, s.Errors, plural(s.Errors, "error", "errors"))
	if updated > 0 {
		fmt.Fprintf(&b, ", %d updated", updated)
	}
	if s.Timing > 0 {
		fmt.Fprintf(&b, " (%d of the passed only in timing)", s.Timing)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSkipped lists the stores engine mode did not compare.
func (r *Result) writeSkipped(b *strings.Builder) {
	for _, s := range r.Stores {
		if s.Skipped {
			fmt.Fprintf(b, "  store %s: %s\n", s.Store, s.Note)
		}
	}
}

func indent(s, by string) string { return strings.ReplaceAll(s, "\n", "\n"+by) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (r *Result) writeMismatches(b *strings.Builder, p painter) {
	for _, t := range r.Outputs {
		if t.Match {
			continue
		}
		what := plural(t.ExpectedCount, "record", "records") + " expected"
		if !t.Listed {
			what += " (topic not listed)"
		}
		if t.Order != "" && t.Order != InOrder && !t.CountOnly {
			what += " (" + string(t.Order) + ")"
		}
		fmt.Fprintf(b, "  output %s: %d %s, %d written\n", t.Topic, t.ExpectedCount, what, t.ActualCount)
		if t.Note != "" {
			fmt.Fprintf(b, "    %s\n", t.Note)
		}
		if !t.CountOnly {
			exp, act := arranged(t.Order, t.Expected, t.Actual, t.windowedKey)
			r.writeDiff(b, p, exp, act, t.windowedKey, timed(t.Expected))
		}
	}
	for _, s := range r.Stores {
		if s.Match {
			continue
		}
		fmt.Fprintf(b, "  store %s: %d %s expected, %d found\n", s.Store, len(s.Expected), plural(len(s.Expected), "entry", "entries"), len(s.Actual))
		if s.Note != "" {
			fmt.Fprintf(b, "    %s\n", s.Note)
			continue
		}
		r.writeDiff(b, p, s.Expected, s.Actual, false, false)
	}
	if d := r.Drops; d != nil && !d.Match {
		fmt.Fprintf(b, "  drops (%s):\n", metrics.DroppedRecords)
		for _, reason := range d.Reasons {
			e, a := d.Expected[reason], d.Actual[reason]
			if e == a {
				fmt.Fprintf(b, "      %s %d\n", reason, a)
				continue
			}
			fmt.Fprintf(b, "    %s\n", p.paint(red, fmt.Sprintf("- %s %d", reason, e)))
			fmt.Fprintf(b, "    %s\n", p.paint(green, fmt.Sprintf("+ %s %d", reason, a)))
		}
	}
}

// arranged lays out both sides of an output for its diff: as they are in
// order, grouped by key per key, sorted by content as a multiset.
func arranged(o Order, exp []ExpectedRecord, act []Actual, windowedKey bool) ([]ExpectedRecord, []Actual) {
	switch o {
	case PerKey:
		return byKey(exp, act, windowedKey)
	case Multiset:
		return byContent(exp, act, windowedKey)
	}
	return exp, act
}

// timed says whether any expected record names its step, so that the
// written records' steps are worth showing.
func timed(exp []ExpectedRecord) bool {
	return slices.ContainsFunc(exp, func(e ExpectedRecord) bool { return e.After > 0 })
}

// writeDiff shows exp against act; timed adds the step of each written
// record. #N is a record's position in its own list.
func (r *Result) writeDiff(b *strings.Builder, p painter, exp []ExpectedRecord, act []Actual, windowedKey, timed bool) {
	ops := diff(len(exp), len(act), func(i, j int) bool { return recordsEqual(exp[i], act[j], windowedKey) })
	show := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind != ' ' {
			for c := max(0, k-diffContext); c <= min(len(ops)-1, k+diffContext); c++ {
				show[c] = true
			}
		}
	}
	for k := 0; k < len(ops); k++ {
		if !show[k] {
			n := 0
			for k < len(ops) && !show[k] {
				k, n = k+1, n+1
			}
			k--
			fmt.Fprintf(b, "      ... %d matching %s\n", n, plural(n, "record", "records"))
			continue
		}
		o := ops[k]
		switch o.kind {
		case ' ':
			fmt.Fprintf(b, "      #%d %s\n", act[o.j].Index, r.actualText(act[o.j], timed))
		case '-':
			fmt.Fprintf(b, "    %s\n", p.paint(red, fmt.Sprintf("- #%d %s", exp[o.i].Index, r.expectedText(exp[o.i], windowedKey))))
		case '+':
			fmt.Fprintf(b, "    %s\n", p.paint(green, fmt.Sprintf("+ #%d %s", act[o.j].Index, r.actualText(act[o.j], timed))))
		}
	}
}

func (r *Result) timeText(ms int64) string {
	if r.fixture != nil && r.fixture.timesAsText {
		return formatTime(ms)
	}
	return strconv.FormatInt(ms, 10)
}

func (r *Result) expectedText(e ExpectedRecord, windowedKey bool) string {
	s := "key=" + expectedKey(e, windowedKey) + " value=" + canonical(e.Value.any())
	if e.HasTimestamp {
		s += " timestamp=" + r.timeText(e.Timestamp)
	}
	if e.HasHeaders {
		s += " headers=" + headersText(e.Headers)
	}
	if e.After > 0 {
		s += " after=" + r.stepText(e.After)
	}
	return s
}

// stepText names step i: its number, and its label when it has one.
func (r *Result) stepText(i int) string {
	s := strconv.Itoa(i)
	if r.fixture != nil && i <= len(r.fixture.Steps) && r.fixture.Steps[i-1].Label != "" {
		s += "(" + r.fixture.Steps[i-1].Label + ")"
	}
	return s
}

func (r *Result) actualText(a Actual, timed bool) string {
	s := "key=" + canonical(a.Key) + " value=" + canonical(a.Value)
	if a.HasTimestamp {
		s += " timestamp=" + r.timeText(a.Timestamp)
	}
	if len(a.Headers) > 0 {
		s += " headers=" + headersText(a.Headers)
	}
	if timed && a.Step > 0 {
		s += " after=" + r.stepText(a.Step)
	}
	return s
}

// headersText writes headers as a JSON object in their order.
func headersText(hs processor.Headers) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, h := range hs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(canonical(h.Key))
		b.WriteByte(':')
		if h.Value == nil {
			b.WriteString("null")
		} else {
			b.WriteString(canonical(string(h.Value)))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// The -o json report. Field order is the struct order, so the output is
// stable.
type jsonReport struct {
	Fixtures []jsonFixture `json:"fixtures"`
	Summary  Summary       `json:"summary"`
}

type jsonFixture struct {
	Path       string         `json:"path"`
	Status     string         `json:"status"`
	Error      *jsonError     `json:"error,omitempty"`
	Mismatches []jsonMismatch `json:"mismatches,omitempty"`
}

type jsonError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type jsonMismatch struct {
	Kind     string      `json:"kind"`
	Name     string      `json:"name"`
	Note     string      `json:"note,omitempty"`
	Order    string      `json:"order,omitempty"`
	Expected int         `json:"expectedCount"`
	Actual   int         `json:"actualCount"`
	Diff     []jsonLine  `json:"diff,omitempty"`
	Drops    []jsonDrops `json:"drops,omitempty"`
}

type jsonLine struct {
	Op     string     `json:"op"`
	Index  int        `json:"index"`
	Record jsonRecord `json:"record"`
}

type jsonRecord struct {
	Key       json.RawMessage   `json:"key"`
	Value     json.RawMessage   `json:"value"`
	Timestamp *int64            `json:"timestamp,omitempty"`
	Headers   []json.RawMessage `json:"headers,omitempty"`
	// After is the step an expected record must be written during, or the
	// step a written one was, when the output checks steps.
	After int `json:"after,omitempty"`
}

type jsonDrops struct {
	Reason   string `json:"reason"`
	Expected int64  `json:"expected"`
	Actual   int64  `json:"actual"`
}

// WriteJSON writes the report as JSON.
func WriteJSON(w io.Writer, results []*Result, updated map[string]bool) error {
	rep := jsonReport{Fixtures: []jsonFixture{}, Summary: Summarize(results)}
	for _, r := range results {
		jf := jsonFixture{Path: r.Path, Status: string(r.Status)}
		if updated[r.Path] {
			jf.Status = "updated"
			rep.Summary.Updated++
			if r.Status == Fail {
				rep.Summary.Failed--
			}
		}
		if r.Err != nil {
			jf.Error = &jsonError{Code: r.Err.Code, Message: r.Err.Error()}
		}
		if (r.Status == Fail || r.Status == TimingOnly) && !updated[r.Path] {
			jf.Mismatches = r.jsonMismatches()
		}
		rep.Fixtures = append(rep.Fixtures, jf)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func (r *Result) jsonMismatches() []jsonMismatch {
	var out []jsonMismatch
	for _, t := range r.Outputs {
		if t.Match {
			continue
		}
		m := jsonMismatch{Kind: "output", Name: t.Topic, Note: t.Note, Expected: t.ExpectedCount, Actual: t.ActualCount}
		if !t.CountOnly {
			exp, act := arranged(t.Order, t.Expected, t.Actual, t.windowedKey)
			m.Diff = jsonDiff(exp, act, t.windowedKey, timed(t.Expected))
			if t.Order != InOrder {
				m.Order = string(t.Order)
			}
		}
		out = append(out, m)
	}
	for _, s := range r.Stores {
		if s.Match {
			continue
		}
		out = append(out, jsonMismatch{Kind: "store", Name: s.Store, Note: s.Note, Expected: len(s.Expected), Actual: len(s.Actual),
			Diff: jsonDiff(s.Expected, s.Actual, false, false)})
	}
	if d := r.Drops; d != nil && !d.Match {
		m := jsonMismatch{Kind: "drops", Name: metrics.DroppedRecords}
		for _, reason := range d.Reasons {
			m.Expected += int(d.Expected[reason])
			m.Actual += int(d.Actual[reason])
			if d.Expected[reason] != d.Actual[reason] {
				m.Drops = append(m.Drops, jsonDrops{Reason: reason, Expected: d.Expected[reason], Actual: d.Actual[reason]})
			}
		}
		out = append(out, m)
	}
	return out
}

func jsonDiff(exp []ExpectedRecord, act []Actual, windowedKey, timed bool) []jsonLine {
	var out []jsonLine
	for _, o := range diff(len(exp), len(act), func(i, j int) bool { return recordsEqual(exp[i], act[j], windowedKey) }) {
		switch o.kind {
		case '-':
			e := exp[o.i]
			rec := jsonRecord{Key: json.RawMessage(expectedKey(e, windowedKey)), Value: json.RawMessage(canonical(e.Value.any()))}
			if e.HasTimestamp {
				rec.Timestamp = &e.Timestamp
			}
			if e.HasHeaders {
				rec.Headers = jsonHeaders(e.Headers)
			}
			if e.After > 0 {
				rec.After = e.After
			}
			out = append(out, jsonLine{Op: "-", Index: e.Index, Record: rec})
		case '+':
			a := act[o.j]
			rec := jsonRecord{Key: json.RawMessage(canonical(a.Key)), Value: json.RawMessage(canonical(a.Value)), Headers: jsonHeaders(a.Headers)}
			if a.HasTimestamp {
				ts := a.Timestamp
				rec.Timestamp = &ts
			}
			if timed {
				rec.After = a.Step
			}
			out = append(out, jsonLine{Op: "+", Index: a.Index, Record: rec})
		}
	}
	return out
}

// jsonHeaders writes headers as a list of one-field objects, which keeps
// their order and repeated keys.
func jsonHeaders(hs processor.Headers) []json.RawMessage {
	var out []json.RawMessage
	for _, h := range hs {
		out = append(out, json.RawMessage(headersText(processor.Headers{h})))
	}
	return out
}

// JUnit XML, the subset CI systems read. No times: output is
// deterministic.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suite    []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// WriteJUnit writes the results as JUnit XML, one test case per fixture.
func WriteJUnit(w io.Writer, results []*Result) error {
	s := Summarize(results)
	suite := junitSuite{Name: "stoatctl replay", Tests: s.Total, Failures: s.Failed, Errors: s.Errors}
	for _, r := range results {
		c := junitCase{Name: r.Path, ClassName: "replay"}
		switch r.Status {
		case Fail:
			var b strings.Builder
			r.writeMismatches(&b, false)
			c.Failure = &junitProblem{Message: "output differs from the fixture's expectations", Type: "mismatch", Text: b.String()}
		case Errored:
			c.Error = &junitProblem{Message: firstLine(r.Err.Error()), Type: r.Err.Code, Text: r.Err.Error()}
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{Name: "stoatctl replay", Tests: s.Total, Failures: s.Failed, Errors: s.Errors, Suite: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
