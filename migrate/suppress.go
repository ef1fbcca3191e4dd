package migrate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
)

// SuppressV3 is one value of Kafka Streams' suppress buffer changelog in
// its V3 layout (header "v" = 3), as InMemoryTimeOrderedKeyValueChangeBuffer
// logs it: BufferValue.serialize with eight bytes of room for the buffer
// time, then the buffer time. Every integer is big-endian.
//
//	8 bytes   record context: timestamp (of the latest update buffered)
//	8 bytes   record context: offset
//	4 + n     record context: topic, length-prefixed (-1 for null)
//	4 bytes   record context: partition
//	4 bytes   record context: header count (-1, written before 2.x
//	          added headers, for none), then per header a length-prefixed
//	          key and a length-prefixed value (-1 for null)
//	4 + n     prior value (-1 for null): the old value of the first update
//	          buffered since the last emission
//	4 + n     old value of the latest update (-1 for null), or -2 for "the
//	          same bytes as the prior value"
//	4 + n     new value of the latest update (-1 for null)
//	8 bytes   buffer time: the first update's (a window's end under
//	          untilWindowCloses, the record time under untilTimeLimit)
//
// Kafka Streams 4.4 strips its values' header-aware prefix before logging
// (the prefixes travel in "vh.*" changelog headers): the values here are
// the plain serialized values.
type SuppressV3 struct {
	Timestamp, Offset int64
	Topic             string
	Partition         int32
	Headers           processor.Headers
	Prior, Old, New   []byte
	BufferTime        int64
}

// DecodeSuppressV3 reads a V3 buffer value. Trailing bytes are an error.
func DecodeSuppressV3(b []byte) (SuppressV3, error) {
	r := beReader{b: b}
	var v SuppressV3
	v.Timestamp = r.int64("timestamp")
	v.Offset = r.int64("offset")
	topic, null := r.array("topic")
	if null && r.err == nil {
		r.err = errors.New("null topic")
	}
	v.Topic = string(topic)
	v.Partition = r.int32("partition")
	n := r.int32("header count")
	if r.err == nil && (n < -1 || int64(n)*8 > int64(len(r.b))) { // a header takes at least 8 bytes
		r.err = fmt.Errorf("header count %d in %d bytes", n, len(r.b))
	}
	for i := int32(0); i < n && r.err == nil; i++ {
		k, knull := r.array("header key")
		if knull && r.err == nil {
			r.err = fmt.Errorf("header %d: null key", i)
		}
		val, _ := r.array("header value")
		v.Headers = append(v.Headers, processor.Header{Key: string(k), Value: val})
	}
	v.Prior, _ = r.array("prior value")
	if r.err == nil && len(r.b) >= 4 && int32(binary.BigEndian.Uint32(r.b)) == -2 {
		r.b = r.b[4:]
		v.Old = v.Prior
	} else {
		v.Old, _ = r.array("old value")
	}
	v.New, _ = r.array("new value")
	v.BufferTime = r.int64("buffer time")
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the buffer time", len(r.b))
	}
	if r.err != nil {
		return SuppressV3{}, fmt.Errorf("suppress buffer value (V3): %w", r.err)
	}
	return v, nil
}

