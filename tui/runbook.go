package tui

import (
	"fmt"
	"strings"
	"time"
)

// Branch is one of the runbook's six explanations of a stalled watermark,
// by its stable code (the value in -o json output).
type Branch string

// The six branches; NoBranch where none applies (an unreachable endpoint,
// every input idle).
const (
	NoBranch        Branch = ""
	BranchIdle      Branch = "idle-eligible"
	BranchOldTimes  Branch = "old-timestamps"
	BranchAlignment Branch = "alignment"
	BranchFuture    Branch = "future-timestamp"
	BranchTracking  Branch = "no-event-time"
	BranchUpstream  Branch = "upstream-tasks"
)

// Title is the branch as the runbook names it, for people.
func (b Branch) Title() string {
	switch b {
	case BranchIdle:
		return "idle-eligible but not idle"
	case BranchOldTimes:
		return "live but old timestamps"
	case BranchAlignment:
		return "alignment hold"
	case BranchFuture:
		return "stamped in the future"
	case BranchTracking:
		return "event-time tracking off"
	case BranchUpstream:
		return "waiting for the tasks writing it"
	}
	return ""
}

// FutureAhead is how far ahead of the wall clock a partition's last event
// time or preview watermark must be to count as stamped in the future (the
// engine warns at the same distance).
const FutureAhead = time.Minute

// classify picks the branch that explains why p holds the watermark. The
// order matters: alignment and a future head are states the server reports,
// so they are certain; live or quiet is inferred from the polls.
func classify(v *Verdict, p *PartitionVerdict) Branch {
	switch {
	case v.TrackingOff:
		return BranchTracking
	case p.Writers:
		// A repartition topic's partition: its watermark is what the
		// tasks writing it told, whatever its own records say.
		return BranchUpstream
	case v.AlignmentBinding != "", p.AlignmentHeld:
		return BranchAlignment
	case p.PreviewWatermarkMs != nil, p.HeadHeldSinceMs != nil, p.AheadMs >= FutureAhead.Milliseconds():
		return BranchFuture
	case p.Live:
		return BranchOldTimes
	}
	return BranchIdle
}

// fix is what the runbook says to do in branch b for p, in one sentence
// that names the setting to change.
func fix(v *Verdict, p *PartitionVerdict, b Branch) string {
	switch b {
	case BranchUpstream:
		if len(p.WaitingFor) > 0 {
			return fmt.Sprintf("%s is a repartition topic's partition, whose watermark waits for a marker from %s, writing the topic, which have not told their event time (their instance is down or starting, or has committed no epoch since): find the instance that runs them (stoatctl inspect info on each), or wait for the group to reassign them (session.timeout.ms)", p.Partition, strings.Join(p.WaitingFor, ", "))
		}
		return fmt.Sprintf("%s is a repartition topic's partition, whose watermark is what %s, writing the topic, last told: their own inputs hold it back; read the watermarks of the instance that runs them", p.Partition, strings.Join(p.HeldBy, ", "))
	case BranchTracking:
		return "the engine found no event time in this topology, so no watermark is tracked: check that the topology is the one you meant, force processing.timestamp-coordination-mode ENABLED and compare"
	case BranchAlignment:
		g := v.AlignmentBinding
		if g == "" {
			g = p.AlignmentGroup
		}
		return fmt.Sprintf("alignment group %s holds dispatch while a lagging member has nothing buffered: size maxAllowedWatermarkDrift to at least that source's normal gap plus the difference in bounds, or give it a shorter withIdleness", g)
	case BranchFuture:
		return fmt.Sprintf("the next record of %s is stamped %s ahead of the wall clock and waits behind older records: fix the producer's clock or the timestamp unit (milliseconds, not micro- or nanoseconds)", p.Partition, Duration(p.AheadMs))
	case BranchOldTimes:
		return fmt.Sprintf("records still arrive on %s, stamped %s in the past (a producer's clock, a replay); no watermark setting fixes that: find the producer, or accept the stall until it catches up", p.Partition, Duration(deref(p.LagMs)))
	case BranchIdle:
		if p.IdlenessTimeoutMs <= 0 {
			return fmt.Sprintf("%s went quiet and idleness is off for it (timeout 0), so it never idles out: give its source withIdleness, or set stoatflow.watermark.idleness-timeout-ms", p.Partition)
		}
		left := p.IdlenessTimeoutMs - p.QuietForMs
		if left < 0 {
			left = 0
		}
		return fmt.Sprintf("%s went quiet %s ago and idles out after %s (in at most %s): wait, or lower that source's withIdleness", p.Partition, Duration(p.QuietForMs), Duration(p.IdlenessTimeoutMs), Duration(left))
	}
	return ""
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
