package dsl

import (
	"errors"
	"fmt"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// The serdes of what crosses a foreign-key join's boundaries. In memory
// the live engine hands the values over as they are; the test driver
// captures them serialized (under the boundaries' topic names) and reads
// them back, so they round-trip; through repartition topics they are
// these bytes. The layouts are this engine's own: Kafka Streams'
// subscription and response topics carry its SubscriptionWrapper and
// SubscriptionResponseWrapper, and no Kafka Streams application reads
// ours (migrate requires Kafka Streams' to be drained). Every layout
// starts with a version byte, 1; the response and primary layouts share
// a topic, told apart by a kind byte after it.
//
//	subscription  version, instruction, hash length (0 or 16), hash, left key bytes
//	response      version, 0, hash length, hash, 0 (no right value) or 1 and the right value
//	primary       version, 1, answer-null (0 or 1), 0 (no left value) or 1 and the left value
//	clear         version, 2, hash length, hash

const fkLayoutV1 byte = 1

// The kinds of record in the response topic: an answer, the left
// table's copy, and an answer that only clears (fkResponse.clears).
const (
	fkKindResponse byte = 0
	fkKindPrimary  byte = 1
	fkKindClear    byte = 2
)

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

// fkAnswerSerde is the value serde of the response and primary
// boundaries: through topics both cross in the response topic
// (topology.Boundary.Joins), so either reads the other's records.
type fkAnswerSerde struct{ values, foreignValues serde.Any }

func (s fkAnswerSerde) Name() string {
	return "fk-answer(" + s.values.Name() + ", " + s.foreignValues.Name() + ")"
}

func (s fkAnswerSerde) SerializeAny(topic string, v any) ([]byte, error) {
	switch v := v.(type) {
	case fkResponse:
		if v.clears {
			if v.foreign != nil {
				return nil, fmt.Errorf("%s: a response that clears carries no right value", s.Name())
			}
			return append([]byte{fkLayoutV1, fkKindClear, byte(len(v.hash))}, v.hash...), nil
		}
		out := append([]byte{fkLayoutV1, fkKindResponse, byte(len(v.hash))}, v.hash...)
		return fkAppendValue(out, s.foreignValues, topic, v.foreign)
	case fkPrimary:
		flag := byte(0)
		if v.answerNull {
			flag = 1
		}
		return fkAppendValue([]byte{fkLayoutV1, fkKindPrimary, flag}, s.values, topic, v.value)
	}
	return nil, fmt.Errorf("%w %s: got %T", serde.ErrWrongType, s.Name(), v)
}

func (s fkAnswerSerde) DeserializeAny(topic string, data []byte) (any, error) {
	if len(data) < 3 || data[0] != fkLayoutV1 {
		return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
	}
	switch data[1] {
	case fkKindClear:
		n := int(data[2])
		if len(data) != 3+n {
			return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
		}
		r := fkResponse{clears: true}
		if n > 0 {
			r.hash = append([]byte{}, data[3:]...)
		}
		return r, nil
	case fkKindResponse:
		n := int(data[2])
		if len(data) < 3+n {
			return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
		}
		var r fkResponse
		if n > 0 {
			r.hash = append([]byte{}, data[3:3+n]...)
		}
		v, err := fkReadValue(s.foreignValues, topic, data[3+n:])
		if err != nil {
			return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), err)
		}
		r.foreign = v
		return r, nil
	case fkKindPrimary:
		if data[2] > 1 {
			return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
		}
		v, err := fkReadValue(s.values, topic, data[3:])
		if err != nil {
			return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), err)
		}
		return fkPrimary{value: v, answerNull: data[2] == 1}, nil
	}
	return nil, fmt.Errorf("deserialize with serde %s: %w", s.Name(), errFKLayout)
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
