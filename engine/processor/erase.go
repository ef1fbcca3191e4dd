package processor

import (
	"fmt"
	"reflect"
	"time"

	"github.com/stoatflow/stoatctl/engine/state"
)

// Untyped is a processor with its types erased, as the runtime holds it.
type Untyped = Processor[any, any, any, any]

// Supplier makes a fresh processor instance; the runtime calls it once per
// task (or lane) that runs the node.
type Supplier func() Untyped

// Supply erases a typed processor constructor for the topology.
func Supply[KIn, VIn, KOut, VOut any](f func() Processor[KIn, VIn, KOut, VOut]) Supplier {
	return func() Untyped { return Erase(f()) }
}

// SupplyFixedKey erases a typed fixed-key processor constructor.
func SupplyFixedKey[K, VIn, VOut any](f func() FixedKeyProcessor[K, VIn, VOut]) Supplier {
	return func() Untyped { return EraseFixedKey(f()) }
}

// Erase wraps a typed processor for the runtime.
func Erase[KIn, VIn, KOut, VOut any](p Processor[KIn, VIn, KOut, VOut]) Untyped {
	if u, ok := any(p).(Untyped); ok {
		return u
	}
	return &erased[KIn, VIn, KOut, VOut]{p: p}
}

// EraseFixedKey wraps a typed fixed-key processor for the runtime.
func EraseFixedKey[K, VIn, VOut any](p FixedKeyProcessor[K, VIn, VOut]) Untyped {
	return &erasedFixed[K, VIn, VOut]{p: p}
}

type erased[KIn, VIn, KOut, VOut any] struct {
	p    Processor[KIn, VIn, KOut, VOut]
	node string
}

func (e *erased[KIn, VIn, KOut, VOut]) Init(ctx Context[any, any]) error {
	e.node = ctx.NodeName()
	return e.p.Init(Typed[KOut, VOut](ctx))
}

func (e *erased[KIn, VIn, KOut, VOut]) Process(rec Record[any, any]) error {
	r, err := Narrow[KIn, VIn](rec)
	if err != nil {
		return fmt.Errorf("processor %s: %w", e.node, err)
	}
	return e.p.Process(r)
}

func (e *erased[KIn, VIn, KOut, VOut]) Close() error { return e.p.Close() }

// Listeners reports the event-time interfaces the wrapped processor has, so
// that erasing a processor does not hide them from the runtime.
func (e *erased[KIn, VIn, KOut, VOut]) Listeners() any { return e.p }

// timerHandler delivers timers to the wrapped processor's
// OnTimer(Timer[KIn]), converting the key at the edge (see OnTimerOf).
func (e *erased[KIn, VIn, KOut, VOut]) timerHandler() (func(Timer[any]) error, bool) {
	tp, ok := any(e.p).(TimerProcessor[KIn])
	if !ok {
		return nil, false
	}
	return func(t Timer[any]) error {
		typed, err := narrowTimer[KIn](e.node, t)
		if err != nil {
			return err
		}
		return tp.OnTimer(typed)
	}, true
}

type erasedFixed[K, VIn, VOut any] struct {
	p    FixedKeyProcessor[K, VIn, VOut]
	node string
}

func (e *erasedFixed[K, VIn, VOut]) Init(ctx Context[any, any]) error {
	e.node = ctx.NodeName()
	return e.p.Init(Typed[K, VOut](ctx))
}

func (e *erasedFixed[K, VIn, VOut]) Process(rec Record[any, any]) error {
	r, err := Narrow[K, VIn](rec)
	if err != nil {
		return fmt.Errorf("processor %s: %w", e.node, err)
	}
	return e.p.Process(r)
}

func (e *erasedFixed[K, VIn, VOut]) Close() error { return e.p.Close() }

// Listeners reports the wrapped processor, see erased.Listeners.
func (e *erasedFixed[K, VIn, VOut]) Listeners() any { return e.p }

// PreservesKey is true: a fixed-key processor cannot change the key, so
// the timer key serde resolution looks through it.
func (e *erasedFixed[K, VIn, VOut]) PreservesKey() bool { return true }

