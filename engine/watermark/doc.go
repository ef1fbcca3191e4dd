// Package watermark declares how a source's records carry event time and
// tracks how far event time has progressed.
//
// Terms:
//   - Event time is the time a record says it happened: its timestamp, or
//     what a TimestampAssigner reads from it.
//   - A watermark is a claim that no record with a lower event time is still
//     to come from a source. A Generator makes one per partition from the
//     event times it sees; the global watermark is the minimum over every
//     partition that is not idle.
//   - A partition is idle when it has delivered nothing for its source's
//     idleness timeout; an idle partition stops holding the minimum back.
//   - An alignment group is a set of sources whose watermarks may not drift
//     apart by more than a maximum. Tracker.Align decides which partitions
//     are held back (ahead of the group's minimum by more than the drift)
//     and which are let go; the live engine pauses and resumes their fetch.
//   - A preview watermark is what a partition's watermark will be once its
//     next record, which waits behind older records of other partitions, is
//     processed (Tracker.Heads); the global minimum counts it as if it were.
//     Only the built-in generators can tell it without seeing the record.
//
// The test driver never runs a Generator (it uses only the assigner) and
// keeps one event-time number; the live engine runs the generators and a
// Tracker. Both then judge lateness and close windows by the same rules.
package watermark
