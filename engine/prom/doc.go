// Package prom exports a running engine's meters in Prometheus' format,
// with github.com/prometheus/client_golang.
//
// Terms:
//   - A family is one metric name with its type, labels and recording
//     level; Families is the catalogue, and docs/metrics.md is generated
//     from it (go test ./engine/prom -run TestMetricsDoc -update).
//   - A recording level (stoatflow.metrics.recording.level) is info, the
//     default, or debug: debug adds the per-partition and per-task
//     families, whose cardinality grows with the partitions owned, and
//     the processor nodes' and stores' meters, which cost on the record
//     path (metrics.Registry.SetDebug turns them on).
//   - A Sample is what the engine reports at one scrape: state,
//     watermarks, queue depth, totals. Gauges and the engine's totals are
//     read from it when Prometheus scrapes, so nothing on the record path
//     updates a Prometheus metric; only commits (histograms), watermark
//     advances, the Kafka client's hooks (per request or batch, and a
//     failed record: ClientHooks) and, at debug level, late arrivals do.
//   - The bridge: the engine/metrics Registry that processors and the
//     test driver count into (dropped.records.total{reason}, the timer
//     lane mismatch counters) is read at each scrape and exported under
//     the stoatflow_ names, and so are its meters: the record path's and
//     the stores' counts and sampled timings (TaskMeter, StoreMeter),
//     summed per sub-topology, task, node or store. A timing is a summary
//     (sum and count, no quantiles) with its windowed extremes as gauges
//     (docs/decisions/0037-sampled-latencies.md).
package prom
