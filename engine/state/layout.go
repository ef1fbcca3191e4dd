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
	return append(appendTimestamp(make([]byte, 0, timestampSize+len(value)), ts), value...)
}

// appendTimestamp appends the timestamp prefix of a timestamped store
// value; the serialized value follows it.
func appendTimestamp(dst []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(ts))
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

// Window and session store keys as Kafka Streams lays them out, in its
// stores and in their changelogs: WindowKeySchema.toStoreKeyBinary and
// SessionKeySchema.toBinary. Our byte stores index windows differently (see
// WindowStore); these are the changelog layouts.

// windowSeqSize is the length of the sequence number that ends a window
// store key.
const windowSeqSize = 4

// ErrKeyTooShort is returned when a window or session store key is too
// short to hold its timestamps (and sequence number).
var ErrKeyTooShort = errors.New("key too short for window suffix")

// EncodeWindowKey lays out a window store key as Kafka Streams'
// WindowKeySchema.toStoreKeyBinary: the serialized key, the window start (8
// bytes big-endian) and the sequence number (4 bytes big-endian; 0 unless
// the store retains duplicates).
func EncodeWindowKey(key []byte, start int64, seq int32) []byte {
	b := make([]byte, 0, len(key)+timestampSize+windowSeqSize)
	b = append(b, key...)
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	return binary.BigEndian.AppendUint32(b, uint32(seq))
}

// DecodeWindowKey splits a key laid out by EncodeWindowKey. key aliases b.
func DecodeWindowKey(b []byte) (key []byte, start int64, seq int32, err error) {
	n := len(b) - timestampSize - windowSeqSize
	if n < 0 {
		return nil, 0, 0, fmt.Errorf("decode window key: %d bytes, need at least %d: %w", len(b), timestampSize+windowSeqSize, ErrKeyTooShort)
	}
	return b[:n:n], int64(binary.BigEndian.Uint64(b[n:])), int32(binary.BigEndian.Uint32(b[n+timestampSize:])), nil
}

// EncodeSessionKey lays out a session store key as Kafka Streams'
// SessionKeySchema.toBinary: the serialized key, the session end and then
// its start, each 8 bytes big-endian. Note the argument order follows the
// session (start, end), the bytes Kafka Streams' (end, start).
func EncodeSessionKey(key []byte, start, end int64) []byte {
	b := make([]byte, 0, len(key)+2*timestampSize)
	b = append(b, key...)
	b = binary.BigEndian.AppendUint64(b, uint64(end))
	return binary.BigEndian.AppendUint64(b, uint64(start))
}

// DecodeSessionKey splits a key laid out by EncodeSessionKey. key aliases b.
func DecodeSessionKey(b []byte) (key []byte, start, end int64, err error) {
	n := len(b) - 2*timestampSize
	if n < 0 {
		return nil, 0, 0, fmt.Errorf("decode session key: %d bytes, need at least %d: %w", len(b), 2*timestampSize, ErrKeyTooShort)
	}
	end = int64(binary.BigEndian.Uint64(b[n:]))
	start = int64(binary.BigEndian.Uint64(b[n+timestampSize:]))
	return b[:n:n], start, end, nil
}
