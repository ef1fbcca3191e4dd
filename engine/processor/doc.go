// Package processor is the Processor API: the records processors receive,
// the Processor interfaces users implement, and the Context the runtime gives
// them to forward records, reach state stores and schedule punctuators.
//
// Terms:
//   - A Record is a key, a value, an event timestamp and headers. Records
//     are values: a processor changes one by building a new Record.
//   - RecordMetadata is where a record came from (topic, partition, offset);
//     records created by a punctuator have none.
//   - Stream time is the largest record timestamp the task has processed.
//   - A punctuator is a callback scheduled on stream time (fires as records
//     move stream time) or on wall-clock time (fires as the clock moves).
//     It belongs to a task, not to a key.
//   - A timer is a callback for one key at one time in one time domain:
//     EventTime timers fire once the watermark reaches their time,
//     ProcessingTime timers once the wall clock does. A timer fires on its
//     key's lane, serially with the key's records, so OnTimer may use the
//     key's state without a lock, as Process does. A processor receives
//     timers by implementing OnTimer(Timer[KIn]) and registers them
//     through Timers[KIn](ctx); OnTimer runs with the timer's record
//     context (key, timestamp = the timer's time) and forwards to the
//     node's children.
//   - The timer key serde serialises timer keys. Its bytes are persisted
//     in the timer store, decoded for OnTimer and hashed to pick the
//     timer's lane, so they must be the bytes the key's records were laned
//     by; the build resolves it per processor (topology.TimerSpec) and
//     checks it, and the runtime refuses a proven split
//     (TimerLaneAffinityError).
//   - A named timer is unique per key, domain and name: registering the
//     name again moves it. Unnamed timers are identified by key, domain
//     and time, so arming one twice arms it once.
//
// Processors are typed (Processor[KIn, VIn, KOut, VOut]); the runtime holds
// them with types erased (Untyped) and converts at the edges, so a record of
// the wrong type reaching a processor is an error naming the node rather
// than a silent zero value.
package processor
