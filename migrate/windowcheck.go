package migrate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/stoatflow/stoatctl/engine/dsl"
)

// windowCheck holds a Kafka Streams windowed store's records against our
// window definition, for what its bytes can contradict:
//
//   - a time window (tumbling, hopping) starts on our grid, a multiple of
//     the advance: Kafka Streams' and our time windows are aligned to the
//     epoch, so a start off it is another advance or size (a hopping
//     window on our tumbling one, a 70 s window on our 60 s);
//   - a window's timestamp, the latest record it counted (Kafka Streams'
//     windowed aggregations keep the largest), lies in the window our
//     definition gives its start: [start, start+size) for time windows,
//     [start, start+size] for sliding ones. One past it is a longer window
//     than ours;
//   - two live sessions of one key are further apart than our inactivity
//     gap: Kafka Streams merges sessions within its gap, ours would have
//     merged them, so its gap is smaller;
//   - for our hopping windows, a window's latest record lies in each of
//     the key's windows our definition gives it that are still open at
//     Kafka Streams' stream time: one missing is a window that was open
//     when the record came (stream time only grows) and so would hold it,
//     had Kafka Streams' windows hopped as ours (a tumbling store on our
//     hopping one: its starts all lie on our grid too).
//
// A size or grace both sides agree on while the windows differ shows in
// the retention (checkTopicConfig), not here.
type windowCheck struct {
	spec dsl.WindowSpec
	// count and first are the contradictions found by problem code, and
	// the first of each, described.
	count map[string]int64
	first map[string]string
	// sessions are the live sessions by key, for the gap.
	sessions map[string]map[[2]int64]bool
	// windows are, for our hopping windows, the live windows by key:
	// their starts and their latest record's timestamp.
	windows map[string]map[int64]int64
	// streamTime is Kafka Streams' largest stream time, or -1 when
	// unknown (setStreamTime): a window whose close is past it is open.
	streamTime int64
}

// setStreamTime gives the check Kafka Streams' stream time. The largest
// over its partitions: a window open at it is open in its own task.
func (c *windowCheck) setStreamTime(t int64) { c.streamTime = t }

func newWindowCheck(spec dsl.WindowSpec) *windowCheck {
	c := &windowCheck{spec: spec, count: map[string]int64{}, first: map[string]string{}, streamTime: -1}
	if spec.Kind == "session" {
		c.sessions = map[string]map[[2]int64]bool{}
	}
	if spec.Kind == "hopping" && spec.Advance > 0 && spec.Advance < spec.Size {
		c.windows = map[string]map[int64]int64{}
	}
	return c
}

func (c *windowCheck) note(code, where string, format string, a ...any) {
	if c.count[code] == 0 {
		c.first[code] = where + ": " + fmt.Sprintf(format, a...)
	}
	c.count[code]++
}

// entry checks one decoded record; where names it (topic, partition and
// offset, or the state directory entry).
func (c *windowCheck) entry(e Entry, where string) {
	s := c.spec
	switch s.Kind {
	case "session":
		k := string(e.LaneKey)
		if e.Value == nil {
			delete(c.sessions[k], [2]int64{e.Start, e.End})
			return
		}
		if c.sessions[k] == nil {
			c.sessions[k] = map[[2]int64]bool{}
		}
		c.sessions[k][[2]int64{e.Start, e.End}] = true
		return
	}
	if c.windows != nil {
		k := string(e.LaneKey)
		if e.Value == nil {
			delete(c.windows[k], e.Start)
		} else {
			if c.windows[k] == nil {
				c.windows[k] = map[int64]int64{}
			}
			c.windows[k][e.Start] = e.Timestamp
		}
	}
	if e.Value == nil {
		return
	}
	if (s.Kind == "tumbling" || s.Kind == "hopping") && s.Advance > 0 && e.Start%s.Advance != 0 {
		c.note(ProblemWindowGrid, where, "key %q: window starting %d is not on our grid (our %s windows start every %d ms)", e.LaneKey, e.Start, s.Kind, s.Advance)
	}
	end, inclusive := e.Start+s.Size, s.Kind == "sliding"
	if e.Timestamp < e.Start || e.Timestamp > end || e.Timestamp == end && !inclusive {
		c.note(ProblemWindowTimestamp, where, "key %q: window starting %d holds a record at %d, outside our %s window %s", e.LaneKey, e.Start, e.Timestamp, s.Kind, span(e.Start, end, inclusive))
	}
}

func span(start, end int64, inclusive bool) string {
	if inclusive {
		return fmt.Sprintf("[%d, %d]", start, end)
	}
	return fmt.Sprintf("[%d, %d)", start, end)
}

// problems gives what the records contradicted, one problem per kind of
// contradiction, for Kafka Streams' store ks mapped to ours.
func (c *windowCheck) problems(ks, ours string) []Problem {
	if c.sessions != nil {
		for _, k := range slices.Sorted(maps.Keys(c.sessions)) {
			ss := slices.SortedFunc(maps.Keys(c.sessions[k]), func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
			for i := 1; i < len(ss); i++ {
				if apart := ss[i][0] - ss[i-1][1]; apart <= c.spec.Gap {
					c.note(ProblemSessionGap, "key "+fmt.Sprintf("%q", k), "sessions [%d, %d] and [%d, %d] are %d ms apart, within our inactivity gap of %d ms (ours would have merged them)",
						ss[i-1][0], ss[i-1][1], ss[i][0], ss[i][1], apart, c.spec.Gap)
				}
			}
		}
	}
	if c.windows != nil && c.streamTime >= 0 {
		s := c.spec
		for _, k := range slices.Sorted(maps.Keys(c.windows)) {
			ws := c.windows[k]
			for _, start := range slices.Sorted(maps.Keys(ws)) {
				ts := ws[start]
				// Our windows holding ts: starts on the grid in
				// (ts - size, ts], from 0.
				first := max(0, ts-s.Size+s.Advance) / s.Advance * s.Advance
				for other := first; other <= ts; other += s.Advance {
					if other == start || other+s.Size+s.Grace <= c.streamTime {
						continue // itself, or closed: perhaps dropped
					}
					if _, ok := ws[other]; !ok {
						c.note(ProblemWindowHop, "key "+fmt.Sprintf("%q", k), "window starting %d holds a record at %d, and the window starting %d, open at stream time %d, which ours also gives it, is not there",
							start, ts, other, c.streamTime)
					}
				}
			}
		}
	}
	var out []Problem
	for _, code := range []string{ProblemWindowGrid, ProblemWindowTimestamp, ProblemWindowHop, ProblemSessionGap} {
		if n := c.count[code]; n > 0 {
			what := fmt.Sprintf("%d records contradict", n)
			if n == 1 {
				what = "1 record contradicts"
			}
			out = append(out, Problem{Code: code, Subject: ks,
				Message: fmt.Sprintf("store %s: %s our store %s's %s: first %s", ks, what, ours, describeSpec(c.spec), c.first[code])})
		}
	}
	return out
}

// describeSpec names a window definition as a user wrote it.
func describeSpec(s dsl.WindowSpec) string {
	switch s.Kind {
	case "session":
		return fmt.Sprintf("session windows (gap %d ms, grace %d ms)", s.Gap, s.Grace)
	case "sliding":
		return fmt.Sprintf("sliding windows (time difference %d ms, grace %d ms)", s.Size, s.Grace)
	case "hopping":
		return fmt.Sprintf("hopping windows (size %d ms, advance %d ms, grace %d ms)", s.Size, s.Advance, s.Grace)
	}
	return fmt.Sprintf("tumbling windows (size %d ms, grace %d ms)", s.Size, s.Grace)
}
