package kafka

import "time"

// SetStallAfter sets how long a settled read waits before it reports
// what holds it, and returns a function that restores it.
func SetStallAfter(d time.Duration) (restore func()) {
	old := stallAfter
	stallAfter = d
	return func() { stallAfter = old }
}
