package dsl

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// TestFKAnswerRoundTrip: the response and primary records share one
// topic under stoatflow.topology.rekey=topic, so one serde writes and
// reads both, nulls included.
func TestFKAnswerRoundTrip(t *testing.T) {
	s := fkAnswerSerde{values: serde.Erase(serde.String()), foreignValues: serde.Erase(serde.String())}
	hash := bytes.Repeat([]byte{7}, 16)
	for _, v := range []any{
		fkResponse{hash: hash, foreign: "customer-1"},
		fkResponse{hash: hash},
		fkResponse{},
		fkPrimary{value: "item-1|c1"},
		fkPrimary{value: "item-1|c1", answerNull: true},
		fkPrimary{answerNull: true},
		fkResponse{hash: hash, clears: true},
		fkResponse{clears: true},
	} {
		b, err := s.SerializeAny("t", v)
		if err != nil {
			t.Fatalf("serialize %#v: %v", v, err)
		}
		got, err := s.DeserializeAny("t", b)
		if err != nil {
			t.Fatalf("deserialize %x (%#v): %v", b, v, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("%x: got %#v, want %#v", b, got, v)
		}
	}
	if _, err := s.SerializeAny("t", fkResponse{clears: true, foreign: "x"}); err == nil {
		t.Error("a response that clears and carries a value: no error")
	}
	if _, err := s.SerializeAny("t", fkSubscription{}); !errors.Is(err, serde.ErrWrongType) {
		t.Errorf("a subscription: %v, want ErrWrongType", err)
	}
	for _, b := range [][]byte{nil, {1}, {1, 0}, {2, 0, 0, 0}, {1, 2, 0, 0}, {1, 0, 16, 0}, {1, 1, 2, 0}, {1, 2, 1}, {1, 2, 0, 0}, {1, 3, 0}, {1, 1, 0, 0, 9}} {
		if _, err := s.DeserializeAny("t", b); !errors.Is(err, errFKLayout) {
			t.Errorf("%x: %v, want errFKLayout", b, err)
		}
	}
}

// FuzzFKAnswer decodes a response topic's values, which come from a
// topic anyone may write: no input panics, and what decodes encodes back
// to the same bytes.
func FuzzFKAnswer(f *testing.F) {
	s := fkAnswerSerde{values: serde.Erase(serde.String()), foreignValues: serde.Erase(serde.String())}
	for _, v := range []any{fkResponse{hash: []byte{1, 2}, foreign: "x"}, fkPrimary{value: "y", answerNull: true}, fkResponse{}} {
		b, err := s.SerializeAny("t", v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, s, b) })
}

// FuzzFKSubscription decodes a subscription topic's values: no input
// panics, and what decodes encodes back to the same bytes.
func FuzzFKSubscription(f *testing.F) {
	var s fkSubscriptionSerde
	b, err := s.SerializeAny("t", fkSubscription{instruction: fkPropagateNull, hash: []byte{1, 2, 3}, primaryKey: []byte("o1")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, s, b) })
}

// roundTrip decodes b with s and, when that succeeds, requires the value
// to encode back to b.
func roundTrip(t *testing.T, s serde.Any, b []byte) {
	v, err := s.DeserializeAny("t", b)
	if err != nil {
		return
	}
	again, err := s.SerializeAny("t", v)
	if err != nil {
		t.Fatalf("%x decoded to %#v, which does not encode: %v", b, v, err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("%x decoded to %#v, which encodes to %x", b, v, again)
	}
}
