package serde

import (
	"errors"
	"fmt"
	"strings"
)

// DecodeError is the error every Deserialize in this package returns. It
// carries the serde's name so a poison record can be traced to the serde
// that rejected it, and, once the runtime has called At or Positioned, the
// record's position so it can be found (and skipped) on the topic.
type DecodeError struct {
	Serde      string
	Topic      string
	Partition  int32
	Offset     int64
	Positioned bool // Partition and Offset are meaningful only when set
	Err        error
}

// Error reads like "deserialize with serde int64: topic orders partition 2
// offset 17: size of data is 3, expected 8". Without a position only the
// topic (if any) is named, because partition 0 offset 0 would be a lie.
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("deserialize")
	if e.Serde != "" {
		b.WriteString(" with serde ")
		b.WriteString(e.Serde)
	}
	switch {
	case e.Positioned:
		fmt.Fprintf(&b, ": topic %s partition %d offset %d", e.Topic, e.Partition, e.Offset)
	case e.Topic != "":
		b.WriteString(": topic ")
		b.WriteString(e.Topic)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// At returns a copy of e positioned at the given record. It copies rather
// than mutates so an error value shared between callers never changes under
// them.
func (e *DecodeError) At(topic string, partition int32, offset int64) *DecodeError {
	if e == nil {
		return nil
	}
	c := *e
	c.Topic, c.Partition, c.Offset, c.Positioned = topic, partition, offset, true
	return &c
}

// Positioned adds a record position to a deserialization error, for the
// runtime, which knows where a record came from while serdes do not. A
// *DecodeError is repositioned with At; an error that merely wraps one keeps
// its context and gains the position in a new *DecodeError around it; any
// other error (a user serde that does not return *DecodeError) is wrapped
// in a *DecodeError without a serde name. A nil error stays nil.
func Positioned(err error, topic string, partition int32, offset int64) error {
	if err == nil {
		return nil
	}
	var de *DecodeError
	if errors.As(err, &de) {
		if de == err {
			return de.At(topic, partition, offset)
		}
		return &DecodeError{Serde: de.Serde, Topic: topic, Partition: partition, Offset: offset, Positioned: true, Err: err}
	}
	return &DecodeError{Topic: topic, Partition: partition, Offset: offset, Positioned: true, Err: err}
}

// AsDecodeError finds the outermost *DecodeError in err's chain.
func AsDecodeError(err error) (*DecodeError, bool) {
	var de *DecodeError
	if errors.As(err, &de) {
		return de, true
	}
	return nil, false
}

// decodeError builds the error a Deserialize returns. It returns error, not
// *DecodeError, so callers cannot leak a typed nil through an interface.
func decodeError(serde, topic string, err error) error {
	return &DecodeError{Serde: serde, Topic: topic, Err: err}
}

// Errors wrapped by the Avro serde's DecodeErrors, for errors.Is.
var (
	// ErrShortHeader: the record is shorter than the 5-byte Confluent header.
	ErrShortHeader = errors.New("short confluent header")
	// ErrBadMagic: byte 0 is not the Confluent magic byte 0x00, so the
	// record was not written by a Confluent-framed serializer.
	ErrBadMagic = errors.New("bad magic byte")
	// ErrUnknownSchemaID: the header names a schema id the serde does not
	// know (neither its own nor one in its SchemaSet).
	ErrUnknownSchemaID = errors.New("unknown schema id")
	// ErrIncompatibleSchema: the writer schema cannot be resolved to the
	// serde's reader schema.
	ErrIncompatibleSchema = errors.New("incompatible writer schema")
	// ErrAvroBody: the header was fine but the Avro body did not decode.
	ErrAvroBody = errors.New("decode avro body")
)
