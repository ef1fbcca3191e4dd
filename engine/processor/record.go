package processor

import "bytes"

// Header is one record header. Kafka allows repeated keys, so Headers is a
// list, not a map.
type Header struct {
	Key   string
	Value []byte
}

// Headers is an ordered list of record headers.
type Headers []Header

// Add appends a header and returns the result; the receiver is not modified
// in place so that records sharing headers stay independent.
func (h Headers) Add(key string, value []byte) Headers {
	out := make(Headers, len(h), len(h)+1)
	copy(out, h)
	return append(out, Header{Key: key, Value: value})
}

// Last returns the value of the last header named key.
func (h Headers) Last(key string) ([]byte, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Key == key {
			return h[i].Value, true
		}
	}
	return nil, false
}

// Without returns the headers with every header named key removed.
func (h Headers) Without(key string) Headers {
	var out Headers
	for _, x := range h {
		if x.Key != key {
			out = append(out, x)
		}
	}
	return out
}

// Clone returns a deep copy.
func (h Headers) Clone() Headers {
	if h == nil {
		return nil
	}
	out := make(Headers, len(h))
	for i, x := range h {
		out[i] = Header{Key: x.Key, Value: bytes.Clone(x.Value)}
	}
	return out
}

// Record is what flows between processors.
type Record[K, V any] struct {
	Key       K
	Value     V
	Timestamp int64
	Headers   Headers
}

// WithKey returns r with its key replaced, possibly by one of another type.
func WithKey[K, V, NK any](r Record[K, V], key NK) Record[NK, V] {
	return Record[NK, V]{Key: key, Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers}
}

// WithValue returns r with its value replaced, possibly by one of another type.
func WithValue[K, V, NV any](r Record[K, V], value NV) Record[K, NV] {
	return Record[K, NV]{Key: r.Key, Value: value, Timestamp: r.Timestamp, Headers: r.Headers}
}

// RecordMetadata is where the record being processed was read from.
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Erased is the runtime's view of a record.
type Erased = Record[any, any]
