package kafka

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// UnknownPartitionTime is the partition time of a partition no record has
// been seen on: Kafka Streams' RecordQueue.UNKNOWN.
const UnknownPartitionTime int64 = -1

// FloorKey is the processor metadata entry under which stoatctl commits,
// with each source partition's offset, the watermark floor its task's
// epoch ended at (the stamp of the barrier that closed it). A task that
// moves to another instance, or starts again, resumes its floor from it
// (decision 0042); Kafka Streams keeps what it does not know in the map
// and never reads it.
const FloorKey = OwnKeyPrefix + "floor"

// OwnKeyPrefix starts every processor metadata key stoatctl writes (the
// floor, a repartition partition's watermark marks), so that the way
// back to Kafka Streams can leave them all behind.
const OwnKeyPrefix = "stoatctl/"

// Versions of the offset metadata layout. Version 1 (Kafka Streams 2.x)
// holds the partition time only; version 2 adds processor metadata.
const (
	metadataV1     byte = 1
	metadataV2     byte = 2
	metadataLatest      = metadataV2
)

// TopicPartitionMetadata is the metadata committed with a source
// partition's offset, in Kafka Streams' TopicPartitionMetadata layout:
//
//	base64( version byte 2 | partition time, int64 | processor metadata )
//
// with the processor metadata, when there is any,
//
//	entry count, int32 | per entry: key length, int32 | key, UTF-8 | value, int64
//
// all integers big-endian; no metadata is no bytes at all, not a zero
// count. The base64 is the standard alphabet with padding, as Java's
// Base64.getEncoder writes it.
type TopicPartitionMetadata struct {
	// PartitionTime is the largest timestamp seen on the partition, or
	// UnknownPartitionTime.
	PartitionTime int64
	// Processor holds the values processors keep across restarts, by key.
	Processor map[string]int64
}

// Encode returns m as Kafka Streams would commit it. Entries are written in
// key order. Kafka Streams writes them in its HashMap's iteration order,
// which depends on the map's history, so a metadata of two or more entries
// can differ from Kafka Streams' bytes in order only; neither side's
// decoder cares. Encode fails only on a key that is not UTF-8, which Java
// could not have written and would not read back as the same key.
func (m TopicPartitionMetadata) Encode() (string, error) {
	size := 1 + 8
	if len(m.Processor) > 0 {
		size += 4
		for k := range m.Processor {
			size += 4 + len(k) + 8
		}
	}
	b := make([]byte, 0, size)
	b = append(b, metadataLatest)
	b = binary.BigEndian.AppendUint64(b, uint64(m.PartitionTime))
	if len(m.Processor) > 0 {
		if len(m.Processor) > math.MaxInt32 {
			return "", fmt.Errorf("encode offset metadata: %d processor metadata entries, more than an int32 counts", len(m.Processor))
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Processor)))
		for _, k := range slices.Sorted(maps.Keys(m.Processor)) {
			if !utf8.ValidString(k) {
				return "", fmt.Errorf("encode offset metadata: processor metadata key %q is not UTF-8", k)
			}
			if len(k) > math.MaxInt32 {
				return "", fmt.Errorf("encode offset metadata: processor metadata key %.20q... is longer than an int32 counts", k)
			}
			b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
			b = append(b, k...)
			b = binary.BigEndian.AppendUint64(b, uint64(m.Processor[k]))
		}
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// ErrBadOffsetMetadata is the class of every decoding failure of
// DecodeTopicPartitionMetadata; errors.Is finds it in a
// *OffsetMetadataError.
var ErrBadOffsetMetadata = errors.New("bad offset metadata")

// OffsetMetadataError is offset metadata that does not decode.
type OffsetMetadataError struct {
	// Input is the committed string as it was.
	Input string
	// At is the offset, in the base64-decoded bytes, of the field at
	// fault, or -1 when the input is not base64.
	At     int
	Reason string
}

func (e *OffsetMetadataError) Error() string {
	in := e.Input
	if len(in) > 64 {
		in = in[:64] + "..."
	}
	if e.At < 0 {
		return fmt.Sprintf("offset metadata %q: %s", in, e.Reason)
	}
	return fmt.Sprintf("offset metadata %q: byte %d: %s", in, e.At, e.Reason)
}

func (e *OffsetMetadataError) Is(target error) bool { return target == ErrBadOffsetMetadata }

