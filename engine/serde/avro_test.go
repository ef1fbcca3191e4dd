package serde_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// tV1 matches testdata/t_v1.avsc, tV2 testdata/t_v2.avsc.
type tV1 struct {
	A int64  `avro:"a"`
	B string `avro:"b"`
}

type tV2 struct {
	A int64   `avro:"a"`
	C int32   `avro:"c"`
	D *string `avro:"d"`
}

const schemaV1 = `{"type":"record","name":"T","fields":[{"name":"a","type":"long"},{"name":"b","type":"string"}]}`

// goldenT is tV1{A: 1, B: "x"} under schema id 7, computed by hand:
// 00 magic; 00 00 00 07 id 7 big-endian; 02 a=1 as a zig-zag varint;
// 02 the length of b (1, zig-zag); 78 'x'.
var goldenT = []byte{0x00, 0x00, 0x00, 0x00, 0x07, 0x02, 0x02, 0x78}

func mustSerde[T any](t *testing.T, path string, id int32, opts ...serde.AvroOption) serde.Serde[T] {
	t.Helper()
	s, err := serde.AvroFromFile[T](path, id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAvroGolden(t *testing.T) {
	s := serde.Avro[tV1](avro.MustParse(schemaV1), 7)
	if s.Name() != "avro" {
		t.Errorf("Name() = %q", s.Name())
	}
	b, err := s.Serialize("t", tV1{A: 1, B: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, goldenT) {
		t.Errorf("Serialize = % x, want % x", b, goldenT)
	}
	v, err := s.Deserialize("t", goldenT)
	if err != nil || v != (tV1{A: 1, B: "x"}) {
		t.Errorf("Deserialize = %+v, %v", v, err)
	}

	// The same bytes from the schema file and with a large id.
	f := mustSerde[tV1](t, "testdata/t_v1.avsc", 0x01020304)
	b, err = f.Serialize("t", tV1{A: -1, B: ""})
	// a=-1 zig-zags to 01; b="" is a zero length, 00.
	if want := []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x01, 0x00}; err != nil || !bytes.Equal(b, want) {
		t.Errorf("Serialize = % x, %v; want % x", b, err, want)
	}
}

func TestAvroGeneric(t *testing.T) {
	s := serde.AvroGeneric(avro.MustParse(schemaV1), 7)
	v, err := s.Deserialize("t", goldenT)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": int64(1), "b": "x"}; !reflect.DeepEqual(v, want) {
		t.Errorf("Deserialize = %#v, want %#v", v, want)
	}
	b, err := s.Serialize("t", map[string]any{"a": int64(1), "b": "x"})
	if err != nil || !bytes.Equal(b, goldenT) {
		t.Errorf("Serialize = % x, %v; want % x", b, err, goldenT)
	}
	// Erased, the generic serde is what the runtime holds.
	e := serde.Erase(s)
	got, err := e.DeserializeAny("t", goldenT)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Errorf("DeserializeAny = %#v, %v", got, err)
	}
}

