package serde

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
)

const kafkaSerdes = "org.apache.kafka.common.serialization.Serdes$"

// byName lists the serdes a configuration can name: ours, the aliases Kafka
// users reach for ("long", "double"), and Kafka's own class names, so a
// properties file written for Kafka Streams works unchanged.
var byName = map[string]func() Any{
	"string":  func() Any { return Erase(String()) },
	"bytes":   func() Any { return Erase(Bytes()) },
	"int16":   func() Any { return Erase(Int16()) },
	"int32":   func() Any { return Erase(Int32()) },
	"int64":   func() Any { return Erase(Int64()) },
	"long":    func() Any { return Erase(Int64()) },
	"float32": func() Any { return Erase(Float32()) },
	"float64": func() Any { return Erase(Float64()) },
	"double":  func() Any { return Erase(Float64()) },
	"bool":    func() Any { return Erase(Bool()) },
	"uuid":    func() Any { return Erase(UUID()) },
	"json":    func() Any { return Erase(JSONAny()) },

	kafkaSerdes + "StringSerde":    func() Any { return Erase(String()) },
	kafkaSerdes + "ByteArraySerde": func() Any { return Erase(Bytes()) },
	kafkaSerdes + "ShortSerde":     func() Any { return Erase(Int16()) },
	kafkaSerdes + "IntegerSerde":   func() Any { return Erase(Int32()) },
	kafkaSerdes + "LongSerde":      func() Any { return Erase(Int64()) },
	kafkaSerdes + "FloatSerde":     func() Any { return Erase(Float32()) },
	kafkaSerdes + "DoubleSerde":    func() Any { return Erase(Float64()) },
	kafkaSerdes + "BooleanSerde":   func() Any { return Erase(Bool()) },
	kafkaSerdes + "UUIDSerde":      func() Any { return Erase(UUID()) },
}

// ByName returns the serde a configuration names. Avro is not nameable:
// it needs a schema and an id, which a bare name cannot carry. The
// returned serde's Name is canonical ("long" gives "int64"), so serdes
// chosen by different spellings compare equal with Same.
func ByName(name string) (Any, error) {
	if mk, ok := byName[name]; ok {
		return mk(), nil
	}
	return nil, fmt.Errorf("unknown serde %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists every name ByName accepts, sorted.
func Names() []string { return slices.Sorted(maps.Keys(byName)) }

// Same reports whether two serdes read and write the same bytes, as far as
// can be told: the same Name and, for Avro, the same schema id and schema
// fingerprint (two Avro serdes under one name can write incompatible
// records). JSON serdes of different Go types compare equal because their
// bytes do not depend on the type. Two nil serdes are the same.
func Same(a, b Any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Name() != b.Name() {
		return false
	}
	sa, ida, oka := AvroSchemaOf(a)
	sb, idb, okb := AvroSchemaOf(b)
	if oka != okb {
		return false
	}
	if !oka {
		return true
	}
	return ida == idb && sa.Fingerprint() == sb.Fingerprint()
}

// AvroSchemaOf returns the schema and schema id of an Avro serde, looking
// through Erase and Pointer; ok is false for any other serde.
func AvroSchemaOf(s any) (schema avro.Schema, id int32, ok bool) {
	type avroSchemaer interface {
		Schema() avro.Schema
		SchemaID() int32
	}
	type unwrapper interface{ Unwrap() any }
	// Bounded so that a wrapper that unwraps to itself cannot loop forever.
	for range 16 {
		switch v := s.(type) {
		case avroSchemaer:
			return v.Schema(), v.SchemaID(), true
		case unwrapper:
			s = v.Unwrap()
		default:
			return nil, 0, false
		}
	}
	return nil, 0, false
}
