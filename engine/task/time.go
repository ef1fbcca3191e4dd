package task

import (
	"math"
	"sync/atomic"
	"time"
)

// Unknown is stream time before the first record.
const Unknown int64 = -1

// Time is the clock a task reads.
//
// StreamTime is the event-time clock, the watermark: it drives stream-time
// punctuators and closes windows. In the test driver it is the largest
// timestamp processed (raised by ObserveStreamTime), Kafka Streams' stream
// time; in the engine it is the global watermark and ObserveStreamTime
// only informs the tracker.
//
// Floor is the late-drop floor for the record about to be processed (see
// processor.Context.Floor): in the driver the current watermark, or the
// floor of the flush that produced the record; in the engine the stamp of
// the last barrier the lane crossed.
type Time interface {
	StreamTime() int64
	// ObserveStreamTime raises stream time to ts if ts is larger.
	ObserveStreamTime(ts int64)
	Floor() int64
	WallClock() int64
}

// StreamClock is a stream time that several tasks may share, over a wall
// clock function. The zero value is not usable; use NewStreamClock.
type StreamClock struct {
	stream atomic.Int64
	pinned atomic.Int64
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
	c.pinned.Store(noPin)
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

// noPin marks an unpinned floor.
const noPin = math.MinInt64

// Floor is the pinned floor, else stream time.
func (c *StreamClock) Floor() int64 {
	if p := c.pinned.Load(); p != noPin {
		return p
	}
	return c.StreamTime()
}

// PinFloor makes Floor return floor until UnpinFloor; the driver pins it
// while it processes records a watermark flush produced, which are judged
// against the flush's floor, not against the watermark that flushed them.
func (c *StreamClock) PinFloor(floor int64) { c.pinned.Store(floor) }

// UnpinFloor makes Floor follow stream time again.
func (c *StreamClock) UnpinFloor() { c.pinned.Store(noPin) }
