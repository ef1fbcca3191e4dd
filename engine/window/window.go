package window

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Window is a span of event time in epoch milliseconds. For time windows End
// is exclusive; for sliding and session windows it is inclusive (see the
// package comment).
type Window struct {
	Start, End int64
}

// Windowed is a key together with the window it belongs to.
type Windowed[K any] struct {
	Key    K
	Window Window
}

// InvalidError reports a window definition that cannot be used. Windows
// describes the definition, Problems lists everything wrong with it.
type InvalidError struct {
	Windows  string
	Problems []string
}

// Error reads like "invalid time windows [size 0ms, advance 0ms, grace
// 0ms]: size must be positive".
func (e *InvalidError) Error() string {
	return "invalid " + e.Windows + ": " + strings.Join(e.Problems, "; ")
}

// validation collects the problems of one definition.
type validation struct {
	problems []string
}

func (v *validation) check(ok bool, problem string) {
	if !ok {
		v.problems = append(v.problems, problem)
	}
}

// err returns nil when there is nothing wrong, so that a nil *InvalidError
// never hides in a non-nil error interface.
func (v *validation) err(windows func() string) error {
	if len(v.problems) == 0 {
		return nil
	}
	return &InvalidError{Windows: windows(), Problems: v.problems}
}

// millis converts a constructor argument to whole milliseconds, dropping any
// sub-millisecond part.
func millis(d time.Duration) int64 { return d.Milliseconds() }

// ms formats a millisecond count for descriptions and errors.
func ms(v int64) string { return strconv.FormatInt(v, 10) + "ms" }

// Closed is the late rule, the one every window kind and every windowed
// operation (aggregations, suppression, session merges, stream-stream
// joins) applies: a window whose close time is at or before the floor is
// closed, so a record for it is late and it may be emitted as final. The
// boundary is inclusive: at floor == closeTime the window is closed.
func Closed(closeTime, floor int64) bool { return closeTime <= floor }

// AddSaturating adds b to the time a, clamping at the int64 range instead
// of wrapping: window bounds near the ends of time stay ordered.
func AddSaturating(a, b int64) int64 { return addSat(a, b) }

// addSat adds without overflowing: results past the int64 range stick at
// its ends. Window ends and close times near math.MaxInt64 would otherwise
// wrap to the distant past.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}
