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
families, ` + "`debug`" + ` the debug ones too, whose series grow with the partitions owned.

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
	{"`stream-thread-metrics`: `process-rate`, `process-total`", "`rate(stoatflow_records_in_total[1m])`, `stoatflow_records_in_total` (per source topic, aborted epochs included)"},
	{"`stream-thread-metrics`: `process-latency-*`, `poll-*`, `punctuate-*`, `task-created-*`, `task-closed-*`, `blocked-time-ns-total`", ""},
	{"`stream-task-metrics`: `dropped-records-rate`, `dropped-records-total`", "`stoatflow_dropped_records_total` (by `reason`, not per task)"},
	{"`stream-task-metrics`: `record-lateness-avg`, `record-lateness-max`", "`stoatflow_watermark_late_records_total` counts late arrivals (debug level); the lateness itself is not measured"},
	{"`stream-task-metrics`: `process-latency-*`, `enforced-processing-*`, `active-process-ratio`, `punctuate-*`", ""},
	{"`stream-task-metrics`: `restore-total`, `restore-rate`", "`stoatflow_restoration_records_total`"},
	{"`stream-task-metrics`: `restore-remaining-records-total`", "`stoatflow_restoration_remaining_records`"},
	{"`stream-state-updater-metrics`: `active-restoring-tasks`", "`stoatflow_restoration_active` (1 while any store restores)"},
	{"`stream-processor-node-metrics`: `process-*`, `record-e2e-latency-avg`, `-min`, `-max`", ""},
	{"`stream-state-metrics`: `put-*`, `get-*`, `delete-*`, `flush-*`, `restore-*`, `record-e2e-latency-*`", ""},
	{"`stream-state-metrics` (RocksDB): `bytes-written-*`, `block-cache-*`, `memtable-*`, `estimate-num-keys`, and the other RocksDB properties", ""},
	{"`stream-record-cache-metrics`: `hit-ratio-*`", ""},
	{"`consumer-fetch-manager-metrics` (the main consumer): `records-lag`, `records-lag-max`", "`stoatflow_consumer_lag_records` (per topic, summed over its partitions)"},
	{"`consumer-fetch-manager-metrics`: `fetch-latency-*`, `consumer-metrics`: `request-latency-*`", ""},
	{"`consumer-coordinator-metrics`: `rebalance-total`", "`stoatflow_rebalances_total` (every runtime reset: rebalances, aborted epochs, reconnections)"},
	{"`producer-metrics`: `record-send-total`", "`stoatflow_records_out_total` (per sink topic, changelogs left out)"},
	{"`producer-metrics`: `record-error-*`, `request-latency-*`, `txn-commit-time-ns-total`", ""},
	{"no equivalent in Kafka Streams", "`stoatflow_watermark_*` (event time, docs/event-time.md), `stoatflow_store_segments`, `stoatflow_barrier_interval_seconds`, `stoatflow_lane_queue_batches`, `stoatflow_epoch_records`, `stoatflow_timer_lane_mismatch_total`"},
}
