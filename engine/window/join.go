package window

import "time"

// JoinWindows bound a stream-stream join, as Kafka Streams' JoinWindows: a
// record at time t on one side joins records of the other side with the same
// key and timestamps in [t - before, t + after].
type JoinWindows struct {
	beforeMs, afterMs, graceMs int64
}

// JoinWindowsOfTimeDifferenceWithNoGrace returns join windows of d before and
// d after, admitting no late records.
func JoinWindowsOfTimeDifferenceWithNoGrace(d time.Duration) JoinWindows {
	return JoinWindowsOfTimeDifferenceAndGrace(d, 0)
}

// JoinWindowsOfTimeDifferenceAndGrace returns join windows of d before and d
// after, admitting records up to grace after a window's end.
func JoinWindowsOfTimeDifferenceAndGrace(d, grace time.Duration) JoinWindows {
	m := millis(d)
	return JoinWindows{beforeMs: m, afterMs: m, graceMs: millis(grace)}
}

// Before returns the windows with their lower bound moved to d before the
// record, keeping the upper bound. d may be negative as long as before +
// after stays non-negative.
func (w JoinWindows) Before(d time.Duration) JoinWindows {
	w.beforeMs = millis(d)
	return w
}

// After returns the windows with their upper bound moved to d after the
// record, keeping the lower bound. d may be negative as long as before +
// after stays non-negative.
func (w JoinWindows) After(d time.Duration) JoinWindows {
	w.afterMs = millis(d)
	return w
}

// Bounds returns before and after in milliseconds.
func (w JoinWindows) Bounds() (before, after int64) { return w.beforeMs, w.afterMs }

// Size is before + after in milliseconds, the window size of the join's
// stores, as Kafka Streams' JoinWindows.size().
func (w JoinWindows) Size() int64 { return addSat(w.beforeMs, w.afterMs) }

// Grace is the grace period in milliseconds.
func (w JoinWindows) Grace() int64 { return w.graceMs }

// String describes the definition, as errors name it.
func (w JoinWindows) String() string {
	return "join windows [before " + ms(w.beforeMs) + ", after " + ms(w.afterMs) + ", grace " + ms(w.graceMs) + "]"
}

// JoinCloseTime is the close time of the join window of a record at t on a
// side that pairs with the other side's records up to after past t: the
// window's inclusive end, t + after, plus 1 plus grace, as for sliding
// windows, so that an outer join emits an unmatched record when Kafka
// Streams does (it keeps the window open while stream time <= t + after +
// grace). A negative after counts as 0: a window wholly in the past does
// not make an in-order record late.
func JoinCloseTime(t, after, grace int64) int64 {
	return addSat(addSat(t, max(after, 0)), addSat(1, grace))
}

// Validate reports a negative interval (before + after < 0) or a negative
// grace, as Kafka Streams' JoinWindows does.
func (w JoinWindows) Validate() error {
	var v validation
	v.check(w.Size() >= 0, "before + after must not be negative")
	v.check(w.graceMs >= 0, "grace must not be negative")
	return v.err(w.String)
}