func TestAvroDecodeErrors(t *testing.T) {
	s := serde.Erase(serde.Avro[tV1](avro.MustParse(schemaV1), 7))
	withSet := serde.Erase(serde.Avro[tV1](avro.MustParse(schemaV1), 7, serde.WithSchemaSet(serde.NewSchemaSet())))
	tests := []struct {
		name string
		s    serde.Any
		data []byte
		is   error
		want string
	}{
		{"short header", s, []byte{0, 0, 0}, serde.ErrShortHeader,
			"deserialize with serde avro: topic orders: short confluent header: record is 3 bytes, need at least 5"},
		{"empty", s, []byte{}, serde.ErrShortHeader,
			"deserialize with serde avro: topic orders: short confluent header: record is 0 bytes, need at least 5"},
		{"bad magic", s, []byte{0x01, 0, 0, 0, 7, 2, 2, 0x78}, serde.ErrBadMagic,
			"deserialize with serde avro: topic orders: bad magic byte 0x01, expected 0x00"},
		{"unknown id", s, []byte{0, 0, 0, 0, 9, 2, 2, 0x78}, serde.ErrUnknownSchemaID,
			"deserialize with serde avro: topic orders: unknown schema id 9: the serde's schema id is 7 and it has no schema set"},
		{"unknown id in set", withSet, []byte{0, 0, 0, 0, 9, 2, 2, 0x78}, serde.ErrUnknownSchemaID,
			"deserialize with serde avro: topic orders: unknown schema id 9: the serde's schema id is 7 and its schema set does not hold the id"},
		{"truncated body", s, goldenT[:7], serde.ErrAvroBody,
			"deserialize with serde avro: topic orders: decode avro body (writer schema id 7): body is truncated: B: unexpected EOF"},
		// Cut between fields: hamba's Unmarshal would call this a success
		// with b = "".
		{"truncated between fields", s, goldenT[:6], serde.ErrAvroBody,
			"deserialize with serde avro: topic orders: decode avro body (writer schema id 7): body is truncated: reading long: EOF"},
		{"header only", s, goldenT[:5], serde.ErrAvroBody, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			de := decodeErr(t, tt.s, "orders", tt.data)
			if !errors.Is(de, tt.is) {
				t.Errorf("error %q is not %v", de, tt.is)
			}
			if tt.want != "" && de.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", de.Error(), tt.want)
			}
		})
	}
	de := decodeErr(t, s, "orders", goldenT[:7])
	if msg := de.Error(); !strings.HasPrefix(msg, "deserialize with serde avro: topic orders: decode avro body (writer schema id 7): ") {
		t.Errorf("body error = %q", msg)
	}
}

func TestAvroSerializeError(t *testing.T) {
	s := serde.AvroGeneric(avro.MustParse(schemaV1), 7)
	_, err := s.Serialize("t", "not a record")
	if err == nil || !strings.HasPrefix(err.Error(), "serialize with serde avro: schema id 7: ") {
		t.Errorf("Serialize(string) error = %v", err)
	}
}

func TestAvroFromFileErrors(t *testing.T) {
	_, err := serde.AvroFromFile[tV1]("testdata/bad.avsc", 1)
	if err == nil || !strings.HasPrefix(err.Error(), "parse avro schema file testdata/bad.avsc: ") {
		t.Errorf("bad schema error = %v", err)
	}
	_, err = serde.AvroFromFile[tV1]("testdata/missing.avsc", 1)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "testdata/missing.avsc") {
		t.Errorf("missing file error = %v", err)
	}
}

func TestAvroNilSchemaPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Avro(nil schema) must panic")
		}
	}()
	serde.Avro[tV1](nil, 1)
}

