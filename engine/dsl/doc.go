// Package dsl is the typed, high-level way to build a topology: streams
// (KStream), tables (KTable, GlobalKTable), groupings and aggregations,
// joins, in the shape of Kafka Streams' StreamsBuilder.
//
// Go methods cannot introduce type parameters, so operations that keep the
// key and value types are methods (s.Filter, s.Peek, s.Merge) and those that
// change them are functions (dsl.Map(s, f), dsl.MapValues(s, f),
// dsl.SelectKey(s, f)).
//
// Every operation adds nodes to a topology.Topology. Generated node and store
// names follow Kafka Streams' scheme (KSTREAM-FILTER-0000000001,
// KSTREAM-AGGREGATE-STATE-STORE-0000000002), so that an application ported
// from Kafka Streams keeps its store and changelog topic names; Named,
// Materialized, Grouped and Repartitioned override them.
//
// Re-keying: an operation that may change the key (SelectKey, Map, FlatMap,
// Process) marks its stream; the next key-dependent operation (a grouping,
// a join) first inserts a boundary, which the engine crosses in memory to
// the lane of the new key. Repartition inserts one explicitly.
//
// Tables forward changes, not values: between table operations a record's
// value is a Change holding the new and the old value, so that aggregations
// can subtract what a key no longer contributes.
package dsl
