package topology

import (
	"errors"
	"fmt"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// Deserializer reads keys or values from bytes. Every serde.Serde is one.
type Deserializer[T any] interface {
	Deserialize(topic string, data []byte) (T, error)
}

// ErrDeserializerOnly is returned when something tries to write with a
// serde that was given as a deserializer only.
var ErrDeserializerOnly = errors.New("declared as a deserializer only, so it cannot serialize")

// ConsumedWithDeserializers is Kafka Streams' addSource(name,
// keyDeserializer, valueDeserializer, topics): the source reads its records
// with the given deserializers, but declares no serde. A deserializer can
// read a key but not write one, so nothing downstream takes its key serde
// from this source: the timer key serde of a processor behind it falls back
// to a serde declared downstream or to default.key.serde, and the
// timer-key-lane-affinity rule reports it. Prefer ConsumedWith.
//
// A key deserializer that is the bytes serde (serde.Bytes) counts as
// declaring it, since the bytes it reads are the bytes it would write. nil
// leaves the configured default.
func ConsumedWithDeserializers[K, V any](key Deserializer[K], value Deserializer[V]) Consumed[K, V] {
	c := Consumed[K, V]{keySerde: deserializerSerde(key), valueSerde: deserializerSerde(value)}
	_, c.keyDeserializerOnly = c.keySerde.(deserializerOnly[K])
	return c
}

func isBytesSerde(d any) bool {
	n, ok := d.(interface{ Name() string })
	return ok && n.Name() == serde.Bytes().Name()
}

// deserializerSerde wraps d as a serde whose Serialize fails, keeping d's
// name when it has one so errors and descriptions still name it.
func deserializerSerde[T any](d Deserializer[T]) serde.Serde[T] {
	if d == nil {
		return nil
	}
	if s, ok := d.(serde.Serde[T]); ok && isBytesSerde(d) {
		return s
	}
	name := fmt.Sprintf("%T", d)
	if n, ok := d.(interface{ Name() string }); ok {
		name = n.Name()
	}
	return deserializerOnly[T]{d: d, name: name}
}

type deserializerOnly[T any] struct {
	d    Deserializer[T]
	name string
}

func (s deserializerOnly[T]) Name() string { return s.name }

func (s deserializerOnly[T]) Serialize(string, T) ([]byte, error) {
	return nil, fmt.Errorf("serde %s: %w", s.name, ErrDeserializerOnly)
}

func (s deserializerOnly[T]) Deserialize(topic string, data []byte) (T, error) {
	return s.d.Deserialize(topic, data)
}

// Unwrap returns the deserializer, for serde.AvroSchemaOf and callers that
// reach a serde's options.
func (s deserializerOnly[T]) Unwrap() any { return s.d }
