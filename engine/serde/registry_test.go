package serde_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/stoatflow/stoatctl/engine/serde"
)

func TestByName(t *testing.T) {
	const k = "org.apache.kafka.common.serialization.Serdes$"
	tests := []struct {
		name, canonical string
		value           any
		hex             []byte
	}{
		{"string", "string", "a", []byte{'a'}},
		{"bytes", "bytes", []byte{1}, []byte{1}},
		{"int16", "int16", int16(1), []byte{0, 1}},
		{"int32", "int32", int32(1), []byte{0, 0, 0, 1}},
		{"int64", "int64", int64(1), []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{"long", "int64", int64(1), []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{"float32", "float32", float32(1.5), []byte{0x3f, 0xc0, 0, 0}},
		{"float64", "float64", 1.5, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{"double", "float64", 1.5, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{"bool", "bool", true, []byte{1}},
		{"uuid", "uuid", "00000000-0000-0000-0000-000000000001", []byte("00000000-0000-0000-0000-000000000001")},
		{"json", "json", map[string]any{"a": 1.0}, []byte(`{"a":1}`)},
		{k + "StringSerde", "string", "a", []byte{'a'}},
		{k + "ByteArraySerde", "bytes", []byte{1}, []byte{1}},
		{k + "ShortSerde", "int16", int16(1), []byte{0, 1}},
		{k + "IntegerSerde", "int32", int32(1), []byte{0, 0, 0, 1}},
		{k + "LongSerde", "int64", int64(1), []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{k + "FloatSerde", "float32", float32(1.5), []byte{0x3f, 0xc0, 0, 0}},
		{k + "DoubleSerde", "float64", 1.5, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{k + "BooleanSerde", "bool", true, []byte{1}},
		{k + "UUIDSerde", "uuid", "00000000-0000-0000-0000-000000000001", []byte("00000000-0000-0000-0000-000000000001")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := serde.ByName(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tt.canonical {
				t.Errorf("Name() = %q, want %q", s.Name(), tt.canonical)
			}
			b, err := s.SerializeAny("t", tt.value)
			if err != nil || !bytes.Equal(b, tt.hex) {
				t.Errorf("SerializeAny(%v) = % x, %v; want % x", tt.value, b, err, tt.hex)
			}
		})
	}
	if got := serde.Names(); len(got) != len(tests) || !slices.IsSorted(got) {
		t.Errorf("Names() = %v: want %d sorted names", got, len(tests))
	}
}

func TestByNameUnknown(t *testing.T) {
	_, err := serde.ByName("avro")
	if err == nil {
		t.Fatal("ByName(avro) must fail: avro needs a schema")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, `unknown serde "avro" (known: bool, bytes, double, `) ||
		!strings.Contains(msg, "org.apache.kafka.common.serialization.Serdes$LongSerde") {
		t.Errorf("error = %q", msg)
	}
}

func TestSame(t *testing.T) {
	long, _ := serde.ByName("long")
	kafkaLong, _ := serde.ByName("org.apache.kafka.common.serialization.Serdes$LongSerde")
	v1 := avro.MustParse(schemaV1)
	v1Again := avro.MustParse(schemaV1)
	v2, err := serde.AvroFromFile[tV2]("testdata/t_v2.avsc", 8)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		a, b serde.Any
		want bool
	}{
		{"same builtin", serde.Erase(serde.Int64()), serde.Erase(serde.Int64()), true},
		{"alias", long, kafkaLong, true},
		{"alias and typed", long, serde.Erase(serde.Int64()), true},
		{"pointer", serde.Erase(serde.Pointer(serde.Int64())), long, true},
		{"different", serde.Erase(serde.Int64()), serde.Erase(serde.Int32()), false},
		{"json types", serde.Erase(serde.JSON[order]()), serde.Erase(serde.JSONAny()), true},
		{"avro same", serde.Erase(serde.Avro[tV1](v1, 7)), serde.Erase(serde.AvroGeneric(v1Again, 7)), true},
		{"avro other id", serde.Erase(serde.Avro[tV1](v1, 7)), serde.Erase(serde.Avro[tV1](v1, 9)), false},
		{"avro other schema", serde.Erase(serde.Avro[tV1](v1, 8)), serde.Erase(v2), false},
		{"avro pointer", serde.Erase(serde.Pointer(serde.Avro[tV1](v1, 7))), serde.Erase(serde.Avro[tV1](v1, 7)), true},
		{"avro and json", serde.Erase(serde.Avro[tV1](v1, 7)), serde.Erase(serde.JSONAny()), false},
		{"nil nil", nil, nil, true},
		{"nil and one", nil, long, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serde.Same(tt.a, tt.b); got != tt.want {
				t.Errorf("Same = %v, want %v", got, tt.want)
			}
			if got := serde.Same(tt.b, tt.a); got != tt.want {
				t.Errorf("Same (swapped) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAvroSchemaOf(t *testing.T) {
	v1 := avro.MustParse(schemaV1)
	schema, id, ok := serde.AvroSchemaOf(serde.Erase(serde.Pointer(serde.Avro[tV1](v1, 7))))
	if !ok || id != 7 || schema != v1 {
		t.Errorf("AvroSchemaOf = %v, %d, %v", schema, id, ok)
	}
	if _, _, ok := serde.AvroSchemaOf(serde.Erase(serde.Int64())); ok {
		t.Error("AvroSchemaOf(int64) must be false")
	}
	if _, _, ok := serde.AvroSchemaOf(nil); ok {
		t.Error("AvroSchemaOf(nil) must be false")
	}
}
