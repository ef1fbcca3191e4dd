package serde_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// golden is one exact byte layout: v must serialize to hex and hex must
// deserialize back to v.
type golden[T any] struct {
	s   serde.Serde[T]
	v   T
	hex string
}

type checker interface{ check(t *testing.T) }

func (g golden[T]) check(t *testing.T) {
	t.Helper()
	want, err := hex.DecodeString(strings.ReplaceAll(g.hex, " ", ""))
	if err != nil {
		t.Fatalf("bad hex in test table: %v", err)
	}
	got, err := g.s.Serialize("t", g.v)
	if err != nil {
		t.Fatalf("Serialize(%v): %v", g.v, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Serialize(%v) = % x, want % x", g.v, got, want)
	}
	back, err := g.s.Deserialize("t", want)
	if err != nil {
		t.Fatalf("Deserialize(% x): %v", want, err)
	}
	if !reflect.DeepEqual(back, g.v) {
		t.Fatalf("Deserialize(% x) = %v, want %v", want, back, g.v)
	}
}

func TestBuiltinBytes(t *testing.T) {
	tests := []struct {
		name string
		c    checker
	}{
		{"int16 1", golden[int16]{serde.Int16(), 1, "00 01"}},
		{"int16 -2", golden[int16]{serde.Int16(), -2, "ff fe"}},
		{"int16 min", golden[int16]{serde.Int16(), math.MinInt16, "80 00"}},
		{"int16 0x1234", golden[int16]{serde.Int16(), 0x1234, "12 34"}},
		{"int32 1", golden[int32]{serde.Int32(), 1, "00 00 00 01"}},
		{"int32 -1", golden[int32]{serde.Int32(), -1, "ff ff ff ff"}},
		{"int32 256", golden[int32]{serde.Int32(), 256, "00 00 01 00"}},
		{"int32 max", golden[int32]{serde.Int32(), math.MaxInt32, "7f ff ff ff"}},
		{"int32 min", golden[int32]{serde.Int32(), math.MinInt32, "80 00 00 00"}},
		{"int64 0", golden[int64]{serde.Int64(), 0, "00 00 00 00 00 00 00 00"}},
		{"int64 1", golden[int64]{serde.Int64(), 1, "00 00 00 00 00 00 00 01"}},
		{"int64 -1", golden[int64]{serde.Int64(), -1, "ff ff ff ff ff ff ff ff"}},
		{"int64 min", golden[int64]{serde.Int64(), math.MinInt64, "80 00 00 00 00 00 00 00"}},
		{"int64 order", golden[int64]{serde.Int64(), 0x0102030405060708, "01 02 03 04 05 06 07 08"}},
		{"float32 1.5", golden[float32]{serde.Float32(), 1.5, "3f c0 00 00"}},
		{"float32 -2", golden[float32]{serde.Float32(), -2, "c0 00 00 00"}},
		{"float32 0", golden[float32]{serde.Float32(), 0, "00 00 00 00"}},
		{"float32 +inf", golden[float32]{serde.Float32(), float32(math.Inf(1)), "7f 80 00 00"}},
		{"float64 1.5", golden[float64]{serde.Float64(), 1.5, "3f f8 00 00 00 00 00 00"}},
		{"float64 0.1", golden[float64]{serde.Float64(), 0.1, "3f b9 99 99 99 99 99 9a"}},
		{"float64 -0", golden[float64]{serde.Float64(), math.Copysign(0, -1), "80 00 00 00 00 00 00 00"}},
		{"float64 -inf", golden[float64]{serde.Float64(), math.Inf(-1), "ff f0 00 00 00 00 00 00"}},
		{"bool true", golden[bool]{serde.Bool(), true, "01"}},
		{"bool false", golden[bool]{serde.Bool(), false, "00"}},
		{"string ascii", golden[string]{serde.String(), "abc", "61 62 63"}},
		{"string utf8", golden[string]{serde.String(), "héllo", "68 c3 a9 6c 6c 6f"}},
		{"string empty", golden[string]{serde.String(), "", ""}},
		{"bytes", golden[[]byte]{serde.Bytes(), []byte{1, 2, 0xff}, "01 02 ff"}},
		{"bytes empty", golden[[]byte]{serde.Bytes(), []byte{}, ""}},
		{"uuid", golden[string]{serde.UUID(), "123e4567-e89b-12d3-a456-426614174000",
			"31 32 33 65 34 35 36 37 2d 65 38 39 62 2d 31 32 64 33 2d 61 34 35 36 2d 34 32 36 36 31 34 31 37 34 30 30 30"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.c.check)
	}
}

func TestFloatNaN(t *testing.T) {
	// Java's doubleToLongBits writes every NaN as 7ff8000000000000; Go's
	// math.NaN() has payload 1, so Float64 must canonicalize.
	got, _ := serde.Float64().Serialize("t", math.NaN())
	if want := []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("Float64 NaN = % x, want % x", got, want)
	}
	v, err := serde.Float64().Deserialize("t", []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 1})
	if err != nil || !math.IsNaN(v) {
		t.Errorf("Float64 Deserialize(signalling NaN) = %v, %v; want NaN", v, err)
	}
	// Java's floatToRawIntBits keeps the payload, so Float32 must too.
	raw := math.Float32frombits(0x7fc00001)
	got, _ = serde.Float32().Serialize("t", raw)
	if want := []byte{0x7f, 0xc0, 0x00, 0x01}; !bytes.Equal(got, want) {
		t.Errorf("Float32 NaN = % x, want % x", got, want)
	}
}

