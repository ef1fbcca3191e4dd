package window

import "time"

// SessionWindows are Kafka Streams' session windows: a key's records closer
// than the inactivity gap share a session, and sessions merge as records
// fill the gaps between them. A session is closed at both ends, [Start,
// End], the timestamps of its first and last records, as in Kafka Streams'
// SessionWindow.
type SessionWindows struct {
	gapMs, graceMs int64
}

// SessionWindowsOfInactivityGapWithNoGrace returns session windows with the
// given inactivity gap that admit no late records.
func SessionWindowsOfInactivityGapWithNoGrace(gap time.Duration) SessionWindows {
	return SessionWindowsOfInactivityGapAndGrace(gap, 0)
}

// SessionWindowsOfInactivityGapAndGrace returns session windows with the
// given inactivity gap that admit records up to grace after a session could
// last have been extended.
func SessionWindowsOfInactivityGapAndGrace(gap, grace time.Duration) SessionWindows {
	return SessionWindows{gapMs: millis(gap), graceMs: millis(grace)}
}

// Gap is the inactivity gap in milliseconds.
func (w SessionWindows) Gap() int64 { return w.gapMs }

// Grace is the grace period in milliseconds.
func (w SessionWindows) Grace() int64 { return w.graceMs }

// String describes the definition, as errors name it.
func (w SessionWindows) String() string {
	return "session windows [inactivity gap " + ms(w.gapMs) + ", grace " + ms(w.graceMs) + "]"
}

// Validate reports a non-positive gap or a negative grace, as Kafka Streams'
// SessionWindows does.
func (w SessionWindows) Validate() error {
	var v validation
	v.check(w.gapMs > 0, "inactivity gap must be positive")
	v.check(w.graceMs >= 0, "grace must not be negative")
	return v.err(w.String)
}

// CloseTime is the event time at which a session whose merged end is
// mergedEnd closes: mergedEnd + gap + grace. Like every window kind, a
// session is closed once the floor is at or past its close time.
//
// This is StoatFlow's one late rule, and it is one millisecond stricter
// than Kafka Streams for sessions: Kafka Streams' session aggregate drops a
// record only when mergedEnd < streamTime - grace - gap, so it still admits
// one at streamTime == mergedEnd + gap + grace. The inclusive boundary is
// what the other window kinds (and Kafka Streams' own time windows) use,
// and one rule for every kind is the point.
func (w SessionWindows) CloseTime(mergedEnd int64) int64 {
	return addSat(addSat(mergedEnd, w.gapMs), w.graceMs)
}
