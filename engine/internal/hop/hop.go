package hop

import (
	"reflect"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// Target is a plain sink, offered to its only parent.
type Target struct {
	Topic      string
	ValueSerde serde.Any
	// Failed reports that the record being processed has already failed
	// downstream of an earlier write: the sink does not run for it, as a
	// forwarded record would not reach it.
	Failed func() bool
	// Head is the sink's work before the value, for a record with key
	// and timestamp: the timestamp's check and the key's encoding, k, and
	// whether k is the bytes the record was laned by (passed). ok is
	// false when it failed; the error is charged to the sink node.
	Head func(key any, timestamp int64) (k []byte, passed, ok bool)
	// Finish is the sink's work after the value, which encoded to value
	// or failed to with err: the error (charged to the sink node) or the
	// write.
	Finish func(k []byte, passed bool, value []byte, err error, timestamp int64, headers processor.Headers)
}

// Offerer is a processor context that can offer its node's only child as
// a target; ok is false when the node has other children or the child is
// not a plain sink.
type Offerer interface {
	SinkTarget() (t Target, ok bool)
}

// Sink writes a record of value type V through a hop.
type Sink[V any] func(key any, value V, timestamp int64, headers processor.Headers)

// ToSink returns the hop from ctx's node to its sink, or nil where the
// node must forward: ctx offers no target, V is an interface type (the
// erased sink writes a nil interface as a null without asking the serde),
// or the sink's value serde is not a Serde[V] (the erased sink reports
// the mismatch, or the serde takes values of many types).
func ToSink[V any](ctx any) Sink[V] {
	o, ok := ctx.(Offerer)
	if !ok || reflect.TypeFor[V]().Kind() == reflect.Interface {
		return nil
	}
	t, ok := o.SinkTarget()
	if !ok {
		return nil
	}
	s, ok := serde.Typed[V](t.ValueSerde)
	if !ok {
		return nil
	}
	topic, failed, head, finish := t.Topic, t.Failed, t.Head, t.Finish
	return func(key any, value V, timestamp int64, headers processor.Headers) {
		if failed() {
			return
		}
		k, passed, ok := head(key, timestamp)
		if !ok {
			return
		}
		b, err := s.Serialize(topic, value)
		finish(k, passed, b, err, timestamp, headers)
	}
}
