// Package metrics keeps the engine's counters and meters. Processors and
// the runtime count into a Registry; the live engine exports it to
// Prometheus (engine/prom) and the test driver lets tests read it. Names
// follow the reference system (dropped.records.total{reason=...}) so
// dashboards carry over.
//
// Terms:
//   - A counter is a named, labelled, monotonic count (Registry.Counter).
//   - A Timing is sampled durations: how many, their sum, and their least
//     and greatest over the last windows (Window, 30 s). A Meter is an
//     event count beside a Timing: every event counted, the sampled ones
//     timed (SampleEvery).
//   - A TaskMeter is the meters of one task instance: its records, its
//     nodes' end-to-end latencies and, at debug level (SetDebug), each
//     node's; a StoreMeter a store instance's operations. An instance
//     claims its meters (ClaimTask, ClaimStore) and releases them on
//     close, so that no two lanes write one meter and the next instance
//     of the task continues its counts.
package metrics