// EncodeSuppressV3 writes v in the V3 layout DecodeSuppressV3 reads: the
// value of a record of Kafka Streams' suppress buffer changelog, logged
// with the header "v" = 3. A null topic cannot be written (Kafka Streams
// requires one): an empty Topic is written empty.
func EncodeSuppressV3(v SuppressV3) []byte {
	array := func(b, a []byte) []byte {
		if a == nil {
			return binary.BigEndian.AppendUint32(b, 0xffffffff)
		}
		return append(binary.BigEndian.AppendUint32(b, uint32(len(a))), a...)
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(v.Timestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(v.Offset))
	b = array(b, []byte(v.Topic))
	b = binary.BigEndian.AppendUint32(b, uint32(v.Partition))
	b = binary.BigEndian.AppendUint32(b, uint32(len(v.Headers)))
	for _, h := range v.Headers {
		b = array(b, []byte(h.Key))
		b = array(b, h.Value)
	}
	b = array(b, v.Prior)
	b = array(b, v.Old)
	b = array(b, v.New)
	return binary.BigEndian.AppendUint64(b, uint64(v.BufferTime))
}

// EncodeSuppress translates the value of one record of our suppress
// buffer's changelog (dsl.SuppressBufferValue) into Kafka Streams' V3
// layout, the inverse of DecodeSuppress. What our buffer does not keep is
// written so that Kafka Streams emits what ours would: the latest old
// value is the prior (ours emits the prior as the old value), the source
// offset and partition -1 and the topic empty (our buffer does not know
// them; Kafka Streams only hands them to processors downstream as the
// record's context).
func EncodeSuppress(value []byte) ([]byte, error) {
	bt, ts, headers, prior, newValue, err := dsl.DecodeSuppressBufferValue(value)
	if err != nil {
		return nil, err
	}
	return EncodeSuppressV3(SuppressV3{Timestamp: ts, Offset: -1, Topic: "", Partition: -1, Headers: headers,
		Prior: prior, Old: prior, New: newValue, BufferTime: bt}), nil
}

// beReader reads big-endian fields, remembering the first error and what
// it was reading, at which byte.
type beReader struct {
	b   []byte
	at  int
	err error
}

func (r *beReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("byte %d: %s: %d bytes left, need %d", r.at, what, len(r.b), n)
		return nil
	}
	out := r.b[:n:n]
	r.b, r.at = r.b[n:], r.at+n
	return out
}

func (r *beReader) int64(what string) int64 {
	b := r.take(8, what)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *beReader) int32(what string) int32 {
	b := r.take(4, what)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// array reads a 4-byte length, -1 for null, and that many bytes.
func (r *beReader) array(what string) (b []byte, null bool) {
	at := r.at
	n := r.int32(what + " length")
	if r.err != nil {
		return nil, false
	}
	if n == -1 {
		return nil, true
	}
	if n < 0 {
		r.err = fmt.Errorf("byte %d: %s length %d", at, what, n)
		return nil, false
	}
	b = r.take(int(n), what)
	if b == nil && r.err == nil {
		b = []byte{}
	}
	return b, false
}

// DecodeSuppress translates one record of Kafka Streams' suppress buffer
// changelog into our buffer's: the same key, the value in our layout
// (dsl.SuppressBufferValue: buffer time, the latest update's timestamp and
// headers, the prior and the new value; the latest old value and the
// source offset, topic and partition mean nothing to our buffer), the
// latest update's timestamp on the record, as our engine writes it.
// keySuffix is the length of the window suffix of the key
// (dsl.SuppressBuffer.SuppressKeySuffix): the lane key is the key before
// it. A tombstone carries no version header; any other record must be V3.
func DecodeSuppress(key, value []byte, headers map[string][]byte, ts int64, keySuffix int) (Entry, error) {
	e := Entry{Key: key, Timestamp: ts, End: -1}
	if key == nil {
		return e, errors.New("null key")
	}
	if keySuffix < 0 || len(key) < keySuffix {
		return e, fmt.Errorf("key of %d bytes is shorter than its window suffix of %d", len(key), keySuffix)
	}
	e.LaneKey = key[: len(key)-keySuffix : len(key)-keySuffix]
	if value == nil {
		return e, nil
	}
	v, ok := SuppressVersion(headers)
	switch {
	case !ok:
		return e, errors.New("no suppress buffer version header (v)")
	case v != 3:
		return e, fmt.Errorf("suppress buffer changelog version %d (written by Kafka Streams before 2.4): only version 3 is translated", v)
	}
	sv, err := DecodeSuppressV3(value)
	if err != nil {
		return e, err
	}
	e.Value = dsl.SuppressBufferValue(sv.BufferTime, sv.Timestamp, sv.Headers, sv.Prior, sv.New)
	e.Timestamp = sv.Timestamp
	return e, nil
}
