package prom

import (
	"fmt"
	"strings"
)

// Markdown is docs/metrics.md: every family with its type, labels, level
// and help, generated from Families.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Metrics

<!-- Generated from engine/prom/families.go by
     go test ./engine/prom -run TestMetricsDoc -update; do not edit. -->

The live engine (` + "`stoatctl run`" + `, ` + "`engine.New`" + `) exports these families at
` + "`GET /metrics`" + ` of its REST API, in Prometheus' text format, beside the Go
runtime's and the process's own (` + "`go_*`, `process_*`" + `).
` + "`" + LevelKey + "`" + ` chooses the level: ` + "`info`" + ` (default) records the info
families, ` + "`debug`" + ` the debug ones too: those whose series grow with the partitions owned,
and those that cost on the record path (processor nodes, store operations), as in Kafka Streams.

Names follow Prometheus' conventions, and ` + "`promtool check metrics`" + ` finds nothing
to say about a live scrape (the end-to-end test runs it and accepts no lint):
base units (seconds, bytes), times as ` + "`_timestamp_seconds`" + ` (seconds since the epoch,
millisecond precision), counters ending ` + "`_total`" + `. A value that does not exist yet
(a watermark before the first, the lag before the first watermark) is an
absent series, never a sentinel such as -1, so ` + "`absent()`" + ` tells it apart and no
query must filter it out.

The shipped alerts are in deploy/prometheus/rules.yaml; what to do when
they fire is docs/runbook.md.

| Family | Type | Labels | Level | Meaning |
| --- | --- | --- | --- | --- |
`)
	for _, f := range Families {
		labels := "-"
		if len(f.Labels) > 0 {
			labels = "`" + strings.Join(f.Labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, f.Type, labels, f.Level, f.Help)
	}
	b.WriteString(`
The record path is timed on samples (docs/decisions/0037-sampled-latencies.md): one
record in 64 that a task processes, and the first of every batch a lane receives, so a
quiet input is timed record by record and a busy one pays its clock reads on about 2%
of its records. Every record is counted (a task adds its count to the meter at each sampled record and
each commit barrier, so a count trails by at most a barrier interval). A summary's ` + "`_count`" + ` counts the sampled
records (use the ` + "`_records_total`" + ` counters for rates); its ` + "`_sum`" + ` over its
` + "`_count`" + ` is the average. A ` + "`_max_seconds`" + ` or ` + "`_min_seconds`" + ` gauge covers the
sampled records of the last 30 to 60 seconds and is absent when there were none.
At ` + "`debug`" + ` level the processor nodes and the stores are metered too, as Kafka
Streams meters them at its debug level; at ` + "`info`" + ` they cost nothing.
`)
	b.WriteString("\n`stoatflow_dropped_records_total` carries every reason from the first scrape, at zero:\n")
	for _, r := range Reasons {
		fmt.Fprintf(&b, "`%s` ", r)
	}
	b.WriteString("(the engine/metrics reasons `deserialization_error` and `processing_error`, which replay\nfixtures read, are exported as `deserialization` and `processing`).\n")
	b.WriteString("A drop is also logged, at WARN, by reason: how many since the last line of that reason, at most\none line per reason every ten seconds (Kafka Streams logs each dropped record).\n")
	b.WriteString(`
## From Kafka Streams' JMX metrics

For porting dashboards and alerts: each Kafka Streams metric (JMX
` + "`kafka.streams:type=GROUP`" + `, attribute) and what reads the same here. Kafka
Streams reports rates and averages; a Prometheus counter or histogram gives
them through ` + "`rate()`" + ` and ` + "`histogram_quantile()`" + `.

| Kafka Streams (group: attribute) | stoatctl |
| --- | --- |
`)
	for _, m := range KafkaStreams {
		ours := m.Ours
		if ours == "" {
			ours = "none yet"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", m.KS, ours)
	}
	return b.String()
}

// KSMetric maps a Kafka Streams metric to what reads the same here; Ours
// is empty where nothing does yet.
type KSMetric struct{ KS, Ours string }

