package hop

import (
	"reflect"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// Target is a plain sink, offered to its only parent. Its functions do
// the sink's work around the encoding of the key and the value, in the
// sink's order, and charge its errors to the sink node.
type Target struct {
	Topic      string
	KeySerde   serde.Any
	ValueSerde serde.Any
	// Failed reports that the record being processed has already failed
	// downstream of an earlier write: the sink does not run for it, as a
	// forwarded record would not reach it.
	Failed func() bool
	// Stamp checks a record's timestamp before anything is encoded; false
	// when it failed.
	Stamp func(timestamp int64) bool
	// PassKey returns the bytes the record being processed was laned by
	// when key is the key the source decoded from them and the sink
	// writes keys with the String serde: the sink writes them as they
	// came (passed), without encoding.
	PassKey func(key string) (b []byte, passed bool)
	// KeyFailed and ValueFailed charge an encoding error.
	KeyFailed, ValueFailed func(err error)
	// Send writes the encoded record.
	Send func(k []byte, passed bool, v []byte, timestamp int64, headers processor.Headers)
}

// Offerer is a processor context that can offer its node's only child as
// a target; ok is false when the node has other children or the child is
// not a plain sink.
type Offerer interface {
	SinkTarget() (t Target, ok bool)
}

// Sink writes a record through a hop. null says the record has no key
// (key is then K's zero value).
type Sink[K, V any] func(key K, null bool, value V, timestamp int64, headers processor.Headers)

// ToSink returns the hop from ctx's node to its sink, or nil where the
// node must forward: ctx offers no target, K or V is an interface type
// (the erased sink writes a nil interface as a null without asking the
// serde), or the sink's serdes are not a Serde[K] and a Serde[V] (the
// erased sink reports the mismatch, or the serde takes values of many
// types).
func ToSink[K, V any](ctx any) Sink[K, V] {
	o, ok := ctx.(Offerer)
	if !ok || isInterface[K]() || isInterface[V]() {
		return nil
	}
	t, ok := o.SinkTarget()
	if !ok {
		return nil
	}
	ks, ok := serde.Typed[K](t.KeySerde)
	if !ok {
		return nil
	}
	vs, ok := serde.Typed[V](t.ValueSerde)
	if !ok {
		return nil
	}
	topic := t.Topic
	return func(key K, null bool, value V, timestamp int64, headers processor.Headers) {
		if t.Failed() || !t.Stamp(timestamp) {
			return
		}
		var k []byte
		passed := false
		if !null {
			if s, ok := any(key).(string); ok {
				k, passed = t.PassKey(s)
			}
			if !passed {
				var err error
				if k, err = ks.Serialize(topic, key); err != nil {
					t.KeyFailed(err)
					return
				}
			}
		}
		v, err := vs.Serialize(topic, value)
		if err != nil {
			t.ValueFailed(err)
			return
		}
		t.Send(k, passed, v, timestamp, headers)
	}
}

// Entry is a node's typed input from the source before it. The runtime
// calls Decode, then, when it decoded, Process; between the two it may
// ask for the record as the erased path has it (Erased).
type Entry interface {
	// Decode decodes a record's key and value with the source's serdes,
	// the key first, as the erased path does; the value may share the
	// bytes (serde.Borrowing). inKey says the key failed.
	Decode(topic string, key, value []byte) (inKey bool, err error)
	// SourceKey is the decoded key, when it is a string.
	SourceKey() (key string, ok bool)
	// Erased is the decoded key and value as the erased path has them: a
	// null one is a nil interface.
	Erased() (key, value any)
	// Process runs the node on the decoded record.
	Process(timestamp int64, headers processor.Headers) error
}

// Taker is a processor that can take its records through an entry from
// the source before it, whose serdes are keySerde and valueSerde.
type Taker interface {
	Entry(keySerde, valueSerde serde.Any) (e Entry, ok bool)
}

// NewEntry returns an entry that decodes with keySerde and valueSerde and
// runs process, or false when they are not a Serde[K] and a Serde[V], or
// K or V is an interface type. process receives a null key as K's zero
// value and null true, a null value as V's zero value, as the erased
// path's narrowing gives them.
func NewEntry[K, V any](keySerde, valueSerde serde.Any, process func(key K, null bool, value V, timestamp int64, headers processor.Headers) error) (Entry, bool) {
	if isInterface[K]() || isInterface[V]() {
		return nil, false
	}
	ks, ok := serde.Typed[K](keySerde)
	if !ok {
		return nil, false
	}
	vs, ok := serde.Typed[V](valueSerde)
	if !ok {
		return nil, false
	}
	e := &entry[K, V]{ks: ks, vs: vs, process: process}
	e.borrow, _ = vs.(serde.Borrowing[V])
	return e, true
}

type entry[K, V any] struct {
	ks      serde.Serde[K]
	vs      serde.Serde[V]
	borrow  serde.Borrowing[V]
	process func(K, bool, V, int64, processor.Headers) error
	// The record Decode decoded.
	key                K
	value              V
	keyNull, valueNull bool
}

func (e *entry[K, V]) Decode(topic string, key, value []byte) (bool, error) {
	var zk K
	var zv V
	e.key, e.value = zk, zv
	e.keyNull, e.valueNull = key == nil, value == nil
	var err error
	if key != nil {
		if e.key, err = e.ks.Deserialize(topic, key); err != nil {
			return true, err
		}
	}
	switch {
	case value == nil:
	case e.borrow != nil:
		e.value, err = e.borrow.DeserializeBorrowed(topic, value)
	default:
		e.value, err = e.vs.Deserialize(topic, value)
	}
	return false, err
}

func (e *entry[K, V]) SourceKey() (string, bool) {
	if e.keyNull {
		return "", false
	}
	s, ok := any(e.key).(string)
	return s, ok
}

func (e *entry[K, V]) Erased() (key, value any) {
	if !e.keyNull {
		key = e.key
	}
	if !e.valueNull {
		value = e.value
	}
	return key, value
}

func (e *entry[K, V]) Process(timestamp int64, headers processor.Headers) error {
	return e.process(e.key, e.keyNull, e.value, timestamp, headers)
}

func isInterface[T any]() bool { return reflect.TypeFor[T]().Kind() == reflect.Interface }
