package window

import "time"

// SlidingWindows are Kafka Streams' sliding windows: windows of a fixed time
// difference D whose bounds follow the records rather than the epoch. A
// sliding window holds records whose timestamps differ by at most D, so it
// is closed at both ends: [Start, End] with End = Start + D, as Kafka
// Streams stores it (TimeWindow(start, start + D)).
type SlidingWindows struct {
	timeDifferenceMs, graceMs int64
}

// SlidingWindowsOfTimeDifferenceWithNoGrace returns sliding windows of time
// difference d that admit no late records.
func SlidingWindowsOfTimeDifferenceWithNoGrace(d time.Duration) SlidingWindows {
	return SlidingWindowsOfTimeDifferenceAndGrace(d, 0)
}

// SlidingWindowsOfTimeDifferenceAndGrace returns sliding windows of time
// difference d that admit records up to grace after a window's end.
func SlidingWindowsOfTimeDifferenceAndGrace(d, grace time.Duration) SlidingWindows {
	return SlidingWindows{timeDifferenceMs: millis(d), graceMs: millis(grace)}
}

// TimeDifference is D in milliseconds: the largest difference between two
// record timestamps in one window, and End - Start of every window.
func (w SlidingWindows) TimeDifference() int64 { return w.timeDifferenceMs }

// Grace is the grace period in milliseconds.
func (w SlidingWindows) Grace() int64 { return w.graceMs }

// String describes the definition, as errors name it.
func (w SlidingWindows) String() string {
	return "sliding windows [time difference " + ms(w.timeDifferenceMs) + ", grace " + ms(w.graceMs) + "]"
}

// Validate reports a negative time difference or grace, as Kafka Streams'
// SlidingWindows does. A time difference of zero is valid: each window then
// holds the records of one millisecond.
func (w SlidingWindows) Validate() error {
	var v validation
	v.check(w.timeDifferenceMs >= 0, "time difference must not be negative")
	v.check(w.graceMs >= 0, "grace must not be negative")
	return v.err(w.String)
}

// CloseTime is the stream time at which win closes: Start + D + 1 + grace,
// that is End + 1 + grace with the inclusive End. Kafka Streams keeps a
// sliding window open while stream time <= End + grace; CloseTime is the
// first stream time past that. It is computed from Start alone, so a window
// whose End was set another way still closes at the right time.
func (w SlidingWindows) CloseTime(win Window) int64 {
	return addSat(addSat(win.Start, w.timeDifferenceMs), addSat(1, w.graceMs))
}
