package engine_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/replay"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/testdriver"
)

// TestDifferentialDriverVsEngine runs every bundled example through the
// test driver and through the live engine on the embedded broker with 1,
// 4 and 16 lanes, and requires the same committed output per key, in the
// same order per key.
//
// Inputs are produced one run of same-topic records at a time, each run
// committed before the next is produced: across topics the engine
// dispatches oldest head first within what one poll returned, so without
// the wait a table update and a stream record produced back to back may
// meet in either order (Kafka Streams has the same race, which
// max.task.idle.ms narrows).
func TestDifferentialDriverVsEngine(t *testing.T) {
	kafkatest.Parallel(t)
	for _, ex := range examples.All() {
		want := driverOutput(t, ex)
		for _, lanes := range []int{1, 4, 16} {
			t.Run(fmt.Sprintf("%s/lanes=%d", ex.Name, lanes), func(t *testing.T) {
				got := engineOutput(t, ex, lanes, total(want))
				for _, topic := range slices.Sorted(maps.Keys(want)) {
					w, g := want[topic], got[topic]
					for _, k := range slices.Sorted(maps.Keys(w)) {
						if !slices.Equal(w[k], g[k]) {
							t.Errorf("%s key %q: engine %q, driver %q", topic, k, g[k], w[k])
						}
					}
					for k := range g {
						if _, ok := w[k]; !ok {
							t.Errorf("%s key %q: engine wrote %q, driver nothing", topic, k, g[k])
						}
					}
				}
			})
		}
	}
}

// rawInput is an input record; nulls is the fixtures' tombstones, which
// an examples.Input cannot hold.
type rawInput struct {
	Topic string
	kv
}

// nullValues marks, per example name, the inputs whose value is null.
// Parallel tests mark and read it, hence the lock.
var nullValues = struct {
	sync.Mutex
	byExample map[string]map[int]bool
}{byExample: map[string]map[int]bool{}}

// markNull records that input i of the named example has a null value.
func markNull(example string, i int) {
	nullValues.Lock()
	defer nullValues.Unlock()
	if nullValues.byExample[example] == nil {
		nullValues.byExample[example] = map[int]bool{}
	}
	nullValues.byExample[example][i] = true
}

func isNull(example string, i int) bool {
	nullValues.Lock()
	defer nullValues.Unlock()
	return nullValues.byExample[example][i]
}

func rawInputs(ex examples.Example) []rawInput {
	var out []rawInput
	for i, in := range ex.Inputs {
		out = append(out, rawInput{Topic: in.Topic, kv: kv{Key: in.Key, Value: in.Value, Timestamp: in.Timestamp, NullValue: isNull(ex.Name, i)}})
	}
	return out
}

func nilIf(s string, null bool) []byte {
	if null {
		return nil
	}
	return []byte(s)
}

// perKey is an output topic's values by key, in order.
type perKey map[string][]string

