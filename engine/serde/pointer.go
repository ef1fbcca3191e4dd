package serde

// Pointer makes a typed serde nullable: a nil *T serializes to nil bytes (a
// null, or a tombstone on a compacted topic) and nil bytes deserialize to a
// nil *T. The erased layer (Erase) already maps a nil any to nil bytes and
// back, so Pointer is for code that holds typed values, where a Serde[int64]
// has no way to say "no value". Two differences remain once a Pointer serde
// is erased: a (*T)(nil) stored in an any is not a nil any, so it reaches
// Pointer and still becomes nil bytes; and DeserializeAny of nil bytes
// returns an untyped nil, never a (*T)(nil), because the erased layer
// answers nulls before Pointer is asked.
//
// The name is the wrapped serde's, because the bytes are the same.
func Pointer[T any](s Serde[T]) Serde[*T] { return pointerSerde[T]{s} }

type pointerSerde[T any] struct{ s Serde[T] }

func (p pointerSerde[T]) Name() string { return p.s.Name() }

func (p pointerSerde[T]) Serialize(topic string, v *T) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return p.s.Serialize(topic, *v)
}

func (p pointerSerde[T]) Deserialize(topic string, data []byte) (*T, error) {
	if data == nil {
		return nil, nil
	}
	v, err := p.s.Deserialize(topic, data)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Unwrap returns the wrapped serde, so Same and AvroSchemaOf see through
// Pointer.
func (p pointerSerde[T]) Unwrap() any { return p.s }
