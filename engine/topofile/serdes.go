package topofile

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/expr-lang/expr/types"
	"github.com/hamba/avro/v2"
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// dynSerde is a serde.Serde[any] over an erased serde: a file's values are
// dynamically typed, so everything the compiler hands the DSL is keyed and
// valued by any. It also implements serde.Any, so serde.Erase returns it
// unchanged instead of wrapping it twice.
//
// Expressions compute Go ints and float64s where a serde wants an int64 or
// an int32: Serialize converts numbers losslessly to the serde's type (and
// strings to bytes for the bytes serde), so that `value + 1` can be written
// with a long serde. A lossy conversion is an error, never a silent
// truncation.
type dynSerde struct {
	inner serde.Any
	// goType is the Go type the inner serde reads and writes, nil when any
	// value will do (json, avro).
	goType reflect.Type
}

func (s dynSerde) Name() string { return s.inner.Name() }

// Unwrap lets serde.AvroSchemaOf and serde.Same look through the adapter.
func (s dynSerde) Unwrap() any { return s.inner }

// StringsAs is the inner serde: a string goes through the adapter to it
// unchanged both ways (serde.StringAdapter), so a sink may write a source's
// String key as the bytes it arrived with.
func (s dynSerde) StringsAs() serde.Any { return s.inner }

func (s dynSerde) Serialize(topic string, v any) ([]byte, error) { return s.SerializeAny(topic, v) }

func (s dynSerde) Deserialize(topic string, data []byte) (any, error) {
	return s.DeserializeAny(topic, data)
}

func (s dynSerde) SerializeAny(topic string, v any) ([]byte, error) {
	if f, ok := v.(*evalFailure); ok {
		return nil, f.err
	}
	if v == nil {
		return nil, nil
	}
	v, err := convert(v, s.goType)
	if err != nil {
		return nil, fmt.Errorf("serialize with serde %s: %w", s.Name(), err)
	}
	return s.inner.SerializeAny(topic, v)
}

func (s dynSerde) DeserializeAny(topic string, data []byte) (any, error) {
	return s.inner.DeserializeAny(topic, data)
}

// Configure lets an inner serde that reads configuration (avroDecl) do so
// through the adapter (serde.Configurable).
func (s dynSerde) Configure(c config.Config, isKey bool) (serde.Any, error) {
	inner, ok := s.inner.(serde.Configurable)
	if !ok {
		return s, nil
	}
	configured, err := inner.Configure(c, isKey)
	if err != nil {
		return nil, err
	}
	return dynSerde{inner: configured, goType: s.goType}, nil
}

// avroDecl is a file's Avro serde before the configuration is known: with
// schema.registry.url set it becomes a registry-backed serde
// (serde.AvroRegistry) with the file's schema, if any, as its own;
// without, the local serde of the schema and schema-id the file gives.
type avroDecl struct {
	// local is the serde without a registry: nil when the file gives no
	// schema, which only a registry can make up for.
	local  serde.Any
	schema avro.Schema
	// at is where the file declares it, and what, for errors.
	at Error
}

// fail is err at the declaration.
func (d avroDecl) fail(err error) error {
	e := d.at
	e.Msg += ": " + err.Error()
	return &e
}

func (d avroDecl) Name() string { return "avro" }

// Unwrap lets serde.AvroSchemaOf see the local serde's schema and id.
func (d avroDecl) Unwrap() any { return d.local }

var errAvroNeedsRegistry = errors.New("the avro serde has no schema: give it one ({type: avro, schema: FILE}) or read through a schema registry (config " + serde.SchemaRegistryURL + ")")

func (d avroDecl) SerializeAny(topic string, v any) ([]byte, error) {
	if d.local == nil {
		return nil, errAvroNeedsRegistry
	}
	return d.local.SerializeAny(topic, v)
}

func (d avroDecl) DeserializeAny(topic string, data []byte) (any, error) {
	if d.local == nil {
		return nil, errAvroNeedsRegistry
	}
	return d.local.DeserializeAny(topic, data)
}

func (d avroDecl) Configure(c config.Config, isKey bool) (serde.Any, error) {
	rc, ok, err := serde.ReadRegistryConfig(c)
	if err != nil {
		return nil, d.fail(err)
	}
	if !ok {
		if d.local == nil {
			return nil, d.fail(errAvroNeedsRegistry)
		}
		return d, nil
	}
	client, err := serde.NewRegistryClient(rc)
	if err != nil {
		return nil, d.fail(err)
	}
	strategy := rc.ValueStrategy
	if isKey {
		strategy = rc.KeyStrategy
	}
	return serde.Erase(serde.AvroRegistry(client, serde.RegistryOptions{Schema: d.schema, Strategy: strategy,
		AutoRegister: rc.AutoRegister, IsKey: isKey, URL: rc.URL})), nil
}

// serdeInfo is a serde as a file declares it, with the static type its
// values have for the expression type checker.
type serdeInfo struct {
	serde *dynSerde
	// typ is what expressions see: the Go type of the serde's values, or
	// types.Any when it decodes to dynamic shapes.
	typ types.Type
}

// serdeAliases maps the Kafka-flavoured names a file may use to the names
// serde.ByName knows.
var serdeAliases = map[string]string{
	"int":     "int32",
	"integer": "int32",
	"short":   "int16",
	"float":   "float32",
	"boolean": "bool",
}

// serdeNames are the names documented for files, for error messages.
const serdeNames = "string, long, int, short, double, float, boolean, bytes, uuid, json, avro"

