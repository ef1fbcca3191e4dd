// Package engine runs a topology against Kafka: the live counterpart of
// the test driver, running the same processors (package task) under a
// different clock and schedule.
//
// Terms:
//   - A lane is a goroutine that owns a share of a sub-topology's keys:
//     a record goes to lane hash(key bytes) mod N, so one key is always
//     processed by one lane, in order. Each lane runs its own task, so
//     each lane owns the state of its keys and no store is shared
//     between goroutines. Package lane picks a key's lane; package lanes
//     runs the lanes.
//   - An epoch is the work between two commit barriers. The dispatcher
//     cuts one by sending barrier N down every lane (after the records
//     dispatched before it). A lane that has received barrier N from
//     every producer feeding it (the dispatcher and, across an in-memory
//     re-key boundary, every upstream lane) has finished epoch N.
//   - Transaction N commits epoch N's output records, changelog records,
//     source offsets (with Kafka Streams' partition-time metadata) and
//     the barrier's watermark stamp, atomically. Barrier N+1 is cut only
//     after transaction N committed, while the lanes already process
//     epoch N+1: one committing, one processing.
//   - A barrier carries a stamp, the global watermark when it was cut. A
//     lane that crossed barrier N judges late records against W(N) (its
//     floor) and emits final results up to W(N-1) (its frontier): a
//     window closing at or before W(N-1) can take no more records and all
//     of its records are committed.
//
// Anything that cannot be undone record by record (an aborted
// transaction, a rebalance) resets the runtime: the lanes stop, their
// state is dropped and rebuilt from the changelogs (read committed), and
// the consumer rewinds to the committed offsets. An aborted epoch leaves
// no trace because nothing of it was ever applied outside the lanes.
package engine
