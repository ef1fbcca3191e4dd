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
//
// Processors are typed (Processor[KIn, VIn, KOut, VOut]); the runtime holds
// them with types erased (Untyped) and converts at the edges, so a record of
// the wrong type reaching a processor is an error naming the node rather
// than a silent zero value.
package processor
