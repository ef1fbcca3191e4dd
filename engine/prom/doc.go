// Package prom exports a running engine's meters in Prometheus' format,
// with github.com/prometheus/client_golang.
//
// Terms:
//   - A family is one metric name with its type, labels and recording
//     level; Families is the catalogue, and docs/metrics.md is generated
//     from it (go test ./engine/prom -run TestMetricsDoc -update).
//   - A recording level (stoatflow.metrics.recording.level) is info, the
//     default, or debug: debug adds the per-partition families, whose
//     cardinality grows with the partitions owned.
//   - A Sample is what the engine reports at one scrape: state,
//     watermarks, queue depth, totals. Gauges and the engine's totals are
//     read from it when Prometheus scrapes, so nothing on the record path
//     updates a Prometheus metric; only commits (histograms), watermark
//     advances and, at debug level, late arrivals do.
//   - The bridge: the engine/metrics Registry that processors and the
//     test driver count into (dropped.records.total{reason}, the timer
//     lane mismatch counters) is read at each scrape and exported under
//     the stoatflow_ names.
package prom
