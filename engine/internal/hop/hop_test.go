package hop_test

import (
	"errors"
	"testing"

	"github.com/stoatflow/stoatctl/engine/internal/hop"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// TestNewEntryRefuses lists the serdes and types an entry is not made
// for: the erased path must keep those records.
func TestNewEntryRefuses(t *testing.T) {
	process := func(string, bool, []byte, int64, processor.Headers) error { return nil }
	str, bytes := serde.Erase(serde.String()), serde.Erase(serde.Bytes())
	if _, ok := hop.NewEntry(str, bytes, process); !ok {
		t.Fatal("no entry for a String key and a Bytes value")
	}
	if _, ok := hop.NewEntry(bytes, bytes, process); ok {
		t.Error("an entry for a key serde of another type")
	}
	if _, ok := hop.NewEntry(str, str, process); ok {
		t.Error("an entry for a value serde of another type")
	}
	anyProcess := func(string, bool, any, int64, processor.Headers) error { return nil }
	if _, ok := hop.NewEntry(str, serde.Erase[any](anySerde{}), anyProcess); ok {
		t.Error("an entry for an interface value type")
	}
}

// TestEntryDecode checks what an entry holds after each kind of record:
// nulls as flags and zero values, as the erased path's nil interfaces
// narrow; borrowed bytes; the key's error before the value is read.
func TestEntryDecode(t *testing.T) {
	var got []string
	e, _ := hop.NewEntry(serde.Erase(serde.String()), serde.Erase(serde.Bytes()), func(k string, null bool, v []byte, ts int64, _ processor.Headers) error {
		if null {
			k = "<null>"
		}
		got = append(got, k+"="+string(v))
		return nil
	})
	value := []byte("v")
	for _, r := range []struct{ k, v []byte }{{[]byte("k"), value}, {nil, value}, {[]byte("k"), nil}} {
		if inKey, err := e.Decode("t", r.k, r.v); err != nil {
			t.Fatalf("decode: %v (in key: %v)", err, inKey)
		}
		key, val := e.Erased()
		if (key == nil) != (r.k == nil) || (val == nil) != (r.v == nil) {
			t.Errorf("Erased() = %v, %v for key %q value %q", key, val, r.k, r.v)
		}
		if s, ok := e.SourceKey(); ok != (r.k != nil) || s != string(r.k) {
			t.Errorf("SourceKey() = %q, %v for key %q", s, ok, r.k)
		}
		if err := e.Process(1, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"k=v", "<null>=v", "k="}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("processed %q, want %q", got, want)
	}
	// The Bytes serde borrows: the value is the input's memory.
	e.Decode("t", []byte("k"), value)
	if _, v := e.Erased(); &v.([]byte)[0] != &value[0] {
		t.Error("the Bytes value was copied")
	}

	failing, _ := hop.NewEntry(serde.Erase[string](failingSerde{}), serde.Erase(serde.Bytes()), func(string, bool, []byte, int64, processor.Headers) error { return nil })
	if inKey, err := failing.Decode("t", []byte("k"), value); !inKey || err == nil {
		t.Errorf("Decode of a key the serde refuses = %v, %v; want the key's error", inKey, err)
	}
}

// TestToSinkWithoutTarget: a context that offers no target gets no hop.
func TestToSinkWithoutTarget(t *testing.T) {
	if hop.ToSink[string, []byte](struct{}{}) != nil {
		t.Error("a hop from a context that offers no target")
	}
}

type anySerde struct{}

func (anySerde) Name() string                            { return "any" }
func (anySerde) Serialize(string, any) ([]byte, error)   { return nil, nil }
func (anySerde) Deserialize(string, []byte) (any, error) { return nil, nil }

type failingSerde struct{}

func (failingSerde) Name() string                               { return "failing" }
func (failingSerde) Serialize(string, string) ([]byte, error)   { return nil, errors.New("no") }
func (failingSerde) Deserialize(string, []byte) (string, error) { return "", errors.New("no") }
