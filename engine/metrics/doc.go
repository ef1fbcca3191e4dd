// Package metrics keeps the engine's counters: named, labelled, monotonic.
// Processors and the runtime count into a Registry; the live engine exports
// it to Prometheus and the test driver lets tests read it. Names follow the
// reference system (dropped.records.total{reason=...}) so dashboards carry
// over.
package metrics
