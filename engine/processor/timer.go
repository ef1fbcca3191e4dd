package processor

import (
	"errors"
	"fmt"
)

// TimeDomain is the clock a timer follows.
type TimeDomain int8

const (
	// EventTime timers fire once the watermark reaches their time.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire once the wall clock reaches their time.
	ProcessingTime
)

func (d TimeDomain) String() string {
	switch d {
	case EventTime:
		return "EVENT_TIME"
	case ProcessingTime:
		return "PROCESSING_TIME"
	}
	return fmt.Sprintf("TimeDomain(%d)", int8(d))
}

// Valid reports whether d is one of the two domains.
func (d TimeDomain) Valid() bool { return d == EventTime || d == ProcessingTime }

// Timer is one timer: for Key, at Time (epoch milliseconds) on Domain's
// clock, and Name when it is a named timer ("" otherwise).
type Timer[K any] struct {
	Key    K
	Time   int64
	Domain TimeDomain
	Name   string
}

// TimerProcessor is implemented by processors that receive timers. K is the
// processor's input key type: a timer is for a key the processor receives.
type TimerProcessor[K any] interface {
	OnTimer(t Timer[K]) error
}

// EventTimeTimerUser is implemented by processors that register event-time
// timers. The build marks their node as needing event time ("event-time
// timer"), so a topology where no watermark can move is refused when it is
// built instead of never firing.
type EventTimeTimerUser interface {
	UsesEventTimeTimers() bool
}

// KeyPreserving is implemented by processors that never change the key of
// what they forward. The timer key serde resolution looks through them;
// every other processor counts as a key change. Fixed-key processors are
// key-preserving by construction.
type KeyPreserving interface {
	PreservesKey() bool
}

// TimerService registers and deletes a processor's timers. The "current
// key" is the key of the record being processed, or of the timer being
// fired; in a punctuator there is none.
//
// A timer may be for any key the timer key serde can serialise, not only
// the current one: it then fires on that key's lane. Registering or
// deleting another key's timer is not ordered against what that key's own
// lane does to its timers at the same moment; when the order matters,
// forward a record re-keyed to that key and arm the timer while processing
// it, so every key's timers have one writer.
type TimerService[K any] interface {
	// RegisterEventTimeTimer arms an unnamed event-time timer for the
	// current key.
	RegisterEventTimeTimer(time int64) error
	// RegisterProcessingTimeTimer arms an unnamed processing-time timer
	// for the current key.
	RegisterProcessingTimeTimer(time int64) error
	// DeleteEventTimeTimer removes the current key's unnamed event-time
	// timer at time, if there is one.
	DeleteEventTimeTimer(time int64) error
	// DeleteProcessingTimeTimer removes the current key's unnamed
	// processing-time timer at time, if there is one.
	DeleteProcessingTimeTimer(time int64) error
	// Register arms t for t.Key. A named timer replaces the key's timer of
	// that name and domain, wherever it was.
	Register(t Timer[K]) error
	// Delete removes t: by name when t.Name is set (t.Time is then
	// ignored), else the unnamed timer at t.Time. Deleting a timer that
	// does not exist is not an error.
	Delete(t Timer[K]) error
	// CurrentKey is the current key, false in a punctuator.
	CurrentKey() (K, bool)
}

// ErasedTimerService is a runtime's timer service with the key type erased;
// a runtime's Context offers it through a TimerService method. Timers
// wraps it in the typed TimerService.
type ErasedTimerService interface {
	Register(t Timer[any]) error
	Delete(t Timer[any]) error
	CurrentKey() (any, bool)
}

// ErrNoTimers is returned by Timers for a processor that cannot receive
// timers: it does not implement OnTimer, or its runtime has no timers.
var ErrNoTimers = errors.New("processor does not receive timers: implement OnTimer(processor.Timer[K]) error on its input key type")

// ErrNoCurrentKey is returned by the current-key methods of a TimerService
// outside Process and OnTimer, where there is no current key.
var ErrNoCurrentKey = errors.New("no current key: register timers for an explicit key outside Process and OnTimer")

// Timers returns the timer service of the processor whose context ctx is,
// typed by the processor's input key type K. Call it in Init.
func Timers[K any](ctx interface{ NodeName() string }) (TimerService[K], error) {
	var c any = ctx
	// Bounded so that a context that unwraps to itself cannot loop.
	for range 8 {
		if p, ok := c.(interface {
			TimerService() (ErasedTimerService, error)
		}); ok {
			s, err := p.TimerService()
			if err != nil {
				return nil, err
			}
			return typedTimers[K]{s: s, node: ctx.NodeName()}, nil
		}
		u, ok := c.(interface{ Unwrap() Context[any, any] })
		if !ok {
			break
		}
		c = u.Unwrap()
	}
	return nil, fmt.Errorf("processor %s: %w", ctx.NodeName(), ErrNoTimers)
}

type typedTimers[K any] struct {
	s    ErasedTimerService
	node string
}

func (t typedTimers[K]) current() (any, error) {
	k, ok := t.s.CurrentKey()
	if !ok {
		return nil, fmt.Errorf("processor %s: %w", t.node, ErrNoCurrentKey)
	}
	return k, nil
}

func (t typedTimers[K]) forCurrent(domain TimeDomain, time int64, del bool) error {
	k, err := t.current()
	if err != nil {
		return err
	}
	tm := Timer[any]{Key: k, Time: time, Domain: domain}
	if del {
		return t.s.Delete(tm)
	}
	return t.s.Register(tm)
}

