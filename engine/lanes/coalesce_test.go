package lanes

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestCoalescerHeldWords runs random writes through a coalescer, some
// carrying their key's held word as the memory store hands it out, and
// checks every drain against a model: the last write of each store key,
// in first-write order. The words go through what a store does to them
// (a record that moves to a bigger one starts over at zero, a deleted key
// has none) and through drains, the bound's included, after which every
// word noted before is stale.
func TestCoalescerHeldWords(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	type skey struct{ store, key string }
	for round := range 50 {
		c := newCoalescer(rng.IntN(40)*entryOverhead + 1)
		// words are the stores' records' held words; a nil entry is a
		// key whose record is gone (deleted).
		words := map[skey]*uint64{}
		var order []skey
		last := map[skey]string{}
		check := func(when string) {
			t.Helper()
			var got, want []string
			if err := c.drain(func(o task.Output, _ laneMark) error {
				got = append(got, o.Store+"/"+string(o.Key)+"="+string(o.Value))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, k := range order {
				want = append(want, k.store+"/"+k.key+"="+last[k])
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d round %d, %s:\n got %v\nwant %v", seed, round, when, got, want)
			}
			order, last = order[:0], map[skey]string{}
		}
		for i := range 400 {
			k := skey{store: []string{"s", "t"}[rng.IntN(2)], key: fmt.Sprint("k", rng.IntN(12))}
			v := fmt.Sprint(i)
			o := task.Output{Store: k.store, Key: []byte(k.key), Value: []byte(v)}
			switch r := rng.IntN(10); {
			case r == 0: // a delete: no word, and the key's record is gone
				o.Value, v = nil, ""
				words[k] = nil
			case r == 1: // the record moved to a bigger one: a new word
				words[k] = new(uint64)
				o.Held = words[k]
			case r < 8: // a write through the memory store
				if words[k] == nil {
					words[k] = new(uint64)
				}
				o.Held = words[k]
			default: // a store without words
			}
			if _, held := last[k]; !held {
				order = append(order, k)
			}
			last[k] = v
			c.add(o, laneMark{})
			if c.full() {
				check(fmt.Sprintf("bound passed at write %d", i))
			}
			if rng.IntN(100) == 0 {
				check(fmt.Sprintf("barrier at write %d", i))
			}
		}
		check("end")
	}
}

// TestCoalescerHeldWordOfAnotherWindow: a word noted before a drain, or by
// another coalescer, is not trusted: the write goes through the index.
func TestCoalescerHeldWordOfAnotherWindow(t *testing.T) {
	a, b := newCoalescer(1<<20), newCoalescer(1<<20)
	word := new(uint64)
	a.add(task.Output{Store: "s", Key: []byte("x"), Value: []byte("1"), Held: word}, laneMark{})
	if *word == 0 {
		t.Fatal("the first write of a key noted nothing in its word")
	}
	// b holds another key at the position a noted.
	b.add(task.Output{Store: "s", Key: []byte("y"), Value: []byte("2")}, laneMark{})
	if !b.add(task.Output{Store: "s", Key: []byte("x"), Value: []byte("3"), Held: word}, laneMark{}) {
		t.Fatal("another coalescer trusted a's word: x replaced y")
	}
	if err := a.drain(func(task.Output, laneMark) error { return nil }); err != nil {
		t.Fatal(err)
	}
	a.add(task.Output{Store: "s", Key: []byte("z"), Value: []byte("4")}, laneMark{})
	if !a.add(task.Output{Store: "s", Key: []byte("x"), Value: []byte("5"), Held: word}, laneMark{}) {
		t.Fatal("a word from before the drain was trusted: x replaced z")
	}
}