func TestBuiltinNames(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{serde.String().Name(), "string"},
		{serde.Bytes().Name(), "bytes"},
		{serde.Int16().Name(), "int16"},
		{serde.Int32().Name(), "int32"},
		{serde.Int64().Name(), "int64"},
		{serde.Float32().Name(), "float32"},
		{serde.Float64().Name(), "float64"},
		{serde.Bool().Name(), "bool"},
		{serde.UUID().Name(), "uuid"},
		{serde.JSON[int]().Name(), "json"},
		{serde.JSONAny().Name(), "json"},
	} {
		if tt.got != tt.want {
			t.Errorf("Name() = %q, want %q", tt.got, tt.want)
		}
	}
}

// decodeErr deserializes through the erased layer so one table covers every
// type, and requires a *DecodeError.
func decodeErr(t *testing.T, s serde.Any, topic string, data []byte) *serde.DecodeError {
	t.Helper()
	v, err := s.DeserializeAny(topic, data)
	if err == nil {
		t.Fatalf("%s: Deserialize(% x) = %v, want an error", s.Name(), data, v)
	}
	de, ok := serde.AsDecodeError(err)
	if !ok {
		t.Fatalf("%s: error %T %q is not a *DecodeError", s.Name(), err, err)
	}
	if de.Serde != s.Name() || de.Topic != topic {
		t.Fatalf("%s: DecodeError{Serde: %q, Topic: %q}, want {%q, %q}", s.Name(), de.Serde, de.Topic, s.Name(), topic)
	}
	return de
}

