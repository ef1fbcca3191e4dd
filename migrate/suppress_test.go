package migrate

import (
	"bytes"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// prc is ProcessorRecordContext.serialize: timestamp, offset, topic,
// partition, headers (count, then length-prefixed keys and values).
func prc(ts, offset int64, topic string, partition int32, headers ...processor.Header) []byte {
	out := cat(be(8, ts), be(8, offset), be(4, int64(len(topic))), []byte(topic), be(4, int64(partition)), be(4, int64(len(headers))))
	for _, h := range headers {
		out = cat(out, be(4, int64(len(h.Key))), []byte(h.Key))
		if h.Value == nil {
			out = cat(out, be(4, -1))
		} else {
			out = cat(out, be(4, int64(len(h.Value))), h.Value)
		}
	}
	return out
}

// The first four vectors are Kafka Streams' own, from
// TimeOrderedKeyValueBufferTest.shouldRestoreV3Format ("captured by running
// version 2.4 code"; their header count is -1, which the deserializer
// keeps for backward compatibility); the compacted duplicate is
// BufferValueTest.shouldDeserializeCompactedDuplicates' layout with the
// buffer time the changelog appends.
func TestDecodeSuppressV3(t *testing.T) {
	ctx := func(ts int64) SuppressV3 { return SuppressV3{Timestamp: ts, Topic: "topic"} }
	with := func(v SuppressV3, f func(*SuppressV3)) SuppressV3 { f(&v); return v }
	for _, tc := range []struct {
		name    string
		value   []byte
		want    SuppressV3
		wantErr string
	}{
		{name: "todelete", value: unhex(t, "0000000000000000000000000000000000000005746F70696300000000FFFFFFFFFFFFFFFFFFFFFFFF00000006646F6F6D65640000000000000000"),
			want: with(ctx(0), func(v *SuppressV3) { v.New = []byte("doomed") })},
		{name: "asdf", value: unhex(t, "0000000000000001000000000000000000000005746F70696300000000FFFFFFFFFFFFFFFFFFFFFFFF00000004717765720000000000000002"),
			want: with(ctx(1), func(v *SuppressV3) { v.New, v.BufferTime = []byte("qwer"), 2 })},
		{name: "zxcv 1", value: unhex(t, "0000000000000002000000000000000000000005746F70696300000000FFFFFFFF0000000870726576696F75730000000749474E4F52454400000005336F34696D0000000000000001"),
			want: with(ctx(2), func(v *SuppressV3) {
				v.Prior, v.Old, v.New, v.BufferTime = []byte("previous"), []byte("IGNORED"), []byte("3o4im"), 1
			})},
		{name: "zxcv 2", value: unhex(t, "0000000000000003000000000000000000000005746F70696300000000FFFFFFFF0000000870726576696F757300000005336F34696D000000046E6578740000000000000001"),
			want: with(ctx(3), func(v *SuppressV3) {
				v.Prior, v.Old, v.New, v.BufferTime = []byte("previous"), []byte("3o4im"), []byte("next"), 1
			})},
		{name: "compacted duplicate", value: cat(prc(0, 0, "topic", 0), be(4, 1), []byte{5}, be(4, -2), be(4, -1), be(8, 300_000)),
			want: with(ctx(0), func(v *SuppressV3) { v.Prior, v.Old, v.BufferTime = []byte{5}, []byte{5}, 300_000 })},
		{name: "headers and empty values", value: cat(prc(7, 42, "logins", 3, processor.Header{Key: "a", Value: []byte("x")}, processor.Header{Key: "n"}),
			be(4, 0), be(4, -1), be(4, 8), be(8, 2), be(8, 60_000)),
			want: SuppressV3{Timestamp: 7, Offset: 42, Topic: "logins", Partition: 3,
				Headers: processor.Headers{{Key: "a", Value: []byte("x")}, {Key: "n"}}, Prior: []byte{}, New: be(8, 2), BufferTime: 60_000}},
		{name: "short", value: be(7, 0), wantErr: "suppress buffer value (V3): byte 0: timestamp: 7 bytes left, need 8"},
		{name: "no buffer time", value: cat(prc(0, 0, "t", 0), be(4, -1), be(4, -1), be(4, -1), be(4, 0)),
			wantErr: "byte 41: buffer time: 4 bytes left, need 8"},
		{name: "trailing bytes", value: cat(prc(0, 0, "t", 0), be(4, -1), be(4, -1), be(4, -1), be(8, 0), []byte{0}),
			wantErr: "1 bytes after the buffer time"},
		{name: "null topic", value: cat(be(16, 0), be(4, -1)), wantErr: "null topic"},
		{name: "bad length", value: cat(prc(0, 0, "t", 0), be(4, -3)), wantErr: "byte 29: prior value length -3"},
		{name: "value past the end", value: cat(prc(0, 0, "t", 0), be(4, 100)), wantErr: "prior value: 0 bytes left, need 100"},
		{name: "too many headers", value: cat(be(16, 0), be(4, 1), []byte("t"), be(4, 0), be(4, 1<<20)), wantErr: "header count 1048576 in 0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSuppressV3(tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if got.Timestamp != w.Timestamp || got.Offset != w.Offset || got.Topic != w.Topic || got.Partition != w.Partition ||
				!slices.EqualFunc(got.Headers, w.Headers, func(a, b processor.Header) bool {
					return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil)
				}) ||
				!sameNullable(got.Prior, w.Prior) || !sameNullable(got.Old, w.Old) || !sameNullable(got.New, w.New) || got.BufferTime != w.BufferTime {
				t.Errorf("got %+v\nwant %+v", got, w)
			}
		})
	}
}