// goTypes are the value types of the fixed-layout serdes, by canonical
// name; serdes missing here take any value.
var goTypes = map[string]reflect.Type{
	"string":  reflect.TypeFor[string](),
	"uuid":    reflect.TypeFor[string](),
	"bytes":   reflect.TypeFor[[]byte](),
	"int16":   reflect.TypeFor[int16](),
	"int32":   reflect.TypeFor[int32](),
	"int64":   reflect.TypeFor[int64](),
	"float32": reflect.TypeFor[float32](),
	"float64": reflect.TypeFor[float64](),
	"bool":    reflect.TypeFor[bool](),
}

// namedSerde returns the serde a name stands for (avro excepted).
func namedSerde(name string) (serdeInfo, error) {
	canonical := name
	if a, ok := serdeAliases[name]; ok {
		canonical = a
	}
	inner, err := serde.ByName(canonical)
	if err != nil {
		return serdeInfo{}, fmt.Errorf("unknown serde %q (known: %s)", name, serdeNames)
	}
	gt := goTypes[inner.Name()]
	info := serdeInfo{serde: &dynSerde{inner: inner, goType: gt}, typ: types.Any}
	if gt != nil {
		info.typ = types.TypeOf(reflect.Zero(gt).Interface())
	}
	return info, nil
}

const maxSchemaSize = 1 << 20

// serdeField reads a serde declaration: a name ("string", "long", "json"),
// or a mapping {type: avro, schema: FILE, schema-id: N} whose schema path
// is relative to the topology file.
func (c *compiler) serdeField(n *yaml.Node, what string) (serdeInfo, bool) {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "avro" {
			// Writer schemas from a registry, known once the
			// configuration is (avroDecl.Configure).
			return serdeInfo{serde: &dynSerde{inner: avroDecl{at: c.declAt(n, what)}}, typ: types.Any}, true
		}
		info, err := namedSerde(n.Value)
		if err != nil {
			c.errf(n, "%s: %v", what, err)
			return serdeInfo{}, false
		}
		return info, true
	}
	f, ok := c.mapping(n, what, "type", "schema", "schema-id")
	if !ok {
		return serdeInfo{}, false
	}
	typ, ok := c.requiredString(f, n, "type", what)
	if !ok {
		return serdeInfo{}, false
	}
	if typ != "avro" {
		if f.has("schema") || f.has("schema-id") {
			c.errf(f.key("schema", "schema-id"), "%s: only the avro serde takes a schema", what)
			return serdeInfo{}, false
		}
		info, err := namedSerde(typ)
		if err != nil {
			c.errf(f.get("type"), "%s: %v", what, err)
			return serdeInfo{}, false
		}
		return info, true
	}
	path, ok := c.requiredString(f, n, "schema", what)
	if !ok {
		return serdeInfo{}, false
	}
	id := int64(1)
	if idn := f.get("schema-id"); idn != nil {
		if id, ok = c.intField(idn, what+" schema-id", 0, math.MaxInt32); !ok {
			return serdeInfo{}, false
		}
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.baseDir, path)
	}
	// A schema is a small regular file; refusing anything else keeps a
	// mistaken path (a device, a data file) from hanging the load.
	if fi, err := os.Stat(path); err != nil {
		c.errf(f.get("schema"), "%s: avro schema: %v", what, err)
		return serdeInfo{}, false
	} else if !fi.Mode().IsRegular() || fi.Size() > maxSchemaSize {
		c.errf(f.get("schema"), "%s: avro schema %s: expected a .avsc file of at most %d bytes", what, path, maxSchemaSize)
		return serdeInfo{}, false
	}
	s, err := serde.AvroFromFile[any](path, int32(id))
	if err != nil {
		c.errf(f.get("schema"), "%s: %v", what, err)
		return serdeInfo{}, false
	}
	decl := avroDecl{local: serde.Erase(s), schema: s.(interface{ Schema() avro.Schema }).Schema(), at: c.declAt(n, what)}
	return serdeInfo{serde: &dynSerde{inner: decl}, typ: types.Any}, true
}

// declAt is the position of n, with what it declares, for errors found
// once the configuration is known.
func (c *compiler) declAt(n *yaml.Node, what string) Error {
	return Error{File: c.file, Line: n.Line, Column: n.Column, Msg: what}
}

// convert turns v into a value of type t when that loses nothing: numbers
// between numeric types, strings into bytes. A nil t accepts anything.
func convert(v any, t reflect.Type) (any, error) {
	if t == nil {
		return v, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Type() == t {
		return v, nil
	}
	fail := func() (any, error) {
		return nil, fmt.Errorf("value %s of type %T does not fit %s", short(v), v, t)
	}
	switch t.Kind() {
	case reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		switch {
		case rv.CanInt():
			i = rv.Int()
		case rv.CanUint():
			u := rv.Uint()
			if u > math.MaxInt64 {
				return fail()
			}
			i = int64(u)
		case rv.CanFloat():
			f := rv.Float()
			if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
				return fail()
			}
			i = int64(f)
		default:
			return fail()
		}
		out := reflect.New(t).Elem()
		if out.OverflowInt(i) {
			return fail()
		}
		out.SetInt(i)
		return out.Interface(), nil
	case reflect.Float32, reflect.Float64:
		var f float64
		switch {
		case rv.CanFloat():
			f = rv.Float()
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		default:
			return fail()
		}
		out := reflect.New(t).Elem()
		out.SetFloat(f)
		return out.Interface(), nil
	case reflect.Slice:
		if s, ok := v.(string); ok && t.Elem().Kind() == reflect.Uint8 {
			return []byte(s), nil
		}
	}
	return fail()
}

// short quotes a value for an error message, cut short so that a large
// record does not end up whole in a log line.
func short(v any) string {
	s := fmt.Sprintf("%v", v)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strings.TrimSpace(s)
}
