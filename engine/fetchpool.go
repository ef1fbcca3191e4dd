package engine

import (
	"sync"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchPool lends franz-go the arrays it decodes a fetched batch's
// records into (kgo.PoolRecords), and takes them back once the
// dispatcher has recycled every record of the batch (kgo.Record.Recycle).
//
// Without it franz-go allocates one array per batch: 160 bytes a record,
// a megabyte or more for a batch of a producer that lingers, zeroed page
// by page and, as it holds pointers, scanned by the garbage collector.
// In the profile of a stateless map on the embedded broker that array
// was about a seventh of the engine's labelled CPU (decision 0022).
//
// Only the records are pooled. Their keys, values and headers point
// into the fetch's decompressed bytes, which the lanes may borrow for as
// long as a value lives (serde.DeserializeBorrowed); those bytes are
// never reused.
//
// The pool is a short free list, not a sync.Pool: a sync.Pool is emptied
// by every second garbage collection, and with arrays this large a
// collection came between nearly every put and the next get (85 of
// about 130 gets missed in a million-record run). It keeps at most
// fetchPoolArrays arrays and fetchPoolBytes bytes of them idle; a
// million-record run on four partitions kept about 13 arrays in flight
// (the fetches franz-go buffers ahead of the dispatcher).
//
// An idle array is not cleared again: Recycle zeroed the records handed
// out, and franz-go writes every field of a record it decodes into. A
// record franz-go decoded but did not hand out (one below the offset
// asked for, in the first batch after a seek) stays in its array until
// the array is reused, keeping that fetch's bytes alive until then;
// clearing each array on its return would cost the zeroing the pool
// saves.
//
// A pool is safe for concurrent use: franz-go gets from its fetch
// goroutines and puts from the dispatcher's.
type fetchPool struct {
	mu    sync.Mutex
	idle  [][]kgo.Record
	bytes int
}

const (
	fetchPoolArrays = 16
	fetchPoolBytes  = 32 << 20
	recordBytes     = int(unsafe.Sizeof(kgo.Record{}))
)

// GetRecords implements kgo.PoolRecords: an empty array with room for n
// records, the smallest idle one that fits or a new one.
func (p *fetchPool) GetRecords(n int) []kgo.Record {
	p.mu.Lock()
	best := -1
	for i, s := range p.idle {
		if cap(s) >= n && (best < 0 || cap(s) < cap(p.idle[best])) {
			best = i
		}
	}
	if best >= 0 {
		s := p.take(best)
		p.mu.Unlock()
		return s[:0]
	}
	p.mu.Unlock()
	// A quarter more room, so that a batch a little larger than the
	// last finds it next time.
	return make([]kgo.Record, 0, n+n/4)
}

// PutRecords implements kgo.PoolRecords. franz-go puts an array back
// when the last of its records is recycled; Recycle has zeroed each one.
// Past the pool's bounds the smallest array (this one or an idle one)
// is left to the garbage collector.
func (p *fetchPool) PutRecords(s []kgo.Record) {
	size := cap(s) * recordBytes
	if size > fetchPoolBytes {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle) >= fetchPoolArrays || p.bytes+size > fetchPoolBytes {
		small := 0
		for i := range p.idle {
			if cap(p.idle[i]) < cap(p.idle[small]) {
				small = i
			}
		}
		if len(p.idle) == 0 || cap(p.idle[small]) >= cap(s) {
			return
		}
		p.take(small)
	}
	p.idle = append(p.idle, s[:0])
	p.bytes += size
}

// take removes idle array i from the pool and returns it; p.mu is held.
func (p *fetchPool) take(i int) []kgo.Record {
	s := p.idle[i]
	last := len(p.idle) - 1
	p.idle[i], p.idle[last] = p.idle[last], nil
	p.idle = p.idle[:last]
	p.bytes -= cap(s) * recordBytes
	return s
}
