// Package task runs one sub-topology's processors over records. It is the
// one implementation of processing semantics: the test driver and the live
// engine both feed records to a Task and differ only in the clock they hand
// it and in how they schedule calls to it.
//
// Terms:
//   - A task is an instance of a sub-topology: its processors, its stores,
//     its punctuation schedule and its timers. The driver makes one task per
//     sub-topology; the engine will make one per sub-topology and lane.
//   - The watermark is the event-time clock, read through the Time the task
//     was given (Time.StreamTime): it closes windows and fires event-time
//     timers and stream-time punctuators. In the driver it is the largest
//     timestamp processed, one number shared by every task.
//   - The floor is the watermark the work in progress is judged against for
//     lateness (processor.Context.Floor). Each entry point runs under one:
//     Process reads it from Time.Floor; AdvanceWatermark, Barrier,
//     PunctuateStreamTime, PunctuateWallClock, FireEventTimers and
//     FireProcessingTimers take it as an argument. The caller picks the
//     number; a StreamClock can pin it while records a flush produced are
//     processed.
//   - The frontier is what AdvanceWatermark hands every
//     processor.WatermarkListener, in topological order: the watermark up to
//     which everything that can contribute has been processed. Barrier
//     calls every processor.BarrierListener at a commit barrier. The task
//     skips both when no processor listens.
//   - The collector receives everything a task writes: sink records,
//     changelog records and records crossing a boundary.
//   - A timer store holds a timer-aware processor's keyed timers,
//     changelogged like any store (timers.go documents its layout). The
//     caller fires them: FireEventTimers as the event-time clock moves,
//     FireProcessingTimers as the wall clock does.
//   - Lane bytes are the bytes the work in progress was laned by (the raw
//     key bytes of the record, or a timer's key bytes). Over Options.Lanes,
//     the guard refuses a timer for the key being processed whose key
//     bytes pick another lane, and the sampled check re-serialises record
//     keys before a timer-aware processor sees them; both compare lanes,
//     not bytes, and neither runs with one lane.
//   - The lane hash is the Murmur2 of the lane bytes, computed once: the
//     dispatcher gives it with the input (Input.KeyHash), a sink writing
//     the key as it was read passes it to the committer (Output.KeyHash),
//     and the lanes route a changelog record by it when its key is those
//     bytes (LaneHash, HashOf).
//
// A record is processed depth first: Forward runs the children before it
// returns. A processor's error goes to the processing exception handler; a
// record's bytes that do not decode go to the deserialization handler.
// Either way the error names the node and the record's topic, partition and
// offset, and the record is never silently lost. An error that is Fatal
// (a timer lane split, a full strict suppress buffer) bypasses the
// continue handler.
package task
