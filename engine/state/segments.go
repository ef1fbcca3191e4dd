package state

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Segments: a window or session store splits its key-first index by time
// into segments of SegmentInterval milliseconds (by window start, or
// session end), each under its own key prefix, so that expiry drops a
// segment as a whole: two range deletes (the segments' key-first entries,
// and the time-first entries below the first live segment's start), which
// RocksDB keeps as range tombstones and reclaims at compaction, instead of
// one delete per entry. It is Kafka Streams' segmented store, in one byte
// store rather than one RocksDB instance per segment.
//
// Segment s holds the times [s·interval, (s+1)·interval). Expiry at a
// frontier drops the segments wholly older than frontier - retention + 1;
// what is past retention in the segment the horizon cuts through stays on
// disk until its segment goes, and reads hide it, as Kafka Streams' reads
// start at the retention horizon.

// DefaultSegmentInterval is Kafka Streams' segment interval for a store of
// retention (Stores.persistentWindowStore and persistentSessionStore): half
// the retention, at least a minute.
func DefaultSegmentInterval(retention int64) int64 { return max(retention/2, 60_000) }

// Segmented is a window or session store's view of its segments, for the
// stoatflow_store_segments gauge.
type Segmented interface {
	// Segments is how many segments the store holds data in.
	Segments() int
	Kind() Kind
}

// segmentOf is the segment holding time t: floor(t / interval).
func segmentOf(t, interval int64) int64 {
	s := t / interval
	if t%interval != 0 && t < 0 {
		s--
	}
	return s
}

// segmentStart is the first time of segment s, saturating.
func segmentStart(s, interval int64) int64 {
	switch {
	case s > math.MaxInt64/interval:
		return math.MaxInt64
	case s < math.MinInt64/interval:
		return math.MinInt64
	}
	return s * interval
}

// keyFirstPrefix is the prefix of segment s's key-first entries:
// indexKeyFirst and s, 8 bytes big-endian with the sign bit flipped.
func keyFirstPrefix(s int64) []byte {
	return appendOrderedTime(make([]byte, 1, 1+timestampSize), s)
}

// segmentBounds are the bounds of segment seg's key-first entries, for
// scanSegments: all of them.
func segmentBounds(seg int64) (from, to []byte) {
	if seg == math.MaxInt64 {
		return keyFirstPrefix(seg), []byte{indexTimeFirst}
	}
	return keyFirstPrefix(seg), keyFirstPrefix(seg + 1)
}

// segmentSet is the segments a store holds data in, as far as it knows:
// those found in the byte store on first use, and those written since,
// less those expired. A segment listed may have lost its entries to
// deletes; one holding entries is always listed.
type segmentSet struct {
	interval int64
	// last is the segment last noted, so that a put into it takes no lock.
	last atomic.Int64
	mu   sync.Mutex
	// live is sorted.
	live []int64
	// found says discover has run.
	found atomic.Bool
}

func (s *segmentSet) init(interval int64) {
	s.interval = interval
	s.last.Store(math.MinInt64)
}

// discover lists the segments inner holds, once: one seek per segment.
func (s *segmentSet) discover(inner KeyValueBytesStore) error {
	if s.found.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.found.Load() {
		return nil
	}
	from := []byte{indexKeyFirst}
	for {
		it, err := inner.Range(from, []byte{indexTimeFirst})
		if err != nil {
			return err
		}
		ok := it.Next()
		k := it.Key()
		err = it.Err()
		it.Close()
		if err != nil {
			return err
		}
		if !ok || len(k) < 1+timestampSize || k[0] != indexKeyFirst {
			break
		}
		seg := readOrderedTime(k[1:])
		s.addLocked(seg)
		if seg == math.MaxInt64 {
			break
		}
		from = keyFirstPrefix(seg + 1)
	}
	s.found.Store(true)
	return nil
}

func (s *segmentSet) addLocked(seg int64) {
	if i, ok := slices.BinarySearch(s.live, seg); !ok {
		s.live = slices.Insert(s.live, i, seg)
	}
}

// note lists segment seg, written to.
func (s *segmentSet) note(seg int64) {
	if s.last.Load() == seg {
		return
	}
	s.mu.Lock()
	s.addLocked(seg)
	s.mu.Unlock()
	s.last.Store(seg)
}

// between returns the listed segments lo..hi, in order.
func (s *segmentSet) between(lo, hi int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.live, lo)
	j, _ := slices.BinarySearch(s.live, hi)
	if j < len(s.live) && s.live[j] == hi {
		j++
	}
	if i >= j {
		return nil
	}
	return slices.Clone(s.live[i:j])
}