// DecodeTopicPartitionMetadata reads metadata committed by Kafka Streams or
// by Encode. The empty string, which is what a commit without metadata
// leaves, decodes to UnknownPartitionTime and no processor metadata.
// Version 1 holds only the partition time.
//
// Kafka Streams logs a warning and carries on with an unknown partition
// time when its decoder fails; this one returns an *OffsetMetadataError
// naming the input and where it went wrong, and leaves that choice to the
// caller. It is also stricter: it refuses what Kafka Streams never writes
// (bytes after the last entry, a key twice, a key that is not UTF-8),
// which Java's decoder would skip over or mangle.
func DecodeTopicPartitionMetadata(s string) (TopicPartitionMetadata, error) {
	m := TopicPartitionMetadata{PartitionTime: UnknownPartitionTime}
	if s == "" {
		return m, nil
	}
	b, err := decodeBase64(s)
	if err != nil {
		return m, &OffsetMetadataError{Input: s, At: -1, Reason: "not base64: " + err.Error()}
	}
	d := decoder{b: b}
	fail := func(reason string, args ...any) (TopicPartitionMetadata, error) {
		return TopicPartitionMetadata{PartitionTime: UnknownPartitionTime}, &OffsetMetadataError{Input: s, At: d.field, Reason: fmt.Sprintf(reason, args...)}
	}
	version, ok := d.byte()
	if !ok {
		return fail("no version byte")
	}
	if version != metadataV1 && version != metadataV2 {
		return fail("version %d is not supported (want 1 or 2)", version)
	}
	t, ok := d.int64()
	if !ok {
		return fail("partition time: %d bytes left, want 8", d.left())
	}
	m.PartitionTime = t
	if version == metadataV1 || d.left() == 0 {
		if d.left() > 0 {
			d.field = d.at
			return fail("%d bytes after the partition time of a version 1 metadata", d.left())
		}
		return m, nil
	}
	n, ok := d.int32()
	if !ok {
		return fail("processor metadata entry count: %d bytes left, want 4", d.left())
	}
	// Every entry takes at least 12 bytes; a count the input cannot hold
	// must not size an allocation.
	if n < 0 || int64(n) > int64(d.left())/12 {
		return fail("processor metadata entry count %d does not fit the %d bytes left", n, d.left())
	}
	m.Processor = make(map[string]int64, n)
	for i := range n {
		klen, ok := d.int32()
		if !ok {
			return fail("entry %d: key length: %d bytes left, want 4", i, d.left())
		}
		if klen < 0 || int64(klen) > int64(d.left()) {
			return fail("entry %d: key length %d does not fit the %d bytes left", i, klen, d.left())
		}
		kb := d.take(int(klen))
		key := string(kb)
		if !utf8.Valid(kb) {
			return fail("entry %d: key %q is not UTF-8", i, key)
		}
		if _, dup := m.Processor[key]; dup {
			return fail("entry %d: key %q appears twice", i, key)
		}
		v, ok := d.int64()
		if !ok {
			return fail("entry %d (key %q): value: %d bytes left, want 8", i, key, d.left())
		}
		m.Processor[key] = v
	}
	if d.left() > 0 {
		d.field = d.at
		return fail("%d bytes after the last processor metadata entry", d.left())
	}
	return m, nil
}

// decodeBase64 reads standard base64 as Java's Base64.getDecoder does:
// padding is accepted but not required.
func decodeBase64(s string) ([]byte, error) {
	// Go's decoder skips line breaks; Java's refuses them, and a string
	// that decodes must have one spelling.
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return nil, fmt.Errorf("line break at %d", i)
	}
	if strings.HasSuffix(s, "=") || len(s)%4 == 0 {
		return base64.StdEncoding.Strict().DecodeString(s)
	}
	return base64.RawStdEncoding.Strict().DecodeString(s)
}

// decoder reads big-endian integers off b. field is where the field read
// last starts, which errors point at.
type decoder struct {
	b         []byte
	at, field int
}

func (d *decoder) left() int { return len(d.b) - d.at }

func (d *decoder) take(n int) []byte {
	d.field = d.at
	p := d.b[d.at : d.at+n]
	d.at += n
	return p
}

func (d *decoder) byte() (byte, bool) {
	d.field = d.at
	if d.left() < 1 {
		return 0, false
	}
	return d.take(1)[0], true
}

func (d *decoder) int32() (int32, bool) {
	d.field = d.at
	if d.left() < 4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(d.take(4))), true
}

func (d *decoder) int64() (int64, bool) {
	d.field = d.at
	if d.left() < 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(d.take(8))), true
}