func TestAvroSchemaEvolution(t *testing.T) {
	set, err := serde.SchemaSetFromFiles(map[int32]string{
		6: "testdata/t_int.avsc",
		7: "testdata/t_v1.avsc",
		8: "testdata/t_v2.avsc",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.IDs(); !reflect.DeepEqual(got, []int32{6, 7, 8}) {
		t.Errorf("IDs() = %v", got)
	}

	// v2 reads v1: b is skipped, c and d take their defaults.
	v2 := mustSerde[tV2](t, "testdata/t_v2.avsc", 8, serde.WithSchemaSet(set))
	for range 2 { // the second pass reads the cached resolution
		got, err := v2.Deserialize("t", goldenT)
		if err != nil {
			t.Fatal(err)
		}
		if got.A != 1 || got.C != 5 || got.D != nil {
			t.Errorf("v2 reading v1 = %+v, want {A:1 C:5 D:nil}", got)
		}
	}

	// The generic form resolves too.
	g, err := serde.AvroFromFile[any]("testdata/t_v2.avsc", 8, serde.WithSchemaSet(set))
	if err != nil {
		t.Fatal(err)
	}
	gv, err := g.Deserialize("t", goldenT)
	if want := map[string]any{"a": int64(1), "c": 5, "d": nil}; err != nil || !reflect.DeepEqual(gv, want) {
		t.Errorf("generic v2 reading v1 = %#v, %v; want %#v", gv, err, want)
	}

	// v1 reads a record written with a as int (id 6): promoted to long.
	v1 := mustSerde[tV1](t, "testdata/t_v1.avsc", 7, serde.WithSchemaSet(set))
	intRecord := []byte{0x00, 0x00, 0x00, 0x00, 0x06, 0x54, 0x02, 0x79} // a=42, b="y"
	got, err := v1.Deserialize("t", intRecord)
	if err != nil || got != (tV1{A: 42, B: "y"}) {
		t.Errorf("v1 reading int-a = %+v, %v", got, err)
	}

	// v1 cannot read v2: v2 has no b, and v1's b has no default.
	d := "z"
	v2Bytes, err := v2.Serialize("t", tV2{A: 3, C: 4, D: &d})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the failure is cached and reported the same way
		_, err = v1.Deserialize("orders", v2Bytes)
		if !errors.Is(err, serde.ErrIncompatibleSchema) {
			t.Fatalf("v1 reading v2: err = %v, want ErrIncompatibleSchema", err)
		}
		if !strings.HasPrefix(err.Error(), "deserialize with serde avro: topic orders: incompatible writer schema: writer schema id 8, reader schema id 7: ") {
			t.Errorf("v1 reading v2: %q", err)
		}
	}
}

func TestAvroSchemaSetLateAdd(t *testing.T) {
	set := serde.NewSchemaSet()
	v2 := mustSerde[tV2](t, "testdata/t_v2.avsc", 8, serde.WithSchemaSet(set))
	if _, err := v2.Deserialize("t", goldenT); !errors.Is(err, serde.ErrUnknownSchemaID) {
		t.Fatalf("before Add: err = %v, want ErrUnknownSchemaID", err)
	}
	if err := set.AddFile(7, "testdata/t_v1.avsc"); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Deserialize("t", goldenT); err != nil {
		t.Errorf("after Add: %v", err)
	}
}

func TestSchemaSet(t *testing.T) {
	var set serde.SchemaSet // the zero value is usable
	v1 := avro.MustParse(schemaV1)
	if err := set.Add(7, v1); err != nil {
		t.Fatal(err)
	}
	if err := set.Add(7, avro.MustParse(schemaV1)); err != nil {
		t.Errorf("re-adding the same schema: %v", err)
	}
	err := set.AddFile(7, "testdata/t_v2.avsc")
	if err == nil || err.Error() != "testdata/t_v2.avsc: add schema: schema id 7 already holds a different schema" {
		t.Errorf("conflicting Add: %v", err)
	}
	if err := set.Add(8, nil); err == nil {
		t.Error("Add(nil) must fail")
	}
	if s, ok := set.Schema(7); !ok || s.Fingerprint() != v1.Fingerprint() {
		t.Errorf("Schema(7) = %v, %v", s, ok)
	}
	if _, ok := set.Schema(8); ok {
		t.Error("Schema(8) must be absent")
	}
	var nilSet *serde.SchemaSet
	if _, ok := nilSet.Schema(1); ok || nilSet.IDs() != nil {
		t.Error("a nil set is empty")
	}

	_, err = serde.SchemaSetFromFiles(map[int32]string{1: "testdata/t_v1.avsc", 2: "testdata/bad.avsc"})
	if err == nil || !strings.Contains(err.Error(), "testdata/bad.avsc") {
		t.Errorf("SchemaSetFromFiles with a bad file: %v", err)
	}
}

func TestAvroRoundTripTempFile(t *testing.T) {
	// Two versions of the same record name parsed side by side must not
	// leak into each other through hamba's global schema cache.
	dir := t.TempDir()
	p := filepath.Join(dir, "t.avsc")
	if err := os.WriteFile(p, []byte(`{"type":"record","name":"T","fields":[{"name":"a","type":"string"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	other := mustSerde[map[string]any](t, p, 1)
	v1 := mustSerde[tV1](t, "testdata/t_v1.avsc", 7)
	if _, err := v1.Deserialize("t", goldenT); err != nil {
		t.Error(err)
	}
	b, err := other.Serialize("t", map[string]any{"a": "q"})
	if want := []byte{0, 0, 0, 0, 1, 0x02, 'q'}; err != nil || !bytes.Equal(b, want) {
		t.Errorf("Serialize = % x, %v; want % x", b, err, want)
	}
}

func TestAvroBodyEdges(t *testing.T) {
	// A schema whose encoding is empty: the header alone is a whole record.
	null := serde.AvroGeneric(avro.MustParse(`"null"`), 3)
	v, err := null.Deserialize("t", []byte{0, 0, 0, 0, 3})
	if v != nil || err != nil {
		t.Errorf("null schema: Deserialize = %v, %v", v, err)
	}
	// Bytes after the body are ignored, as Confluent's deserializer does.
	s := serde.Avro[tV1](avro.MustParse(schemaV1), 7)
	got, err := s.Deserialize("t", append(bytes.Clone(goldenT), 0xff, 0xff))
	if err != nil || got != (tV1{A: 1, B: "x"}) {
		t.Errorf("trailing bytes: %+v, %v", got, err)
	}
}

func TestAvroLimits(t *testing.T) {
	arr := avro.MustParse(`{"type":"array","items":"long"}`)
	// One block declaring 2^21 elements (zig-zag 2^22 = 80 80 80 02): over
	// the default bound, so an error rather than a huge allocation.
	data := []byte{0, 0, 0, 0, 1, 0x80, 0x80, 0x80, 0x02}
	_, err := serde.Avro[[]int64](arr, 1).Deserialize("t", data)
	if !errors.Is(err, serde.ErrAvroBody) || !strings.Contains(err.Error(), "MaxSliceAllocSize") {
		t.Errorf("huge array: err = %v", err)
	}

	tiny := avro.Config{MaxByteSliceSize: 1}.Freeze()
	str := serde.Avro[string](avro.MustParse(`"string"`), 2, serde.WithAvroAPI(tiny))
	b, err := str.Serialize("t", "xy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Deserialize("t", b); err == nil || !strings.Contains(err.Error(), "MaxByteSliceSize") {
		t.Errorf("WithAvroAPI limit not applied: err = %v", err)
	}
	if v, err := serde.Avro[string](avro.MustParse(`"string"`), 2, serde.WithAvroAPI(avro.DefaultConfig)).Deserialize("t", b); err != nil || v != "xy" {
		t.Errorf("WithAvroAPI(DefaultConfig): %q, %v", v, err)
	}
}

func TestAvroConcurrent(t *testing.T) {
	// Serdes are shared by every task; resolution, its cache and the reader
	// pool must hold up under concurrent use (run with -race).
	set := serde.NewSchemaSet()
	if err := set.AddFile(7, "testdata/t_v1.avsc"); err != nil {
		t.Fatal(err)
	}
	v2 := mustSerde[tV2](t, "testdata/t_v2.avsc", 8, serde.WithSchemaSet(set))
	own, err := v2.Serialize("t", tV2{A: 2, C: 3})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for i := range 8 {
		go func() {
			var err error
			for range 200 {
				data, want := goldenT, tV2{A: 1, C: 5}
				if i%2 == 0 {
					data, want = own, tV2{A: 2, C: 3}
				}
				var got tV2
				if got, err = v2.Deserialize("t", data); err != nil || !reflect.DeepEqual(got, want) {
					if err == nil {
						err = errors.New("wrong value")
					}
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
