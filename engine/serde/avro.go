package serde

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/hamba/avro/v2"
)

// Confluent wire format: magic byte 0, then the schema id as a 4-byte
// big-endian integer, then the Avro binary encoding of the value.
const (
	confluentMagic     = 0x00
	confluentHeaderLen = 5
)

// defaultAvroAPI differs from avro.DefaultConfig in one way: it bounds the
// number of elements an array may declare. hamba allocates the declared
// count up front (up to 2^48), so one corrupt record could otherwise take
// the process down with an out-of-memory crash instead of a DecodeError.
// A million elements is far beyond what fits in a default-sized Kafka
// record; WithAvroAPI lifts the bound, and WithAvroAPI(avro.DefaultConfig)
// brings back types registered with avro.Register.
var defaultAvroAPI = avro.Config{MaxSliceAllocSize: maxAvroElements}.Freeze()

const maxAvroElements = 1 << 20

// AvroOption configures an Avro serde.
type AvroOption func(*avroOptions)

type avroOptions struct {
	set *SchemaSet
	api avro.API
}

// WithSchemaSet lets the serde read records written with other schema ids:
// the set supplies their writer schemas, which are resolved against the
// serde's own (reader) schema. Ids may be added to the set after the serde
// is built.
func WithSchemaSet(set *SchemaSet) AvroOption {
	return func(o *avroOptions) { o.set = set }
}

// WithAvroAPI replaces the codec configuration, for example to raise
// MaxByteSliceSize (1 MiB by default) for large string or bytes fields.
// api must come from avro.Config.Freeze (avro.DefaultConfig does); Avro
// panics on any other implementation.
func WithAvroAPI(api avro.API) AvroOption {
	return func(o *avroOptions) { o.api = api }
}

// Avro encodes T with schema in the Confluent wire format under schema id
// id. Decoding checks the magic byte and the schema id: records written
// with id decode with schema directly; records written with another id need
// that id's writer schema in a SchemaSet (WithSchemaSet) and are resolved
// to schema by Avro's schema resolution rules. For id the serde's own schema
// always wins, whatever a SchemaSet holds. As with Confluent's
// deserializer, bytes after the Avro body are ignored.
//
// Avro panics on a nil schema: that is a programming error, and failing
// every record later would hide it.
//
// hamba decodes recursively, so with a recursive schema a record nesting
// millions of levels deep (several MB of nothing but nesting) overflows the
// goroutine stack, which Go cannot recover from; non-recursive schemas are
// bounded by their own depth.
func Avro[T any](schema avro.Schema, id int32, opts ...AvroOption) Serde[T] {
	if schema == nil {
		panic("serde: Avro called with a nil schema")
	}
	o := avroOptions{api: defaultAvroAPI}
	for _, opt := range opts {
		opt(&o)
	}
	if o.api == nil {
		o.api = defaultAvroAPI
	}
	api := o.api
	// WithReaderConfig panics on an API not made by avro.Config.Freeze;
	// building one reader here makes that happen now, not on a record.
	avro.NewReader(nil, 0, avro.WithReaderConfig(api))
	return &avroSerde[T]{
		schema: schema,
		id:     id,
		set:    o.set,
		api:    api,
		compat: avro.NewSchemaCompatibility(),
		readers: sync.Pool{New: func() any {
			return avro.NewReader(nil, 0, avro.WithReaderConfig(api))
		}},
	}
}

// AvroFromFile is Avro with the schema parsed from a .avsc file.
func AvroFromFile[T any](path string, id int32, opts ...AvroOption) (Serde[T], error) {
	schema, err := parseSchemaFile(path)
	if err != nil {
		return nil, err
	}
	return Avro[T](schema, id, opts...), nil
}

// AvroGeneric is Avro without a Go type: records decode to map[string]any,
// arrays to []any, maps to map[string]any, unions of null and one type to
// that type's value or nil, and everything else as hamba's generic decoding
// does. Serialize takes the same shapes.
func AvroGeneric(schema avro.Schema, id int32, opts ...AvroOption) Serde[any] {
	return Avro[any](schema, id, opts...)
}

