package replay

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// Status is a fixture's outcome.
type Status string

const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Errored Status = "error"
	// TimingOnly is engine mode's: every output holds what the fixture
	// expects, but some records were written by another step than their
	// after says. The live engine emits at barriers, the driver per step;
	// a fixture that differs only so is not a failure.
	TimingOnly Status = "timing"
)

// Error codes of a result that could not run, stable for scripts.
const (
	CodeFixture  = "fixture"  // the fixture could not be read or parsed
	CodeTopology = "topology" // the topology could not be found or built
	CodeStep     = "step"     // a step failed: a record that does not serialize, a driver error
	CodeOutput   = "output"   // an output could not be decoded or a store read
)

// RunError is why a fixture could not run.
type RunError struct {
	Code string
	Err  error
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Result is one fixture's outcome.
type Result struct {
	Path   string
	Status Status
	// Err is set when Status is Error.
	Err     *RunError
	Outputs []*TopicResult
	Stores  []*StoreResult
	// Drops is set when the fixture checks drop counts.
	Drops *DropsResult
	// Engine says the fixture ran on the live engine (RunEngine).
	Engine bool

	fixture *Fixture
	// dropped is dropped.records.total by reason, whether or not the
	// fixture checks drops: --update writes it.
	dropped map[string]int64
}

// TopicResult compares one output topic.
type TopicResult struct {
	Topic string
	// Listed says the fixture lists the topic; an unlisted one must stay
	// empty.
	Listed    bool
	CountOnly bool
	Expected  []ExpectedRecord
	// ExpectedCount and ActualCount are the record counts.
	ExpectedCount, ActualCount int
	Actual                     []Actual
	// Note explains a mismatch that is not a record difference.
	Note  string
	Match bool
	// TimingOnly says, in engine mode, that the records match but not the
	// steps that wrote them (Match stays false).
	TimingOnly bool
	// Order is how the records are compared.
	Order Order
	// orderGiven says the fixture gave Order; --update writes per-key
	// order for an output of several keys that did not say.
	orderGiven bool
	// windowedKey marks a sink writing windowed keys, whose expected keys
	// may give start and end as RFC 3339 times.
	windowedKey bool
}

// Actual is a record as written, decoded to plain data.
type Actual struct {
	Key, Value any
	Timestamp  int64
	Headers    processor.Headers
	// HasTimestamp is false for entries of a store without timestamps.
	HasTimestamp bool
	// Step is the 1-based index of the step during which an output record
	// was written; 0 for store entries.
	Step int
	// Index is the record's 1-based position in what the topic got (or
	// in the store's entries).
	Index int
}

// StoreResult compares one store's entries.
type StoreResult struct {
	Store    string
	Expected []ExpectedRecord
	Actual   []Actual
	Note     string
	Match    bool
	// Skipped says the store was not compared (engine mode); Note says
	// why.
	Skipped bool
}

// DropsResult compares dropped.records.total by reason.
type DropsResult struct {
	Expected map[string]int64
	Actual   map[string]int64
	// Reasons is every reason either side names: the expected ones in
	// file order, then the others sorted.
	Reasons []string
	Match   bool
}

// collectEvery is how many records of a records file are piped between
// two drains of the driver's output topics (engine mode: two sends of
// what is queued), so that long replays keep memory flat.
const collectEvery = 4096

// RunFile loads and runs the fixture at path.
func RunFile(path string) *Result {
	f, err := Load(path)
	if err != nil {
		return &Result{Path: path, Status: Errored, Err: &RunError{Code: CodeFixture, Err: err}}
	}
	return Run(f)
}

// Run runs a parsed fixture through the test driver and compares.
func Run(f *Fixture) *Result {
	res := &Result{Path: f.Path, fixture: f}
	r, err := newRunner(f)
	if err != nil {
		res.Status, res.Err = Errored, err
		return res
	}
	defer r.d.Close()
	if err := r.steps(); err != nil {
		res.Status, res.Err = Errored, err
		return res
	}
	if err := r.compare(res); err != nil {
		res.Status, res.Err = Errored, err
		return res
	}
	res.finish()
	return res
}

// finish sets the status from the comparisons. In engine mode an output
// that matches once the steps are ignored is TimingOnly, and so is the
// fixture when nothing else differs.
func (res *Result) finish() {
	res.Status = Pass
	timing := false
	for _, t := range res.Outputs {
		if t.Match {
			continue
		}
		if res.Engine && !t.CountOnly && t.Note == "" && ordered(t.Order, untimed(t.Expected), t.Actual, t.windowedKey) {
			t.TimingOnly = true
			timing = true
			continue
		}
		res.Status = Fail
	}
	for _, s := range res.Stores {
		if !s.Match {
			res.Status = Fail
		}
	}
	if res.Drops != nil && !res.Drops.Match {
		res.Status = Fail
	}
	if res.Status == Pass && timing {
		res.Status = TimingOnly
	}
}

// untimed is exp without the steps its records name.
func untimed(exp []ExpectedRecord) []ExpectedRecord {
	out := slices.Clone(exp)
	for i := range out {
		out[i].After, out[i].AfterLabel = 0, ""
	}
	return out
}

type serdes struct{ key, value serde.Any }

type runner struct {
	f *Fixture
	// d is the test driver; nil in engine mode (engine.go), where built is
	// the topology the engine runs and wall its manual wall clock.
	d     *testdriver.Driver
	built *topology.Built
	wall  func() int64
	// send takes a serialized record: the driver's PipeRaw, or engine
	// mode's producer.
	send func(topic string, rec testdriver.RawRecord) error
	// drops reads dropped.records.total by reason.
	drops func() map[string]int64
	// midFile runs every collectEvery records of a records file, so that
	// a long file holds little at once: the driver's drain of its output
	// topics (collect), engine mode's send of the records queued.
	midFile func() error
	// unlogged are, in engine mode, the stores that cannot be rebuilt
	// from their changelogs to compare, and why.
	unlogged map[string]string
	// sources are the serdes records piped into a topic are written with.
	sources map[string]serdes
	// sinks are the serdes of the topics sinks write; chooser the serdes
	// of a sink choosing its topic per record, for topics not named.
	sinks   map[string]serdes
	chooser *serdes
	// internal are topics no fixture checks: changelogs and boundaries.
	internal map[string]bool
	// raw collects what each output topic got; counts what count-only
	// topics got, without keeping the records.
	raw       map[string][]testdriver.RawRecord
	rawSteps  map[string][]int
	step      int
	counts    map[string]int
	countOnly map[string]bool
}

func newRunner(f *Fixture) (*runner, *RunError) {
	topo, cfg, err := resolveTopology(f.Topology, filepath.Dir(f.Path))
	if err != nil {
		return nil, &RunError{Code: CodeTopology, Err: f.at(f.topoNode, err)}
	}
	maps.Copy(cfg, f.Driver.Config)
	if f.Driver.CommitPerPipe != nil {
		cfg[config.TestDriverCommitPerPipe] = strconv.FormatBool(*f.Driver.CommitPerPipe)
	}
	opts := []testdriver.Option{testdriver.WithWallClock(f.Driver.WallClock)}
	if f.Driver.Lanes > 0 {
		opts = append(opts, testdriver.WithNumberOfLanes(f.Driver.Lanes))
	}
	d, err := testdriver.New(topo, cfg, opts...)
	if err != nil {
		return nil, &RunError{Code: CodeTopology, Err: f.at(f.topoNode, fmt.Errorf("topology %s: %w", f.Topology, err))}
	}
	r := newComparer(f, d.Built())
	r.d, r.wall, r.send, r.drops = d, d.WallClock, d.PipeRaw, func() map[string]int64 { return dropsOf(d.Metrics()) }
	r.midFile = func() error { r.collect(); return nil }
	return r, nil
}

// newComparer is the part of a runner both modes share: the topology's
// serdes and topics, and the collected outputs.
func newComparer(f *Fixture, b *topology.Built) *runner {
	r := &runner{f: f, built: b, sources: map[string]serdes{}, sinks: map[string]serdes{}, internal: map[string]bool{},
		raw: map[string][]testdriver.RawRecord{}, rawSteps: map[string][]int{}, counts: map[string]int{}, countOnly: map[string]bool{}}
	for topic := range b.Boundaries {
		r.internal[topic] = true
	}
	for _, s := range b.Stores {
		if s.ChangelogTopic != "" {
			r.internal[s.ChangelogTopic] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.Nodes)) {
		n := b.Nodes[name]
		if n.Kind != topology.SinkNode || n.Boundary != nil {
			continue
		}
		sd := serdes{n.Sink.KeySerde, n.Sink.ValueSerde}
		if n.Sink.Topic == "" {
			if r.chooser == nil {
				r.chooser = &sd
			}
			continue
		}
		if _, dup := r.sinks[n.Sink.Topic]; !dup {
			r.sinks[n.Sink.Topic] = sd
		}
	}
	for _, t := range f.Expect.Outputs {
		r.countOnly[t.Topic] = t.CountOnly
	}
	return r
}

// at positions err at n in the fixture.
func (f *Fixture) at(n *yaml.Node, err error) error {
	if n == nil {
		return &Error{File: f.Path, Err: err}
	}
	return &Error{File: f.Path, Line: n.Line, Column: n.Column, Err: err}
}

func (r *runner) stepErr(st Step, err error) *RunError {
	return &RunError{Code: CodeStep, Err: fmt.Errorf("%s:%d:%d: step %d (%s): %w", r.f.Path, st.Line, st.Column, st.Index, st.Kind, err)}
}

func (r *runner) steps() *RunError {
	for _, st := range r.f.Steps {
		r.step = st.Index
		var err error
		switch st.Kind {
		case StepRecord:
			err = r.pipe(st.Record)
		case StepAdvanceWatermark:
			err = r.d.AdvanceWatermark(st.Time)
		case StepAdvanceWallClock:
			by := st.By
			if st.Absolute {
				if st.Time < r.d.WallClock() {
					err = fmt.Errorf("wall clock is at %d, cannot move back to %d", r.d.WallClock(), st.Time)
					break
				}
				by = time.Duration(st.Time-r.d.WallClock()) * time.Millisecond
			}
			err = r.d.AdvanceWallClockTime(by)
		case StepCommitBarrier:
			err = r.d.CommitBarrier()
		case StepRecordsFile:
			err = r.recordsFile(st.File)
		}
		if err != nil {
			return r.stepErr(st, err)
		}
		r.collect()
	}
	return nil
}

func (r *runner) recordsFile(path string) error {
	rf, c, err := openRecords(path)
	if err != nil {
		return err
	}
	defer c.Close()
	var rec Record
	for n := 1; ; n++ {
		if err := rf.next(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := r.pipe(&rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, rf.line, err)
		}
		if n%collectEvery == 0 {
			if err := r.midFile(); err != nil {
				return fmt.Errorf("%s:%d: %w", path, rf.line, err)
			}
		}
	}
}

func (r *runner) pipe(rec *Record) error {
	sd, ok := r.sources[rec.Topic]
	if !ok {
		n, found := r.built.SourceNodeFor(rec.Topic)
		if !found {
			return fmt.Errorf("topic %s: %w", rec.Topic, testdriver.ErrUnknownTopic)
		}
		sd = serdes{n.Source.KeySerde, n.Source.ValueSerde}
		r.sources[rec.Topic] = sd
	}
	k, err := Serialize(sd.key, rec.Topic, rec.Key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	v, err := Serialize(sd.value, rec.Topic, rec.Value)
	if err != nil {
		return fmt.Errorf("value: %w", err)
	}
	ts := rec.Timestamp
	if !rec.HasTimestamp {
		ts = r.wall()
	}
	return r.send(rec.Topic, testdriver.RawRecord{Key: k, Value: v, Timestamp: ts, Headers: rec.Headers})
}

// collect drains every topic the driver wrote: output topics into raw
// (or counts), internal topics away.
func (r *runner) collect() {
	for _, topic := range r.d.ProducedTopicNames() {
		switch {
		case r.internal[topic]:
			r.d.SkipRaw(topic)
		case r.countOnly[topic] || r.f.countAll:
			r.counts[topic] += r.d.SkipRaw(topic)
		default:
			got := r.d.ReadRaw(topic)
			r.raw[topic] = append(r.raw[topic], got...)
			for range got {
				r.rawSteps[topic] = append(r.rawSteps[topic], r.step)
			}
		}
	}
}

func (r *runner) outputSerdes(topic string) (serdes, bool) {
	if sd, ok := r.sinks[topic]; ok {
		return sd, true
	}
	if r.chooser != nil {
		return *r.chooser, true
	}
	return serdes{}, false
}

func (r *runner) compare(res *Result) *RunError {
	listed := map[string]bool{}
	for _, te := range r.f.Expect.Outputs {
		listed[te.Topic] = true
		tr, err := r.compareTopic(te, true)
		if err != nil {
			return err
		}
		res.Outputs = append(res.Outputs, tr)
	}
	for _, topic := range slices.Sorted(maps.Keys(r.raw)) {
		if listed[topic] || len(r.raw[topic]) == 0 {
			continue
		}
		tr, err := r.compareTopic(TopicExpect{Topic: topic}, false)
		if err != nil {
			return err
		}
		res.Outputs = append(res.Outputs, tr)
	}
	for _, topic := range slices.Sorted(maps.Keys(r.counts)) {
		if listed[topic] || r.counts[topic] == 0 {
			continue
		}
		// Counted because the fixture counts everything (CountOnly).
		tr, err := r.compareTopic(TopicExpect{Topic: topic, CountOnly: true}, false)
		if err != nil {
			return err
		}
		res.Outputs = append(res.Outputs, tr)
	}
	for _, se := range r.f.Expect.Stores {
		sr, err := r.compareStore(se)
		if err != nil {
			return err
		}
		res.Stores = append(res.Stores, sr)
	}
	if r.f.Expect.Drops != nil {
		res.Drops = r.compareDrops()
	} else {
		res.dropped = r.drops()
	}
	return nil
}

func (r *runner) compareTopic(te TopicExpect, listed bool) (*TopicResult, *RunError) {
	tr := &TopicResult{Topic: te.Topic, Listed: listed, CountOnly: te.CountOnly, Expected: te.Records, Order: te.Order, orderGiven: te.OrderGiven}
	if tr.Order == "" {
		tr.Order = InOrder
	}
	sd, known := r.outputSerdes(te.Topic)
	if te.CountOnly {
		tr.ExpectedCount, tr.ActualCount = te.Count, r.counts[te.Topic]
	} else {
		raws := r.raw[te.Topic]
		tr.ExpectedCount, tr.ActualCount = len(te.Records), len(raws)
		tr.windowedKey = known && strings.Contains(sd.key.Name(), "windowed(")
		for i, raw := range raws {
			k, err := Decode(sd.key, te.Topic, raw.Key)
			if err != nil {
				return nil, &RunError{Code: CodeOutput, Err: fmt.Errorf("%s: output %s record %d: key: %w", r.f.Path, te.Topic, i+1, err)}
			}
			v, err := Decode(sd.value, te.Topic, raw.Value)
			if err != nil {
				return nil, &RunError{Code: CodeOutput, Err: fmt.Errorf("%s: output %s record %d: value: %w", r.f.Path, te.Topic, i+1, err)}
			}
			tr.Actual = append(tr.Actual, Actual{Key: k, Value: v, Timestamp: raw.Timestamp, Headers: raw.Headers, HasTimestamp: true,
				Step: r.rawSteps[te.Topic][i], Index: i + 1})
		}
	}
	switch {
	case !known && !r.internal[te.Topic] && tr.ActualCount == 0 && listed:
		tr.Note = "no sink of the topology writes this topic"
	case te.CountOnly:
		tr.Match = tr.ExpectedCount == tr.ActualCount
	default:
		tr.Match = ordered(tr.Order, te.Records, tr.Actual, tr.windowedKey)
	}
	return tr, nil
}

// expectedKey is an expected key's canonical form; windowed keys may give
// their bounds as RFC 3339 times.
func expectedKey(e ExpectedRecord, windowedKey bool) string {
	k := e.Key.any()
	if windowedKey || looksWindowed(k) {
		if w, err := expectedWindowed(k); err == nil {
			k = w
		}
	}
	return canonical(k)
}

func looksWindowed(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 3 && m["key"] != nil && m["start"] != nil && m["end"] != nil
}

func recordsEqual(e ExpectedRecord, a Actual, windowedKey bool) bool {
	if expectedKey(e, windowedKey) != canonical(a.Key) || canonical(e.Value.any()) != canonical(a.Value) {
		return false
	}
	if e.After > 0 && e.After != a.Step {
		return false
	}
	if e.HasTimestamp && (!a.HasTimestamp || e.Timestamp != a.Timestamp) {
		return false
	}
	return !e.HasHeaders || headersEqual(e.Headers, a.Headers)
}

func headersEqual(a, b processor.Headers) bool {
	return slices.EqualFunc(a, b, func(x, y processor.Header) bool {
		return x.Key == y.Key && (x.Value == nil) == (y.Value == nil) && string(x.Value) == string(y.Value)
	})
}

func (r *runner) compareStore(se StoreExpect) (*StoreResult, *RunError) {
	sr := &StoreResult{Store: se.Store, Expected: slices.Clone(se.Entries)}
	if why := r.unlogged[se.Store]; why != "" {
		// Engine mode: the engine's stores lived in its lanes and are
		// gone, and this one cannot be rebuilt from its changelog.
		sr.Skipped = true
		sr.Match = true
		sr.Note = "not checked under --engine: " + why
		return sr, nil
	}
	st, ok := r.d.StateStore(se.Store)
	if !ok {
		sr.Note = fmt.Sprintf("no store named %s (stores: %s)", se.Store, strings.Join(slices.Sorted(maps.Keys(r.built.Stores)), ", "))
		return sr, nil
	}
	entries, err := storeEntries(st)
	if err != nil {
		return nil, &RunError{Code: CodeOutput, Err: fmt.Errorf("%s: store %s: %w", r.f.Path, se.Store, err)}
	}
	sr.Actual = entries
	// A store is a map: both sides are compared in canonical key order.
	sr.Expected, sr.Actual = byKey(sr.Expected, sr.Actual, false)
	for i := range sr.Actual {
		sr.Actual[i].Index = i + 1
	}
	sr.Match = len(sr.Expected) == len(sr.Actual)
	for i := 0; sr.Match && i < len(sr.Expected); i++ {
		sr.Match = recordsEqual(sr.Expected[i], sr.Actual[i], false)
	}
	return sr, nil
}

// storeEntries lists a typed store through its All method, found by
// reflection because the store's key and value types are not known here:
// every typed store (key-value, timestamped, window) has one.
func storeEntries(st any) ([]Actual, error) {
	all := reflect.ValueOf(st).MethodByName("All")
	if !all.IsValid() || all.Type().NumIn() != 0 || all.Type().NumOut() != 2 {
		return nil, fmt.Errorf("a %T cannot be listed", st)
	}
	out := all.Call(nil)
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	it := out[0]
	call := func(name string) reflect.Value { return it.MethodByName(name).Call(nil)[0] }
	defer call("Close")
	var entries []Actual
	for call("Next").Bool() {
		a := Actual{Key: normalize(call("Key").Interface())}
		v := call("Value")
		if vt, ts, ok := timestamped(v); ok {
			a.Value, a.Timestamp, a.HasTimestamp = normalize(vt), ts, true
		} else {
			a.Value = normalize(v.Interface())
		}
		entries = append(entries, a)
	}
	if err, _ := call("Err").Interface().(error); err != nil {
		return nil, err
	}
	return entries, nil
}

// timestamped unwraps a state.ValueAndTimestamp[V].
func timestamped(v reflect.Value) (any, int64, bool) {
	t := v.Type()
	if t.Kind() != reflect.Struct || t.PkgPath() != "github.com/stoatflow/stoatctl/engine/state" || !strings.HasPrefix(t.Name(), "ValueAndTimestamp[") {
		return nil, 0, false
	}
	return v.FieldByName("Value").Interface(), v.FieldByName("Timestamp").Int(), true
}

const dropPrefix = metrics.DroppedRecords + `{reason="`

// dropsOf reads dropped.records.total by reason from reg.
func dropsOf(reg *metrics.Registry) map[string]int64 {
	out := map[string]int64{}
	for id, n := range reg.Snapshot() {
		if reason, ok := strings.CutPrefix(id, dropPrefix); ok && n != 0 {
			out[strings.TrimSuffix(reason, `"}`)] += n
		}
	}
	return out
}

func (r *runner) compareDrops() *DropsResult {
	dr := &DropsResult{Expected: r.f.Expect.Drops, Actual: r.drops()}
	dr.Reasons = slices.Clone(r.f.Expect.DropOrder)
	for _, reason := range slices.Sorted(maps.Keys(dr.Actual)) {
		if !slices.Contains(dr.Reasons, reason) {
			dr.Reasons = append(dr.Reasons, reason)
		}
	}
	dr.Match = true
	for _, reason := range dr.Reasons {
		if dr.Expected[reason] != dr.Actual[reason] {
			dr.Match = false
		}
	}
	return dr
}
