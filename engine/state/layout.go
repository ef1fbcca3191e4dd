package state

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// timestampSize is the length of the big-endian timestamp that prefixes a
// timestamped store's values.
const timestampSize = 8

// ErrValueTooShort is returned when timestamped store bytes are too short to
// hold the 8-byte timestamp prefix.
var ErrValueTooShort = errors.New("value too short for timestamp prefix")

// EncodeValueAndTimestamp lays out a timestamped store value as Kafka
// Streams' ValueAndTimestampSerializer does: the 8-byte big-endian timestamp
// followed by the serialized value. A nil value stays nil so that a tombstone
// is still a tombstone after encoding.
func EncodeValueAndTimestamp(value []byte, ts int64) []byte {
	if value == nil {
		return nil
	}
	b := make([]byte, timestampSize+len(value))
	binary.BigEndian.PutUint64(b, uint64(ts))
	copy(b[timestampSize:], value)
	return b
}

// DecodeValueAndTimestamp splits bytes laid out by EncodeValueAndTimestamp.
// The returned value aliases b, to keep restoration and migration scans free
// of copies; callers that keep it past b's lifetime must copy it. nil decodes
// to a nil value (the tombstone Encode produces); any other input shorter than
// the timestamp is an error.
func DecodeValueAndTimestamp(b []byte) (value []byte, ts int64, err error) {
	if b == nil {
		return nil, 0, nil
	}
	if len(b) < timestampSize {
		return nil, 0, fmt.Errorf("decode value and timestamp: %d bytes: %w", len(b), ErrValueTooShort)
	}
	return b[timestampSize:], int64(binary.BigEndian.Uint64(b)), nil
}
