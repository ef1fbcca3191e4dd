package testdriver_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// timed is a timer-aware processor whose behaviour each test plugs in. Its
// OnTimer forwards one record per firing, keyed by the timer's key and
// stamped with the timer's time, describing the timer and the context it
// fired in.
type timed struct {
	processor.Base[string, string]
	timers    processor.TimerService[string]
	eventTime bool
	process   func(p *timed, r processor.Record[string, string]) error
	onTimer   func(p *timed, t processor.Timer[string]) error
	// lanes records the lane each firing ran on, by key.
	lanes map[string]int
}

func (p *timed) Init(ctx processor.Context[string, string]) error {
	p.Ctx = ctx
	s, err := processor.Timers[string](ctx)
	p.timers = s
	return err
}

func (p *timed) Process(r processor.Record[string, string]) error {
	if p.process == nil {
		return nil
	}
	return p.process(p, r)
}

func (p *timed) OnTimer(t processor.Timer[string]) error {
	if l, _, ok := processor.LaneOf(p.Ctx); ok && p.lanes != nil {
		p.lanes[t.Key] = l
	}
	_, hasMeta := p.Ctx.RecordMetadata()
	v := fmt.Sprintf("%s@%d floor=%d meta=%v", t.Domain, t.Time, p.Ctx.Floor(), hasMeta)
	if t.Name != "" {
		v = t.Name + " " + v
	}
	p.Ctx.Forward(processor.Record[string, string]{Key: t.Key, Value: v, Timestamp: t.Time})
	if p.onTimer != nil {
		return p.onTimer(p, t)
	}
	return nil
}

func (p *timed) UsesEventTimeTimers() bool { return p.eventTime }

func supplyTimed(mk func() *timed) processor.Supplier {
	return processor.Supply(func() processor.Processor[string, string, string, string] { return mk() })
}

// timedTopology reads "in" with declared string serdes, so timer keys
// write exactly the bytes records were laned by.
func timedTopology(mk func() *timed) *topology.Topology {
	return topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddProcessor("timed", supplyTimed(mk), "src").
		AddSink("out", topology.ProducedWith(str, str).Spec("out"), "out", "timed")
}

// readOut renders what "out" holds as key=value@timestamp lines.
func readOut(t *testing.T, d *testdriver.Driver) []string {
	t.Helper()
	rs, err := testdriver.CreateOutputTopic(d, "out", str, str).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s=%s @%d", r.Key, r.Value, r.Timestamp))
	}
	return out
}

func expectOut(t *testing.T, d *testdriver.Driver, want ...string) {
	t.Helper()
	if got := readOut(t, d); !slices.Equal(got, want) {
		t.Fatalf("output\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEventTimerForCurrentKey(t *testing.T) {
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{eventTime: true, process: func(p *timed, r processor.Record[string, string]) error {
			return p.timers.RegisterEventTimeTimer(r.Timestamp + 10)
		}}
	}), map[string]string{"application.id": "app"})
	must(t, err)
	defer d.Close()
	if got := d.Built().Nodes["timed"].EventTime; got != "event-time timer" {
		t.Fatalf("node needs event time for %q, want event-time timer", got)
	}
	in := testdriver.CreateInputTopic(d, "in", str, str)
	must(t, in.PipeInputAt("a", "x", 0))
	must(t, in.PipeInputAt("b", "x", 5))
	expectOut(t, d)
	// The watermark reaches a's timer at 10. Timers are judged against the
	// last barrier's watermark: the barrier after b's pipe, at 5.
	must(t, in.PipeInputAt("c", "x", 10))
	expectOut(t, d, "a=EVENT_TIME@10 floor=5 meta=false @10")
	must(t, in.PipeInputAt("d", "x", 15))
	expectOut(t, d, "b=EVENT_TIME@15 floor=10 meta=false @15")
	must(t, d.AdvanceWatermark(24))
	expectOut(t, d, "c=EVENT_TIME@20 floor=15 meta=false @20")
}

