package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// Kind is the JSON type of a fixture value.
type Kind uint8

const (
	Null Kind = iota
	String
	Number
	Bool
	// Compound is an object or a list.
	Compound
)

func (k Kind) String() string {
	return [...]string{"null", "string", "number", "bool", "object or list"}[k]
}

// Value is a key or value as a fixture writes it. Text holds a string's
// contents, or a number's or boolean's literal; a compound holds either
// Tree (decoded from YAML: map[string]any, []any and scalars) or Raw (its
// JSON text, from a records file, kept so JSON is not decoded twice).
type Value struct {
	Kind Kind
	Text string
	Tree any
	Raw  []byte
}

// errWant reports a fixture value of the wrong JSON type for a serde.
func errWant(want string, s serde.Any, v Value) error {
	return fmt.Errorf("serde %s needs %s, got %s %s", s.Name(), want, v.Kind, v.short())
}

func (v Value) short() string {
	s := v.Text
	if v.Kind == Compound {
		s = canonical(v.any())
	} else if v.Kind == String {
		s = strconv.Quote(s)
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// any returns the value as plain Go data: nil, string, json.Number, bool,
// map[string]any or []any.
func (v Value) any() any {
	switch v.Kind {
	case String:
		return v.Text
	case Number:
		return json.Number(v.Text)
	case Bool:
		return v.Text == "true"
	case Compound:
		if v.Raw != nil {
			var t any
			d := json.NewDecoder(bytes.NewReader(v.Raw))
			d.UseNumber()
			if err := d.Decode(&t); err != nil {
				return string(v.Raw)
			}
			return t
		}
		return v.Tree
	}
	return nil
}

// Serialize writes v with s, the way a producer using the same serde would:
// null is a null record; strings, numbers and booleans go to the serdes of
// their type (a number or boolean is also accepted, as its literal, by a
// string serde, since YAML reads an unquoted 7 as a number); anything goes
// to a JSON serde. Serdes this package does not know (Avro, custom ones)
// get the plain Go value: string, int64 or float64, bool, map or list.
func Serialize(s serde.Any, topic string, v Value) ([]byte, error) {
	if v.Kind == Null {
		return nil, nil
	}
	switch s.Name() {
	case "string", "uuid":
		if v.Kind == Compound {
			return nil, errWant("a string", s, v)
		}
		if s.Name() == "string" {
			return []byte(v.Text), nil
		}
		return s.SerializeAny(topic, v.Text)
	case "bytes":
		if v.Kind != String {
			return nil, errWant("a string", s, v)
		}
		return []byte(v.Text), nil
	case "int16", "int32", "int64":
		if v.Kind != Number {
			return nil, errWant("an integer", s, v)
		}
		bits := map[string]int{"int16": 16, "int32": 32, "int64": 64}[s.Name()]
		n, err := strconv.ParseInt(v.Text, 10, bits)
		if err != nil {
			return nil, fmt.Errorf("serde %s needs an integer that fits %d bits, got %s", s.Name(), bits, v.Text)
		}
		switch bits {
		case 16:
			return s.SerializeAny(topic, int16(n))
		case 32:
			return s.SerializeAny(topic, int32(n))
		}
		return s.SerializeAny(topic, n)
	case "float32", "float64":
		if v.Kind != Number {
			return nil, errWant("a number", s, v)
		}
		f, err := strconv.ParseFloat(v.Text, 64)
		if err != nil {
			return nil, fmt.Errorf("serde %s: %w", s.Name(), err)
		}
		if s.Name() == "float32" {
			return s.SerializeAny(topic, float32(f))
		}
		return s.SerializeAny(topic, f)
	case "bool":
		if v.Kind != Bool {
			return nil, errWant("a boolean", s, v)
		}
		return s.SerializeAny(topic, v.Text == "true")
	case "json":
		return encodeJSON(v)
	}
	if strings.Contains(s.Name(), "windowed(") {
		return nil, fmt.Errorf("serde %s: piping windowed keys is not supported", s.Name())
	}
	return s.SerializeAny(topic, goValue(v.any()))
}

func encodeJSON(v Value) ([]byte, error) {
	switch v.Kind {
	case String:
		return marshal(v.Text)
	case Number, Bool:
		return []byte(v.Text), nil
	}
	if v.Raw != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, v.Raw); err != nil {
			return nil, fmt.Errorf("serde json: %w", err)
		}
		return b.Bytes(), nil
	}
	return marshal(v.Tree)
}

// marshal is json.Marshal without HTML escaping, as the json serde writes.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// goValue turns json.Number into int64 or float64, for serdes that want
// Go numbers.
func goValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = goValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = goValue(e)
		}
		return out
	}
	return v
}

// Decode reads bytes a sink wrote with s into plain data for comparison:
// JSON is decoded from the bytes themselves, so no precision is lost and
// struct field order does not matter; windowed keys become objects with
// key, start and end; bytes a string when they are UTF-8, else an object
// {"base64": ...}.
func Decode(s serde.Any, topic string, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if s.Name() == "json" {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("deserialize with serde json: %w", err)
		}
		return normalize(v), nil
	}
	v, err := s.DeserializeAny(topic, data)
	if err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// normalize maps a decoded Go value onto the plain data canonical renders:
// nil, string, bool, int64, float64, map[string]any or []any.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, string, bool:
		return x
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return normFloat(f)
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return map[string]any{"base64": base64.StdEncoding.EncodeToString(x)}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u)
		}
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return normFloat(rv.Float())
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	case reflect.Struct:
		if w, ok := windowed(rv); ok {
			return w
		}
	}
	// Anything else (structs, typed maps and slices) goes through its JSON
	// form, the closest thing to what a user would write in a fixture.
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var t any
	if err := d.Decode(&t); err != nil {
		return string(b)
	}
	return normalize(t)
}

// windowed recognises window.Windowed[K] by shape (generic instances share
// no interface): a struct with Key and a Window holding Start and End.
func windowed(rv reflect.Value) (map[string]any, bool) {
	t := rv.Type()
	if t.PkgPath() != "github.com/stoatflow/stoatctl/engine/window" || !strings.HasPrefix(t.Name(), "Windowed[") {
		return nil, false
	}
	w := rv.FieldByName("Window")
	return map[string]any{
		"key":   normalize(rv.FieldByName("Key").Interface()),
		"start": w.FieldByName("Start").Int(),
		"end":   w.FieldByName("End").Int(),
	}, true
}

// normFloat keeps integral floats as integers so that 3 and 3.0 compare
// equal whichever serde produced them.
func normFloat(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return f
}

// canonical renders plain data as JSON with sorted object keys and no
// HTML escaping: the form both sides of a comparison are reduced to.
func canonical(v any) string {
	b, err := marshal(normalize(v))
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return string(b)
}

// errNotWindow is returned for an expected windowed key that is not an
// object with key, start and end.
var errNotWindow = errors.New("a windowed key is an object with key, start and end")

// expectedWindowed rewrites an expected windowed key's start and end, which
// a fixture may write as RFC 3339 times, to epoch milliseconds.
func expectedWindowed(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errNotWindow
	}
	if !slices.Equal(slices.Sorted(maps.Keys(m)), []string{"end", "key", "start"}) {
		return nil, errNotWindow
	}
	out := map[string]any{"key": m["key"]}
	for _, f := range []string{"start", "end"} {
		ms, err := timeOf(m[f])
		if err != nil {
			return nil, fmt.Errorf("windowed key %s: %w", f, err)
		}
		out[f] = ms
	}
	return out, nil
}
