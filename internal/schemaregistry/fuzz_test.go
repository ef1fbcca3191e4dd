package schemaregistry_test

import (
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/registry"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/internal/schemaregistry"
)

// FuzzAvroRegistry feeds the registry-backed Avro serde any bytes, against
// a registry holding one schema (id 1): it must not panic, every failure
// must be a *serde.DecodeError, and what decodes must encode to bytes
// that decode to the same value.
func FuzzAvroRegistry(f *testing.F) {
	reg := schemaregistry.New()
	if _, err := reg.Register("t-value", orderSchemaForFuzz); err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(reg)
	f.Cleanup(srv.Close)
	client, err := registry.NewClient(srv.URL)
	if err != nil {
		f.Fatal(err)
	}
	s := serde.AvroRegistry(client, serde.RegistryOptions{Schema: avro.MustParse(orderSchemaForFuzz), URL: srv.URL})
	good, err := s.Serialize("t", map[string]any{"id": int64(7), "item": "pen"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{0, 0, 0, 0, 2, 14})
	f.Add([]byte{0, 0, 0, 0, 9, 2, 2, 'x'})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := s.Deserialize("t", b)
		if err != nil {
			var de *serde.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%x: error %v is not a *DecodeError", b, err)
			}
			return
		}
		again, err := s.Serialize("t", v)
		if err != nil {
			t.Fatalf("%x decoded to %#v, which does not encode: %v", b, v, err)
		}
		// Not the same bytes: a varint may be written overlong, and
		// bytes after the body are ignored, as Confluent's ignore them.
		if back, err := s.Deserialize("t", again); err != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("%x decoded to %#v, which encodes to %x, which decodes to %#v (%v)", b, v, again, back, err)
		}
	})
}

const orderSchemaForFuzz = `{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}`
