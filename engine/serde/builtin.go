package serde

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// The built-in serdes write exactly what the serializers in Kafka's
// org.apache.kafka.common.serialization write, so keys hash to the same
// partitions and state written by Kafka Streams reads back here.

// String is Kafka's StringSerde: the UTF-8 bytes of the string. Invalid
// UTF-8 is passed through unchanged rather than replaced (as Java would),
// so a key read and written again keeps its bytes and its partition.
func String() Serde[string] { return stringSerde{} }

type stringSerde struct{}

// IsString reports whether s is the built-in String serde, which gives
// back on Serialize exactly the bytes its Deserialize read: a sink can
// then write an unchanged key as the bytes it arrived with. It looks
// through an adapter that says it reads and writes strings exactly as the
// serde it wraps does (StringAdapter).
func IsString(s Any) bool {
	if a, ok := s.(StringAdapter); ok {
		s = a.StringsAs()
	}
	e, ok := s.(erased[string])
	if !ok {
		return false
	}
	_, ok = e.s.(stringSerde)
	return ok
}

// StringAdapter is a serde over another (a topology file's dynamically
// typed serde) that decodes to a string and encodes a string exactly as
// the serde StringsAs returns does, so that IsString may judge that one.
type StringAdapter interface {
	StringsAs() Any
}

func (stringSerde) Name() string { return "string" }

func (stringSerde) Serialize(_ string, v string) ([]byte, error) { return []byte(v), nil }

// SerializeView is the string's own bytes, capped so that an append
// copies. An empty string gives an empty, non-nil slice: nil is a null.
func (stringSerde) SerializeView(_ string, v string) ([]byte, error) {
	if len(v) == 0 {
		return []byte{}, nil
	}
	return unsafe.Slice(unsafe.StringData(v), len(v)), nil
}

// AppendSerialize appends the string's bytes; an empty string appends
// none, and dst stays what it was, never a null.
func (stringSerde) AppendSerialize(dst []byte, _ string, v string) ([]byte, error) {
	return append(dst, v...), nil
}

func (stringSerde) Deserialize(_ string, data []byte) (string, error) { return string(data), nil }

// Bytes is Kafka's ByteArraySerde. Serialize returns the slice itself, as
// Kafka does, so a nil slice is a null; Deserialize copies, because the
// consumer may reuse its buffer, and an empty record gives a non-nil empty
// slice so it stays distinct from a null. It is Borrowing: the engine
// hands a source record's value to the topology as the fetched bytes
// themselves, capped so that an append copies. Writing into such a value
// changes only its own record, but keeping it past the call keeps the
// whole fetch's memory alive: a processor that keeps values should keep
// bytes.Clone(v).
func Bytes() Serde[[]byte] { return bytesSerde{} }

type bytesSerde struct{}

func (bytesSerde) Name() string { return "bytes" }

func (bytesSerde) Serialize(_ string, v []byte) ([]byte, error) { return v, nil }

func (bytesSerde) Deserialize(_ string, data []byte) ([]byte, error) {
	return append([]byte{}, data...), nil
}

func (bytesSerde) DeserializeBorrowed(_ string, data []byte) ([]byte, error) {
	return data[:len(data):len(data)], nil
}

// sizeError is the fixed-width serdes' complaint; Kafka's wording is "Size
// of data received by LongDeserializer is not 8".
func sizeError(name, topic string, got, want int) error {
	return decodeError(name, topic, fmt.Errorf("size of data is %d, expected %d", got, want))
}

// Int16 is Kafka's ShortSerde: 2 bytes, big-endian two's complement.
func Int16() Serde[int16] { return int16Serde{} }

type int16Serde struct{}

func (int16Serde) Name() string { return "int16" }

func (int16Serde) Serialize(_ string, v int16) ([]byte, error) {
	return binary.BigEndian.AppendUint16(make([]byte, 0, 2), uint16(v)), nil
}

func (s int16Serde) Deserialize(topic string, data []byte) (int16, error) {
	if len(data) != 2 {
		return 0, sizeError(s.Name(), topic, len(data), 2)
	}
	return int16(binary.BigEndian.Uint16(data)), nil
}

// Int32 is Kafka's IntegerSerde: 4 bytes, big-endian two's complement.
func Int32() Serde[int32] { return int32Serde{} }

type int32Serde struct{}

func (int32Serde) Name() string { return "int32" }

func (int32Serde) Serialize(_ string, v int32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(v)), nil
}

func (s int32Serde) Deserialize(topic string, data []byte) (int32, error) {
	if len(data) != 4 {
		return 0, sizeError(s.Name(), topic, len(data), 4)
	}
	return int32(binary.BigEndian.Uint32(data)), nil
}

// Int64 is Kafka's LongSerde: 8 bytes, big-endian two's complement.
func Int64() Serde[int64] { return int64Serde{} }

type int64Serde struct{}

func (int64Serde) Name() string { return "int64" }

func (int64Serde) Serialize(_ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)), nil
}

func (int64Serde) AppendSerialize(dst []byte, _ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(dst, uint64(v)), nil
}