// dropBelow unlists the segments before first and reports whether there
// were any.
func (s *segmentSet) dropBelow(first int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.live, first)
	if i == 0 {
		return false
	}
	s.live = slices.Delete(s.live, 0, i)
	s.last.Store(math.MinInt64)
	return true
}

func (s *segmentSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// concatIterator walks its iterators one after the other. They are all
// opened at once, so that the scan's key set is fixed when it opens, as a
// byte store's is.
type concatIterator struct {
	its []BytesIterator
	cur int
}

func (c *concatIterator) Next() bool {
	for c.cur < len(c.its) {
		if c.its[c.cur].Next() {
			return true
		}
		if c.its[c.cur].Err() != nil {
			return false
		}
		c.cur++
	}
	return false
}

func (c *concatIterator) at() BytesIterator {
	if c.cur < len(c.its) {
		return c.its[c.cur]
	}
	return nil
}

func (c *concatIterator) Key() []byte {
	if it := c.at(); it != nil {
		return it.Key()
	}
	return nil
}

func (c *concatIterator) Value() []byte {
	if it := c.at(); it != nil {
		return it.Value()
	}
	return nil
}

func (c *concatIterator) Err() error {
	if it := c.at(); it != nil {
		return it.Err()
	}
	return nil
}

func (c *concatIterator) Close() error {
	var first error
	for _, it := range c.its {
		if err := it.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sliceIterator walks entries read beforehand.
type sliceIterator struct {
	entries []KeyValue[[]byte, []byte]
	i       int
}

func (s *sliceIterator) Next() bool {
	if s.i < len(s.entries) {
		s.i++
	}
	return s.i < len(s.entries)
}

func (s *sliceIterator) Key() []byte {
	if s.i < 0 || s.i >= len(s.entries) {
		return nil
	}
	return s.entries[s.i].Key
}

func (s *sliceIterator) Value() []byte {
	if s.i < 0 || s.i >= len(s.entries) {
		return nil
	}
	return s.entries[s.i].Value
}

func (s *sliceIterator) Err() error   { return nil }
func (s *sliceIterator) Close() error { s.entries = nil; return nil }

// emptyIterator has nothing.
type emptyIterator struct{}

func (emptyIterator) Next() bool    { return false }
func (emptyIterator) Key() []byte   { return nil }
func (emptyIterator) Value() []byte { return nil }
func (emptyIterator) Err() error    { return nil }
func (emptyIterator) Close() error  { return nil }

// scanSegments opens, for each listed segment lo..hi, the range bounds
// returns for it with open (nil: the byte store's Range), and walks them
// in segment order.
func (c *windowedCore[K]) scanSegments(lo, hi int64, open func(from, to []byte) (BytesIterator, error), bounds func(seg int64) (from, to []byte)) (BytesIterator, error) {
	if open == nil {
		open = c.inner.Range
	}
	if err := c.segs.discover(c.inner); err != nil {
		return nil, err
	}
	segs := c.segs.between(lo, hi)
	switch len(segs) {
	case 0:
		return emptyIterator{}, nil
	case 1:
		from, to := bounds(segs[0])
		return open(from, to)
	}
	its := make([]BytesIterator, 0, len(segs))
	for _, seg := range segs {
		from, to := bounds(seg)
		it, err := open(from, to)
		if err != nil {
			for _, o := range its {
				o.Close()
			}
			return nil, err
		}
		its = append(its, it)
	}
	return &concatIterator{its: its}, nil
}

// Segments is how many segments the store holds data in.
func (c *windowedCore[K]) Segments() int { return c.segs.count() }

// SegmentInterval is the store's segment interval in milliseconds.
func (c *windowedCore[K]) SegmentInterval() int64 { return c.segs.interval }

// rangeFrom is how a scan of entries starting at t or later opens its
// ranges: over the writes of the epoch being written, or of the one the
// store wrote in before it and those after, when no entry from t on
// predates that epoch (epochTimes.since), nil (the byte store's Range)
// otherwise.
func (c *windowedCore[K]) rangeFrom(t int64) func(from, to []byte) (BytesIterator, error) {
	epoch, writing := writeEpoch(c.inner)
	since, ok := c.times.since(epoch, writing, t)
	if !ok {
		return nil
	}
	return func(from, to []byte) (BytesIterator, error) { return rangeSinceEpoch(c.inner, since, from, to) }
}

// noteSegment lists the segment of time t before a write to it.
func (c *windowedCore[K]) noteSegment(t int64) (int64, error) {
	if err := c.segs.discover(c.inner); err != nil {
		return 0, err
	}
	seg := segmentOf(t, c.segs.interval)
	c.segs.note(seg)
	return seg, nil
}
