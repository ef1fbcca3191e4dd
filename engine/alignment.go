package engine

import (
	"fmt"
	"time"

	"github.com/stoatflow/stoatctl/engine/watermark"
)

// This file enforces watermark alignment while the engine runs: the
// tracker decides (watermark.Tracker.Align) which source partitions are
// ahead of their alignment group's minimum by more than the group's
// drift, and the dispatcher, which owns both the tracker and the polls,
// pauses their fetch on the engine's client and resumes it once they are
// back within the drift. Pausing at the fetch, not at the dispatch, keeps
// the held records out of memory altogether: franz-go drops what it had
// buffered for a paused partition and fetches it again on resume, from
// the offset the dispatcher stopped at. Nothing the lanes already have is
// taken back, and offsets, barriers and commits are untouched, so a hold
// changes no result: the global watermark is a minimum, and a held
// partition is above it.

// alignLogEvery bounds the alignment log to one line per group a minute:
// a source that keeps running ahead is paused and resumed at every update
// interval.
const alignLogEvery = time.Minute

// alignLog is the rate limit of the alignment log; the dispatcher's.
type alignLog struct {
	// last is when each group last logged (wall clock, epoch ms);
	// skipped counts the lines the limit swallowed since.
	last    map[string]int64
	skipped map[string]int
}

// align applies the alignment rule at wall-clock now, and says whether a
// partition was held or let go: called where the dispatcher recomputes
// the watermark, at most once per barrier, never per record.
func (r *runner) align(now int64) bool {
	hold, release := r.tracker.Align(now)
	if len(hold) > 0 {
		r.cl.PauseFetchPartitions(byTopic(hold))
	}
	if len(release) > 0 {
		r.cl.ResumeFetchPartitions(byTopic(release))
	}
	r.logAlignment(now, hold, "watermark alignment: pausing the fetch of partitions ahead of their group's minimum by more than its drift")
	r.logAlignment(now, release, "watermark alignment: resuming the fetch of partitions back within their group's drift")
	return len(hold) > 0 || len(release) > 0
}

// releaseAlignment resumes every partition the tracker holds: before a
// reset replaces the tracker, since a pause outlives a rebalance on the
// client and a partition paused then would never be fetched again.
func (r *runner) releaseAlignment() {
	if r.tracker == nil || r.cl == nil {
		return
	}
	if held := r.tracker.Held(); len(held) > 0 {
		r.cl.ResumeFetchPartitions(byTopic(held))
	}
}

// logAlignment logs one line per group of ps, rate-limited per group.
func (r *runner) logAlignment(now int64, ps []watermark.Partition, msg string) {
	if len(ps) == 0 {
		return
	}
	type line struct {
		parts []string
		drift time.Duration
	}
	groups := map[string]*line{}
	var order []string
	for _, p := range ps {
		g, drift, _ := r.tracker.AlignmentGroup(p)
		if groups[g] == nil {
			groups[g] = &line{drift: drift}
			order = append(order, g)
		}
		groups[g].parts = append(groups[g].parts, fmt.Sprintf("%s[%d]", p.Topic, p.Partition))
	}
	l := &r.alignLog
	if l.last == nil {
		l.last, l.skipped = map[string]int64{}, map[string]int{}
	}
	for _, g := range order {
		if last, ok := l.last[g]; ok && now-last < alignLogEvery.Milliseconds() {
			l.skipped[g]++
			continue
		}
		l.last[g] = now
		r.e.log.Info(msg, "group", g, "partitions", groups[g].parts, "max_drift", groups[g].drift,
			"lines_skipped", l.skipped[g], "rate_limit", alignLogEvery)
		l.skipped[g] = 0
	}
}

// byTopic groups partitions as franz-go's pause and resume take them.
func byTopic(ps []watermark.Partition) map[string][]int32 {
	m := map[string][]int32{}
	for _, p := range ps {
		m[p.Topic] = append(m[p.Topic], p.Partition)
	}
	return m
}
