package migrate

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/internal/golden"
)

// joinKey lays out a TimestampedKeyAndJoinSide as Kafka Streams'
// TimestampedKeyAndJoinSideSerializer does: timestamp, side, key.
func joinKey(ts int64, left bool, key string) []byte {
	side := []byte{0}
	if left {
		side[0] = 1
	}
	return cat(be(8, ts), side, []byte(key))
}

// joinValues lays out ListValueStore's list of LeftOrRightValues: Kafka's
// ListSerializer (variable size: flag 1, count, length-prefixed elements)
// of LeftOrRightValueSerializer's bytes (side, value).
func joinValues(left bool, values ...string) []byte {
	side := byte(0)
	if left {
		side = 1
	}
	b := cat([]byte{1}, be(4, int64(len(values))))
	for _, v := range values {
		b = cat(b, be(4, int64(1+len(v))), []byte{side}, []byte(v))
	}
	return b
}

// The inputs of Kafka Streams' TimestampedKeyAndJoinSideSerializerTest
// ("some-string", left at 10, right at 20) and LeftOrRightValueSerializerTest
// ("value-from-left", "value-from-right"), in its layouts.
func TestDecodeJoinOuter(t *testing.T) {
	left := joinKey(10, true, "some-string")
	right := joinKey(20, false, "some-string")
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       Entry
		wantErr    string
	}{
		{name: "left", key: left, value: joinValues(true, "value-from-left"),
			want: Entry{Key: left, LaneKey: []byte("some-string"), Value: joinValues(true, "value-from-left"), Start: 10, End: -1, Left: true, Waiting: 1}},
		{name: "right, two records of one key and time", key: right, value: joinValues(false, "value-from-right", "again"),
			want: Entry{Key: right, LaneKey: []byte("some-string"), Value: joinValues(false, "value-from-right", "again"), Start: 20, End: -1, Waiting: 2}},
		{name: "tombstone (emitted or matched)", key: left,
			want: Entry{Key: left, LaneKey: []byte("some-string"), Start: 10, End: -1, Left: true}},
		{name: "empty key", key: joinKey(0, false, ""), value: joinValues(false, ""),
			want: Entry{Key: joinKey(0, false, ""), LaneKey: []byte{}, Value: joinValues(false, ""), End: -1, Waiting: 1}},
		{name: "key too short", key: be(8, 10), wantErr: "key of 8 bytes, a timestamp and a side take 9"},
		{name: "side byte", key: cat(be(8, 10), []byte{2}, []byte("k")), wantErr: "side byte 2, not 1 (left) or 0 (right)"},
		{name: "negative timestamp", key: joinKey(-1, true, "k"), wantErr: "negative timestamp -1"},
		{name: "a plain value, not a list", key: left, value: []byte("value-from-left"), wantErr: "list strategy flag 118"},
		{name: "constant-size list", key: left, value: cat([]byte{0}, be(4, 0), be(4, 1), be(8, 1)), wantErr: "list strategy flag 0, ListValueStore writes 1"},
		{name: "empty list", key: left, value: cat([]byte{1}, be(4, 0)), wantErr: "0 elements in 0 bytes"},
		{name: "count beyond the bytes", key: left, value: cat([]byte{1}, be(4, 1<<30), be(4, 1), []byte{1}), wantErr: "1073741824 elements in 5 bytes"},
		{name: "null element", key: left, value: cat([]byte{1}, be(4, 1), be(4, -1), []byte{1}), wantErr: "element 0 is null"},
		{name: "element past the end", key: left, value: cat([]byte{1}, be(4, 1), be(4, 9), []byte{1, 'a'}), wantErr: "element 0 of 9 bytes, 2 left"},
		{name: "element side byte", key: left, value: cat([]byte{1}, be(4, 1), be(4, 2), []byte{7, 'a'}), wantErr: "element 0: side byte 7"},
		{name: "trailing bytes", key: left, value: cat(joinValues(true, "a"), []byte{0}), wantErr: "1 bytes after the last element"},
		{name: "value of the other side", key: left, value: joinValues(false, "a"), wantErr: "element 0 is of the right side, its key of the left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Decode(JoinOuter, tc.key, tc.value, 0, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrJoinOuter) {
					t.Fatalf("got %+v, %v; want an ErrJoinOuter containing %q", e, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", e) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("got  %+v\nwant %+v", e, tc.want)
			}
		})
	}
}

func TestJoinStoreRole(t *testing.T) {
	for store, want := range map[string]string{
		"KSTREAM-JOINTHIS-0000000004-store":        "window",
		"KSTREAM-JOINOTHER-0000000005-store":       "window",
		"KSTREAM-OUTERTHIS-0000000004-store":       "window",
		"KSTREAM-OUTEROTHER-0000000005-store":      "window",
		"KSTREAM-OUTERSHARED-0000000004-store":     "outer",
		"pairs-this-join-store":                    "window",
		"pairs-outer-other-join-store":             "window",
		"pairs-left-shared-join-store":             "outer",
		"pairs-outer-shared-join-store":            "outer",
		"KSTREAM-AGGREGATE-STATE-STORE-0000000002": "",
		"counts": "",
	} {
		if got := joinStoreRole(store); got != want {
			t.Errorf("joinStoreRole(%s) = %q, want %q", store, got, want)
		}
	}
}