func (t typedTimers[K]) RegisterEventTimeTimer(time int64) error {
	return t.forCurrent(EventTime, time, false)
}

func (t typedTimers[K]) RegisterProcessingTimeTimer(time int64) error {
	return t.forCurrent(ProcessingTime, time, false)
}

func (t typedTimers[K]) DeleteEventTimeTimer(time int64) error {
	return t.forCurrent(EventTime, time, true)
}

func (t typedTimers[K]) DeleteProcessingTimeTimer(time int64) error {
	return t.forCurrent(ProcessingTime, time, true)
}

func (t typedTimers[K]) Register(tm Timer[K]) error { return t.s.Register(eraseTimer(tm)) }

func (t typedTimers[K]) Delete(tm Timer[K]) error { return t.s.Delete(eraseTimer(tm)) }

func (t typedTimers[K]) CurrentKey() (K, bool) {
	k, ok := t.s.CurrentKey()
	if !ok {
		var zero K
		return zero, false
	}
	typed, err := As[K](k)
	if err != nil {
		return typed, false
	}
	return typed, true
}

func eraseTimer[K any](t Timer[K]) Timer[any] {
	return Timer[any]{Key: any(t.Key), Time: t.Time, Domain: t.Domain, Name: t.Name}
}

func narrowTimer[K any](node string, t Timer[any]) (Timer[K], error) {
	k, err := As[K](t.Key)
	if err != nil {
		return Timer[K]{}, fmt.Errorf("processor %s: timer key: %w", node, err)
	}
	return Timer[K]{Key: k, Time: t.Time, Domain: t.Domain, Name: t.Name}, nil
}

// OnTimerOf returns how the runtime delivers a timer to p, a processor as
// the runtime holds it, and false when p does not receive timers. Erasing
// a processor keeps its OnTimer reachable this way, as Unwrap does for the
// listener interfaces.
func OnTimerOf(p Untyped) (func(Timer[any]) error, bool) {
	if h, ok := p.(interface {
		timerHandler() (func(Timer[any]) error, bool)
	}); ok {
		return h.timerHandler()
	}
	if tp, ok := p.(TimerProcessor[any]); ok {
		return tp.OnTimer, true
	}
	return nil, false
}

// UsesEventTimeTimers reports whether p, or the processor it wraps,
// declares event-time timers (EventTimeTimerUser).
func UsesEventTimeTimers(p Untyped) bool {
	for _, x := range []any{p, Unwrap(p)} {
		if u, ok := x.(EventTimeTimerUser); ok && u.UsesEventTimeTimers() {
			return true
		}
	}
	return false
}

// PreservesKey reports whether p, or the processor it wraps, never changes
// the key of what it forwards (KeyPreserving).
func PreservesKey(p Untyped) bool {
	for _, x := range []any{p, Unwrap(p)} {
		if k, ok := x.(KeyPreserving); ok && k.PreservesKey() {
			return true
		}
	}
	return false
}

// LaneOf reports the lane the work in progress runs on, and the lane
// count, when ctx's runtime knows: the lane of the record being processed,
// or of the timer being fired. Tests use it to see that a timer fires on
// its key's lane.
func LaneOf(ctx any) (lane, lanes int, ok bool) {
	for range 8 {
		if l, isLaned := ctx.(interface{ Lane() (int, int, bool) }); isLaned {
			return l.Lane()
		}
		u, isWrapped := ctx.(interface{ Unwrap() Context[any, any] })
		if !isWrapped {
			break
		}
		ctx = u.Unwrap()
	}
	return 0, 0, false
}

// TimerLaneAffinityError is a proven lane split: a timer key whose bytes,
// under the timer key serde, pick another lane than the bytes the record
// being processed was laned by, so the key's timers would run beside its
// records. It is fatal (it bypasses processing.exception.handler), and a
// processor that catches it does not hide it: the runtime fails the
// record once that processor returns.
type TimerLaneAffinityError struct {
	// Node is the timer-aware processor.
	Node string
	// Check is what found the split: "guard" for a timer registered or
	// deleted for the key being processed, "sampled check" for the record
	// key re-serialised before Process.
	Check string
	// Key is the key, as the processor sees it.
	Key any
	// KeySerde names the timer key serde.
	KeySerde string
	// TimerKeyBytes are the key's bytes under the timer key serde, and
	// LaneBytes the bytes the record was laned by.
	TimerKeyBytes []byte
	LaneBytes     []byte
	TimerLane     int
	RecordLane    int
	Lanes         int
}

func (e *TimerLaneAffinityError) Error() string {
	return fmt.Sprintf("timer lane affinity (%s): processor %s: key %v: timer key serde %s writes %q, lane %d of %d, but the record was laned by %q, lane %d: this key's timers would run beside its records; declare the key serde on the source (topology.ConsumedWith)",
		e.Check, e.Node, e.Key, e.KeySerde, e.TimerKeyBytes, e.TimerLane, e.Lanes, e.LaneBytes, e.RecordLane)
}

// Fatal marks the error as one that processing.exception.handler may not
// skip (task.Fatal).
func (e *TimerLaneAffinityError) Fatal() bool { return true }

// Is makes errors.Is(err, ErrTimerLaneAffinity) true.
func (e *TimerLaneAffinityError) Is(target error) bool { return target == ErrTimerLaneAffinity }

// ErrTimerLaneAffinity matches every TimerLaneAffinityError with
// errors.Is.
var ErrTimerLaneAffinity = errors.New("timer lane affinity split")
