package processor_test

import (
	"errors"
	"testing"

	"github.com/stoatflow/stoatctl/engine/processor"
)

// fakeRuntime is the erased context a runtime would give: it offers timers
// and a lane, and records what the typed service asks of it.
type fakeRuntime struct {
	processor.Context[any, any]
	current any
	calls   []processor.Timer[any]
}

func (f *fakeRuntime) NodeName() string { return "p" }
func (f *fakeRuntime) TimerService() (processor.ErasedTimerService, error) {
	return fakeService{f}, nil
}
func (f *fakeRuntime) Lane() (int, int, bool) { return 3, 8, true }

type fakeService struct{ f *fakeRuntime }

func (s fakeService) Register(t processor.Timer[any]) error {
	s.f.calls = append(s.f.calls, t)
	return nil
}
func (s fakeService) Delete(t processor.Timer[any]) error {
	t.Name = "deleted:" + t.Name
	s.f.calls = append(s.f.calls, t)
	return nil
}
func (s fakeService) CurrentKey() (any, bool) { return s.f.current, s.f.current != nil }

// session receives timers on string keys.
type session struct {
	processor.Base[string, int64]
	got []processor.Timer[string]
}

func (p *session) Process(processor.Record[string, int64]) error { return nil }
func (p *session) OnTimer(t processor.Timer[string]) error {
	p.got = append(p.got, t)
	return nil
}
func (p *session) UsesEventTimeTimers() bool { return true }

func TestTimersThroughATypedContext(t *testing.T) {
	rt := &fakeRuntime{}
	// Processors see a typed view of the runtime's erased context.
	ctx := processor.Typed[string, int64](rt)
	timers, err := processor.Timers[string](ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := timers.RegisterEventTimeTimer(5); !errors.Is(err, processor.ErrNoCurrentKey) {
		t.Fatalf("register without a current key: %v", err)
	}
	rt.current = "k"
	if k, ok := timers.CurrentKey(); !ok || k != "k" {
		t.Fatalf("current key %q %v", k, ok)
	}
	must(t, timers.RegisterEventTimeTimer(5))
	must(t, timers.RegisterProcessingTimeTimer(6))
	must(t, timers.DeleteEventTimeTimer(5))
	must(t, timers.Register(processor.Timer[string]{Key: "other", Time: 7, Domain: processor.EventTime, Name: "n"}))
	must(t, timers.Delete(processor.Timer[string]{Key: "other", Domain: processor.EventTime, Name: "n"}))
	want := []processor.Timer[any]{
		{Key: "k", Time: 5, Domain: processor.EventTime},
		{Key: "k", Time: 6, Domain: processor.ProcessingTime},
		{Key: "k", Time: 5, Domain: processor.EventTime, Name: "deleted:"},
		{Key: "other", Time: 7, Domain: processor.EventTime, Name: "n"},
		{Key: "other", Domain: processor.EventTime, Name: "deleted:n"},
	}
	if len(rt.calls) != len(want) {
		t.Fatalf("calls %v, want %v", rt.calls, want)
	}
	for i := range want {
		if rt.calls[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, rt.calls[i], want[i])
		}
	}
	if l, n, ok := processor.LaneOf(ctx); !ok || l != 3 || n != 8 {
		t.Fatalf("lane %d of %d, %v", l, n, ok)
	}
}

func TestTimersWithoutARuntime(t *testing.T) {
	type plain struct{ processor.Context[any, any] }
	_, err := processor.Timers[string](named{})
	if !errors.Is(err, processor.ErrNoTimers) || err.Error() != "processor p: "+processor.ErrNoTimers.Error() {
		t.Fatalf("error %v", err)
	}
	if _, _, ok := processor.LaneOf(plain{}); ok {
		t.Fatal("a context without lanes reported one")
	}
}

type named struct{}

func (named) NodeName() string { return "p" }

func TestErasureKeepsTimers(t *testing.T) {
	s := &session{}
	u := processor.Erase[string, int64, string, int64](s)
	onTimer, ok := processor.OnTimerOf(u)
	if !ok {
		t.Fatal("erasing hid OnTimer")
	}
	must(t, onTimer(processor.Timer[any]{Key: "k", Time: 9, Domain: processor.EventTime, Name: "n"}))
	if len(s.got) != 1 || s.got[0] != (processor.Timer[string]{Key: "k", Time: 9, Domain: processor.EventTime, Name: "n"}) {
		t.Fatalf("delivered %+v", s.got)
	}
	if err := onTimer(processor.Timer[any]{Key: 42}); err == nil {
		t.Fatal("a timer key of the wrong type was delivered")
	}
	if !processor.UsesEventTimeTimers(u) {
		t.Fatal("erasing hid UsesEventTimeTimers")
	}
	if processor.PreservesKey(u) {
		t.Fatal("a processor that may re-key claims to preserve keys")
	}
	if _, ok := processor.OnTimerOf(processor.Erase[string, int64, string, int64](&plainProc{})); ok {
		t.Fatal("a processor without OnTimer receives timers")
	}
}

type plainProc struct{ processor.Base[string, int64] }

func (p *plainProc) Process(processor.Record[string, int64]) error { return nil }

type fixed struct{}

func (fixed) Init(processor.FixedKeyContext[string, int64]) error { return nil }
func (fixed) Process(processor.Record[string, int64]) error       { return nil }
func (fixed) Close() error                                        { return nil }

func TestFixedKeyProcessorsPreserveKeys(t *testing.T) {
	if !processor.PreservesKey(processor.EraseFixedKey[string, int64, int64](fixed{})) {
		t.Fatal("a fixed-key processor does not preserve keys")
	}
}

func TestTimerLaneAffinityError(t *testing.T) {
	var err error = &processor.TimerLaneAffinityError{Node: "p", Check: "guard", Key: "k0", KeySerde: "string",
		TimerKeyBytes: []byte("k0"), LaneBytes: []byte(`"k0"`), TimerLane: 6, RecordLane: 0, Lanes: 8}
	want := `timer lane affinity (guard): processor p: key k0: timer key serde string writes "k0", lane 6 of 8, but the record was laned by "\"k0\"", lane 0: this key's timers would run beside its records; declare the key serde on the source (topology.ConsumedWith)`
	if err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
	if !errors.Is(err, processor.ErrTimerLaneAffinity) {
		t.Fatal("errors.Is does not match the sentinel")
	}
	if f, ok := err.(interface{ Fatal() bool }); !ok || !f.Fatal() {
		t.Fatal("not fatal")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
