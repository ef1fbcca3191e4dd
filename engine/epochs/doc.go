// Package epochs is the committer's bookkeeping as a pure state machine:
// no goroutines, no channels, no Kafka. The live engine's committer feeds
// it what the lanes and the dispatcher hand over and does what it
// answers; datadriven scripts in testdata/ pin every rule, as
// engine/barrier's do for the barrier protocol.
//
// Terms:
//
//   - An epoch is the span of processing committed as one transaction
//     (engine/barrier): epoch N ends at barrier N. Epochs commit in order.
//   - The epoch being produced (Book.Next) is the lowest epoch not
//     committed. Its transaction is open or opens with its first record:
//     what the lanes hand over for it is produced at once, so producing
//     overlaps processing.
//   - A report is a lane's hand-over: a chunk of an epoch's outputs,
//     mid-epoch or final. A lane's final report of an epoch says it
//     crossed the barrier that ends it, and carries the largest event
//     time it processed per source partition.
//   - Held: a report of a later epoch than the one being produced is held
//     until that epoch's transaction opens. A lane takes credit of a
//     budget (stoatflow.commit.held-records) for what it hands over ahead
//     of the epoch being produced, so that a lane ahead of a slow one
//     waits rather than the held records grow; the credit is given back
//     when the held records are produced.
//   - The cut of an epoch is what the dispatcher knows of it when it cut
//     its barrier: its stamp, its source offsets, its record count.
//   - An epoch is ready to end once its cut is known and every lane has
//     handed over its final report of it. Ending it is a commit, or an
//     abort (End): an epoch cut before a rebalance never commits after it,
//     and one whose records did not all reach the broker never commits.
//   - An abort, or a commit of unknown outcome, ends the generation: the
//     runtime resets every task from what is committed (Drop gives back
//     what the pending epochs held). Every task, not only those the epoch
//     touched: an epoch's records and offsets span every lane and task,
//     and a task that did not write in it still read offsets that the
//     abort rewinds.
package epochs
