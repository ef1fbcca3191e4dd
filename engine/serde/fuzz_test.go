package serde_test

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// The fuzz targets check that no decoder panics on any input, that every
// failure is a *DecodeError, and that whatever decodes encodes back to the
// same bytes where the format allows only one encoding.

func requireDecodeError(t *testing.T, name string, err error) {
	t.Helper()
	de, ok := serde.AsDecodeError(err)
	if !ok {
		t.Fatalf("%s: error %T %q is not a *DecodeError", name, err, err)
	}
	if de.Serde == "" || de.Topic != "fuzz" {
		t.Fatalf("%s: DecodeError without serde or topic: %+v", name, de)
	}
}

// checkExact decodes data and, on success, requires it to encode back to
// the same bytes. A width above zero also requires that exactly inputs of
// that length decode.
func checkExact[T any](t *testing.T, s serde.Serde[T], data []byte, width int) {
	t.Helper()
	v, err := s.Deserialize("fuzz", data)
	if err != nil {
		requireDecodeError(t, s.Name(), err)
		if width > 0 && len(data) == width {
			t.Fatalf("%s: rejected %d bytes: %v", s.Name(), width, err)
		}
		return
	}
	if width > 0 && len(data) != width {
		t.Fatalf("%s: accepted %d bytes, want exactly %d", s.Name(), len(data), width)
	}
	back, err := s.Serialize("fuzz", v)
	if err != nil {
		t.Fatalf("%s: Serialize(%v): %v", s.Name(), v, err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("%s: % x decoded to %v, which encodes to % x", s.Name(), data, v, back)
	}
}

func FuzzIntegers(f *testing.F) {
	for _, seed := range [][]byte{nil, {}, {1}, {0xff, 0xfe}, {0, 0, 0, 1}, {0x80, 0, 0, 0, 0, 0, 0, 0}, {1, 2, 3}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkExact(t, serde.Int16(), data, 2)
		checkExact(t, serde.Int32(), data, 4)
		checkExact(t, serde.Int64(), data, 8)
	})
}

func FuzzFloats(f *testing.F) {
	for _, seed := range [][]byte{{}, {0x3f, 0xc0, 0, 0}, {0x7f, 0xc0, 0, 1}, {0x3f, 0xf8, 0, 0, 0, 0, 0, 0}, {0x7f, 0xf0, 0, 0, 0, 0, 0, 1}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkExact(t, serde.Float32(), data, 4)
		v, err := serde.Float64().Deserialize("fuzz", data)
		if err != nil {
			requireDecodeError(t, "float64", err)
			return
		}
		back, _ := serde.Float64().Serialize("fuzz", v)
		want := data
		if math.IsNaN(v) { // every NaN is written as Java's canonical NaN
			want = []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 0}
		}
		if !bytes.Equal(back, want) {
			t.Fatalf("float64: % x decoded to %v, which encodes to % x", data, v, back)
		}
	})
}

