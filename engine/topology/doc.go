// Package topology describes what a stream application computes: sources
// that read topics, processors, sinks that write topics, and the state
// stores processors own. It is the Processor API's builder and the form the
// DSL compiles into; Build validates a topology and splits it into
// sub-topologies that the runtime instantiates.
//
// Terms:
//   - A sub-topology is a connected part of the graph. Nodes sharing a state
//     store belong to one sub-topology.
//   - A boundary is where records change key before a key-dependent
//     operation (a grouping, a join, an explicit repartition). It is a
//     boundary sink feeding a boundary source in another sub-topology. The
//     live engine forwards across it in memory, to the lane its new key's
//     bytes pick; those bytes come from the boundary's key serde, so a
//     boundary always has serdes.
//   - A co-partition group is a set of sources whose records must meet on
//     the same lane for equal keys (the inputs of a join).
//   - A timer-aware processor implements OnTimer. Build gives it a timer
//     store ("<node>-timers", changelogged) and resolves its timer key
//     serde (TimerSpec): the key serde declared upstream (a source's
//     Consumed, a boundary), else downstream before any key change (a
//     sink's Produced, a boundary), else default.key.serde. A source
//     declared with a deserializer only (ConsumedWithDeserializers)
//     declares no key serde.
//
// Build refuses, naming the node: unknown parents, duplicate names, cycles,
// sinks and sources without serdes where no default is configured, a
// processor that reaches a store it is not connected to, joins whose
// inputs cannot be co-partitioned, and a timer-aware processor without a
// timer key serde. The timer-key-lane-affinity rule
// (stoatflow.topology.validation.timer-key-lane-affinity, off|warn|error,
// default warn) reports a timer-aware processor whose timer key bytes may
// differ from the bytes its records were laned by: behind a source whose
// key serde was not declared, or across a boundary laned by another key
// serde. Under warn its findings are Built.Warnings.
package topology