func TestTimerForAnotherKeyFiresOnItsLane(t *testing.T) {
	lanes := map[string]int{}
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{
			eventTime: true,
			lanes:     lanes,
			process: func(p *timed, r processor.Record[string, string]) error {
				return p.timers.Register(processor.Timer[string]{Key: "other-" + r.Key, Time: r.Timestamp, Domain: processor.EventTime})
			},
			// A firing may arm timers that are due already: they fire in
			// the same pass, on their own key's lane.
			onTimer: func(p *timed, tm processor.Timer[string]) error {
				if k, ok := strings.CutPrefix(tm.Key, "other-"); ok {
					return p.timers.Register(processor.Timer[string]{Key: "again-" + k, Time: tm.Time, Domain: processor.EventTime})
				}
				return nil
			},
		}
	}), nil, testdriver.WithNumberOfLanes(8))
	must(t, err)
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	for i, k := range []string{"a", "b", "c", "d"} {
		must(t, in.PipeInputAt(k, "x", int64(i)))
	}
	expectOut(t, d,
		"other-a=EVENT_TIME@0 floor=-1 meta=false @0", "again-a=EVENT_TIME@0 floor=-1 meta=false @0",
		"other-b=EVENT_TIME@1 floor=0 meta=false @1", "again-b=EVENT_TIME@1 floor=0 meta=false @1",
		"other-c=EVENT_TIME@2 floor=1 meta=false @2", "again-c=EVENT_TIME@2 floor=1 meta=false @2",
		"other-d=EVENT_TIME@3 floor=2 meta=false @3", "again-d=EVENT_TIME@3 floor=2 meta=false @3")
	if len(lanes) != 8 {
		t.Fatalf("lanes recorded for %d keys, want 8: %v", len(lanes), lanes)
	}
	moved := 0
	for key, got := range lanes {
		if want := lane.For([]byte(key), 8); got != want {
			t.Errorf("timer for %s fired on lane %d, want its key's lane %d", key, got, want)
		}
		if rec := strings.TrimPrefix(strings.TrimPrefix(key, "other-"), "again-"); lane.For([]byte(rec), 8) != got {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no timer landed on another lane than the record that armed it; pick other keys so the test shows one")
	}
}

func TestNamedTimerReplacedByReRegistration(t *testing.T) {
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{eventTime: true, process: func(p *timed, r processor.Record[string, string]) error {
			return p.timers.Register(processor.Timer[string]{Key: r.Key, Time: r.Timestamp + 10, Domain: processor.EventTime, Name: "debounce"})
		}}
	}), nil)
	must(t, err)
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	must(t, in.PipeInputAt("k", "x", 0))
	must(t, in.PipeInputAt("k", "x", 5))
	must(t, d.AdvanceWatermark(14))
	expectOut(t, d)
	must(t, d.AdvanceWatermark(15))
	expectOut(t, d, "k=debounce EVENT_TIME@15 floor=14 meta=false @15")
	must(t, d.AdvanceWatermark(100))
	expectOut(t, d)
}

func TestTimerDeletion(t *testing.T) {
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{eventTime: true, process: func(p *timed, r processor.Record[string, string]) error {
			switch r.Value {
			case "arm":
				if err := p.timers.RegisterEventTimeTimer(100); err != nil {
					return err
				}
				return p.timers.Register(processor.Timer[string]{Key: r.Key, Time: 100, Domain: processor.EventTime, Name: "n"})
			case "cancel-time":
				return p.timers.DeleteEventTimeTimer(100)
			case "cancel-name":
				// The time is ignored: a named timer is deleted by name.
				return p.timers.Delete(processor.Timer[string]{Key: r.Key, Time: -1, Domain: processor.EventTime, Name: "n"})
			case "cancel-absent":
				return p.timers.DeleteEventTimeTimer(99)
			}
			return nil
		}}
	}), nil)
	must(t, err)
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	must(t, in.PipeInputAt("a", "arm", 0))
	must(t, in.PipeInputAt("b", "arm", 0))
	must(t, in.PipeInputAt("a", "cancel-time", 1))
	must(t, in.PipeInputAt("b", "cancel-name", 2))
	must(t, in.PipeInputAt("b", "cancel-absent", 3))
	must(t, d.AdvanceWatermark(100))
	// At one time, timers fire in key bytes order.
	expectOut(t, d,
		"a=n EVENT_TIME@100 floor=3 meta=false @100",
		"b=EVENT_TIME@100 floor=3 meta=false @100")
}

