package task

import (
	"sync/atomic"
	"time"
)

// Unknown is stream time before the first record.
const Unknown int64 = -1

// Time is the clock a task reads: stream time, raised by the records it
// processes, and the wall clock.
type Time interface {
	StreamTime() int64
	// ObserveStreamTime raises stream time to ts if ts is larger.
	ObserveStreamTime(ts int64)
	WallClock() int64
}

// StreamClock is a stream time that several tasks may share, over a wall
// clock function. The zero value is not usable; use NewStreamClock.
type StreamClock struct {
	stream atomic.Int64
	wall   func() int64
}

// NewStreamClock returns a clock at Unknown stream time. wall nil means the
// system clock.
func NewStreamClock(wall func() int64) *StreamClock {
	if wall == nil {
		wall = func() int64 { return time.Now().UnixMilli() }
	}
	c := &StreamClock{wall: wall}
	c.stream.Store(Unknown)
	return c
}

func (c *StreamClock) StreamTime() int64 { return c.stream.Load() }

func (c *StreamClock) ObserveStreamTime(ts int64) {
	for {
		cur := c.stream.Load()
		if ts <= cur || c.stream.CompareAndSwap(cur, ts) {
			return
		}
	}
}

func (c *StreamClock) WallClock() int64 { return c.wall() }
