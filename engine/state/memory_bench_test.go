package state

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMemoryStoreWindowed drives the in-memory store as a windowed
// count drives it through the window store: per record and window a point
// read of the key-first entry, a write of it and of its time-first index
// entry, and now and then an expiry pass that scans the time index and
// deletes what it finds. Most writes update a window that already exists.
//
// In "sequential" the keys come round in order, as in the testdriver
// benchmarks, so neighbouring records touch neighbouring keys; in "random"
// they come in random order.
func BenchmarkMemoryStoreWindowed(b *testing.B) {
	for _, order := range []string{"sequential", "random"} {
		for _, windows := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/windows=%d", order, windows), func(b *testing.B) {
				benchWindowedStore(b, order == "random", windows)
			})
		}
	}
}

func benchWindowedStore(b *testing.B, random bool, windows int) {
	const (
		keys      = 10_000
		size      = 60_000 // ms
		retention = 70_000
	)
	advance := int64(size / windows)
	names := make([][]byte, keys)
	for i := range names {
		names[i] = fmt.Appendf(nil, "key-%05d", i)
	}
	perm := rand.New(rand.NewPCG(1, 2)).Perm(keys)
	s := newTestBytesStore(b)
	value := make([]byte, 16)
	var expiredTo int64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := names[i%keys]
		if random {
			k = names[perm[i%keys]]
		}
		ts := int64(i)
		first := max(0, (ts-size)/advance*advance+advance)
		for start := first; start <= ts; start += advance {
			kf := windowKeyFirst(0, k, start, 0)
			old, err := s.Get(kf)
			if err != nil {
				b.Fatal(err)
			}
			var n uint64
			if old != nil {
				n = binary.BigEndian.Uint64(old[8:])
			}
			binary.BigEndian.PutUint64(value, uint64(ts))
			binary.BigEndian.PutUint64(value[8:], n+1)
			if err := s.PutAll([]KeyValue[[]byte, []byte]{
				{Key: kf, Value: value},
				{Key: windowTimeFirst(k, start, 0), Value: timeIndexValue},
			}); err != nil {
				b.Fatal(err)
			}
		}
		// An expiry pass per advance of the horizon, as the DSL runs them.
		if cutoff := ts - retention + 1; cutoff >= expiredTo+advance {
			expiredTo = cutoff
			it, err := s.Range([]byte{indexTimeFirst}, appendOrderedTime([]byte{indexTimeFirst}, cutoff))
			if err != nil {
				b.Fatal(err)
			}
			var dels []KeyValue[[]byte, []byte]
			for it.Next() {
				tk := it.Key()
				kk, start, seq, _ := decodeWindowTimeFirst(tk)
				dels = append(dels, KeyValue[[]byte, []byte]{Key: tk}, KeyValue[[]byte, []byte]{Key: windowKeyFirst(0, kk, start, seq)})
			}
			if err := it.Err(); err != nil {
				b.Fatal(err)
			}
			it.Close()
			if err := s.PutAll(dels); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
}
