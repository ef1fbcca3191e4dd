package serde_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

type order struct {
	ID    int64    `json:"id"`
	Name  string   `json:"name"`
	Tags  []string `json:"tags,omitempty"`
	Price float64  `json:"price"`
}

func TestJSONTyped(t *testing.T) {
	s := serde.JSON[order]()
	in := order{ID: 1, Name: "a<b&c", Price: 2.5}
	b, err := s.Serialize("t", in)
	if err != nil {
		t.Fatal(err)
	}
	// No HTML escaping and no trailing newline: the bytes a JVM writer makes.
	if want := `{"id":1,"name":"a<b&c","price":2.5}`; string(b) != want {
		t.Errorf("Serialize = %s, want %s", b, want)
	}
	out, err := s.Deserialize("t", b)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("Deserialize = %+v, %v; want %+v", out, err, in)
	}
}

func TestJSONAny(t *testing.T) {
	s := serde.JSONAny()
	v, err := s.Deserialize("t", []byte(`{"a":1,"b":[true,null,"x"],"c":{"d":1.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a": float64(1),
		"b": []any{true, nil, "x"},
		"c": map[string]any{"d": 1.5},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Deserialize = %#v, want %#v", v, want)
	}
	b, err := s.Serialize("t", want)
	if err != nil || string(b) != `{"a":1,"b":[true,null,"x"],"c":{"d":1.5}}` {
		t.Errorf("Serialize = %s, %v", b, err)
	}
	// The document "null" is a nil value, but the record is not a null.
	v, err = s.Deserialize("t", []byte("null"))
	if v != nil || err != nil {
		t.Errorf("Deserialize(null) = %v, %v", v, err)
	}
}

func TestJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		s    serde.Any
		data string
		want string
	}{
		{"syntax", serde.Erase(serde.JSON[order]()), `{"id":x}`,
			"deserialize with serde json: topic orders: decode json into serde_test.order: invalid json at byte offset 7: invalid character 'x' looking for beginning of value"},
		{"trailing", serde.Erase(serde.JSONAny()), `{} {}`,
			"deserialize with serde json: topic orders: decode json into any: invalid json at byte offset 4: invalid character '{' after top-level value"},
		{"empty", serde.Erase(serde.JSONAny()), ``,
			"deserialize with serde json: topic orders: decode json into any: invalid json at byte offset 0: unexpected end of JSON input"},
		{"type", serde.Erase(serde.JSON[order]()), `{"id":"seven"}`,
			"deserialize with serde json: topic orders: decode json into serde_test.order: json: cannot unmarshal string into Go struct field order.id of type int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			de := decodeErr(t, tt.s, "orders", []byte(tt.data))
			if got := de.Error(); got != tt.want {
				t.Errorf("error = %q\nwant    %q", got, tt.want)
			}
		})
	}
	_, err := serde.JSON[func()]().Serialize("t", func() {})
	if err == nil || !strings.HasPrefix(err.Error(), "serialize with serde json: encode func(): ") {
		t.Errorf("Serialize(func) error = %v", err)
	}
}
