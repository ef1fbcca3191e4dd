package window

import (
	"math"
	"slices"
	"time"
)

// TimeWindows are fixed-size windows aligned to the epoch, as Kafka Streams'
// TimeWindows: tumbling when the advance equals the size, hopping when it is
// smaller. Window n covers [n*advance, n*advance+size); End is exclusive.
type TimeWindows struct {
	sizeMs, advanceMs, graceMs int64
}

// TimeWindowsOfSizeWithNoGrace returns tumbling windows of the given size
// that admit no late records: a window closes as soon as stream time
// reaches its end.
func TimeWindowsOfSizeWithNoGrace(size time.Duration) TimeWindows {
	return TimeWindowsOfSizeAndGrace(size, 0)
}

// TimeWindowsOfSizeAndGrace returns tumbling windows of the given size that
// admit records up to grace after a window's end.
func TimeWindowsOfSizeAndGrace(size, grace time.Duration) TimeWindows {
	s := millis(size)
	return TimeWindows{sizeMs: s, advanceMs: s, graceMs: millis(grace)}
}

// AdvanceBy returns hopping windows: the same size and grace, with windows
// starting every advance. The advance must lie within (0, size].
func (w TimeWindows) AdvanceBy(advance time.Duration) TimeWindows {
	w.advanceMs = millis(advance)
	return w
}

// Size is the window size in milliseconds.
func (w TimeWindows) Size() int64 { return w.sizeMs }

// Advance is the distance between consecutive window starts in
// milliseconds; it equals Size for tumbling windows.
func (w TimeWindows) Advance() int64 { return w.advanceMs }

// Grace is the grace period in milliseconds.
func (w TimeWindows) Grace() int64 { return w.graceMs }

// String describes the definition, as errors name it.
func (w TimeWindows) String() string {
	return "time windows [size " + ms(w.sizeMs) + ", advance " + ms(w.advanceMs) + ", grace " + ms(w.graceMs) + "]"
}

// Validate reports a non-positive size, an advance outside (0, size] and a
// negative grace, as Kafka Streams' TimeWindows does.
func (w TimeWindows) Validate() error {
	var v validation
	v.check(w.sizeMs > 0, "size must be positive")
	v.check(w.advanceMs > 0 && w.advanceMs <= w.sizeMs, "advance must lie within (0, size]")
	v.check(w.graceMs >= 0, "grace must not be negative")
	return v.err(w.String)
}

// WindowsFor returns the windows that contain timestamp ts, in start order.
// As in Kafka Streams, the first candidate start is max(0, ts-size+advance)
// rounded down to a multiple of the advance, so no window starts before the
// epoch: a timestamp near 0 falls into fewer windows, and a negative one into
// none. An End past math.MaxInt64 is clamped to it, as Kafka Streams does.
// An invalid definition yields no windows.
func (w TimeWindows) WindowsFor(ts int64) []Window { return w.AppendWindowsFor(nil, ts) }

// AppendWindowsFor appends the windows WindowsFor returns to dst, so that
// a caller on a hot path can reuse one slice.
func (w TimeWindows) AppendWindowsFor(dst []Window, ts int64) []Window {
	if ts < 0 || w.Validate() != nil {
		return dst
	}
	// ts >= 0 and 0 < advance <= size keep every step in range.
	start := max(0, ts-(w.sizeMs-w.advanceMs)) / w.advanceMs * w.advanceMs
	out := slices.Grow(dst, int((ts-start)/w.advanceMs+1))
	for {
		out = append(out, Window{Start: start, End: addSat(start, w.sizeMs)})
		if start > math.MaxInt64-w.advanceMs || start+w.advanceMs > ts {
			return out
		}
		start += w.advanceMs
	}
}

// CloseTime is the stream time at which win closes: End + grace. A record
// for win is late once stream time >= CloseTime, which is Kafka Streams'
// rule "windowEnd > streamTime - grace" for open windows.
func (w TimeWindows) CloseTime(win Window) int64 { return addSat(win.End, w.graceMs) }
