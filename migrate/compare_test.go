package migrate_test

import (
	"encoding/binary"
	"testing"

	"github.com/stoatflow/stoatctl/migrate"
)

// win is a time-windowed key: inner, then the window's 8-byte start.
func win(inner string, start int64) string {
	return string(binary.BigEndian.AppendUint64([]byte(inner), uint64(start)))
}

// TestComparer: the verdict of each key at a point, from what each side
// wrote before it, and the summary over points.
func TestComparer(t *testing.T) {
	type write struct {
		side      migrate.Side
		topic     string
		partition int32
		key       string
		value     string
	}
	ks := func(topic, key, value string) write { return write{migrate.KafkaStreams, topic, 0, key, value} }
	ours := func(topic, key, value string) write { return write{migrate.Ours, topic, 0, key, value} }
	suffix := map[string]int{"counts": 0, "windows": 8}
	for _, tc := range []struct {
		name string
		// points are the writes before each point; deferred the inner
		// keys left for a later point at each.
		points   [][]write
		deferred []map[string]bool
		want     migrate.Verdict
		// transient is the summary's count of keys that differed and
		// match at the end.
		transient int
	}{
		{name: "same latest value", points: [][]write{{ks("counts", "a", "1"), ks("counts", "a", "2"), ours("counts", "a", "2")}}, want: migrate.Matched},
		{name: "intermediate values coalesced on one side", points: [][]write{{ks("counts", "a", "3"), ours("counts", "a", "1"), ours("counts", "a", "2"), ours("counts", "a", "3")}}, want: migrate.Matched},
		{name: "latest values differ", points: [][]write{{ks("counts", "a", "2"), ours("counts", "a", "3")}}, want: migrate.ValueDiffers},
		{name: "only Kafka Streams", points: [][]write{{ks("counts", "a", "2")}}, want: migrate.OnlyKafkaStreams},
		{name: "only ours", points: [][]write{{ours("counts", "a", "2")}}, want: migrate.OnlyOurs},
		{name: "differs, then matches at a later point", points: [][]write{{ks("counts", "a", "2"), ours("counts", "a", "3")}, {ks("counts", "a", "3")}}, want: migrate.Matched, transient: 1},
		{name: "matches, then differs", points: [][]write{{ks("counts", "a", "2"), ours("counts", "a", "2")}, {ours("counts", "a", "3")}}, want: migrate.ValueDiffers},
		{name: "deferred: compared at the next point", points: [][]write{{ks("counts", "a", "1"), ours("counts", "a", "2")}, {ks("counts", "a", "2")}},
			deferred: []map[string]bool{{"a": true}}, want: migrate.Matched},
		// Kafka Streams ahead of us is no documented difference: at an
		// aligned point we have emitted every window our watermark closed.
		{name: "window Kafka Streams emitted past ours", points: [][]write{{ks("windows", win("a", 60), "1"), ours("windows", win("b", 0), "1"), ks("windows", win("b", 0), "1")}}, want: migrate.OnlyKafkaStreams},
		{name: "window Kafka Streams has not closed", points: [][]write{{ours("windows", win("a", 60), "1"), ks("windows", win("b", 0), "1"), ours("windows", win("b", 0), "1")}}, want: migrate.WindowNotEmittedYet},
		{name: "window Kafka Streams emitted, ours none yet", points: [][]write{{ks("windows", win("a", 60), "1")}}, want: migrate.OnlyKafkaStreams},
		{name: "window ours emitted, Kafka Streams none yet", points: [][]write{{ours("windows", win("a", 60), "1")}}, want: migrate.WindowNotEmittedYet},
		{name: "window ours skipped though it emitted a later one", points: [][]write{{ks("windows", win("a", 0), "1"), ours("windows", win("b", 60), "1"), ks("windows", win("b", 60), "1")}}, want: migrate.OnlyKafkaStreams},
		{name: "window of a start ours emitted for another key", points: [][]write{{ks("windows", win("a", 60), "1"), ours("windows", win("b", 60), "1"), ks("windows", win("b", 60), "1")}}, want: migrate.OnlyKafkaStreams},
		{name: "window in another partition than Kafka Streams emitted", points: [][]write{{{migrate.Ours, "windows", 1, win("a", 60), "1"}, ours("windows", win("b", 0), "1"), ks("windows", win("b", 0), "1"), ks("windows", win("c", 120), "1"), ours("windows", win("c", 120), "1")}}, want: migrate.WindowNotEmittedYet},
		{name: "window of a start Kafka Streams emitted for another key", points: [][]write{{ours("windows", win("a", 60), "1"), ks("windows", win("b", 60), "1"), ours("windows", win("b", 60), "1")}}, want: migrate.OnlyOurs},
		{name: "window Kafka Streams skipped", points: [][]write{{ours("windows", win("a", 0), "1"), ours("windows", win("b", 60), "1"), ks("windows", win("b", 60), "1")}}, want: migrate.OnlyOurs},
		{name: "window emitted later by ours with another count", points: [][]write{{ks("windows", win("a", 0), "2")}, {ours("windows", win("a", 0), "1")}}, want: migrate.ValueDiffers},
		{name: "window pending, then matched", points: [][]write{{ours("windows", win("a", 0), "2")}, {ks("windows", win("a", 0), "2")}}, want: migrate.Matched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := migrate.NewComparer(suffix)
			for i, writes := range tc.points {
				for j, w := range writes {
					c.Add(w.side, w.topic, migrate.OutputRecord{Topic: w.topic, Partition: w.partition, Offset: int64(j), Key: []byte(w.key), Value: []byte(w.value)})
				}
				var d map[string]bool
				if i < len(tc.deferred) {
					d = tc.deferred[i]
				}
				c.Point(func(_ string, inner []byte) bool { return d[string(inner)] })
			}
			sum, diffs, transient := c.Summary(-1)
			// The key under test is "a", in either topic.
			got := migrate.Verdict("")
			switch {
			case tc.want.Unexpected():
				// Every other key of a case matches.
				if len(diffs) == 1 && sum.Unexpected == 1 {
					got = diffs[0].Verdict
				}
			case tc.want.Documented():
				if sum.Documented[tc.want] == 1 {
					got = tc.want
				}
			default:
				if sum.Unexpected == 0 && sum.Deferred == 0 && len(sum.Documented) == 0 && sum.Matched > 0 {
					got = migrate.Matched
				}
			}
			if got != tc.want || transient != tc.transient {
				t.Fatalf("verdict %q, transient %d; want %q, %d (summary %+v, differences %+v)", got, transient, tc.want, tc.transient, sum, diffs)
			}
		})
	}
}