// KafkaStreams is the mapping table of docs/metrics.md.
var KafkaStreams = []KSMetric{
	{"`stream-metrics`: `state`", "`stoatflow_client_state` (the same states, as numbers)"},
	{"`stream-metrics`: `version`, `commit-id`", "`GET /info` `version` and `commit`, `stoatctl version`"},
	{"`stream-metrics`: `alive-stream-threads`, `failed-stream-threads`", ""},
	{"`stream-thread-metrics`: `commit-rate`, `commit-total`", "`rate(stoatflow_epochs_committed_total[1m])`, `stoatflow_epochs_committed_total` (one commit per epoch, for every lane)"},
	{"`stream-thread-metrics`: `commit-latency-avg`, `commit-latency-max`", "`stoatflow_commit_duration_seconds` (histogram, seconds, not ms)"},
	{"`stream-thread-metrics`: `process-rate`, `process-total`", "`rate(stoatflow_process_records_total[1m])`, `stoatflow_process_records_total` (per sub-topology: source records and those crossing an in-memory boundary); per source topic, `stoatflow_records_in_total` (aborted epochs included)"},
	{"`stream-thread-metrics`: `process-latency-avg`, `process-latency-max`", "`rate(stoatflow_process_latency_seconds_sum[1m]) / rate(stoatflow_process_latency_seconds_count[1m])`, `stoatflow_process_latency_max_seconds` (per sub-topology, sampled, seconds)"},
	{"`stream-thread-metrics`: `poll-*`, `punctuate-*`, `task-created-*`, `task-closed-*`, `blocked-time-ns-total`", ""},
	{"`stream-task-metrics`: `dropped-records-rate`, `dropped-records-total`", "`stoatflow_dropped_records_total` (by `reason`, not per task)"},
	{"`stream-task-metrics`: `record-lateness-avg`, `record-lateness-max`", "`stoatflow_watermark_late_records_total` counts late arrivals (debug level); the lateness itself is not measured"},
	{"`stream-task-metrics` (debug): `process-rate`, `process-total`", "`rate(stoatflow_task_process_records_total[1m])`, `stoatflow_task_process_records_total` (debug level, as in Kafka Streams; `task` is Kafka Streams' task id, `0_1`)"},
	{"`stream-task-metrics` (debug): `process-latency-avg`, `process-latency-max`", "`rate(stoatflow_task_process_latency_seconds_sum[1m]) / rate(stoatflow_task_process_latency_seconds_count[1m])`, `stoatflow_task_process_latency_max_seconds` (debug level, sampled)"},
	{"`stream-task-metrics`: `enforced-processing-*`, `active-process-ratio`, `punctuate-*`", ""},
	{"`stream-task-metrics`: `restore-total`, `restore-rate`", "`stoatflow_restoration_records_total`"},
	{"`stream-task-metrics`: `restore-remaining-records-total`", "`stoatflow_restoration_remaining_records`"},
	{"`stream-state-updater-metrics`: `active-restoring-tasks`", "`stoatflow_restoration_active` (1 while any store restores)"},
	{"`stream-processor-node-metrics` (debug): `process-rate`, `process-total`", "`rate(stoatflow_processor_process_records_total[1m])`, `stoatflow_processor_process_records_total` (debug level; processor and sink nodes)"},
	{"`stream-processor-node-metrics` (debug): `process-latency-avg`, `process-latency-max`", "`stoatflow_processor_process_latency_seconds` (summary), `stoatflow_processor_process_latency_max_seconds` (debug level, sampled; processor nodes)"},
	{"`stream-processor-node-metrics`: `record-e2e-latency-avg`, `-min`, `-max` (source and terminal nodes)", "`rate(stoatflow_record_e2e_latency_seconds_sum[1m]) / rate(stoatflow_record_e2e_latency_seconds_count[1m])`, `stoatflow_record_e2e_latency_min_seconds`, `stoatflow_record_e2e_latency_max_seconds` (info level as in Kafka Streams, per source and sink node summed over tasks, `kind` source or sink; sampled; seconds, not ms)"},
	{"`stream-state-metrics` (debug): `put-rate`, `put-total`, `get-*`, `delete-*`, `put-if-absent-*`, `put-all-*`, `range-*`, `prefix-scan-*`, `flush-*`", "`rate(stoatflow_store_operations_total{operation=\"put\"}[1m])`, `stoatflow_store_operations_total{operation=...}` (debug level; stores of `default.dsl.store` and RocksDB, counted at the byte store)"},
	{"`stream-state-metrics` (debug): `put-latency-avg`, `put-latency-max`, and the other operations' latencies", "`stoatflow_store_operation_latency_seconds{operation=...}` (summary), `stoatflow_store_operation_latency_max_seconds` (debug level, sampled)"},
	{"`stream-state-metrics`: `restore-*`, `record-e2e-latency-*`", ""},
	{"`stream-state-metrics` (RocksDB properties): `estimate-num-keys`, `total-sst-files-size`, `live-sst-files-size`, `cur-size-all-mem-tables`, `size-all-mem-tables`, `num-immutable-mem-table`, `block-cache-usage`, `block-cache-pinned-usage`, `estimate-table-readers-mem`, `estimate-pending-compaction-bytes`, `num-running-compactions`, `num-running-flushes`, `background-errors`", "`stoatflow_rocksdb_estimated_keys`, `stoatflow_rocksdb_sst_files_size_bytes`, `stoatflow_rocksdb_live_sst_files_size_bytes`, `stoatflow_rocksdb_memtable_size_bytes`, `stoatflow_rocksdb_memtable_total_size_bytes`, `stoatflow_rocksdb_immutable_memtables`, `stoatflow_rocksdb_block_cache_usage_bytes`, `stoatflow_rocksdb_block_cache_pinned_usage_bytes`, `stoatflow_rocksdb_table_readers_memory_bytes`, `stoatflow_rocksdb_pending_compaction_bytes`, `stoatflow_rocksdb_running_compactions`, `stoatflow_rocksdb_running_flushes`, `stoatflow_rocksdb_background_errors_total` (one database per lane holds every store of its tasks: summed over the lanes' databases, not per store)"},
	{"`stream-state-metrics` (RocksDB statistics, debug): `bytes-written-*`, `bytes-read-*`, `memtable-hit-ratio`, `block-cache-*-hit-ratio`, `write-stall-duration-*`, `number-open-files`, `number-file-errors-total`", ""},
	{"`stream-record-cache-metrics`: `hit-ratio-*`", ""},
	{"`consumer-fetch-manager-metrics` (the main consumer): `records-lag` (per partition)", "`stoatflow_consumer_partition_lag_records{topic,partition}` (debug level: it grows with the partitions)"},
	{"`consumer-fetch-manager-metrics`: `records-lag-max`", "`stoatflow_consumer_lag_records` (per topic, summed over its partitions); `max(stoatflow_consumer_partition_lag_records)` at debug level"},
	{"`consumer-fetch-manager-metrics`: `fetch-latency-avg`, `fetch-latency-max`", "`stoatflow_kafka_request_duration_seconds{request=\"fetch\"}` (histogram: `histogram_quantile()`, or `_sum / _count` for the average)"},
	{"`consumer-fetch-manager-metrics`: `bytes-consumed-total`, `bytes-consumed-rate`", "`stoatflow_kafka_fetch_bytes_total{topic}`"},
	{"`consumer-metrics`, `producer-metrics`: `request-latency-avg`, `request-latency-max`", "`stoatflow_kafka_request_duration_seconds{request=...}` (one client consumes and produces: by request type)"},
	{"`producer-metrics`: `request-latency-*` of produce requests", "`stoatflow_kafka_request_duration_seconds{request=\"produce\"}`"},
	{"`consumer-coordinator-metrics`: `rebalance-total`", "`stoatflow_rebalances_total` (every runtime reset: rebalances, aborted epochs, reconnections)"},
	{"`producer-metrics`: `record-send-total`", "`stoatflow_records_out_total` (per sink topic, changelogs left out)"},
	{"`producer-metrics`: `record-error-total`, `record-error-rate`", "`stoatflow_kafka_produce_record_errors_total{topic}` (changelogs included)"},
	{"`producer-metrics`, `consumer-metrics`: `connection-close-total` (the closest: no attribute counts the requests a lost connection failed)", "`stoatflow_kafka_request_errors_total{request}` (requests failed on the connection, by request type)"},
	{"`producer-topic-metrics`: `byte-total`, `byte-rate`", "`stoatflow_kafka_produce_bytes_total{topic}`"},
	{"`producer-metrics`: `txn-commit-time-ns-total`", "`stoatflow_kafka_request_duration_seconds{request=\"end_txn\"}`; the whole commit: `stoatflow_commit_duration_seconds`"},
	{"no equivalent in Kafka Streams", "`stoatflow_watermark_*` (event time, docs/event-time.md), `stoatflow_store_segments`, `stoatflow_barrier_interval_seconds`, `stoatflow_lane_queue_batches`, `stoatflow_epoch_records`, `stoatflow_timer_lane_mismatch_total`"},
}
