package lanes

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/task"
)

// TestCoalescer: the last write of each store key survives, in the order
// the keys were first written; keys of different stores do not meet; a
// delete replaces a put; the byte count follows replacements.
func TestCoalescer(t *testing.T) {
	type write struct{ store, key, value string }
	for _, tc := range []struct {
		name   string
		writes []write
		want   string // store/key=value, in order; "nil" is a delete
		fresh  int    // writes of keys not held before
	}{
		{name: "one key, many writes", writes: []write{{"s", "a", "1"}, {"s", "a", "2"}, {"s", "a", "3"}},
			want: "s/a=3", fresh: 1},
		{name: "first-write order kept", writes: []write{{"s", "b", "1"}, {"s", "a", "1"}, {"s", "b", "2"}, {"s", "c", "1"}, {"s", "a", "2"}},
			want: "s/b=2 s/a=2 s/c=1", fresh: 3},
		{name: "stores apart", writes: []write{{"s", "a", "1"}, {"t", "a", "9"}, {"s", "a", "2"}},
			want: "s/a=2 t/a=9", fresh: 2},
		{name: "delete replaces put", writes: []write{{"s", "a", "1"}, {"s", "a", "nil"}},
			want: "s/a=nil", fresh: 1},
		{name: "put after delete", writes: []write{{"s", "a", "nil"}, {"s", "a", "7"}},
			want: "s/a=7", fresh: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoalescer(1 << 20)
			fresh := 0
			for _, w := range tc.writes {
				o := task.Output{Topic: w.store + "-changelog", Store: w.store, Key: []byte(w.key)}
				if w.value != "nil" {
					o.Value = []byte(w.value)
				}
				if c.add(o, laneMark{}) {
					fresh++
				}
			}
			if fresh != tc.fresh {
				t.Errorf("%d fresh keys, want %d", fresh, tc.fresh)
			}
			var got []string
			if err := c.drain(func(o task.Output, _ laneMark) error {
				v := "nil"
				if o.Value != nil {
					v = string(o.Value)
				}
				got = append(got, fmt.Sprintf("%s/%s=%s", o.Store, o.Key, v))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("drained %q, want %q", g, tc.want)
			}
			if c.held() != 0 || c.bytes != 0 {
				t.Fatalf("after drain: %d held, %d bytes", c.held(), c.bytes)
			}
		})
	}
}

// TestCoalescerBound: the byte count grows with new keys and by the
// difference of a replaced value, and full reports once it passes the
// bound; after a drain the same key is fresh again.
func TestCoalescerBound(t *testing.T) {
	c := newCoalescer(2*entryOverhead + 10)
	c.add(task.Output{Store: "s", Key: []byte("a"), Value: []byte("12345")}, laneMark{})
	if want := 6 + entryOverhead; c.bytes != want {
		t.Fatalf("bytes %d, want %d", c.bytes, want)
	}
	c.add(task.Output{Store: "s", Key: []byte("a"), Value: []byte("1")}, laneMark{})
	if want := 2 + entryOverhead; c.bytes != want {
		t.Fatalf("after a shorter value: bytes %d, want %d", c.bytes, want)
	}
	if c.full() {
		t.Fatal("full with one key")
	}
	c.add(task.Output{Store: "s", Key: []byte("b"), Value: []byte("123456789")}, laneMark{})
	if !c.full() {
		t.Fatalf("not full at %d bytes over a bound of %d", c.bytes, c.max)
	}
	boom := errors.New("boom")
	n := 0
	if err := c.drain(func(task.Output, laneMark) error { n++; return boom }); !errors.Is(err, boom) || n != 1 {
		t.Fatalf("drain: err %v after %d records, want boom after 1", err, n)
	}
	if c.held() != 0 {
		t.Fatalf("%d held after a failed drain", c.held())
	}
	if !c.add(task.Output{Store: "s", Key: []byte("a")}, laneMark{}) {
		t.Fatal("a key drained is not fresh again")
	}
}

// TestCoalescerBoundCountsTheLaneHash: a write laned by a key weighs the
// lane hash header its record carries once routed, though the header is
// added only as it leaves.
func TestCoalescerBoundCountsTheLaneHash(t *testing.T) {
	c := newCoalescer(1 << 20)
	c.add(task.Output{Store: "s", Key: []byte("a"), Value: []byte("12345")}, laneMark{hash: 7, laned: true})
	header := len(lane.HashHeader) + 4
	if want := 6 + header + entryOverhead; c.bytes != want {
		t.Fatalf("bytes %d, want %d (key, value, lane hash header, overhead)", c.bytes, want)
	}
	c.add(task.Output{Store: "s", Key: []byte("a"), Value: []byte("1")}, laneMark{})
	if want := 2 + entryOverhead; c.bytes != want {
		t.Fatalf("after an unlaned write of the key: bytes %d, want %d", c.bytes, want)
	}
}

// TestCoalescerOff: a lane without a bound holds nothing.
func TestCoalescerOff(t *testing.T) {
	var c *coalescer
	if c.on() {
		t.Fatal("nil coalescer on")
	}
	if newCoalescer(0).on() {
		t.Fatal("zero bound on")
	}
}

// BenchmarkCoalescerAdd is one epoch of the tumbling count's changelog
// writes as bench-compare's window-update makes them: 10 000 store keys
// (a key and its window's start and sequence number, 22 bytes), written
// 20 times each in an interleaved order, then drained.
func BenchmarkCoalescerAdd(b *testing.B) {
	const keys, rounds = 10_000, 20
	outs := make([]task.Output, keys)
	for i := range outs {
		k := fmt.Appendf(nil, "key-%06d", i*7919%keys)
		k = append(k, 0, 0, 1, 0x8c, 0x2b, 0x1a, 0x00, 0x00, 0, 0, 0, 0)
		outs[i] = task.Output{Topic: "app-win-changelog", Partition: -1, Store: "win", Key: k, Value: make([]byte, 16)}
	}
	c := newCoalescer(64 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			for i := range outs {
				o := outs[(i+r*31)%keys]
				c.add(o, laneMark{})
			}
		}
		if err := c.drain(func(task.Output, laneMark) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys*rounds), "ns/add")
}