// TestComparerDeferredAtTheEnd: a key deferred at every point is counted
// as deferred, not as compared.
func TestComparerDeferredAtTheEnd(t *testing.T) {
	c := migrate.NewComparer(map[string]int{"counts": 0})
	c.Add(migrate.KafkaStreams, "counts", migrate.OutputRecord{Key: []byte("a"), Value: []byte("1")})
	c.Add(migrate.Ours, "counts", migrate.OutputRecord{Key: []byte("a"), Value: []byte("2")})
	p := c.Point(func(string, []byte) bool { return true })
	if p.Deferred != 1 || p.Compared != 0 {
		t.Fatalf("point: %+v", p)
	}
	sum, diffs, _ := c.Summary(-1)
	if sum.Deferred != 1 || sum.Compared != 0 || len(diffs) != 0 {
		t.Fatalf("summary: %+v, %+v", sum, diffs)
	}
}

// TestComparerRendersKeys: a windowed key reads as its inner key and its
// window's start, a long value as its number too.
func TestComparerRendersKeys(t *testing.T) {
	c := migrate.NewComparer(map[string]int{"windows": 8})
	c.Add(migrate.KafkaStreams, "windows", migrate.OutputRecord{Key: []byte(win("/home", 60_000)), Value: []byte{0, 0, 0, 0, 0, 0, 0, 3}})
	c.Add(migrate.Ours, "windows", migrate.OutputRecord{Key: []byte(win("/home", 60_000)), Value: []byte{0, 0, 0, 0, 0, 0, 0, 2}})
	c.Point(nil)
	_, diffs, _ := c.Summary(-1)
	if len(diffs) != 1 || diffs[0].Key != "/home@60000" || diffs[0].KafkaStreams.ValueText != "0x0000000000000003 (3)" || diffs[0].Ours.KeyText != "/home@60000" {
		t.Fatalf("differences: %+v", diffs)
	}
}
