package task

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
)

// schedule is one registered punctuator.
type schedule struct {
	node      *node
	typ       processor.PunctuationType
	interval  int64
	next      int64
	fn        processor.Punctuator
	cancelled bool
	seq       int
}

func (s *schedule) Cancel() { s.cancelled = true }

// advance computes the next firing after one at now, skipping the
// intervals that were missed so a gap in stream time (or a stalled wall
// clock) fires once, not once per missed interval, and the schedule keeps
// its alignment. This is Kafka Streams' rule, and the published sequences
// in the tests depend on it.
func (s *schedule) advance(now int64) {
	next := s.next + s.interval
	if now >= next {
		missed := (now - s.next) / s.interval
		next = s.next + (missed+1)*s.interval
	}
	s.next = next
}

type punctuationQueue []*schedule

func (q punctuationQueue) Len() int { return len(q) }
func (q punctuationQueue) Less(i, j int) bool {
	if q[i].next != q[j].next {
		return q[i].next < q[j].next
	}
	return q[i].seq < q[j].seq
}
func (q punctuationQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *punctuationQueue) Push(x any)   { *q = append(*q, x.(*schedule)) }
func (q *punctuationQueue) Pop() any {
	old := *q
	s := old[len(old)-1]
	*q = old[:len(old)-1]
	return s
}

func (t *Task) schedule(nd *node, interval time.Duration, typ processor.PunctuationType, fn processor.Punctuator) (processor.Cancellable, error) {
	ms := interval.Milliseconds()
	if ms < 1 {
		return nil, fmt.Errorf("processor %s: punctuation interval %s is below 1ms", nd.name, interval)
	}
	if fn == nil {
		return nil, fmt.Errorf("processor %s: nil punctuator", nd.name)
	}
	s := &schedule{node: nd, typ: typ, interval: ms, fn: fn, seq: t.punctSeq}
	t.punctSeq++
	switch typ {
	case processor.StreamTime:
		// Aligned to 0: the first record moves stream time past it, so
		// stream-time punctuation starts as soon as there is data.
		s.next = 0
		heap.Push(&t.streamPunct, s)
	case processor.WallClockTime:
		s.next = t.time.WallClock() + ms
		heap.Push(&t.wallPunct, s)
	default:
		return nil, fmt.Errorf("processor %s: unknown punctuation type %d", nd.name, typ)
	}
	return s, nil
}

// PunctuateStreamTime fires the stream-time punctuators that are due and
// reports whether any fired. Before the first record nothing is due.
// floor is the late-drop floor for what the punctuators forward.
func (t *Task) PunctuateStreamTime(floor int64) (bool, error) {
	now := t.time.StreamTime()
	if now == Unknown {
		return false, nil
	}
	return t.punctuate(&t.streamPunct, now, floor)
}

// PunctuateWallClock fires the wall-clock punctuators that are due.
func (t *Task) PunctuateWallClock(floor int64) (bool, error) {
	return t.punctuate(&t.wallPunct, t.time.WallClock(), floor)
}

func (t *Task) punctuate(q *punctuationQueue, now, floor int64) (bool, error) {
	prevFloor := t.floor
	t.floor = floor
	defer func() { t.floor = prevFloor }()
	fired := false
	for q.Len() > 0 && (*q)[0].next <= now {
		s := heap.Pop(q).(*schedule)
		if s.cancelled {
			continue
		}
		fired = true
		err := t.runPunctuator(s, now)
		if !s.cancelled {
			s.advance(now)
			heap.Push(q, s)
		}
		if err != nil {
			return fired, err
		}
	}
	return fired, nil
}

func (t *Task) runPunctuator(s *schedule, now int64) error {
	prev := t.rc
	t.rc = recordContext{timestamp: now}
	defer func() { t.rc = prev }()
	t.failed = nil
	err := t.invoke(s.node, func() error { return s.fn(now) })
	if err != nil {
		t.handleProcessingError(s.node, fmt.Errorf("punctuator (%s at %d): %w", s.typ, now, err))
	}
	return t.takeFailure()
}
