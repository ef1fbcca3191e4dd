package serde

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// JSON encodes values with encoding/json. HTML escaping is off so that the
// bytes match what JVM JSON libraries write for the same document ("<" not
// "\u003c"): keys that differ only in escaping would hash to different
// partitions. Decoding rejects trailing data after the document.
func JSON[T any]() Serde[T] {
	t := reflect.TypeFor[T]()
	name := t.String()
	if t.Kind() == reflect.Interface && t.NumMethod() == 0 {
		name = "any"
	}
	return jsonSerde[T]{typeName: name}
}

// JSONAny decodes any JSON document into plain Go values: objects become
// map[string]any, arrays []any, numbers float64, strings string, booleans
// bool and null a nil any (which is not the same as a null record: the
// record had the four bytes "null").
func JSONAny() Serde[any] { return JSON[any]() }

type jsonSerde[T any] struct{ typeName string }

func (jsonSerde[T]) Name() string { return "json" }

func (s jsonSerde[T]) Serialize(_ string, v T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("serialize with serde json: encode %s: %w", s.typeName, err)
	}
	// Encoder terminates each document with a newline; a record is one
	// document, and json.Marshal would not add it either.
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func (s jsonSerde[T]) Deserialize(topic string, data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		var zero T
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			err = fmt.Errorf("invalid json at byte offset %d: %w", syn.Offset, err)
		}
		return zero, decodeError("json", topic, fmt.Errorf("decode json into %s: %w", s.typeName, err))
	}
	return v, nil
}
