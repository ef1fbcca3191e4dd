package dsl

import (
	"errors"
	"fmt"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// The serdes of what crosses a foreign-key join's boundaries. The live
// engine hands the values over in memory; the test driver captures them
// serialized (under the boundaries' topic names) and reads them back, so
// they round-trip. The layouts are this engine's own: Kafka Streams'
// subscription and response topics carry its SubscriptionWrapper and
// SubscriptionResponseWrapper, and no Kafka Streams application reads
// ours. Every layout starts with a version byte, 1.
//
//	subscription  version, instruction, hash length (0 or 16), hash, left key bytes
//	response      version, hash length, hash, 0 (no right value) or 1 and the right value
//	primary       version, answer-null (0 or 1), 0 (no left value) or 1 and the left value

const fkLayoutV1 byte = 1

var errFKLayout = errors.New("malformed foreign-key join record")

type fkSubscriptionSerde struct{}

func (fkSubscriptionSerde) Name() string { return "fk-subscription" }

func (s fkSubscriptionSerde) SerializeAny(_ string, v any) ([]byte, error) {
	sub, ok := v.(fkSubscription)
	if !ok {
		return nil, fmt.Errorf("%w %s: got %T", serde.ErrWrongType, s.Name(), v)
	}
	out := make([]byte, 0, 3+len(sub.hash)+len(sub.primaryKey))
	out = append(out, fkLayoutV1, byte(sub.instruction), byte(len(sub.hash)))
	return append(append(out, sub.hash...), sub.primaryKey...), nil
}

func (s fkSubscriptionSerde) DeserializeAny(_ string, data []byte) (any, error) {
	if len(data) < 3 || data[0] != fkLayoutV1 || data[1] > byte(fkPropagateOnlyIfFound) || len(data) < 3+int(data[2]) {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
	}
	n := int(data[2])
	sub := fkSubscription{instruction: fkInstruction(data[1]), primaryKey: append([]byte{}, data[3+n:]...)}
	if n > 0 {
		sub.hash = append([]byte{}, data[3:3+n]...)
	}
	return sub, nil
}

type fkResponseSerde struct{ inner serde.Any }

func (s fkResponseSerde) Name() string { return "fk-response(" + s.inner.Name() + ")" }

func (s fkResponseSerde) SerializeAny(topic string, v any) ([]byte, error) {
	r, ok := v.(fkResponse)
	if !ok {
		return nil, fmt.Errorf("%w %s: got %T", serde.ErrWrongType, s.Name(), v)
	}
	out := append([]byte{fkLayoutV1, byte(len(r.hash))}, r.hash...)
	return fkAppendValue(out, s.inner, topic, r.foreign)
}

func (s fkResponseSerde) DeserializeAny(topic string, data []byte) (any, error) {
	if len(data) < 2 || data[0] != fkLayoutV1 || len(data) < 2+int(data[1]) {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
	}
	n := int(data[1])
	var r fkResponse
	if n > 0 {
		r.hash = append([]byte{}, data[2:2+n]...)
	}
	v, err := fkReadValue(s.inner, topic, data[2+n:])
	if err != nil {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), err)
	}
	r.foreign = v
	return r, nil
}

type fkPrimarySerde struct{ inner serde.Any }

func (s fkPrimarySerde) Name() string { return "fk-primary(" + s.inner.Name() + ")" }

func (s fkPrimarySerde) SerializeAny(topic string, v any) ([]byte, error) {
	p, ok := v.(fkPrimary)
	if !ok {
		return nil, fmt.Errorf("%w %s: got %T", serde.ErrWrongType, s.Name(), v)
	}
	flag := byte(0)
	if p.answerNull {
		flag = 1
	}
	return fkAppendValue([]byte{fkLayoutV1, flag}, s.inner, topic, p.value)
}

func (s fkPrimarySerde) DeserializeAny(topic string, data []byte) (any, error) {
	if len(data) < 2 || data[0] != fkLayoutV1 || data[1] > 1 {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
	}
	v, err := fkReadValue(s.inner, topic, data[2:])
	if err != nil {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), err)
	}
	return fkPrimary{value: v, answerNull: data[1] == 1}, nil
}

// fkAppendValue appends 0 for a null value, else 1 and its bytes.
func fkAppendValue(out []byte, inner serde.Any, topic string, v any) ([]byte, error) {
	if v == nil {
		return append(out, 0), nil
	}
	b, err := inner.SerializeAny(topic, v)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return append(out, 0), nil
	}
	return append(append(out, 1), b...), nil
}

func fkReadValue(inner serde.Any, topic string, data []byte) (any, error) {
	if len(data) == 0 || data[0] > 1 {
		return nil, errFKLayout
	}
	if data[0] == 0 {
		if len(data) > 1 {
			return nil, errFKLayout
		}
		return nil, nil
	}
	return inner.DeserializeAny(topic, data[1:])
}
