// Package dsl is the typed, high-level way to build a topology: streams
// (KStream), tables (KTable, GlobalKTable), groupings and aggregations,
// windowed aggregations, suppression and joins, in the shape of Kafka
// Streams' StreamsBuilder.
//
// Go methods cannot introduce type parameters, so operations that keep the
// key and value types are methods (s.Filter, s.Peek, s.Merge) and those that
// change them are functions (dsl.Map(s, f), dsl.MapValues(s, f),
// dsl.SelectKey(s, f), dsl.CountWindowed(w), dsl.JoinStream(s, o, f, w)).
//
// Every operation adds nodes to a topology.Topology. Generated node and store
// names follow Kafka Streams' scheme (KSTREAM-FILTER-0000000001,
// KSTREAM-AGGREGATE-STATE-STORE-0000000002), so that an application ported
// from Kafka Streams keeps its store and changelog topic names; Named,
// Materialized, Grouped, Repartitioned, StreamJoined and Suppressed.WithName
// override them. Where Kafka Streams uses up an index without naming
// anything with it, so does this package, to keep later names equal.
//
// Re-keying: an operation that may change the key (SelectKey, Map, FlatMap,
// Process) marks its stream; the next key-dependent operation (a grouping,
// a join) first inserts a boundary, which the engine crosses in memory to
// the lane of the new key. Repartition inserts one explicitly.
//
// Tables forward changes, not values: between table operations a record's
// value is a change holding the new and the old value, so that aggregations
// can subtract what a key no longer contributes. Every change carries its
// old value; there is no switch to leave it out.
//
// Terms of the event-time operations:
//   - A windowed aggregation (WindowedBy, WindowedBySliding,
//     WindowedBySession, then CountWindowed, AggregateSession, ...) keeps a
//     window or session store and produces a table keyed by
//     window.Windowed[K].
//   - The one late rule: a window is closed once its close time (defined per
//     window kind in package window; for a stream-stream join, the end of
//     the record's join window plus 1 plus grace) is at or before the floor
//     (processor.Context.Floor). What is for a closed window is dropped and
//     counted in dropped.records.total, reason late_window or late_session.
//     Windowed aggregations, Suppress with UntilWindowCloses and
//     stream-stream joins all use it.
//   - The frontier is the argument of OnWatermark: the watermark up to which
//     every contributing record is processed. An EmitStrategy of
//     OnWindowClose forwards each window's final result once, when the
//     frontier passes its close time, and remembers how far it has emitted in
//     the companion store "<store>-emitfrontier"; OnWindowUpdate, the
//     default, forwards every update.
//   - Suppress holds a table's updates back until a trigger: the window's
//     close or a time limit on the watermark (buffered in a store,
//     changelogged by default), or the commit barrier (UntilBarrier,
//     buffered for one epoch).
//   - The null side of a left or outer stream-stream join is emitted only on
//     the frontier, once the unmatched record's window has closed.
//
// A foreign-key join (TableJoinForeignKey) sends subscriptions to the
// other table's key and responses back; join_fk.go defines its terms
// (subscription, response, the primary store).
//
// A versioned table (Table with a state.VersionedSupplier; versioned.go)
// keeps each key's versions for its history retention. Terms: a version
// is a value or tombstone valid from its timestamp until the key's next
// version; a stale change is an update older than the key's latest,
// forwarded for ToStream but ignored by joins and groupings; a stream-table
// join reads such a table as of the stream record's timestamp, and with
// Joined.WithGracePeriod holds stream records in a grace buffer
// (join_grace.go) until the buffer's stream time passes them by the grace.
//
// Nulls: Go has no null for most types, so a missing join side or a null
// narrowed to a non-nillable type is the zero value; give a side a pointer
// value type (serde.Pointer) to tell the cases apart. Records that a null key
// or value keeps out of an operation are dropped and counted (null_key,
// null_value; expired_version for a versioned table's too old update).
//
// Default serdes: a store whose key or value serde was not given gets a
// stand-in that each processor using it resolves from default.key.serde or
// default.value.serde in Init. The stand-in belongs to the operation, not to
// a build, so building one topology twice with different defaults leaves
// every instance on the last resolution.
package dsl
