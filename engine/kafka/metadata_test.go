package kafka_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

// metadataGolden are offset metadata laid out byte by byte by hand from
// Kafka Streams' TopicPartitionMetadata.encode and
// ProcessorMetadata.serialize: the version byte, the partition time (8
// bytes, big-endian), then, when there is processor metadata, the entry
// count (4 bytes) and per entry the key length (4), the UTF-8 key and the
// value (8). The base64 column was checked with a second implementation
// (Python's base64 module); the payload column is what it encodes.
var metadataGolden = []struct {
	name    string
	payload string // hex, spaced by field
	encoded string
	m       kafka.TopicPartitionMetadata
}{
	{
		name:    "partition time only",
		payload: "02 0000000000000064",
		encoded: "AgAAAAAAAABk",
		m:       kafka.TopicPartitionMetadata{PartitionTime: 100},
	},
	{
		name:    "unknown partition time",
		payload: "02 ffffffffffffffff",
		encoded: "Av//////////",
		m:       kafka.TopicPartitionMetadata{PartitionTime: kafka.UnknownPartitionTime},
	},
	{
		name:    "smallest partition time",
		payload: "02 8000000000000000",
		encoded: "AoAAAAAAAAAA",
		m:       kafka.TopicPartitionMetadata{PartitionTime: math.MinInt64},
	},
	{
		// Kafka Streams' own test value (TopicPartitionMetadataTest).
		name:    "one entry",
		payload: "02 0000000000000064 00000001 00000008 736f6d655f6b6579 0000000000000064",
		encoded: "AgAAAAAAAABkAAAAAQAAAAhzb21lX2tleQAAAAAAAABk",
		m:       kafka.TopicPartitionMetadata{PartitionTime: 100, Processor: map[string]int64{"some_key": 100}},
	},
	{
		name:    "two entries in key order, a negative value",
		payload: "02 000001912f8e5a00 00000002 00000002 6261 0000000000000002 00000001 63 fffffffffffffffd",
		encoded: "AgAAAZEvjloAAAAAAgAAAAJiYQAAAAAAAAACAAAAAWP//////////Q==",
		m:       kafka.TopicPartitionMetadata{PartitionTime: 0x000001912f8e5a00, Processor: map[string]int64{"c": -3, "ba": 2}},
	},
	{
		name:    "empty key",
		payload: "02 0000000000000064 00000001 00000000 0000000000000007",
		encoded: "AgAAAAAAAABkAAAAAQAAAAAAAAAAAAAABw==",
		m:       kafka.TopicPartitionMetadata{PartitionTime: 100, Processor: map[string]int64{"": 7}},
	},
	{
		name:    "multi-byte UTF-8 key, largest value",
		payload: "02 0000000000000064 00000001 00000003 e282ac 7fffffffffffffff",
		encoded: "AgAAAAAAAABkAAAAAQAAAAPigqx//////////w==",
		m:       kafka.TopicPartitionMetadata{PartitionTime: 100, Processor: map[string]int64{"€": math.MaxInt64}},
	},
}

