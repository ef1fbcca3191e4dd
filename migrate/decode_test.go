package migrate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

// be writes big-endian integers, for spelling out byte vectors.
func be(n int, v int64) []byte {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// The keys are the inputs of Kafka Streams' own WindowKeySchemaTest and
// SessionKeySchemaTest (Bytes {0xA, 0xB, 0xC}, windows [10, 20], the
// extremes), laid out as toStoreKeyBinary and SessionKeySchema.toBinary do.
func TestDecode(t *testing.T) {
	abc := []byte{0xA, 0xB, 0xC}
	for _, tc := range []struct {
		name       string
		kind       Kind
		key, value []byte
		check      func([]byte) error
		want       Entry
		wantErr    string
	}{
		{name: "key-value", kind: KeyValue, key: []byte("hello"), value: be(8, 3),
			check: serdeCheck("long"), want: Entry{Key: []byte("hello"), LaneKey: []byte("hello"), Value: be(8, 3), End: -1}},
		{name: "key-value tombstone", kind: KeyValue, key: []byte("hello"), check: serdeCheck("long"),
			want: Entry{Key: []byte("hello"), LaneKey: []byte("hello"), End: -1}},
		{name: "key-value wrong serde", kind: KeyValue, key: []byte("k"), value: []byte("abc"), check: serdeCheck("long"),
			wantErr: "value: 3 bytes, a long is 8 (serde long)"},
		{name: "string not UTF-8", kind: KeyValue, key: []byte("k"), value: []byte{0xff}, check: serdeCheck("string"),
			wantErr: "value: not UTF-8 (serde string)"},
		{name: "null key", kind: KeyValue, value: []byte("v"), wantErr: "null key"},
		{name: "window", kind: Window, key: cat(abc, be(8, 10), be(4, 0)), value: be(8, 1),
			want: Entry{Key: cat(abc, be(8, 10), be(4, 0)), LaneKey: abc, Value: be(8, 1), Start: 10, End: -1}},
		{name: "window with sequence number", kind: Window, key: cat(abc, be(8, 60_000), be(4, 7)),
			want: Entry{Key: cat(abc, be(8, 60_000), be(4, 7)), LaneKey: abc, Start: 60_000, End: -1}},
		{name: "window empty key", kind: Window, key: cat(be(8, 0), be(4, 0)),
			want: Entry{Key: cat(be(8, 0), be(4, 0)), LaneKey: []byte{}, End: -1}},
		{name: "window too short", kind: Window, key: be(11, 0), wantErr: "decode window key: 11 bytes, need at least 12: key too short for window suffix"},
		{name: "window negative start", kind: Window, key: cat(abc, be(8, -1), be(4, 0)), wantErr: "window start -1 is negative"},
		{name: "session", kind: Session, key: cat(abc, be(8, 20), be(8, 10)), value: be(8, 2),
			want: Entry{Key: cat(abc, be(8, 20), be(8, 10)), LaneKey: abc, Value: be(8, 2), Start: 10, End: 20}},
		{name: "session of one instant", kind: Session, key: cat(abc, be(8, 0), be(8, 0)),
			want: Entry{Key: cat(abc, be(8, 0), be(8, 0)), LaneKey: abc}},
		{name: "session end before start", kind: Session, key: cat(abc, be(8, 10), be(8, 20)), wantErr: "session [20, 10] is not a session"},
		{name: "session too short", kind: Session, key: be(15, 0), wantErr: "decode session key: 15 bytes, need at least 16: key too short for window suffix"},
		{name: "suppress buffer", kind: SuppressBuffer, key: []byte("k"), value: []byte{1}, wantErr: "a suppress buffer record is decoded with its headers: DecodeSuppress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.kind, tc.key, tc.value, 0, tc.check)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Key, tc.want.Key) || !bytes.Equal(got.LaneKey, tc.want.LaneKey) || !bytes.Equal(got.Value, tc.want.Value) ||
				got.Start != tc.want.Start || got.End != tc.want.End {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRecordErrorNamesTheRecord(t *testing.T) {
	_, cause := Decode(Window, []byte{1}, nil, 0, nil)
	err := error(&RecordError{Topic: "ks-clicks-changelog", Partition: 1, Offset: 42, Store: "clicks", Err: cause})
	if !errors.Is(err, ErrCorrupt) {
		t.Error("not ErrCorrupt")
	}
	want := "ks-clicks-changelog[1] offset 42 (store clicks): decode window key: 1 bytes, need at least 12: key too short for window suffix"
	if err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
}

func TestSuppressVersion(t *testing.T) {
	for _, tc := range []struct {
		headers map[string][]byte
		want    int
		ok      bool
	}{
		{map[string][]byte{"v": {3}}, 3, true},
		{map[string][]byte{"v": {1}}, 1, true},
		{map[string][]byte{"v": {4}}, 0, false},
		{map[string][]byte{"v": {3, 0}}, 0, false},
		{map[string][]byte{"__stoatflow.lane.hash": {0, 0, 0, 1}}, 0, false},
		{nil, 0, false},
	} {
		v, ok := SuppressVersion(tc.headers)
		if v != tc.want || ok != tc.ok {
			t.Errorf("SuppressVersion(%v) = %d, %v; want %d, %v", tc.headers, v, ok, tc.want, tc.ok)
		}
	}
}

// The vectors are TopicPartitionMetadataTest's: version 1 is the byte 1 and
// the partition time; version 2 adds the processor metadata.
func TestDecodeOffsetMetadata(t *testing.T) {
	v2, err := kafka.TopicPartitionMetadata{PartitionTime: 1000, Processor: map[string]int64{"clicks-per-minute-store": 59_990}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, md  string
		wantTime  int64
		wantProc  map[string]int64
		wantError string
	}{
		{name: "none", md: "", wantTime: -1},
		{name: "version 1", md: "AQAAAAAAAAPo", wantTime: 1000},
		{name: "version 2, no processor metadata", md: "AgAAAAAAAAPo", wantTime: 1000},
		{name: "version 2 with processor metadata", md: v2, wantTime: 1000, wantProc: map[string]int64{"clicks-per-minute-store": 59_990}},
		{name: "version 3", md: "AwAAAAAAAAPo",
			wantError: `group ks: committed offset of clicks[0]: offset metadata "AwAAAAAAAAPo": byte 0: version 3 is not supported (want 1 or 2)`},
		{name: "not base64", md: "!!",
			wantError: `group ks: committed offset of clicks[0]: offset metadata "!!": not base64: illegal base64 data at input byte 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeOffsetMetadata("ks", "clicks", 0, tc.md)
			if tc.wantError != "" {
				if err == nil || err.Error() != tc.wantError || !errors.Is(err, ErrMetadata) {
					t.Fatalf("err = %v, want %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.PartitionTime != tc.wantTime || len(m.Processor) != len(tc.wantProc) {
				t.Fatalf("got %+v", m)
			}
			for k, v := range tc.wantProc {
				if m.Processor[k] != v {
					t.Errorf("processor %s = %d, want %d", k, m.Processor[k], v)
				}
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(byte(0), []byte("k"), be(8, 1))
	f.Add(byte(1), cat([]byte("k"), be(8, 10), be(4, 0)), be(8, 1))
	f.Add(byte(2), cat([]byte("k"), be(8, 20), be(8, 10)), []byte(nil))
	f.Add(byte(3), []byte{}, []byte{0xff})
	kinds := []Kind{KeyValue, Window, Session, SuppressBuffer}
	checks := []func([]byte) error{serdeCheck("long"), serdeCheck("string"), nil, serdeCheck("integer")}
	f.Fuzz(func(t *testing.T, k byte, key, value []byte) {
		kind := kinds[int(k)%len(kinds)]
		e, err := Decode(kind, key, value, 0, checks[int(k/4)%len(checks)])
		if err != nil {
			return
		}
		if !bytes.Equal(e.Key, key) || !bytes.Equal(e.Value, value) {
			t.Fatal("entry does not alias its record")
		}
		if !bytes.HasPrefix(key, e.LaneKey) {
			t.Fatalf("lane key %x is not a prefix of key %x", e.LaneKey, key)
		}
		if kind != KeyValue && (e.Start < 0 || (kind == Session && e.End < e.Start)) {
			t.Fatalf("decoded a bad window %+v", e)
		}
	})
}

func FuzzDecodeOffsetMetadata(f *testing.F) {
	for _, s := range []string{"", "AQAAAAAAAAPo", "AgAAAAAAAAPo", "AgAAAAAAAAPoAAAAAQAAAAFhAAAAAAAAAAE=", "AwAAAAAAAAPo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := DecodeOffsetMetadata("g", "t", 0, s)
		if err != nil {
			if !errors.Is(err, ErrMetadata) {
				t.Fatalf("error %v is not ErrMetadata", err)
			}
			return
		}
		again, err := m.Encode()
		if err != nil {
			return
		}
		m2, err := DecodeOffsetMetadata("g", "t", 0, again)
		if err != nil || m2.PartitionTime != m.PartitionTime || len(m2.Processor) != len(m.Processor) {
			t.Fatalf("round trip of %q: %+v, %v", s, m2, err)
		}
	})
}

func FuzzSuppressVersion(f *testing.F) {
	f.Add([]byte{3})
	f.Fuzz(func(t *testing.T, v []byte) {
		n, ok := SuppressVersion(map[string][]byte{"v": v})
		if ok && (n < 1 || n > 3 || len(v) != 1) {
			t.Fatalf("accepted %x as version %d", v, n)
		}
	})
}