func TestBuiltinDecodeErrors(t *testing.T) {
	tests := []struct {
		s    serde.Any
		data []byte
		want string
	}{
		{serde.Erase(serde.Int16()), []byte{1}, "deserialize with serde int16: topic orders: size of data is 1, expected 2"},
		{serde.Erase(serde.Int32()), []byte{1, 2, 3, 4, 5}, "deserialize with serde int32: topic orders: size of data is 5, expected 4"},
		{serde.Erase(serde.Int64()), []byte{1, 2, 3}, "deserialize with serde int64: topic orders: size of data is 3, expected 8"},
		{serde.Erase(serde.Int64()), []byte{}, "deserialize with serde int64: topic orders: size of data is 0, expected 8"},
		{serde.Erase(serde.Float32()), []byte{1, 2, 3, 4, 5, 6, 7, 8}, "deserialize with serde float32: topic orders: size of data is 8, expected 4"},
		{serde.Erase(serde.Float64()), []byte{1, 2, 3, 4}, "deserialize with serde float64: topic orders: size of data is 4, expected 8"},
		{serde.Erase(serde.Bool()), []byte{}, "deserialize with serde bool: topic orders: size of data is 0, expected 1"},
		{serde.Erase(serde.Bool()), []byte{2}, "deserialize with serde bool: topic orders: unexpected byte 0x02, expected 0x00 or 0x01"},
		{serde.Erase(serde.UUID()), []byte("123e4567"), `deserialize with serde uuid: topic orders: invalid uuid "123e4567": length is 8, expected 36`},
		{serde.Erase(serde.UUID()), []byte("123e4567+e89b-12d3-a456-426614174000"), `deserialize with serde uuid: topic orders: invalid uuid "123e4567+e89b-12d3-a456-426614174000": expected '-' at index 8`},
		{serde.Erase(serde.UUID()), []byte("123e4567-e89b-12d3-a456-42661417400g"), `deserialize with serde uuid: topic orders: invalid uuid "123e4567-e89b-12d3-a456-42661417400g": non-hex character at index 35`},
	}
	for _, tt := range tests {
		t.Run(tt.s.Name(), func(t *testing.T) {
			de := decodeErr(t, tt.s, "orders", tt.data)
			if got := de.Error(); got != tt.want {
				t.Errorf("error = %q\nwant    %q", got, tt.want)
			}
		})
	}
}

func TestUUID(t *testing.T) {
	const lower = "123e4567-e89b-12d3-a456-426614174000"
	upper := strings.ToUpper(lower)
	got, err := serde.UUID().Serialize("t", upper)
	if err != nil || string(got) != lower {
		t.Errorf("Serialize(%q) = %q, %v; want %q (Java writes lower case)", upper, got, err, lower)
	}
	v, err := serde.UUID().Deserialize("t", []byte(upper))
	if err != nil || v != lower {
		t.Errorf("Deserialize(%q) = %q, %v; want %q", upper, v, err, lower)
	}
	_, err = serde.UUID().Serialize("t", "not-a-uuid")
	if err == nil || err.Error() != `serialize with serde uuid: invalid uuid "not-a-uuid": length is 10, expected 36` {
		t.Errorf("Serialize(not-a-uuid) error = %v", err)
	}
	long := strings.Repeat("x", 100)
	de := decodeErr(t, serde.Erase(serde.UUID()), "t", []byte(long))
	if strings.Contains(de.Error(), long) || !strings.Contains(de.Error(), "...") {
		t.Errorf("a long bad uuid should be cut short in the message: %q", de.Error())
	}
}

func TestBytesCopiesAndKeepsEmpty(t *testing.T) {
	in := []byte{1, 2, 3}
	out, err := serde.Bytes().Deserialize("t", in)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = 9
	if out[0] != 1 {
		t.Error("Deserialize must copy: the consumer reuses its buffers")
	}
	empty, _ := serde.Bytes().Deserialize("t", []byte{})
	if empty == nil {
		t.Error("an empty record must stay an empty, non-nil slice, distinct from a null")
	}
	b, _ := serde.Bytes().Serialize("t", nil)
	if b != nil {
		t.Error("a nil slice serializes to a null, as Kafka's ByteArraySerializer does")
	}
}

func TestStringKeepsInvalidUTF8(t *testing.T) {
	in := []byte{0xff, 'a', 0xc3}
	v, err := serde.String().Deserialize("t", in)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := serde.String().Serialize("t", v)
	if !bytes.Equal(out, in) {
		t.Errorf("round trip of invalid UTF-8 = % x, want % x", out, in)
	}
}