func payload(t testing.TB, spaced string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(spaced, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameMetadata(a, b kafka.TopicPartitionMetadata) bool {
	return a.PartitionTime == b.PartitionTime && maps.Equal(a.Processor, b.Processor)
}

func TestTopicPartitionMetadataGolden(t *testing.T) {
	for _, tc := range metadataGolden {
		t.Run(tc.name, func(t *testing.T) {
			if got := base64.StdEncoding.EncodeToString(payload(t, tc.payload)); got != tc.encoded {
				t.Fatalf("the table is inconsistent: payload %s encodes to %s, the table says %s", tc.payload, got, tc.encoded)
			}
			got, err := tc.m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.encoded {
				raw, _ := base64.StdEncoding.DecodeString(got)
				t.Errorf("Encode() = %s (% x), want %s (%s)", got, raw, tc.encoded, tc.payload)
			}
			m, err := kafka.DecodeTopicPartitionMetadata(tc.encoded)
			if err != nil {
				t.Fatal(err)
			}
			if !sameMetadata(m, tc.m) {
				t.Errorf("Decode(%s) = %+v, want %+v", tc.encoded, m, tc.m)
			}
		})
	}
}

func TestDecodeTopicPartitionMetadataAccepts(t *testing.T) {
	tests := []struct {
		name, in string
		want     kafka.TopicPartitionMetadata
	}{
		// A commit without metadata.
		{"empty", "", kafka.TopicPartitionMetadata{PartitionTime: kafka.UnknownPartitionTime}},
		// Kafka Streams' shouldDecodeVersionOne.
		{"version 1", base64.StdEncoding.EncodeToString(payload(t, "01 0000000000000064")), kafka.TopicPartitionMetadata{PartitionTime: 100}},
		// Java's decoder does not require padding.
		{"unpadded", strings.TrimRight(metadataGolden[4].encoded, "="), metadataGolden[4].m},
		// Kafka Streams never writes a zero count, but reads one.
		{"zero entries", base64.StdEncoding.EncodeToString(payload(t, "02 0000000000000064 00000000")), kafka.TopicPartitionMetadata{PartitionTime: 100, Processor: map[string]int64{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := kafka.DecodeTopicPartitionMetadata(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !sameMetadata(m, tc.want) {
				t.Fatalf("Decode(%q) = %+v, want %+v", tc.in, m, tc.want)
			}
		})
	}
}

func TestDecodeTopicPartitionMetadataRefuses(t *testing.T) {
	enc := func(spaced string) string { return base64.StdEncoding.EncodeToString(payload(t, spaced)) }
	tests := []struct {
		name, in, want string
	}{
		// Kafka Streams' shouldReturnUnknownTimestampIfInvalidMetadata.
		{"not base64", "{}", `offset metadata "{}": not base64`},
		{"line break", "AgAAAAAA\nAAABk", "not base64: line break at 8"},
		{"non-canonical padding bits", "AgAAAAAAAABkAB==", "not base64"},
		// Kafka Streams' shouldReturnUnknownTimestampIfUnknownVersion.
		{"version 3", enc("03"), "byte 0: version 3 is not supported (want 1 or 2)"},
		{"version 0", enc("00 0000000000000064"), "version 0 is not supported"},
		{"short partition time", enc("02 00000000"), "byte 1: partition time: 4 bytes left, want 8"},
		{"bytes after a version 1 time", enc("01 0000000000000064 00"), "1 bytes after the partition time of a version 1 metadata"},
		{"short count", enc("02 0000000000000064 0000"), "byte 9: processor metadata entry count: 2 bytes left, want 4"},
		// Kafka Streams' shouldThrowWhenEntrySizeIsNegative and
		// shouldThrowWhenEntrySizeExceedsRemainingBytes.
		{"negative count", enc("02 0000000000000064 ffffffff"), "byte 9: processor metadata entry count -1 does not fit the 0 bytes left"},
		{"count beyond the input", enc("02 0000000000000064 00000002 00000001 6b 0000000000000001"), "entry count 2 does not fit the 13 bytes left"},
		// shouldThrowWhenKeySizeIsNegative and
		// shouldThrowWhenKeySizeExceedsRemainingBytes.
		{"negative key length", enc("02 0000000000000064 00000001 ffffffff 0000000000000000"), "byte 13: entry 0: key length -1 does not fit the 8 bytes left"},
		{"key beyond the input", enc("02 0000000000000064 00000001 0000000d 6b657931 0000000000000001"), "entry 0: key length 13 does not fit the 12 bytes left"},
		{"short value", enc("02 0000000000000064 00000001 00000001 6b 00000000000000"), `byte 18: entry 0 (key "k"): value: 7 bytes left, want 8`},
		{"key twice", enc("02 0000000000000064 00000002 00000001 6b 0000000000000001 00000001 6b 0000000000000002"), `entry 1: key "k" appears twice`},
		{"key not UTF-8", enc("02 0000000000000064 00000001 00000001 ff 0000000000000001"), `byte 17: entry 0: key "\xff" is not UTF-8`},
		{"bytes after the last entry", enc("02 0000000000000064 00000001 00000001 6b 0000000000000001 00"), "byte 26: 1 bytes after the last processor metadata entry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := kafka.DecodeTopicPartitionMetadata(tc.in)
			if err == nil {
				t.Fatalf("Decode(%q) = %+v, want an error", tc.in, m)
			}
			if !errors.Is(err, kafka.ErrBadOffsetMetadata) {
				t.Errorf("error %v is not ErrBadOffsetMetadata", err)
			}
			var merr *kafka.OffsetMetadataError
			if !errors.As(err, &merr) || merr.Input != tc.in {
				t.Errorf("error %v does not carry the input %q", err, tc.in)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.in[:min(len(tc.in), 8)]) {
				t.Errorf("error %q does not name the input and contain %q", err, tc.want)
			}
			if m.PartitionTime != kafka.UnknownPartitionTime || m.Processor != nil {
				t.Errorf("failed decode returned %+v, want the unknown partition time and no metadata", m)
			}
		})
	}
}

func TestEncodeRefusesNonUTF8Key(t *testing.T) {
	_, err := kafka.TopicPartitionMetadata{Processor: map[string]int64{"\xff": 1}}.Encode()
	if err == nil || !strings.Contains(err.Error(), `"\xff" is not UTF-8`) {
		t.Fatalf("err = %v, want one naming the key", err)
	}
}

// FuzzDecodeTopicPartitionMetadata checks that the decoder never panics,
// that every failure is an *OffsetMetadataError, and that what decodes
// survives a round trip through Encode unchanged.
func FuzzDecodeTopicPartitionMetadata(f *testing.F) {
	for _, tc := range metadataGolden {
		f.Add(tc.encoded)
	}
	f.Add("")
	f.Add("{}")
	f.Add("AQAAAAAAAABk")
	f.Add("AgAAAAAAAABkAAAAAgAAAAFrAAAAAAAAAAEAAAABawAAAAAAAAAC")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := kafka.DecodeTopicPartitionMetadata(in)
		if err != nil {
			var merr *kafka.OffsetMetadataError
			if !errors.As(err, &merr) || merr.Input != in || !errors.Is(err, kafka.ErrBadOffsetMetadata) {
				t.Fatalf("Decode(%q) failed with %T %v, want an *OffsetMetadataError carrying the input", in, err, err)
			}
			return
		}
		enc, err := m.Encode()
		if err != nil {
			t.Fatalf("Decode(%q) = %+v, which does not encode: %v", in, m, err)
		}
		back, err := kafka.DecodeTopicPartitionMetadata(enc)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)) = %q, which does not decode: %v", in, enc, err)
		}
		if !sameMetadata(back, m) {
			t.Fatalf("round trip of %q: %+v, then %+v", in, m, back)
		}
		again, _ := back.Encode()
		if again != enc {
			t.Fatalf("Encode is not deterministic: %q, then %q", enc, again)
		}
	})
}