// TestJoinChangelogsGolden decodes the changelogs of a left join's three
// stores, as Kafka Streams writes them (testdata/join-left.changelogs: per
// line the store, partition, offset, timestamp, key and value in hex, "-"
// for a tombstone), and prints every entry and the null-joins the plan
// counts. -update rewrites testdata/join-left.golden.
func TestJoinChangelogsGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "join-left.changelogs"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	live := map[int32]map[string]Entry{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fs := strings.Fields(text)
		if len(fs) != 6 {
			t.Fatalf("join-left.changelogs:%d: %d fields, want 6", line, len(fs))
		}
		part, _ := strconv.ParseInt(fs[1], 10, 32)
		off, _ := strconv.ParseInt(fs[2], 10, 64)
		ts, _ := strconv.ParseInt(fs[3], 10, 64)
		key, err := hex.DecodeString(fs[4])
		if err != nil {
			t.Fatalf("join-left.changelogs:%d: key: %v", line, err)
		}
		var value []byte
		if fs[5] != "-" {
			if value, err = hex.DecodeString(fs[5]); err != nil {
				t.Fatalf("join-left.changelogs:%d: value: %v", line, err)
			}
		}
		kind := Window
		if joinStoreRole(fs[0]) == "outer" {
			kind = JoinOuter
		}
		e, err := Decode(kind, key, value, ts, nil)
		if err != nil {
			t.Fatalf("join-left.changelogs:%d: %v", line, (&RecordError{Topic: "ks-" + fs[0] + "-changelog", Partition: int32(part), Offset: off, Store: fs[0], Err: err}))
		}
		switch kind {
		case Window:
			fmt.Fprintf(&out, "%s[%d]@%d window: key %q at %d, value %q\n", fs[0], part, off, e.LaneKey, e.Start, e.Value)
		case JoinOuter:
			if live[int32(part)] == nil {
				live[int32(part)] = map[string]Entry{}
			}
			if e.Value == nil {
				delete(live[int32(part)], string(e.Key))
				fmt.Fprintf(&out, "%s[%d]@%d unmatched: key %q at %d %s: gone (emitted or matched)\n", fs[0], part, off, e.LaneKey, e.Start, sideName(e.Left))
				continue
			}
			live[int32(part)][string(e.Key)] = e
			vs, _ := DecodeJoinOuterValue(e.Value)
			var vals []string
			for _, v := range vs {
				vals = append(vals, strconv.Quote(string(v.Value)))
			}
			fmt.Fprintf(&out, "%s[%d]@%d unmatched: key %q at %d %s: %s\n", fs[0], part, off, e.LaneKey, e.Start, sideName(e.Left), strings.Join(vals, ", "))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The join of the file: JoinWindows.ofTimeDifferenceAndGrace(10 s,
	// 5 s), so a left record at t closes at t + 10 s + 1 + 5 s; Kafka
	// Streams' stream time 40 s on partition 0, 12 s on partition 1.
	closeAt := func(ts int64, left bool) int64 { return ts + 10_000 + 1 + 5_000 }
	meta := map[string]map[int32]kafka.TopicPartitionMetadata{
		"orders":   {0: {PartitionTime: 40_000}, 1: {PartitionTime: 12_000}},
		"payments": {0: {PartitionTime: 39_000}, 1: {PartitionTime: 11_000}},
	}
	np := planNullJoins(live, closeAt, meta)
	fmt.Fprintf(&out, "null-joins: %d waiting, %d pending\n", np.Waiting, np.Pending)

	golden.Check(t, "./migrate", "testdata/join-left.golden", out.String())
}

// FuzzDecodeJoinOuter: a record that decodes is Kafka Streams' layout read
// back exactly (laid out again, it is the same bytes), its lane key is the
// key's tail, and nothing panics or allocates by a corrupt count.
func FuzzDecodeJoinOuter(f *testing.F) {
	f.Add(joinKey(10, true, "some-string"), joinValues(true, "value-from-left"))
	f.Add(joinKey(20, false, "some-string"), joinValues(false, "value-from-right", "again"))
	f.Add(joinKey(0, false, ""), []byte(nil))
	f.Add(be(9, 0), cat([]byte{1}, be(4, -1)))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		e, err := Decode(JoinOuter, key, value, 0, nil)
		if err != nil {
			if !errors.Is(err, ErrJoinOuter) && key != nil {
				t.Fatalf("error outside the class: %v", err)
			}
			return
		}
		if !bytes.HasSuffix(key, e.LaneKey) || len(key)-len(e.LaneKey) != 9 {
			t.Fatalf("lane key %x is not the key after the timestamp and side of %x", e.LaneKey, key)
		}
		if !bytes.Equal(joinKey(e.Start, e.Left, string(e.LaneKey)), key) {
			t.Fatalf("key %x does not lay out again the same", key)
		}
		if value == nil {
			if e.Waiting != 0 {
				t.Fatalf("a tombstone waits %d", e.Waiting)
			}
			return
		}
		vs, err := DecodeJoinOuterValue(value)
		if err != nil || len(vs) != e.Waiting {
			t.Fatalf("values decode apart: %v, %d vs %d", err, len(vs), e.Waiting)
		}
		var strs []string
		for _, v := range vs {
			strs = append(strs, string(v.Value))
		}
		if !bytes.Equal(joinValues(e.Left, strs...), value) {
			t.Fatalf("value %x does not lay out again the same", value)
		}
	})
}
