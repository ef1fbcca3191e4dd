package serde_test

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// Package-level sinks keep the results alive: without them the compiler
// inlines Serialize, keeps the buffer on the stack and measures nothing.
var (
	sinkBytes  []byte
	sinkString string
	sinkInt64  int64
)

func BenchmarkInt64Serialize(b *testing.B) {
	s := serde.Int64()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		out, err := s.Serialize("t", int64(i))
		if err != nil {
			b.Fatal(err)
		}
		sinkBytes = out
	}
}

func BenchmarkInt64Deserialize(b *testing.B) {
	s := serde.Int64()
	data, _ := s.Serialize("t", 1234567890)
	b.ReportAllocs()
	for b.Loop() {
		v, err := s.Deserialize("t", data)
		if err != nil {
			b.Fatal(err)
		}
		sinkInt64 = v
	}
}

var benchString = strings.Repeat("stoatflow", 8) // a 72-byte key

func BenchmarkStringSerialize(b *testing.B) {
	s := serde.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(benchString)))
	for b.Loop() {
		out, err := s.Serialize("t", benchString)
		if err != nil {
			b.Fatal(err)
		}
		sinkBytes = out
	}
}

func BenchmarkStringDeserialize(b *testing.B) {
	s := serde.String()
	data := []byte(benchString)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		v, err := s.Deserialize("t", data)
		if err != nil {
			b.Fatal(err)
		}
		sinkString = v
	}
}

// The erased path is what the runtime calls for every record.
func BenchmarkInt64DeserializeAny(b *testing.B) {
	s := serde.Erase(serde.Int64())
	data, _ := serde.Int64().Serialize("t", 1234567890)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.DeserializeAny("t", data); err != nil {
			b.Fatal(err)
		}
	}
}
