package window

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// timestampSize is the length of each big-endian timestamp in a windowed key.
const timestampSize = 8

// ErrKeyTooShort is wrapped by the DecodeError of a windowed key too short
// to hold its window timestamps.
var ErrKeyTooShort = errors.New("windowed key too short for its window")

// ErrNullKey is returned when the inner serializer turns a windowed key's key
// into null: a windowed key needs key bytes to put the window after.
var ErrNullKey = errors.New("inner serializer returned null")

// TimeWindowedSerde is Kafka Streams' TimeWindowedSerde: the inner key's
// bytes followed by the window start, 8 bytes big-endian. The end is not
// written; Deserialize computes it as start + windowSize, clamped to
// math.MaxInt64 as Kafka Streams' WindowKeySchema does, so windowSize must
// be the size of the windows that wrote the keys. Its name is
// "windowed(<inner>)". inner must not be nil.
func TimeWindowedSerde[K any](inner serde.Serde[K], windowSize int64) serde.Serde[Windowed[K]] {
	if inner == nil {
		panic("window: TimeWindowedSerde: inner serde is nil")
	}
	return timeWindowedSerde[K]{inner: inner, size: windowSize, name: "windowed(" + inner.Name() + ")"}
}

type timeWindowedSerde[K any] struct {
	inner serde.Serde[K]
	size  int64
	name  string
}

func (s timeWindowedSerde[K]) Name() string { return s.name }

func (s timeWindowedSerde[K]) Serialize(topic string, v Windowed[K]) ([]byte, error) {
	kb, err := serializeInner(s.name, s.inner, topic, v.Key)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(kb, uint64(v.Window.Start)), nil
}

func (s timeWindowedSerde[K]) Deserialize(topic string, data []byte) (Windowed[K], error) {
	n := len(data) - timestampSize
	if n < 0 {
		return Windowed[K]{}, shortKey(s.name, topic, len(data), timestampSize)
	}
	k, err := s.inner.Deserialize(topic, data[:n:n])
	if err != nil {
		return Windowed[K]{}, &serde.DecodeError{Serde: s.name, Topic: topic, Err: fmt.Errorf("key: %w", err)}
	}
	start := int64(binary.BigEndian.Uint64(data[n:]))
	return Windowed[K]{Key: k, Window: Window{Start: start, End: addSat(start, s.size)}}, nil
}

// SessionWindowedSerde is Kafka Streams' SessionWindowedSerde: the inner
// key's bytes, then the session end and then its start, each 8 bytes
// big-endian. Its name is "session-windowed(<inner>)". inner must not be
// nil.
func SessionWindowedSerde[K any](inner serde.Serde[K]) serde.Serde[Windowed[K]] {
	if inner == nil {
		panic("window: SessionWindowedSerde: inner serde is nil")
	}
	return sessionWindowedSerde[K]{inner: inner, name: "session-windowed(" + inner.Name() + ")"}
}

type sessionWindowedSerde[K any] struct {
	inner serde.Serde[K]
	name  string
}

func (s sessionWindowedSerde[K]) Name() string { return s.name }

func (s sessionWindowedSerde[K]) Serialize(topic string, v Windowed[K]) ([]byte, error) {
	kb, err := serializeInner(s.name, s.inner, topic, v.Key)
	if err != nil {
		return nil, err
	}
	kb = binary.BigEndian.AppendUint64(kb, uint64(v.Window.End))
	return binary.BigEndian.AppendUint64(kb, uint64(v.Window.Start)), nil
}

func (s sessionWindowedSerde[K]) Deserialize(topic string, data []byte) (Windowed[K], error) {
	n := len(data) - 2*timestampSize
	if n < 0 {
		return Windowed[K]{}, shortKey(s.name, topic, len(data), 2*timestampSize)
	}
	k, err := s.inner.Deserialize(topic, data[:n:n])
	if err != nil {
		return Windowed[K]{}, &serde.DecodeError{Serde: s.name, Topic: topic, Err: fmt.Errorf("key: %w", err)}
	}
	end := int64(binary.BigEndian.Uint64(data[n:]))
	start := int64(binary.BigEndian.Uint64(data[n+timestampSize:]))
	return Windowed[K]{Key: k, Window: Window{Start: start, End: end}}, nil
}

// InnerKeySuffix tells a windowed key serde (TimeWindowedSerde,
// SessionWindowedSerde, erased or not) and how many bytes its keys carry
// after the inner key: 8 (the start) or 16 (end and start). A sink with
// such a key serde partitions by the inner key's bytes, as Kafka Streams'
// WindowedStreamPartitioner does (it hashes serializeBaseKey), so that
// every window of one key lands where the key's other records do.
func InnerKeySuffix(s serde.Any) (int, bool) {
	if w, ok := serde.Underlying(s).(interface{ innerKeySuffix() int }); ok {
		return w.innerKeySuffix(), true
	}
	return 0, false
}

func (timeWindowedSerde[K]) innerKeySuffix() int    { return timestampSize }
func (sessionWindowedSerde[K]) innerKeySuffix() int { return 2 * timestampSize }

// serializeInner serializes the key into a slice with room for the window
// suffix, copying so the inner serializer's buffer (Bytes returns its input)
// is never appended to. The inner bytes are only read, so they may be a
// view of the key (serde.SerializeView): a String key is copied once.
func serializeInner[K any](name string, inner serde.Serde[K], topic string, k K) ([]byte, error) {
	kb, err := serde.SerializeView(inner, topic, k)
	if err != nil {
		return nil, fmt.Errorf("serialize with serde %s: key: %w", name, err)
	}
	if kb == nil {
		return nil, fmt.Errorf("serialize with serde %s: key: %w", name, ErrNullKey)
	}
	out := make([]byte, len(kb), len(kb)+2*timestampSize)
	copy(out, kb)
	return out, nil
}

func shortKey(name, topic string, got, want int) error {
	return &serde.DecodeError{Serde: name, Topic: topic,
		Err: fmt.Errorf("%d bytes, need at least %d: %w", got, want, ErrKeyTooShort)}
}