// parseSchemaFile parses one schema file with a private cache: hamba's
// default cache is global and keyed by full name, and two versions of a
// record (the whole point of a SchemaSet) share a name.
func parseSchemaFile(path string) (avro.Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read avro schema: %w", err)
	}
	schema, err := avro.ParseBytesWithCache(data, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("parse avro schema file %s: %w", path, err)
	}
	return schema, nil
}

type avroSerde[T any] struct {
	schema avro.Schema
	id     int32
	set    *SchemaSet
	api    avro.API
	compat *avro.SchemaCompatibility

	// resolved caches, per writer schema id, the composite schema (or the
	// resolution error) so each id is resolved once, not once per record.
	resolved sync.Map // int32 -> resolution

	readers sync.Pool // *avro.Reader, configured with api
}

type resolution struct {
	schema avro.Schema
	err    error
}

func (*avroSerde[T]) Name() string { return "avro" }

// SchemaID is the id written into every record's header.
func (s *avroSerde[T]) SchemaID() int32 { return s.id }

// Schema is the serde's own schema: the writer schema when serializing and
// the reader schema when deserializing.
func (s *avroSerde[T]) Schema() avro.Schema { return s.schema }

func (s *avroSerde[T]) Serialize(_ string, v T) ([]byte, error) {
	body, err := s.api.Marshal(s.schema, v)
	if err != nil {
		return nil, fmt.Errorf("serialize with serde avro: schema id %d: %w", s.id, err)
	}
	out := make([]byte, confluentHeaderLen, confluentHeaderLen+len(body))
	out[0] = confluentMagic
	binary.BigEndian.PutUint32(out[1:], uint32(s.id))
	return append(out, body...), nil
}

func (s *avroSerde[T]) Deserialize(topic string, data []byte) (T, error) {
	var zero T
	if len(data) < confluentHeaderLen {
		return zero, decodeError("avro", topic, fmt.Errorf("%w: record is %d bytes, need at least %d", ErrShortHeader, len(data), confluentHeaderLen))
	}
	if data[0] != confluentMagic {
		return zero, decodeError("avro", topic, fmt.Errorf("%w 0x%02x, expected 0x%02x", ErrBadMagic, data[0], confluentMagic))
	}
	id := int32(binary.BigEndian.Uint32(data[1:confluentHeaderLen]))
	schema, err := s.readerFor(id)
	if err != nil {
		return zero, decodeError("avro", topic, err)
	}
	var v T
	if err := s.decodeBody(schema, data[confluentHeaderLen:], &v); err != nil {
		return zero, decodeError("avro", topic, fmt.Errorf("%w (writer schema id %d): %w", ErrAvroBody, id, err))
	}
	return v, nil
}

// decodeBody decodes with a Reader of its own rather than api.Unmarshal,
// which treats running out of data as success: a truncated record would
// decode into a value with zeroed fields instead of failing.
func (s *avroSerde[T]) decodeBody(schema avro.Schema, body []byte, v *T) error {
	r := s.readers.Get().(*avro.Reader)
	defer s.readers.Put(r)
	r.Reset(body)
	r.Error = nil
	r.ReadVal(schema, v)
	if err := r.Error; err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("body is truncated: %w", err)
		}
		return err
	}
	return nil
}

// readerFor returns the schema that decodes a body written with schema id.
func (s *avroSerde[T]) readerFor(id int32) (avro.Schema, error) {
	if id == s.id {
		return s.schema, nil
	}
	if r, ok := s.resolved.Load(id); ok {
		res := r.(resolution)
		return res.schema, res.err
	}
	var writer avro.Schema
	if s.set != nil {
		writer, _ = s.set.Schema(id)
	}
	if writer == nil {
		// Not cached: the id may be added to the set later.
		return nil, fmt.Errorf("%w %d: the serde's schema id is %d and %s", ErrUnknownSchemaID, id, s.id, s.setDescription())
	}
	schema, err := s.compat.Resolve(s.schema, writer)
	if err != nil {
		err = fmt.Errorf("%w: writer schema id %d, reader schema id %d: %w", ErrIncompatibleSchema, id, s.id, err)
	}
	r, _ := s.resolved.LoadOrStore(id, resolution{schema, err})
	res := r.(resolution)
	return res.schema, res.err
}

func (s *avroSerde[T]) setDescription() string {
	if s.set == nil {
		return "it has no schema set"
	}
	return "its schema set does not hold the id"
}
