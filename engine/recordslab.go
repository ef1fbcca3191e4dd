package engine

import "github.com/twmb/franz-go/pkg/kgo"

// slabRecords is how many records one slab array holds (160 bytes each,
// 40 KiB), and slabHeaders how many headers.
const (
	slabRecords = 256
	slabHeaders = 256
)

// recordSlab hands out the records the committer gives franz-go, carved
// from arrays of slabRecords, with their headers' room carved the same
// way. A record is never reused: the garbage collector frees an array
// once franz-go has let go of all its records, a few hundred records
// after the last was produced.
//
// Records used to come from a sync.Pool, cleared when their promise ran.
// A pooled record had last been written by franz-go's promise, on another
// goroutine and an epoch's worth of records earlier, so filling one in
// missed the cache on each of its lines: in the profile of a stateless map
// on the embedded broker the committer spent 0.63 s per 4 M records
// making records (runner.record and checkSize) from the pool and 0.20 s
// from a slab, whose array the allocator has just zeroed in order.
//
// A recordSlab belongs to one goroutine (the committer's).
type recordSlab struct {
	recs []kgo.Record
	hdrs []kgo.RecordHeader

	// partsTopic and parts are the partition count of the topic the last
	// record without a partition went to: outputs come in runs to one
	// topic, and the runner's map of counts costs a string hash and a
	// lookup a record (runner.record).
	partsTopic string
	parts      int32
}

// next is a zero record with room for headers headers: Headers is empty
// with that capacity, so appending them allocates nothing and cannot
// reach another record's.
func (s *recordSlab) next(headers int) *kgo.Record {
	if len(s.recs) == 0 {
		s.recs = make([]kgo.Record, slabRecords)
	}
	rec := &s.recs[0]
	s.recs = s.recs[1:]
	if headers > 0 {
		if headers > slabHeaders/4 {
			rec.Headers = make([]kgo.RecordHeader, 0, headers)
			return rec
		}
		if len(s.hdrs) < headers {
			s.hdrs = make([]kgo.RecordHeader, slabHeaders)
		}
		rec.Headers = s.hdrs[:0:headers]
		s.hdrs = s.hdrs[headers:]
	}
	return rec
}