func driverOutput(t *testing.T, ex examples.Example) map[string]perKey {
	d, err := testdriver.New(ex.Build(), ex.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, in := range rawInputs(ex) {
		if err := d.PipeRaw(in.Topic, testdriver.RawRecord{Key: []byte(in.Key), Value: nilIf(in.Value, in.NullValue), Timestamp: in.Timestamp}); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]perKey{}
	for _, o := range ex.Outputs {
		pk := perKey{}
		for _, r := range d.ReadRaw(o.Topic) {
			pk[string(r.Key)] = append(pk[string(r.Key)], string(r.Value))
		}
		out[o.Topic] = pk
	}
	return out
}

// total counts the records of an output.
func total(out map[string]perKey) int {
	n := 0
	for _, pk := range out {
		for _, vs := range pk {
			n += len(vs)
		}
	}
	return n
}

// readOutputs reads every output topic of ex, read committed, until want
// records arrived in all (waiting up to 30 s: a loaded machine can be slow
// to serve a fresh consumer) and a little longer, to catch duplicates.
func readOutputs(t *testing.T, addr string, ex examples.Example, want int) map[string]perKey {
	t.Helper()
	out := map[string]perKey{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for _, o := range ex.Outputs {
			pk := perKey{}
			recs := readCommitted(t, addr, o.Topic, 1<<30, 500*time.Millisecond)
			for _, r := range recs {
				pk[r.Key] = append(pk[r.Key], r.Value)
			}
			out[o.Topic] = pk
			n += len(recs)
		}
		if n >= want || time.Now().After(deadline) {
			return out
		}
	}
}

// exampleTopics are ex's input and output topics, four partitions each.
func exampleTopics(ex examples.Example) map[string]int32 {
	topics := map[string]int32{}
	for _, tp := range ex.InputTopics() {
		topics[tp] = 4
	}
	for _, o := range ex.Outputs {
		topics[o.Topic] = 4
	}
	return topics
}

func engineOutput(t *testing.T, ex examples.Example, lanes, want int) map[string]perKey {
	addr := startBroker(t, exampleTopics(ex))
	c := cfg(addr, ex.Name, "num.stream.threads", fmt.Sprint(lanes))
	for k, v := range ex.Config {
		if k != "application.id" {
			c[k] = v
		}
	}
	e, stop := runEngine(t, ex.Build(), c)
	produced := 0
	inputs := rawInputs(ex)
	for i := 0; i < len(inputs); {
		j := i
		var run []kv
		for ; j < len(inputs) && inputs[j].Topic == inputs[i].Topic; j++ {
			run = append(run, inputs[j].kv)
		}
		produce(t, addr, inputs[i].Topic, run)
		produced += len(run)
		deadline := time.Now().Add(30 * time.Second)
		for e.Stats().Records < int64(produced) {
			if time.Now().After(deadline) {
				t.Fatalf("engine committed %d of %d records", e.Stats().Records, produced)
			}
			time.Sleep(10 * time.Millisecond)
		}
		i = j
	}
	out := readOutputs(t, addr, ex, want)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	_ = engine.Running
	return out
}

// TestDifferentialFixtures runs every fixture under fixtures/ whose steps
// are records only through the driver and the engine (4 lanes) and
// compares the output per key. Fixtures that move the watermark or the
// wall clock by hand are skipped, and the skip says why: the driver
// closes a window the moment its watermark passes the close, the engine
// at the second barrier after, and with the configured out-of-orderness
// bound, so the two legitimately emit different sets at a given point.
func TestDifferentialFixtures(t *testing.T) {
	paths, err := replay.Expand([]string{"../fixtures"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		t.Run(strings.TrimPrefix(path, "../fixtures/"), func(t *testing.T) {
			ex, skip, err := fixtureExample(path)
			if err != nil {
				t.Fatal(err)
			}
			if skip != "" {
				t.Skip(skip)
			}
			want := driverOutput(t, ex)
			got := engineOutput(t, ex, 4, total(want))
			comparePerKey(t, want, got)
		})
	}
}

// comparePerKey requires got to hold exactly want's records per key, in
// want's order.
func comparePerKey(t *testing.T, want, got map[string]perKey) {
	t.Helper()
	for topic, w := range want {
		for k, vs := range w {
			if !slices.Equal(vs, got[topic][k]) {
				t.Errorf("%s key %q: engine %q, driver %q", topic, k, got[topic][k], vs)
			}
		}
		for k, vs := range got[topic] {
			if _, ok := w[k]; !ok {
				t.Errorf("%s key %q: engine wrote %q, driver nothing", topic, k, vs)
			}
		}
	}
}

// fixtureExample turns a fixture whose steps are records only into an
// example: its topology, configuration, raw inputs and output topics. skip
// says why a fixture cannot be one.
func fixtureExample(path string) (ex examples.Example, skip string, err error) {
	tc, skip, err := fixtureCase(path)
	if err != nil || skip != "" {
		return ex, skip, err
	}
	for _, s := range tc.f.Steps {
		if s.Kind == replay.StepAdvanceWatermark || s.Kind == replay.StepAdvanceWallClock {
			return ex, fmt.Sprintf("step %d is %s: time is moved by hand (TestMetamorphic drives it through engine.EventTime)", s.Index, s.Kind), nil
		}
	}
	if tc.global != "" {
		return ex, fmt.Sprintf("it writes %s, a global table's topic, which only a settle orders before later records (TestMetamorphic drives it through engine.EventTime)", tc.global), nil
	}
	return tc.ex, "", nil
}

// fixtureCase reads a fixture as an example (its inputs are its record
// steps) and its steps. skip says why a fixture cannot be one: a records
// file, which no fixture under fixtures/ has.
func fixtureCase(path string) (tc timedCase, skip string, err error) {
	f, err := replay.Load(path)
	if err != nil {
		return tc, "", err
	}
	tc.f = f
	for _, s := range f.Steps {
		if s.Kind == replay.StepRecordsFile {
			return tc, fmt.Sprintf("step %d is %s, which the engine tests do not read", s.Index, s.Kind), nil
		}
	}
	ex := &tc.ex
	file, err := topofile.Resolve(f.Topology, filepath.Dir(path))
	if err != nil {
		return tc, "", err
	}
	conf := maps.Clone(file.Config)
	maps.Copy(conf, f.Driver.Config)
	if conf["application.id"] == "" {
		conf["application.id"] = "fixture"
	}
	built, err := file.Topology.Build(config.New(conf))
	if err != nil {
		return tc, "", err
	}
	ex.Name = "fixture-" + strings.NewReplacer("/", "-", ".", "-").Replace(filepath.Base(path))
	ex.Config = conf
	var buildErr error
	ex.Build = func() *topology.Topology {
		fresh, err := topofile.Resolve(f.Topology, filepath.Dir(path))
		if err != nil {
			buildErr = err
			return nil
		}
		return fresh.Topology
	}
	wall := f.Driver.WallClock
	for _, s := range f.Steps {
		switch s.Kind {
		case replay.StepAdvanceWatermark:
			tc.steps = append(tc.steps, timedStep{kind: s.Kind, ts: s.Time, wall: wall})
			continue
		case replay.StepAdvanceWallClock:
			if s.Absolute {
				wall = max(wall, s.Time)
			} else {
				wall += s.By.Milliseconds()
			}
			tc.steps = append(tc.steps, timedStep{kind: s.Kind, wall: wall})
			continue
		case replay.StepCommitBarrier:
			tc.steps = append(tc.steps, timedStep{kind: s.Kind, wall: wall})
			continue
		}
		src, ok := built.SourceNodeFor(s.Record.Topic)
		if !ok {
			return tc, "", fmt.Errorf("%s: step %d: no source reads %s", path, s.Index, s.Record.Topic)
		}
		if built.Global != nil && tc.global == "" {
			for _, g := range built.Global.Sources {
				if slices.Contains(g.Source.Topics, s.Record.Topic) {
					tc.global = s.Record.Topic
				}
			}
		}
		k, err := replay.Serialize(src.Source.KeySerde, s.Record.Topic, s.Record.Key)
		if err != nil {
			return tc, "", err
		}
		v, err := replay.Serialize(src.Source.ValueSerde, s.Record.Topic, s.Record.Value)
		if err != nil {
			return tc, "", err
		}
		ts := s.Record.Timestamp
		if !s.Record.HasTimestamp {
			ts = wall
		}
		tc.steps = append(tc.steps, timedStep{kind: s.Kind, input: len(ex.Inputs), wall: wall})
		if v == nil {
			markNull(ex.Name, len(ex.Inputs))
		}
		ex.Inputs = append(ex.Inputs, examples.Input{Topic: s.Record.Topic, Key: string(k), Value: string(v), Timestamp: ts})
	}
	for _, n := range built.Nodes {
		if n.Sink != nil && n.Boundary == nil && n.Sink.Topic != "" {
			ex.Outputs = append(ex.Outputs, examples.Output{Topic: n.Sink.Topic})
		}
	}
	return tc, "", buildErr
}