func TestEraseNulls(t *testing.T) {
	for _, s := range []serde.Any{
		serde.Erase(serde.String()), serde.Erase(serde.Int64()), serde.Erase(serde.Bool()),
		serde.Erase(serde.JSONAny()), serde.Erase(serde.Pointer(serde.Int32())),
	} {
		b, err := s.SerializeAny("t", nil)
		if b != nil || err != nil {
			t.Errorf("%s: SerializeAny(nil) = %v, %v; want nil, nil", s.Name(), b, err)
		}
		v, err := s.DeserializeAny("t", nil)
		if v != nil || err != nil {
			t.Errorf("%s: DeserializeAny(nil) = %v, %v; want nil, nil", s.Name(), v, err)
		}
	}
	// An empty record is not a null.
	v, err := serde.Erase(serde.String()).DeserializeAny("t", []byte{})
	if v != "" || err != nil {
		t.Errorf("DeserializeAny(empty) = %#v, %v; want \"\"", v, err)
	}
	if serde.Erase[int64](nil) != nil {
		t.Error("Erase(nil) must be nil")
	}
	_, err = serde.Erase(serde.Int64()).SerializeAny("t", "seven")
	if !errors.Is(err, serde.ErrWrongType) {
		t.Errorf("SerializeAny(string) with int64 serde: err = %v, want ErrWrongType", err)
	}
}

func TestPointer(t *testing.T) {
	p := serde.Pointer(serde.Int64())
	if p.Name() != "int64" {
		t.Errorf("Name() = %q, want the wrapped serde's", p.Name())
	}
	b, err := p.Serialize("t", nil)
	if b != nil || err != nil {
		t.Errorf("Serialize(nil) = %v, %v; want nil, nil", b, err)
	}
	v, err := p.Deserialize("t", nil)
	if v != nil || err != nil {
		t.Errorf("Deserialize(nil) = %v, %v; want nil, nil", v, err)
	}
	seven := int64(7)
	b, err = p.Serialize("t", &seven)
	if err != nil || !bytes.Equal(b, []byte{0, 0, 0, 0, 0, 0, 0, 7}) {
		t.Errorf("Serialize(&7) = % x, %v", b, err)
	}
	v, err = p.Deserialize("t", b)
	if err != nil || v == nil || *v != 7 {
		t.Errorf("Deserialize = %v, %v; want &7", v, err)
	}
	if _, err := p.Deserialize("orders", []byte{1}); err == nil {
		t.Error("Deserialize of a short record must fail")
	} else if de, ok := serde.AsDecodeError(err); !ok || de.Serde != "int64" {
		t.Errorf("error = %v, want the wrapped serde's *DecodeError", err)
	}

	// Erased: a typed nil pointer in an any is not a nil any, yet still a null.
	e := serde.Erase(p)
	b, err = e.SerializeAny("t", (*int64)(nil))
	if b != nil || err != nil {
		t.Errorf("SerializeAny((*int64)(nil)) = %v, %v; want nil, nil", b, err)
	}
	// And a null comes back as an untyped nil, not (*int64)(nil).
	got, _ := e.DeserializeAny("t", nil)
	if got != nil {
		t.Errorf("DeserializeAny(nil) = %#v, want untyped nil", got)
	}
}

// TestDeserializeBorrowed: the Bytes serde shares the bytes it is given,
// capped at their end; a nil is a null; serdes that cannot share copy.
func TestDeserializeBorrowed(t *testing.T) {
	buf := []byte("abcdef")
	v, err := serde.DeserializeBorrowed(serde.Erase(serde.Bytes()), "t", buf[:3])
	if err != nil {
		t.Fatal(err)
	}
	b := v.([]byte)
	if string(b) != "abc" || cap(b) != 3 || &b[0] != &buf[0] {
		t.Errorf("bytes %q (cap %d) do not share the input's first 3 bytes", b, cap(b))
	}
	if v, err := serde.DeserializeBorrowed(serde.Erase(serde.Bytes()), "t", nil); v != nil || err != nil {
		t.Errorf("nil bytes: %v, %v; want a null", v, err)
	}
	if v, err := serde.DeserializeBorrowed(serde.Erase(serde.Bytes()), "t", buf[:0]); err != nil || v == nil || len(v.([]byte)) != 0 {
		t.Errorf("empty bytes: %#v, %v; want an empty non-null value", v, err)
	}
	v, err = serde.DeserializeBorrowed(serde.Erase(serde.String()), "t", buf[:3])
	buf[0] = 'x'
	if err != nil || v.(string) != "abc" {
		t.Errorf("string %q, %v: want a copy that keeps \"abc\"", v, err)
	}
}

