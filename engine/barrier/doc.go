// Package barrier is the commit-barrier protocol of the live engine as a
// pure state machine: no goroutines, no channels, no Kafka, no clock. The
// runtime feeds it what happened (a record or a marker arrived at a lane, a
// barrier is due, an epoch committed) and does what it answers, in the
// order it answers; datadriven scripts in testdata/ pin every rule.
//
// Terms:
//
//   - An epoch is a span of processing committed as one transaction:
//     outputs, changelog records and input offsets of every lane. Epoch N
//     ends at barrier N.
//   - A barrier is cut by the dispatcher between two records and travels
//     down every lane as a marker, behind the last record of its epoch. A
//     lane fed by several producers (the dispatcher and, across an
//     in-memory boundary, every upstream lane) waits for the marker of
//     each: that is alignment. A record from a producer whose marker has
//     arrived belongs to the next epoch and is stashed until the lane is
//     aligned (Aligner).
//   - A barrier's stamp is the global watermark when it was cut. The stamp
//     of the last barrier a lane crossed is its floor: a record (or a
//     window) whose close time is at or before the floor is late
//     (window.Closed). The stamp before that is its frontier: final results
//     are emitted up to it, so a result is emitted only once every lane
//     has stamped a watermark past its close.
//   - Crossing a barrier is a fixed order of work (Lane.Cross): barrier
//     listeners, the epoch's report and the marker downstream, then, in the
//     next epoch, the emission pass up to the frontier, timers and
//     punctuators. On the final (shutdown) barrier every window up to its
//     own stamp is flushed inside the epoch it closes, and nothing follows.
//   - A lane is stamped or solo. A stamped lane (the live engine's) learns
//     the watermark and the wall clock only from the barriers it crosses,
//     and does all its clock work there, its frontier one stamp behind its
//     floor. A solo lane (the test driver's) is the only lane and is told
//     every move of its clock: its frontier is the watermark itself, its
//     clock work follows each move (Lane.Advance, Lane.Tick) in the same
//     order, and its barriers only close epochs. The floor, the frontier
//     and the order of the work are the same rules for both.
//   - One epoch is in flight at a time: barrier N+1 is cut only after
//     transaction N committed (Cutter). The idle rule skips a barrier when
//     there is nothing for it to commit or settle.
package barrier
