// Package hop lets a stateless operation of the DSL hand its records to
// the sink after it with their values still typed.
//
// On the erased path every record travels between nodes as a
// processor.Record[any, any]: an operation that computes a new value puts
// it in an interface (an allocation for anything larger than a word), and
// the sink asserts it back to its serde's type to encode it. When the
// sink is the operation's only child there is nothing in between to need
// the interface, so the operation can encode the value itself, with the
// sink's own serde, and give the sink the bytes.
//
// Terms:
//   - a plain sink: a sink that writes every record to one topic with its
//     key and value serdes alone. A topic chooser or a partitioner takes
//     the record's key and value as values, so a sink with either is not
//     plain and is always reached by forwarding.
//   - a target: a plain sink as the runtime offers it to its only parent
//     (Target): its topic, its value serde, and the rest of its work.
//   - a hop: the typed edge an operation takes in place of Forward
//     (ToSink). A record written through a hop is the record Forward
//     would have written: same bytes, same order, same errors, charged to
//     the sink node.
//
// The runtime (package task) offers targets; the DSL takes hops where it
// can and forwards where it cannot, so one operation has one definition
// and two ways to hand over its result.
package hop