func TestIsString(t *testing.T) {
	for _, c := range []struct {
		s    serde.Any
		want bool
	}{{serde.Erase(serde.String()), true}, {serde.Erase(serde.Bytes()), false}, {serde.Erase(serde.UUID()), false}, {serde.Erase(serde.Int64()), false},
		{stringAdapter{serde.Erase(serde.String())}, true}, {stringAdapter{serde.Erase(serde.UUID())}, false}} {
		if got := serde.IsString(c.s); got != c.want {
			t.Errorf("serde.IsString(%s) = %v", c.s.Name(), got)
		}
	}
}

// stringAdapter is a serde.StringAdapter over a, as a topology file's
// dynamically typed serde is.
type stringAdapter struct{ serde.Any }

func (a stringAdapter) StringsAs() serde.Any { return a.Any }

func TestSerializeView(t *testing.T) {
	s := strings.Repeat("k", 5)
	b, err := serde.SerializeView(serde.String(), "t", s)
	if err != nil || string(b) != s || cap(b) != len(s) || unsafe.SliceData(b) != unsafe.StringData(s) {
		t.Errorf("string: %q (cap %d), %v; want the string's own 5 bytes", b, cap(b), err)
	}
	if b, err := serde.SerializeView(serde.String(), "t", ""); err != nil || b == nil || len(b) != 0 {
		t.Errorf("empty string: %#v, %v; want empty non-null bytes", b, err)
	}
	// A serde that cannot view serializes as usual.
	if b, err := serde.SerializeView(serde.Int64(), "t", 7); err != nil || len(b) != 8 || b[7] != 7 {
		t.Errorf("int64: %v, %v", b, err)
	}
}

// AppendSerialize writes what Serialize does, after what dst holds, and
// leaves dst's bytes alone.
func TestAppendSerialize(t *testing.T) {
	prefix := []byte("12345678")
	check := func(t *testing.T, name string, out, want []byte) {
		t.Helper()
		if out == nil {
			t.Fatalf("%s: AppendSerialize returned nil, a null", name)
		}
		if !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("%s: prefix changed to %q", name, out[:len(prefix)])
		}
		if !bytes.Equal(out[len(prefix):], want) {
			t.Fatalf("%s: appended %x, Serialize gives %x", name, out[len(prefix):], want)
		}
	}
	for _, v := range []int64{0, 1, -1, 255, 1 << 40, math.MinInt64, math.MaxInt64} {
		want, _ := serde.Int64().Serialize("t", v)
		out, err := serde.Int64().(serde.Appending[int64]).AppendSerialize(slices.Clone(prefix), "t", v)
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprint(v), out, want)
		if got, err := serde.Int64().Deserialize("t", out[len(prefix):]); err != nil || got != v {
			t.Fatalf("%d: round trip gave %d, %v", v, got, err)
		}
	}
	for _, v := range []string{"", "key-1", "é\xff", strings.Repeat("x", 100)} {
		want, _ := serde.String().Serialize("t", v)
		out, err := serde.String().(serde.Appending[string]).AppendSerialize(slices.Clone(prefix), "t", v)
		if err != nil {
			t.Fatal(err)
		}
		check(t, fmt.Sprintf("%q", v), out, want)
	}
}