func FuzzText(f *testing.F) {
	for _, seed := range [][]byte{{}, {0}, {1}, {2}, []byte("123e4567-e89b-12d3-a456-426614174000"), []byte("123E4567-E89B-12D3-A456-42661417400G"), {0xff, 0xc3}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Bool may reject one byte (anything but 00 and 01), so its width
		// is checked here rather than by checkExact.
		checkExact(t, serde.Bool(), data, 0)
		if _, err := serde.Bool().Deserialize("fuzz", data); err == nil && len(data) != 1 {
			t.Fatalf("bool: accepted %d bytes", len(data))
		}
		checkExact(t, serde.String(), data, 0)
		checkExact(t, serde.Bytes(), data, 0)
		v, err := serde.UUID().Deserialize("fuzz", data)
		if err != nil {
			requireDecodeError(t, "uuid", err)
			return
		}
		if v != strings.ToLower(string(data)) {
			t.Fatalf("uuid: %q decoded to %q", data, v)
		}
		back, err := serde.UUID().Serialize("fuzz", v)
		if err != nil || string(back) != v {
			t.Fatalf("uuid: %q encodes to %q, %v", v, back, err)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, seed := range []string{``, `null`, `{}`, `[1,"a",true,null]`, `{"id":1,"name":"x","tags":["a"],"price":1.5}`, `{"id":"x"}`, `"\ud800"`, `1e400`, `{"a":{"b":[[[]]]}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := serde.JSON[order]().Deserialize("fuzz", data); err != nil {
			requireDecodeError(t, "json order", err)
		}
		s := serde.JSONAny()
		v, err := s.Deserialize("fuzz", data)
		if err != nil {
			requireDecodeError(t, "json any", err)
			return
		}
		// What decoded must survive an encode/decode round trip unchanged.
		b, err := s.Serialize("fuzz", v)
		if err != nil {
			t.Fatalf("json: Serialize(%#v): %v", v, err)
		}
		again, err := s.Deserialize("fuzz", b)
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Fatalf("json: %q -> %#v -> %q -> %#v, %v", data, v, b, again, err)
		}
	})
}

// fuzzF matches testdata/fuzz.avsc.
type fuzzF struct {
	L   int64             `avro:"l"`
	I   int32             `avro:"i"`
	S   string            `avro:"s"`
	By  []byte            `avro:"by"`
	Bo  bool              `avro:"bo"`
	F   float32           `avro:"f"`
	D   float64           `avro:"d"`
	Arr []int64           `avro:"arr"`
	M   map[string]string `avro:"m"`
	U   any               `avro:"u"`
	E   string            `avro:"e"`
	Fx  [4]byte           `avro:"fx"`
	Dec *big.Rat          `avro:"dec"`
	Ts  time.Time         `avro:"ts"`
	N   fuzzN             `avro:"n"`
}

type fuzzN struct {
	X *fuzzN `avro:"x"`
}

func FuzzAvro(f *testing.F) {
	set, err := serde.SchemaSetFromFiles(map[int32]string{6: "testdata/t_int.avsc", 7: "testdata/t_v1.avsc", 8: "testdata/t_v2.avsc"})
	if err != nil {
		f.Fatal(err)
	}
	v1, err := serde.AvroFromFile[tV1]("testdata/t_v1.avsc", 7, serde.WithSchemaSet(set))
	if err != nil {
		f.Fatal(err)
	}
	v2, err := serde.AvroFromFile[tV2]("testdata/t_v2.avsc", 8, serde.WithSchemaSet(set))
	if err != nil {
		f.Fatal(err)
	}
	typed, err := serde.AvroFromFile[fuzzF]("testdata/fuzz.avsc", 9)
	if err != nil {
		f.Fatal(err)
	}
	generic, err := serde.AvroFromFile[any]("testdata/fuzz.avsc", 9)
	if err != nil {
		f.Fatal(err)
	}

	seed, err := typed.Serialize("fuzz", fuzzF{
		L: -3, I: 7, S: "s", By: []byte{1}, Bo: true, F: 1.5, D: -2.25,
		Arr: []int64{1, -1}, M: map[string]string{"k": "v"}, U: "u", E: "Y",
		Fx: [4]byte{1, 2, 3, 4}, Dec: big.NewRat(314, 100), Ts: time.UnixMilli(1700000000000).UTC(),
		N: fuzzN{X: &fuzzN{}},
	})
	if err != nil {
		f.Fatal(err)
	}
	d := "z"
	v2Bytes, err := v2.Serialize("fuzz", tV2{A: 1, C: 2, D: &d})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range [][]byte{seed, goldenT, v2Bytes, {0, 0, 0, 0, 6, 0x54, 0x02, 0x79}, {}, {1, 0, 0, 0, 7}, {0, 0, 0, 0, 9}, {0, 0, 0, 0, 7, 0xff, 0xff}} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, decode := range []func() error{
			func() error { _, err := v2.Deserialize("fuzz", data); return err },
			func() error { _, err := typed.Deserialize("fuzz", data); return err },
			func() error { _, err := generic.Deserialize("fuzz", data); return err },
		} {
			if err := decode(); err != nil {
				requireDecodeError(t, "avro", err)
			}
		}

		v, err := v1.Deserialize("fuzz", data)
		if err != nil {
			requireDecodeError(t, "avro", err)
			if len(data) < 5 && !errors.Is(err, serde.ErrShortHeader) {
				t.Fatalf("%d bytes: want ErrShortHeader, got %v", len(data), err)
			}
			return
		}
		if data[0] != 0 {
			t.Fatalf("accepted magic byte 0x%02x", data[0])
		}
		// A successful decode encodes back to a record that decodes to the
		// same value (not the same bytes: the writer id, varint padding and
		// trailing bytes may differ).
		b, err := v1.Serialize("fuzz", v)
		if err != nil {
			t.Fatalf("Serialize(%+v): %v", v, err)
		}
		again, err := v1.Deserialize("fuzz", b)
		if err != nil || again != v {
			t.Fatalf("round trip %+v -> % x -> %+v, %v", v, b, again, err)
		}
	})
}