func TestProcessingTimeTimers(t *testing.T) {
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{process: func(p *timed, r processor.Record[string, string]) error {
			return p.timers.RegisterProcessingTimeTimer(p.Ctx.CurrentSystemTime() + 50)
		}}
	}), nil, testdriver.WithWallClock(1000))
	must(t, err)
	defer d.Close()
	if got := d.Built().Nodes["timed"].EventTime; got != "" {
		t.Fatalf("processing-time timers need no event time, node says %q", got)
	}
	in := testdriver.CreateInputTopic(d, "in", str, str)
	must(t, in.PipeInputAt("k", "x", 0))
	must(t, d.AdvanceWatermark(5000))
	must(t, d.AdvanceWallClockTime(49*time.Millisecond))
	expectOut(t, d)
	must(t, d.AdvanceWallClockTime(time.Millisecond))
	expectOut(t, d, "k=PROCESSING_TIME@1050 floor=5000 meta=false @1050")
}

// timeKey and nameKey spell out the timer store layout byte by byte, so
// that the test pins the persisted format rather than the code's helpers.
func timeKey(domain byte, at int64, key, name string) []byte {
	b := []byte{'T', domain}
	b = binary.BigEndian.AppendUint64(b, uint64(at)^(1<<63))
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	return append(append(b, key...), name...)
}

func nameKey(domain byte, key, name string) []byte {
	b := binary.BigEndian.AppendUint32([]byte{'N', domain}, uint32(len(key)))
	return append(append(b, key...), name...)
}

func TestTimersInChangelog(t *testing.T) {
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{eventTime: true, process: func(p *timed, r processor.Record[string, string]) error {
			if err := p.timers.RegisterEventTimeTimer(10); err != nil {
				return err
			}
			return p.timers.Register(processor.Timer[string]{Key: r.Key, Time: 20, Domain: processor.EventTime, Name: "n"})
		}}
	}), map[string]string{"application.id": "app"})
	must(t, err)
	defer d.Close()
	info, ok := d.Built().Stores["timed-timers"]
	if !ok || info.ChangelogTopic != "app-timed-timers-changelog" || !slices.Contains(info.Processors, "timed") {
		t.Fatalf("timer store %+v, %v", info, ok)
	}
	in := testdriver.CreateInputTopic(d, "in", str, str)
	must(t, in.PipeInputAt("a", "x", 0))
	must(t, d.AdvanceWatermark(10))
	must(t, d.AdvanceWatermark(20))
	changelog := testdriver.CreateOutputTopic(d, "app-timed-timers-changelog", serde.Bytes(), serde.Bytes())
	rs, err := changelog.ReadRecordsToList()
	must(t, err)
	type rec struct {
		key, value string
		ts         int64
	}
	var got []rec
	for _, r := range rs {
		v := "<tombstone>"
		if !r.ValueNull {
			v = fmt.Sprintf("%x", r.Value)
		}
		got = append(got, rec{fmt.Sprintf("%x", r.Key), v, r.Timestamp})
	}
	hex := func(b []byte) string { return fmt.Sprintf("%x", b) }
	want := []rec{
		{hex(timeKey(0, 10, "a", "")), "01", 0},
		{hex(nameKey(0, "a", "n")), "0000000000000014", 0},
		{hex(timeKey(0, 20, "a", "n")), "01", 0},
		// Firing deletes the timer, stamped with the timer's time.
		{hex(timeKey(0, 10, "a", "")), "<tombstone>", 10},
		{hex(timeKey(0, 20, "a", "n")), "<tombstone>", 20},
		{hex(nameKey(0, "a", "n")), "<tombstone>", 20},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changelog\n  %v\nwant\n  %v", got, want)
	}
	if got := hex(timeKey(0, 10, "a", "")); got != "5400800000000000000a0000000161" {
		t.Fatalf("time index key %s", got)
	}
}