func (s int64Serde) Deserialize(topic string, data []byte) (int64, error) {
	if len(data) != 8 {
		return 0, sizeError(s.Name(), topic, len(data), 8)
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}

// Float32 is Kafka's FloatSerde: the IEEE 754 bits, big-endian. Kafka uses
// floatToRawIntBits, so NaN payloads are kept bit for bit, as here.
func Float32() Serde[float32] { return float32Serde{} }

type float32Serde struct{}

func (float32Serde) Name() string { return "float32" }

func (float32Serde) Serialize(_ string, v float32) ([]byte, error) {
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), math.Float32bits(v)), nil
}

func (s float32Serde) Deserialize(topic string, data []byte) (float32, error) {
	if len(data) != 4 {
		return 0, sizeError(s.Name(), topic, len(data), 4)
	}
	return math.Float32frombits(binary.BigEndian.Uint32(data)), nil
}

// Float64 is Kafka's DoubleSerde: the IEEE 754 bits, big-endian. Kafka uses
// doubleToLongBits, which writes every NaN as 0x7ff8000000000000, so this
// does too (Go's math.NaN() has a different payload); a NaN key therefore
// lands on the same partition from Java and from here.
func Float64() Serde[float64] { return float64Serde{} }

type float64Serde struct{}

// javaCanonicalNaN is what Java's Double.doubleToLongBits returns for NaN.
const javaCanonicalNaN = 0x7ff8000000000000

func (float64Serde) Name() string { return "float64" }

func (float64Serde) Serialize(_ string, v float64) ([]byte, error) {
	bits := math.Float64bits(v)
	if math.IsNaN(v) {
		bits = javaCanonicalNaN
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), bits), nil
}

func (s float64Serde) Deserialize(topic string, data []byte) (float64, error) {
	if len(data) != 8 {
		return 0, sizeError(s.Name(), topic, len(data), 8)
	}
	return math.Float64frombits(binary.BigEndian.Uint64(data)), nil
}

// Bool is Kafka's BooleanSerde: one byte, 0x01 for true and 0x00 for false;
// any other byte is rejected, as Kafka rejects it.
func Bool() Serde[bool] { return boolSerde{} }

type boolSerde struct{}

func (boolSerde) Name() string { return "bool" }

func (boolSerde) Serialize(_ string, v bool) ([]byte, error) {
	if v {
		return []byte{0x01}, nil
	}
	return []byte{0x00}, nil
}

func (s boolSerde) Deserialize(topic string, data []byte) (bool, error) {
	if len(data) != 1 {
		return false, sizeError(s.Name(), topic, len(data), 1)
	}
	switch data[0] {
	case 0x00:
		return false, nil
	case 0x01:
		return true, nil
	}
	return false, decodeError(s.Name(), topic, fmt.Errorf("unexpected byte 0x%02x, expected 0x00 or 0x01", data[0]))
}

// UUID is Kafka's UUIDSerde: the UUID's text, 8-4-4-4-12 lower-case hex
// digits (what Java's UUID.toString writes), as UTF-8. Values are Go
// strings. Serialize rejects anything that is not a UUID and lower-cases
// the rest, so the bytes match Java's; Deserialize accepts either case and
// returns lower case. Unlike Java's lenient UUID.fromString, short groups
// such as "1-2-3-4-5" are rejected: nothing Kafka writes looks like that.
func UUID() Serde[string] { return uuidSerde{} }

type uuidSerde struct{}

func (uuidSerde) Name() string { return "uuid" }

func (s uuidSerde) Serialize(_ string, v string) ([]byte, error) {
	b, err := canonicalUUID([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("serialize with serde %s: %w", s.Name(), err)
	}
	return b, nil
}

func (s uuidSerde) Deserialize(topic string, data []byte) (string, error) {
	b, err := canonicalUUID(data)
	if err != nil {
		return "", decodeError(s.Name(), topic, err)
	}
	return string(b), nil
}

// canonicalUUID checks the 8-4-4-4-12 layout and returns a lower-cased copy.
func canonicalUUID(in []byte) ([]byte, error) {
	if len(in) != 36 {
		return nil, fmt.Errorf("invalid uuid %s: length is %d, expected 36", quoteShort(in), len(in))
	}
	out := make([]byte, 36)
	for i, c := range in {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return nil, fmt.Errorf("invalid uuid %s: expected '-' at index %d", quoteShort(in), i)
			}
		default:
			switch {
			case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
			case 'A' <= c && c <= 'F':
				c += 'a' - 'A'
			default:
				return nil, fmt.Errorf("invalid uuid %s: non-hex character at index %d", quoteShort(in), i)
			}
		}
		out[i] = c
	}
	return out, nil
}

// quoteShort quotes data for an error message, cut short so that a large
// poison record does not end up whole in a log line.
func quoteShort(data []byte) string {
	const limit = 64
	if len(data) > limit {
		return fmt.Sprintf("%q...", data[:limit])
	}
	return fmt.Sprintf("%q", data)
}
