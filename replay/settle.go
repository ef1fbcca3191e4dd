package replay

import (
	"math"

	"github.com/stoatflow/stoatctl/engine/topology"
)

// This file decides, in engine mode, which record steps share one settle.
//
// A settle costs the engine three quiet barriers, each a transaction:
// tens of milliseconds, so a recorded slice of 100 k inline record steps
// settled one by one takes an hour. A run of record steps settled once,
// after its last, gives what settling each gives when nothing the engine
// does between two of its records could have seen the difference:
//
//   - No record in the run is below the watermark the records and
//     advances before it raised (the driver's watermark under
//     engine.EventTime): none can be late, none can join a window, session
//     or join buffer the watermark closed, whichever barrier stamp a lane
//     judges it against.
//   - All go to one topic, which no global table reads: a table update
//     and a stream record of one key meet in one task in the order the
//     steps give only if a settle separates them, and a global table must
//     hold an update before a later record looks it up.
//   - The topology has no repartition topic: records of one new key from
//     several source partitions reach it in step order only one settle at
//     a time.
//   - Every source reads event time from the record's timestamp (one of
//     the built-in extractors, no timestamp assigner), so the timestamp a
//     step gives is the event time the watermark moves by. A global
//     source read by a pattern counts as not known.
//   - The topology declares no event-time timer, which would fire between
//     two records for the driver and at a barrier for the engine.
//   - No expected record names one of the run's steps but the last: the
//     records a run writes are read after its last step.
//   - No output is compared in order across keys: two keys in two
//     partitions are written in step order only one settle at a time.
//     `replay --update` writes per-key order where the records have more
//     than one key, the order the engine keeps.
//
// A stream-time punctuator scheduled through the processor API is not
// declared in the topology: one that reads state other records change may
// fire later in a joined run than between steps. --settle-every-step
// (EngineOptions.SettleEveryStep) settles after every step.
type joiner struct {
	// named are the steps an expected record names.
	named map[int]bool
	// globals are the topics a global table reads.
	globals map[string]bool
	// off says no two record steps share a settle in this topology.
	off bool
	// high is the watermark so far: the largest timestamp piped or
	// watermark advanced to.
	high int64
}

func newJoiner(f *Fixture, b *topology.Built) *joiner {
	j := &joiner{named: map[int]bool{}, globals: map[string]bool{}, high: math.MinInt64}
	j.off = len(b.Boundaries) > 0
	for _, t := range f.Expect.Outputs {
		keys := map[string]bool{}
		for _, e := range t.Records {
			if e.After > 0 {
				j.named[e.After] = true
			}
			keys[expectedKey(e, false)] = true
		}
		if (t.Order == "" || t.Order == InOrder) && len(keys) > 1 {
			j.off = true
		}
	}
	if b.Global != nil {
		for _, n := range b.Global.Sources {
			if n.Source != nil {
				j.off = j.off || n.Source.Pattern != nil
				for _, t := range n.Source.Topics {
					j.globals[t] = true
				}
			}
		}
	}
	for _, n := range b.Nodes {
		if n.Timers != nil && n.Timers.EventTime {
			j.off = true
		}
		if n.Source != nil && !recordTime(n.Source) {
			j.off = true
		}
	}
	return j
}

// recordTime says whether src's event time is its records' timestamps.
func recordTime(src *topology.SourceSpec) bool {
	if src.Watermark != nil && src.Watermark.Assigner() != nil {
		return false
	}
	switch src.Extractor {
	case nil, topology.RecordTimestamp, topology.LogAndSkipOnInvalidTimestamp, topology.UsePartitionTimeOnInvalidTimestamp:
		return true
	}
	return false
}

// piped moves the watermark to ts.
func (j *joiner) piped(ts int64) { j.high = max(j.high, ts) }

// joinable says whether step next, following cur, may share cur's settle:
// cur's settle is skipped and next's covers both. stamp gives a record
// step's timestamp.
func (j *joiner) joinable(cur, next Step, stamp func(*Record) int64) bool {
	switch {
	case j.off, cur.Kind != StepRecord, next.Kind != StepRecord, j.named[cur.Index]:
		return false
	case cur.Record.Topic != next.Record.Topic, j.globals[cur.Record.Topic]:
		return false
	}
	return stamp(next.Record) >= j.high
}
