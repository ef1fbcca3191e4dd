package serde

import (
	"errors"
	"fmt"
)

// Serde turns values of type T into bytes and back. A nil byte slice is a
// null (a tombstone on a topic); it never reaches Serialize or Deserialize:
// the erased layer (Any) handles it, so implementations only see real data.
type Serde[T any] interface {
	// Name identifies the serde in error messages, descriptions and the
	// timer-key resolution rules ("string", "int64", "json", "avro", ...).
	Name() string
	Serialize(topic string, v T) ([]byte, error)
	Deserialize(topic string, data []byte) (T, error)
}

// Any is a Serde with its type erased, as the runtime holds it. A nil value
// serializes to nil bytes and nil bytes deserialize to a nil value, so nulls
// survive every serde.
type Any interface {
	Name() string
	SerializeAny(topic string, v any) ([]byte, error)
	DeserializeAny(topic string, data []byte) (any, error)
}

// ErrWrongType is returned by an erased serde handed a value of another type.
var ErrWrongType = errors.New("value has the wrong type for serde")

// Erase wraps a typed serde for the runtime. Erasing an already erased serde
// (an Any that is also a Serde[any]) returns it unchanged.
func Erase[T any](s Serde[T]) Any {
	if s == nil {
		return nil
	}
	if a, ok := any(s).(Any); ok {
		return a
	}
	e := erased[T]{s: s}
	e.borrow, _ = s.(Borrowing[T])
	return e
}

// erased is a Serde[T] as an Any. borrow is s as a Borrowing, nil when
// it is not one: asserted once here, because in generic code the
// assertion is a runtime itab lookup, which once a source record was a
// few per cent of a stateless lane's time.
type erased[T any] struct {
	s      Serde[T]
	borrow Borrowing[T]
}

func (e erased[T]) Name() string { return e.s.Name() }

func (e erased[T]) SerializeAny(topic string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	t, ok := v.(T)
	if !ok {
		return nil, fmt.Errorf("%w %s: got %T", ErrWrongType, e.s.Name(), v)
	}
	return e.s.Serialize(topic, t)
}

func (e erased[T]) DeserializeAny(topic string, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	return e.s.Deserialize(topic, data)
}

// Borrowing is a serde that can decode without copying: the value
// DeserializeBorrowed returns may share data's memory. Callers use it only
// for bytes that nothing writes again and that may live as long as the
// value, as a fetched record's do.
type Borrowing[T any] interface {
	DeserializeBorrowed(topic string, data []byte) (T, error)
}

// DeserializeBorrowed decodes data with s, sharing data's memory where s
// is Borrowing, copying as DeserializeAny does where it is not. A nil data
// is a nil value, as for DeserializeAny.
func DeserializeBorrowed(s Any, topic string, data []byte) (any, error) {
	if b, ok := s.(borrowingAny); ok {
		return b.deserializeBorrowedAny(topic, data)
	}
	return s.DeserializeAny(topic, data)
}

// Viewing is a serde that can encode without copying: the bytes
// SerializeView returns may share v's memory. Callers must never write to
// them; keeping them is safe, as they keep v's memory alive.
type Viewing[T any] interface {
	SerializeView(topic string, v T) ([]byte, error)
}

// SerializeView encodes v with s, sharing v's memory where s is Viewing,
// as Serialize does where it is not. The caller must not write to the
// bytes: a store key built from them is copied, a changelog key is not
// written to.
func SerializeView[T any](s Serde[T], topic string, v T) ([]byte, error) {
	if w, ok := s.(Viewing[T]); ok {
		return w.SerializeView(topic, v)
	}
	return s.Serialize(topic, v)
}

// Appending is a serde that can encode onto the end of a buffer, so that
// a caller who puts the bytes behind a prefix of its own (a timestamped
// store's timestamp) allocates once for both. An Appending serde never
// encodes a value as null.
type Appending[T any] interface {
	AppendSerialize(dst []byte, topic string, v T) ([]byte, error)
}

type borrowingAny interface {
	deserializeBorrowedAny(topic string, data []byte) (any, error)
}

func (e erased[T]) deserializeBorrowedAny(topic string, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if e.borrow != nil {
		return e.borrow.DeserializeBorrowed(topic, data)
	}
	return e.s.Deserialize(topic, data)
}

// Underlying returns the serde a was erased from (a Serde[T] of some T),
// or a itself when it is not an erasure: for code that asks what kind of
// serde a sink holds without knowing its type (window.InnerKeySuffix).
func Underlying(a Any) any {
	if u, ok := a.(interface{ underlying() any }); ok {
		return u.underlying()
	}
	return a
}

func (e erased[T]) underlying() any { return e.s }

// Typed returns the Serde[T] that a was erased from; false when a is not
// the erasure of a Serde[T] (another type, or an Any written as one).
func Typed[T any](a Any) (Serde[T], bool) {
	e, ok := a.(erased[T])
	if !ok {
		return nil, false
	}
	return e.s, true
}

// Unwrap returns the typed serde behind an erased one, for callers that
// need to compare serdes or reach their options.
func (e erased[T]) Unwrap() any { return e.s }
