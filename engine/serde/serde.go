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
	return erased[T]{s}
}

type erased[T any] struct{ s Serde[T] }

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

// Unwrap returns the typed serde behind an erased one, for callers that
// need to compare serdes or reach their options.
func (e erased[T]) Unwrap() any { return e.s }