// sameNullable tells null from empty.
func sameNullable(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

var v3 = map[string][]byte{"v": {3}}

func TestDecodeSuppress(t *testing.T) {
	// A time-windowed key, "alice" and the window start, as
	// TimeWindowedSerializer writes it.
	key := cat([]byte("alice"), be(8, 300_000))
	value := cat(prc(310_000, 9, "logins", 0, processor.Header{Key: "h", Value: []byte("1")}), be(4, 8), be(8, 2), be(4, 8), be(8, 3), be(4, 8), be(8, 4), be(8, 600_000))
	e, err := DecodeSuppress(key, value, v3, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := dsl.SuppressBufferValue(600_000, 310_000, processor.Headers{{Key: "h", Value: []byte("1")}}, be(8, 2), be(8, 4))
	if !bytes.Equal(e.Key, key) || string(e.LaneKey) != "alice" || !bytes.Equal(e.Value, want) || e.Timestamp != 310_000 {
		t.Errorf("got %+v\nwant value %x, lane key alice, timestamp 310000", e, want)
	}
	// A tombstone needs no header; its lane key is still the key's.
	if e, err := DecodeSuppress(key, nil, nil, 5, 8); err != nil || e.Value != nil || string(e.LaneKey) != "alice" {
		t.Errorf("tombstone: %+v, %v", e, err)
	}
	// Not windowed: the whole key.
	if e, err := DecodeSuppress([]byte("bob"), value, v3, 0, 0); err != nil || string(e.LaneKey) != "bob" {
		t.Errorf("unwindowed: %+v, %v", e, err)
	}
	for _, tc := range []struct {
		name    string
		key     []byte
		headers map[string][]byte
		wantErr string
	}{
		{name: "null key", headers: v3, wantErr: "null key"},
		{name: "key shorter than suffix", key: be(7, 0), headers: v3, wantErr: "key of 7 bytes is shorter than its window suffix of 8"},
		{name: "no version header", key: key, wantErr: "no suppress buffer version header (v)"},
		{name: "version 2", key: key, headers: map[string][]byte{"v": {2}}, wantErr: "suppress buffer changelog version 2 (written by Kafka Streams before 2.4): only version 3 is translated"},
	} {
		if _, err := DecodeSuppress(tc.key, value, tc.headers, 0, 8); err == nil || err.Error() != tc.wantErr {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func FuzzDecodeSuppress(f *testing.F) {
	f.Add(cat([]byte("k"), be(8, 0)), unhex(f, "0000000000000003000000000000000000000005746F70696300000000FFFFFFFF0000000870726576696F757300000005336F34696D000000046E6578740000000000000001"), byte(8))
	f.Add([]byte("k"), cat(prc(0, 0, "topic", 0, processor.Header{Key: "a"}), be(4, 1), []byte{5}, be(4, -2), be(4, -1), be(8, 1)), byte(0))
	f.Add([]byte{}, []byte{}, byte(16))
	f.Fuzz(func(t *testing.T, key, value []byte, suffix byte) {
		n := int(suffix % 17)
		e, err := DecodeSuppress(key, value, v3, 0, n)
		if err != nil {
			return
		}
		if !bytes.Equal(e.Key, key) || len(e.LaneKey) != len(key)-n || !bytes.HasPrefix(key, e.LaneKey) {
			t.Fatalf("key %x, lane key %x with suffix %d", key, e.LaneKey, n)
		}
		sv, err := DecodeSuppressV3(value)
		if err != nil {
			t.Fatalf("DecodeSuppress accepted what DecodeSuppressV3 refuses: %v", err)
		}
		if want := dsl.SuppressBufferValue(sv.BufferTime, sv.Timestamp, sv.Headers, sv.Prior, sv.New); !bytes.Equal(e.Value, want) || e.Timestamp != sv.Timestamp {
			t.Fatalf("translated %x, want %x", e.Value, want)
		}
	})
}

// TestEncodeSuppress: a value of our buffer's changelog, translated into
// Kafka Streams' V3 layout for the way back, reads there as Kafka Streams
// reads it (the latest update's timestamp and headers, the prior, the old
// value equal to the prior as ours emits it, the new value, the buffer
// time), and translated forward again is our value, byte for byte: with
// and without headers, null and empty values.
func TestEncodeSuppress(t *testing.T) {
	for _, tc := range []struct {
		name            string
		bt, ts          int64
		headers         processor.Headers
		prior, newValue []byte
	}{
		{name: "window", bt: 300_000, ts: 241_000, prior: []byte{0, 0, 0, 0, 0, 0, 0, 4}, newValue: []byte{0, 0, 0, 0, 0, 0, 0, 5}},
		{name: "first update", bt: 60_000, ts: 1_000, newValue: []byte("v")},
		{name: "delete", bt: 60_000, ts: 2_000, prior: []byte("old")},
		{name: "empty values", bt: -1, ts: 0, prior: []byte{}, newValue: []byte{}},
		{name: "headers", bt: 5, ts: 7, headers: processor.Headers{{Key: "trace", Value: []byte("t1")}, {Key: "null", Value: nil}}, prior: []byte("a"), newValue: []byte("b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := dsl.SuppressBufferValue(tc.bt, tc.ts, tc.headers, tc.prior, tc.newValue)
			v3, err := EncodeSuppress(ours)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeSuppressV3(v3)
			if err != nil {
				t.Fatalf("%x: %v", v3, err)
			}
			same := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
			if got.BufferTime != tc.bt || got.Timestamp != tc.ts || !same(got.Prior, tc.prior) || !same(got.Old, tc.prior) || !same(got.New, tc.newValue) ||
				got.Offset != -1 || got.Partition != -1 || got.Topic != "" || len(got.Headers) != len(tc.headers) {
				t.Fatalf("Kafka Streams reads %+v", got)
			}
			for i, h := range tc.headers {
				if got.Headers[i].Key != h.Key || !same(got.Headers[i].Value, h.Value) {
					t.Errorf("header %d: %+v, want %+v", i, got.Headers[i], h)
				}
			}
			back, err := DecodeSuppress([]byte("k"), v3, map[string][]byte{"v": {3}}, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Value, ours) || back.Timestamp != tc.ts {
				t.Errorf("forward again: %x at %d, want %x at %d", back.Value, back.Timestamp, ours, tc.ts)
			}
		})
	}
	if _, err := EncodeSuppress([]byte{9}); err == nil {
		t.Error("a value not in our layout translated")
	}
}

// FuzzEncodeSuppress: whatever our buffer's changelog holds, the way back
// either refuses it or writes a V3 value that Kafka Streams' layout reads
// and that translates forward into a value the way back writes alike.
func FuzzEncodeSuppress(f *testing.F) {
	f.Add(dsl.SuppressBufferValue(300_000, 241_000, nil, []byte{1}, []byte{2}))
	f.Add(dsl.SuppressBufferValue(5, 7, processor.Headers{{Key: "h", Value: nil}}, nil, []byte{}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, ours []byte) {
		v3, err := EncodeSuppress(ours)
		if err != nil {
			return
		}
		if _, err := DecodeSuppressV3(v3); err != nil {
			t.Fatalf("%x: Kafka Streams' layout does not read %x: %v", ours, v3, err)
		}
		e, err := DecodeSuppress([]byte("k"), v3, map[string][]byte{"v": {3}}, 0, 0)
		if err != nil {
			t.Fatalf("%x: forward again: %v", ours, err)
		}
		again, err := EncodeSuppress(e.Value)
		if err != nil || !bytes.Equal(again, v3) {
			t.Fatalf("%x: back again %x (%v), first %x", ours, again, err, v3)
		}
	})
}
