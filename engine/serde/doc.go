// Package serde turns keys and values into bytes and back.
//
// A Serde[T] is the typed form users write and pass to the DSL; Any is the
// same serde with its type erased, which is what topology nodes and the
// runtime hold. Nulls (tombstones) are handled by the erased layer: nil bytes
// are a nil value and a nil value is nil bytes, whatever the serde. Pointer
// gives typed code the same null through a nil *T.
//
// Built-in serdes (String, Bytes, Int16, Int32, Int64, Float32, Float64,
// Bool, UUID) write exactly what Kafka's org.apache.kafka.common.serialization
// serdes write (big-endian integers, UTF-8 strings, IEEE 754 floats, one
// byte per boolean, UUIDs as text) so that keys land on the same partitions
// and topics and changelogs written by Kafka Streams read back unchanged.
// JSON and Avro cover structured values. Avro uses the Confluent wire format
// (magic byte 0, a 4-byte big-endian schema id, then the Avro body); a
// SchemaSet maps other schema ids to their writer schemas so records written
// with older or newer schemas resolve to the serde's own. AvroRegistry takes
// the ids from a Confluent-compatible schema registry instead: writer
// schemas are fetched by id, and a sink's schema is registered under its
// subject (a subject name strategy names it). A serde that reads
// configuration implements Configurable; topology.Build configures every
// source and sink serde.
//
// ByName returns the serdes a configuration can name, including Kafka's
// Serdes class names; Same tells whether two serdes write the same bytes.
//
// A failure to decode is a *DecodeError naming the serde and the topic, and,
// once the runtime has added them with At or Positioned, the partition and
// offset of the record.
package serde