func TestTimerRefusals(t *testing.T) {
	t.Run("event-time timers without a moving watermark", func(t *testing.T) {
		_, err := testdriver.New(timedTopology(func() *timed { return &timed{eventTime: true} }),
			map[string]string{"stoatflow.processing.timestamp-coordination-mode": "DISABLED"})
		if want := "node timed: event-time timer needs event time"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
	t.Run("timers without OnTimer", func(t *testing.T) {
		topo := topology.New().
			AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
			AddProcessor("p", processor.Supply(func() processor.Processor[string, string, string, string] { return &noTimers{} }), "src")
		_, err := testdriver.New(topo, nil)
		if want := "node p: init: processor p: processor does not receive timers"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
	t.Run("unknown time domain", func(t *testing.T) {
		d, err := testdriver.New(timedTopology(func() *timed {
			return &timed{process: func(p *timed, r processor.Record[string, string]) error {
				return p.timers.Register(processor.Timer[string]{Key: r.Key, Time: 1, Domain: processor.TimeDomain(7)})
			}}
		}), nil)
		must(t, err)
		defer d.Close()
		err = testdriver.CreateInputTopic(d, "in", str, str).PipeInputAt("k", "x", 0)
		if want := "processor timed: register timer (TimeDomain(7) at 1) for key k: unknown time domain"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
	t.Run("timer key the serde cannot write", func(t *testing.T) {
		// Behind a re-keying Processor API node the timer key serde is
		// default.key.serde, here int64, which cannot write the string
		// keys the timed processor receives: its first registration says
		// so, naming the serde, as Kafka's ClassCastException would.
		topo := topology.New().
			AddSource("src", topology.ConsumedWith(i64, str).Spec(), "in").
			AddProcessor("rekey", processor.Supply(func() processor.Processor[int64, string, string, string] { return &toStringKey{} }), "src").
			AddProcessor("timed", supplyTimed(func() *timed {
				return &timed{process: func(p *timed, r processor.Record[string, string]) error {
					return p.timers.RegisterProcessingTimeTimer(1)
				}}
			}), "rekey")
		d, err := testdriver.New(topo, map[string]string{"default.key.serde": "int64"})
		must(t, err)
		defer d.Close()
		err = testdriver.CreateInputTopic(d, "in", i64, str).PipeInputAt(7, "x", 0)
		if want := "processor timed: register timer (PROCESSING_TIME at 1) for key 7: serialize key with timer key serde int64: value has the wrong type for serde int64: got string"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
}

type toStringKey struct{ processor.Base[string, string] }

func (p *toStringKey) Process(r processor.Record[int64, string]) error {
	p.Ctx.Forward(processor.WithKey(r, fmt.Sprint(r.Key)))
	return nil
}

type noTimers struct{ processor.Base[string, string] }

func (p *noTimers) Init(ctx processor.Context[string, string]) error {
	_, err := processor.Timers[string](ctx)
	return err
}
func (p *noTimers) Process(processor.Record[string, string]) error { return nil }

// quoted is a key serde for keys a producer wrote as JSON strings: "k0",
// quotes included. Serialize quotes, so an input topic can write the wire
// form; the source only ever deserializes with it.
type quoted struct{}

func (quoted) Name() string { return "quoted-string" }
func (quoted) Serialize(_ string, v string) ([]byte, error) {
	return []byte(`"` + v + `"`), nil
}
func (quoted) Deserialize(_ string, b []byte) (string, error) {
	return strings.Trim(string(b), `"`), nil
}

const jsonLanes = 8

// splitAndControlKeys derives, rather than hard-codes, a key whose two
// encodings (JSON-quoted on the wire, plain under the string serde) hash to
// different lanes, and one whose encodings share a lane.
func splitAndControlKeys(t *testing.T) (split, control string) {
	t.Helper()
	for i := 0; i < 1000 && (split == "" || control == ""); i++ {
		k := fmt.Sprintf("k%d", i)
		wire, _ := quoted{}.Serialize("", k)
		if lane.For(wire, jsonLanes) != lane.For([]byte(k), jsonLanes) {
			if split == "" {
				split = k
			}
		} else if control == "" {
			control = k
		}
	}
	if split == "" || control == "" {
		t.Fatalf("no split or no control key among k0..k999 (split %q, control %q)", split, control)
	}
	return split, control
}

// sessionize arms an event-time timer for the key of each record, as a
// session processor does; with swallow it ignores what registration says.
func sessionize(swallow bool) func() *timed {
	return func() *timed {
		return &timed{eventTime: true, process: func(p *timed, r processor.Record[string, string]) error {
			err := p.timers.RegisterEventTimeTimer(r.Timestamp + 100)
			if swallow {
				return nil
			}
			return err
		}}
	}
}

// jsonKeyed is the article's case: the source declares its key with a
// deserializer only, which unquotes JSON-quoted keys, and default.key.serde
// is string, which writes them without quotes.
func jsonKeyed(mk func() *timed) *topology.Topology {
	return topology.New().
		AddSource("events", topology.ConsumedWithDeserializers[string, string](quoted{}, str).Spec(), "events").
		AddProcessor("sessionize", supplyTimed(mk), "events").
		// No key serde declared downstream either, so the timer key serde
		// falls back to default.key.serde.
		AddSink("out", topology.Produced[string, string]{}.Spec("out"), "out", "sessionize")
}

func jsonConfig(extra ...string) map[string]string {
	cfg := map[string]string{"application.id": "sessions", "default.key.serde": "string", "default.value.serde": "string"}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return cfg
}

func TestJSONQuotedKeysBuildRule(t *testing.T) {
	d, err := testdriver.New(jsonKeyed(sessionize(false)), jsonConfig(), testdriver.WithNumberOfLanes(jsonLanes))
	must(t, err)
	spec := d.Built().Nodes["sessionize"].Timers
	if spec.KeySerde.Name() != "string" || spec.KeySerdeFrom != "config default.key.serde" {
		t.Fatalf("timer key serde %s from %s, want string from default.key.serde", spec.KeySerde.Name(), spec.KeySerdeFrom)
	}
	ws := d.Built().Warnings
	want := "topology: node sessionize: source events declares its key with deserializer quoted-string only, so its timer key serde is string (from config default.key.serde)"
	if len(ws) != 1 || !strings.HasPrefix(ws[0].String(), want) || ws[0].Rule != "stoatflow.topology.validation.timer-key-lane-affinity" {
		t.Fatalf("warnings %v\nwant one starting %q", ws, want)
	}
	d.Close()

	_, err = testdriver.New(jsonKeyed(sessionize(false)), jsonConfig("stoatflow.topology.validation.timer-key-lane-affinity", "error"))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %q", err, want)
	}

	d, err = testdriver.New(jsonKeyed(sessionize(false)), jsonConfig("stoatflow.topology.validation.timer-key-lane-affinity", "off"))
	must(t, err)
	if ws := d.Built().Warnings; len(ws) != 0 {
		t.Fatalf("rule off still warns: %v", ws)
	}
	d.Close()

	// The fix: declare the key serde. The timer key serde is then the
	// source's, and nothing is reported.
	declared := topology.New().
		AddSource("events", topology.ConsumedWith[string, string](quoted{}, str).Spec(), "events").
		AddProcessor("sessionize", supplyTimed(sessionize(false)), "events")
	d, err = testdriver.New(declared, jsonConfig("stoatflow.topology.validation.timer-key-lane-affinity", "error"))
	must(t, err)
	defer d.Close()
	if spec := d.Built().Nodes["sessionize"].Timers; spec.KeySerde.Name() != "quoted-string" || spec.KeySerdeFrom != "source events" {
		t.Fatalf("declared: timer key serde %s from %s", spec.KeySerde.Name(), spec.KeySerdeFrom)
	}
}

func TestJSONQuotedKeysGuard(t *testing.T) {
	split, control := splitAndControlKeys(t)
	for _, swallow := range []bool{false, true} {
		t.Run(fmt.Sprintf("swallow=%v", swallow), func(t *testing.T) {
			// Even under the continue handler: the split is fatal.
			d, err := testdriver.New(jsonKeyed(sessionize(swallow)),
				jsonConfig("processing.exception.handler", "continue", "stoatflow.processing.timer-lane-affinity-sampled-check", "off"),
				testdriver.WithNumberOfLanes(jsonLanes))
			must(t, err)
			defer d.Close()
			in := testdriver.CreateInputTopic(d, "events", quoted{}, str)

			must(t, in.PipeInputAt(control, "x", 0))
			err = in.PipeInputAt(split, "x", 1)
			var lerr *processor.TimerLaneAffinityError
			if !errors.As(err, &lerr) || !errors.Is(err, processor.ErrTimerLaneAffinity) {
				t.Fatalf("pipe %s: %v, want a TimerLaneAffinityError", split, err)
			}
			var pe *task.ProcessingError
			if !errors.As(err, &pe) || pe.Node != "sessionize" || pe.Position.Topic != "events" || pe.Position.Offset != 1 {
				t.Fatalf("error does not name the processor and record: %v", err)
			}
			wire, _ := quoted{}.Serialize("", split)
			wantLanes := [2]int{lane.For([]byte(split), jsonLanes), lane.For(wire, jsonLanes)}
			if lerr.Check != "guard" || lerr.Node != "sessionize" || lerr.Lanes != jsonLanes ||
				[2]int{lerr.TimerLane, lerr.RecordLane} != wantLanes || string(lerr.TimerKeyBytes) != split || string(lerr.LaneBytes) != string(wire) {
				t.Fatalf("error %+v, want guard on lanes timer %d, record %d", lerr, wantLanes[0], wantLanes[1])
			}
			var fatal task.Fatal
			if !errors.As(err, &fatal) || !fatal.Fatal() {
				t.Fatal("a lane split must be fatal")
			}
			// The refused registration never happened: only the control
			// key's timer fires.
			must(t, d.AdvanceWatermark(1000))
			expectOut(t, d, control+"=EVENT_TIME@100 floor=0 meta=false @100")
		})
	}
	t.Run("warn", func(t *testing.T) {
		d, err := testdriver.New(jsonKeyed(sessionize(false)),
			jsonConfig("stoatflow.processing.timer-lane-affinity-guard", "warn", "stoatflow.processing.timer-lane-affinity-sampled-check", "off",
				"test.driver.number-of-lanes", "8"))
		must(t, err)
		defer d.Close()
		in := testdriver.CreateInputTopic(d, "events", quoted{}, str)
		must(t, in.PipeInputAt(split, "x", 1))
		must(t, d.AdvanceWatermark(1000))
		expectOut(t, d, split+"=EVENT_TIME@101 floor=1 meta=false @101")
	})
	t.Run("lane count from config", func(t *testing.T) {
		d, err := testdriver.New(jsonKeyed(sessionize(false)), jsonConfig("test.driver.number-of-lanes", "8"))
		must(t, err)
		defer d.Close()
		err = testdriver.CreateInputTopic(d, "events", quoted{}, str).PipeInputAt(split, "x", 1)
		var lerr *processor.TimerLaneAffinityError
		if !errors.As(err, &lerr) || lerr.Lanes != 8 {
			t.Fatalf("pipe %s: %v, want a split judged over 8 lanes", split, err)
		}
	})
	t.Run("one lane", func(t *testing.T) {
		d, err := testdriver.New(jsonKeyed(sessionize(false)), jsonConfig(), testdriver.WithNumberOfLanes(1))
		must(t, err)
		defer d.Close()
		must(t, testdriver.CreateInputTopic(d, "events", quoted{}, str).PipeInputAt(split, "x", 1))
		if n := d.Metrics().Value(task.TimerLaneMismatch, "processor", "sessionize"); n != 0 {
			t.Fatalf("%d mismatches counted with one lane", n)
		}
	})
}

func TestJSONQuotedKeysSampledCheck(t *testing.T) {
	split, control := splitAndControlKeys(t)
	// A processor that times nothing on its records' keys: only the
	// sampled check can see the split.
	quiet := func() *timed { return &timed{} }
	d, err := testdriver.New(jsonKeyed(quiet), jsonConfig(), testdriver.WithNumberOfLanes(jsonLanes))
	must(t, err)
	defer d.Close()
	if !slices.Contains(d.Metrics().Names(), `timer.lane.mismatch.total{processor="sessionize"}`) {
		t.Fatalf("mismatch counter not registered at zero: %v", d.Metrics().Names())
	}
	in := testdriver.CreateInputTopic(d, "events", quoted{}, str)
	must(t, in.PipeInputAt(control, "x", 0))
	if n := d.Metrics().Value(task.TimerLaneMismatch, "processor", "sessionize"); n != 0 {
		t.Fatalf("control key counted %d mismatches", n)
	}
	// Warn (the default) counts every sampled split and lets records
	// through: the first 64 per lane, then one in 4096.
	for i := range 64 + 4096 {
		must(t, in.PipeInputAt(split, "x", int64(i)))
	}
	if n := d.Metrics().Value(task.TimerLaneMismatch, "processor", "sessionize"); n != 65 {
		t.Fatalf("%d mismatches counted, want 64 + 1", n)
	}

	// Error, through the driver's short key, fails the record; the lanes
	// are the production count, from num.stream.threads, as in the
	// article's example.
	d2, err := testdriver.New(jsonKeyed(quiet), jsonConfig("timer.lane-affinity.sampled-check", "error", "num.stream.threads", "8"))
	must(t, err)
	defer d2.Close()
	in2 := testdriver.CreateInputTopic(d2, "events", quoted{}, str)
	must(t, in2.PipeInputAt(control, "x", 0))
	err = in2.PipeInputAt(split, "x", 1)
	var lerr *processor.TimerLaneAffinityError
	if !errors.As(err, &lerr) || lerr.Check != "sampled check" || lerr.Node != "sessionize" {
		t.Fatalf("pipe %s: %v, want a sampled-check TimerLaneAffinityError", split, err)
	}
	if n := d2.Metrics().Value(task.TimerLaneMismatch, "processor", "sessionize"); n != 1 {
		t.Fatalf("%d mismatches counted, want 1", n)
	}
}

func TestTimersRestoreFromChangelog(t *testing.T) {
	arm := func() *timed {
		return &timed{eventTime: true, process: func(p *timed, r processor.Record[string, string]) error {
			return p.timers.Register(processor.Timer[string]{Key: r.Key, Time: 50, Domain: processor.EventTime, Name: "timeout"})
		}}
	}
	cfg := map[string]string{"application.id": "app"}
	d1, err := testdriver.New(timedTopology(arm), cfg)
	must(t, err)
	in := testdriver.CreateInputTopic(d1, "in", str, str)
	must(t, in.PipeInputAt("a", "x", 0))
	must(t, in.PipeInputAt("b", "x", 1))
	rs, err := testdriver.CreateOutputTopic(d1, "app-timed-timers-changelog", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	must(t, err)
	d1.Close()

	// A new instance rebuilds the timers from the changelog alone and
	// fires them once the watermark passes them.
	d2, err := testdriver.New(timedTopology(arm), cfg)
	must(t, err)
	defer d2.Close()
	s, ok := d2.StateStore("timed-timers")
	if !ok {
		t.Fatal("no timer store")
	}
	var records []state.ChangelogRecord
	for _, r := range rs {
		records = append(records, state.ChangelogRecord{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
	}
	must(t, s.(state.Restorer).Restore(records))
	must(t, d2.AdvanceWatermark(50))
	expectOut(t, d2,
		"a=timeout EVENT_TIME@50 floor=-1 meta=false @50",
		"b=timeout EVENT_TIME@50 floor=-1 meta=false @50")
}

func TestTimerCascadeIsBounded(t *testing.T) {
	fired := 0
	d, err := testdriver.New(timedTopology(func() *timed {
		return &timed{
			eventTime: true,
			process: func(p *timed, r processor.Record[string, string]) error {
				return p.timers.RegisterEventTimeTimer(10)
			},
			// Re-arms itself at the same time, forever.
			onTimer: func(p *timed, tm processor.Timer[string]) error {
				fired++
				return p.timers.RegisterEventTimeTimer(tm.Time)
			},
		}
	}), nil)
	must(t, err)
	defer d.Close()
	must(t, testdriver.CreateInputTopic(d, "in", str, str).PipeInputAt("k", "x", 0))
	must(t, d.AdvanceWatermark(10))
	if fired != 1001 {
		t.Fatalf("fired %d times in one pass, want 1 + 1000 returns to the same time", fired)
	}
	must(t, d.AdvanceWatermark(11))
	if fired != 2002 {
		t.Fatalf("fired %d times after the next pass, want 2002", fired)
	}
	readOut(t, d)
}
