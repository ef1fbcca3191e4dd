// Package task runs one sub-topology's processors over records. It is the
// one implementation of processing semantics: the test driver and the live
// engine both feed records to a Task and differ only in the clock they hand
// it and in how they schedule calls to it.
//
// Terms:
//   - A task is an instance of a sub-topology: its processors, its stores
//     and its punctuation schedule. The driver makes one task per
//     sub-topology; the engine makes one per sub-topology and lane.
//   - Stream time is the largest timestamp of the records processed, read
//     through the Time the task was given, so that a driver can share one
//     number between its tasks.
//   - The collector receives everything a task writes: sink records,
//     changelog records and records crossing a boundary.
//   - A timer store holds a timer-aware processor's keyed timers,
//     changelogged like any store (timers.go documents its layout). The
//     caller fires them: FireEventTimers as the event-time clock moves,
//     FireProcessingTimers as the wall clock does, each with the floor
//     what they forward is judged against.
//   - Lane bytes are the bytes the work in progress was laned by (the raw
//     key bytes of the record, or a timer's key bytes). Over Options.Lanes,
//     the guard refuses a timer for the key being processed whose key
//     bytes pick another lane, and the sampled check re-serialises record
//     keys before a timer-aware processor sees them; both compare lanes,
//     not bytes, and neither runs with one lane.
//
// A record is processed depth first: Forward runs the children before it
// returns. A processor's error goes to the processing exception handler; a
// record's bytes that do not decode go to the deserialization handler.
// Either way the error names the node and the record's topic, partition and
// offset, and the record is never silently lost.
package task
