// Package hop lets the DSL's stateless operations take their records
// from the source before them, and hand them to the sink after them,
// with keys and values still typed.
//
// On the erased path every record travels between nodes as a
// processor.Record[any, any]: the source puts the key and the value it
// decodes in interfaces (an allocation each for anything larger than a
// word), the operation asserts them back to its types, puts its new value
// in another interface, and the sink asserts that back to its serde's
// type to encode it. Where a source's only child is such an operation,
// or an operation's only child is a sink, nothing in between needs the
// interfaces, so the operation decodes with the source's serdes, or
// encodes with the sink's, itself.
//
// Terms:
//   - an entry: the typed edge from a source to its only child (Entry). The
//     source asks its child for one (Taker) with its serdes; the child
//     gives one when they are a Serde[K] and a Serde[V] of the types it
//     takes. The runtime decodes through it and runs the child on what it
//     decoded, keeping its own record bookkeeping (event time, the record
//     context, errors) as for a forwarded record.
//   - a plain sink: a sink that writes every record to one topic with its
//     key and value serdes alone. A topic chooser or a partitioner takes
//     the record's key and value as values, so a sink with either is not
//     plain and is always reached by forwarding.
//   - a target: a plain sink as the runtime offers it to its only parent
//     (Target): its topic, its serdes, and the rest of its work.
//   - a hop: the typed edge an operation takes in place of Forward to a
//     target (ToSink).
//   - a null key: a record without a key. The erased path carries it as
//     a nil interface, which an operation sees as its key type's zero
//     value and a sink writes as null; a typed edge carries the key's
//     zero value and a flag.
//
// A record that takes an entry or a hop is the record the erased path
// would have made: the same bytes, in the same order, with the same
// errors charged to the same node, and the same serde calls. The runtime
// (package task) offers both edges; the DSL takes them where it can and
// forwards where it cannot, so one operation has one definition and two
// ways to receive and hand over its records.
package hop