// timerHandler delivers timers to the wrapped processor's
// OnTimer(Timer[K]), see erased.timerHandler.
func (e *erasedFixed[K, VIn, VOut]) timerHandler() (func(Timer[any]) error, bool) {
	tp, ok := any(e.p).(TimerProcessor[K])
	if !ok {
		return nil, false
	}
	return func(t Timer[any]) error {
		typed, err := narrowTimer[K](e.node, t)
		if err != nil {
			return err
		}
		return tp.OnTimer(typed)
	}, true
}

// Unwrap returns the processor an erased one wraps (or p itself), for the
// runtime to find the listener interfaces it implements.
func Unwrap(p Untyped) any {
	if w, ok := p.(interface{ Listeners() any }); ok {
		return w.Listeners()
	}
	return p
}

// Narrow converts an erased record to a typed one. A nil key or value
// becomes the zero value; a value of another type is an error.
func Narrow[K, V any](rec Record[any, any]) (Record[K, V], error) {
	k, err := As[K](rec.Key)
	if err != nil {
		return Record[K, V]{}, fmt.Errorf("record key: %w", err)
	}
	v, err := As[V](rec.Value)
	if err != nil {
		return Record[K, V]{}, fmt.Errorf("record value: %w", err)
	}
	return Record[K, V]{Key: k, Value: v, Timestamp: rec.Timestamp, Headers: rec.Headers}, nil
}

// Widen erases a typed record's types.
func Widen[K, V any](rec Record[K, V]) Record[any, any] {
	return Record[any, any]{Key: any(rec.Key), Value: any(rec.Value), Timestamp: rec.Timestamp, Headers: rec.Headers}
}

// As converts an erased value to T: nil is T's zero value, a value of
// another type is an error naming both types.
func As[T any](x any) (T, error) {
	if x == nil {
		var zero T
		return zero, nil
	}
	t, ok := x.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("got %T, want %s", x, reflect.TypeFor[T]())
	}
	return t, nil
}

// Typed gives an erased context the types of a processor's output.
func Typed[KOut, VOut any](ctx Context[any, any]) Context[KOut, VOut] {
	if c, ok := any(ctx).(Context[KOut, VOut]); ok {
		return c
	}
	return typedContext[KOut, VOut]{ctx}
}

type typedContext[KOut, VOut any] struct{ Context[any, any] }

// Unwrap returns the erased context, so that helpers such as Timers reach
// the runtime methods a typed view does not show.
func (c typedContext[KOut, VOut]) Unwrap() Context[any, any] { return c.Context }

func (c typedContext[KOut, VOut]) Forward(rec Record[KOut, VOut]) {
	c.Context.Forward(Widen(rec))
}

func (c typedContext[KOut, VOut]) ForwardTo(rec Record[KOut, VOut], child string) {
	c.Context.ForwardTo(Widen(rec), child)
}

func (c typedContext[KOut, VOut]) Schedule(interval time.Duration, typ PunctuationType, p Punctuator) (Cancellable, error) {
	return c.Context.Schedule(interval, typ, p)
}

// storeGetter is the part of any Context the store helpers need.
type storeGetter interface {
	StateStore(name string) (any, error)
}

// KeyValueStore returns the typed key-value store called name.
func KeyValueStore[K, V any](ctx storeGetter, name string) (state.KeyValueStore[K, V], error) {
	return storeAs[state.KeyValueStore[K, V]](ctx, name)
}

// TimestampedKeyValueStore returns the typed timestamped store called name.
func TimestampedKeyValueStore[K, V any](ctx storeGetter, name string) (state.TimestampedKeyValueStore[K, V], error) {
	return storeAs[state.TimestampedKeyValueStore[K, V]](ctx, name)
}

// VersionedKeyValueStore returns the typed versioned store called name.
func VersionedKeyValueStore[K, V any](ctx storeGetter, name string) (state.VersionedKeyValueStore[K, V], error) {
	return storeAs[state.VersionedKeyValueStore[K, V]](ctx, name)
}

func storeAs[S any](ctx storeGetter, name string) (S, error) {
	var zero S
	s, err := ctx.StateStore(name)
	if err != nil {
		return zero, err
	}
	typed, ok := s.(S)
	if !ok {
		return zero, fmt.Errorf("state store %s is a %T, not a %s", name, s, reflect.TypeFor[S]())
	}
	return typed, nil
}
