package engine

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAtEnd: a fetched partition is at its end when its last record is
// the last before the high watermark, or before the last stable offset
// when that is lower (read_committed), with one offset of slack for a
// commit marker; not when more records wait.
func TestAtEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		last      int64
		hwm, lso  int64
		wantAtEnd bool
	}{
		{"last record before the high watermark", 99, 100, -1, true},
		{"a marker after the last record", 99, 101, 101, true},
		{"records wait", 99, 150, -1, false},
		{"records wait past a marker", 99, 102, 102, false},
		{"the stable offset bounds a read_committed fetch", 99, 500, 100, true},
		{"an open transaction's records are not waiting records", 49, 500, 51, true},
		{"no marks in the response", 10, -1, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kgo.FetchTopicPartition{Topic: "in", FetchPartition: kgo.FetchPartition{
				Partition: 0, HighWatermark: tc.hwm, LastStableOffset: tc.lso,
				Records: []*kgo.Record{{Offset: tc.last - 1}, {Offset: tc.last}},
			}}
			if got := atEnd(p); got != tc.wantAtEnd {
				t.Fatalf("atEnd(last %d, hwm %d, lso %d) = %v, want %v", tc.last, tc.hwm, tc.lso, got, tc.wantAtEnd)
			}
		})
	}
}
