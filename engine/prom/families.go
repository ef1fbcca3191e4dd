package prom

import (
	"fmt"
	"strings"
)

// Level is a recording level.
type Level int

const (
	// Info is the default level: families whose cardinality does not
	// grow with the partitions owned (records in/out are per topic).
	Info Level = iota
	// Debug adds the per-partition and per-task families and the
	// meters that cost on the record path (processor nodes, stores).
	Debug
)

// LevelKey is the configuration key of the recording level.
const LevelKey = "stoatflow.metrics.recording.level"

func (l Level) String() string {
	if l == Debug {
		return "debug"
	}
	return "info"
}

// ParseLevel reads a recording level: info or debug, in any case; ""
// is info.
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return Info, nil
	case "debug":
		return Debug, nil
	}
	return Info, fmt.Errorf("config %s: %q: want info or debug", LevelKey, s)
}

// Type is a family's Prometheus type.
type Type string

const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
	// Summary is a sum and a count with no quantiles: the engine's
	// sampled timings, whose average over a span is rate(_sum) /
	// rate(_count).
	Summary Type = "summary"
)

// Family describes one metric family the engine exports.
type Family struct {
	Name   string
	Type   Type
	Labels []string
	Level  Level
	Help   string
}

// Family names.
const (
	WatermarkTimestamp      = "stoatflow_watermark_timestamp_seconds"
	WatermarkLag            = "stoatflow_watermark_lag_seconds"
	WatermarkAdvance        = "stoatflow_watermark_advance_total"
	DroppedRecords          = "stoatflow_dropped_records_total"
	WatermarkPreview        = "stoatflow_watermark_preview_partitions"
	AlignmentHeld           = "stoatflow_watermark_alignment_partitions_held"
	EventTimeTracking       = "stoatflow_topology_event_time_tracking"
	TimerLaneMismatch       = "stoatflow_timer_lane_mismatch_total"
	ClientState             = "stoatflow_client_state"
	WatermarkPartitions     = "stoatflow_watermark_partitions"
	RecordsIn               = "stoatflow_records_in_total"
	RecordsOut              = "stoatflow_records_out_total"
	ConsumerLag             = "stoatflow_consumer_lag_records"
	EpochRecords            = "stoatflow_epoch_records"
	CommitDuration          = "stoatflow_commit_duration_seconds"
	EpochsCommitted         = "stoatflow_epochs_committed_total"
	EpochsAborted           = "stoatflow_epochs_aborted_total"
	Rebalances              = "stoatflow_rebalances_total"
	BarrierInterval         = "stoatflow_barrier_interval_seconds"
	LaneQueueBatches        = "stoatflow_lane_queue_batches"
	Restoring               = "stoatflow_restoration_active"
	RestoredRecords         = "stoatflow_restoration_records_total"
	RestoreRemaining        = "stoatflow_restoration_remaining_records"
	PartitionWatermark      = "stoatflow_watermark_partition_timestamp_seconds"
	PartitionIdle           = "stoatflow_watermark_partition_idle"
	LateRecords             = "stoatflow_watermark_late_records_total"
	OutOfOrderness          = "stoatflow_watermark_out_of_orderness_seconds"
	PartitionLastEventTime  = "stoatflow_watermark_partition_last_event_timestamp_seconds"
	PartitionIdlenessTimout = "stoatflow_watermark_partition_idleness_timeout_seconds"
	StoreSegmentCount       = "stoatflow_store_segments"
	StandbyTasks            = "stoatflow_standby_tasks"
	WarmupTasks             = "stoatflow_standby_warmup_tasks"
	StandbyLagMax           = "stoatflow_standby_lag_max_records"
	StandbyLag              = "stoatflow_standby_lag_records"

	// The record path (metrics.TaskMeter), timed on sampled records.
	ProcessRecords         = "stoatflow_process_records_total"
	ProcessLatency         = "stoatflow_process_latency_seconds"
	ProcessLatencyMax      = "stoatflow_process_latency_max_seconds"
	E2ELatency             = "stoatflow_record_e2e_latency_seconds"
	E2ELatencyMin          = "stoatflow_record_e2e_latency_min_seconds"
	E2ELatencyMax          = "stoatflow_record_e2e_latency_max_seconds"
	TaskProcessRecords     = "stoatflow_task_process_records_total"
	TaskProcessLatency     = "stoatflow_task_process_latency_seconds"
	TaskProcessLatencyMax  = "stoatflow_task_process_latency_max_seconds"
	ProcessorRecords       = "stoatflow_processor_process_records_total"
	ProcessorLatency       = "stoatflow_processor_process_latency_seconds"
	ProcessorLatencyMax    = "stoatflow_processor_process_latency_max_seconds"
	StoreOperations        = "stoatflow_store_operations_total"
	StoreOperationLatency  = "stoatflow_store_operation_latency_seconds"
	StoreOperationMax      = "stoatflow_store_operation_latency_max_seconds"
	ConsumerPartitionLag   = "stoatflow_consumer_partition_lag_records"
	KafkaRequestDuration   = "stoatflow_kafka_request_duration_seconds"
	KafkaRequestErrors     = "stoatflow_kafka_request_errors_total"
	KafkaRecordErrors      = "stoatflow_kafka_produce_record_errors_total"
	KafkaProduceBytes      = "stoatflow_kafka_produce_bytes_total"
	KafkaFetchBytes        = "stoatflow_kafka_fetch_bytes_total"
	RocksEstimatedKeys     = "stoatflow_rocksdb_estimated_keys"
	RocksSSTSize           = "stoatflow_rocksdb_sst_files_size_bytes"
	RocksLiveSSTSize       = "stoatflow_rocksdb_live_sst_files_size_bytes"
	RocksMemtableSize      = "stoatflow_rocksdb_memtable_size_bytes"
	RocksMemtableTotalSize = "stoatflow_rocksdb_memtable_total_size_bytes"
	RocksImmutableMemtable = "stoatflow_rocksdb_immutable_memtables"
	RocksBlockCacheUsage   = "stoatflow_rocksdb_block_cache_usage_bytes"
	RocksBlockCachePinned  = "stoatflow_rocksdb_block_cache_pinned_usage_bytes"
	RocksTableReadersMem   = "stoatflow_rocksdb_table_readers_memory_bytes"
	RocksPendingCompaction = "stoatflow_rocksdb_pending_compaction_bytes"
	RocksRunningCompaction = "stoatflow_rocksdb_running_compactions"
	RocksRunningFlushes    = "stoatflow_rocksdb_running_flushes"
	RocksBackgroundErrors  = "stoatflow_rocksdb_background_errors_total"
)

// RocksProperties maps each RocksDB property the engine reads
// (rocks.PropertyNames) to its family.
var RocksProperties = map[string]string{
	"rocksdb.estimate-num-keys":                 RocksEstimatedKeys,
	"rocksdb.total-sst-files-size":              RocksSSTSize,
	"rocksdb.live-sst-files-size":               RocksLiveSSTSize,
	"rocksdb.cur-size-all-mem-tables":           RocksMemtableSize,
	"rocksdb.size-all-mem-tables":               RocksMemtableTotalSize,
	"rocksdb.num-immutable-mem-table":           RocksImmutableMemtable,
	"rocksdb.block-cache-usage":                 RocksBlockCacheUsage,
	"rocksdb.block-cache-pinned-usage":          RocksBlockCachePinned,
	"rocksdb.estimate-table-readers-mem":        RocksTableReadersMem,
	"rocksdb.estimate-pending-compaction-bytes": RocksPendingCompaction,
	"rocksdb.num-running-compactions":           RocksRunningCompaction,
	"rocksdb.num-running-flushes":               RocksRunningFlushes,
	"rocksdb.background-errors":                 RocksBackgroundErrors,
}

// Reasons are the values of DroppedRecords' reason label, each exported
// from the first (registered at zero) so that rate() has a series to read.
// Two are renamed from the engine/metrics reasons: deserialization_error
// and processing_error read deserialization and processing here.
var Reasons = []string{"late_window", "late_session", "no_event_time", "deserialization", "processing", "null_key", "null_value", "expired_version"}

// Families is every family the engine exports, in the order of
// docs/metrics.md.
var Families = []Family{
	{WatermarkTimestamp, Gauge, nil, Info, "The global watermark, in seconds since the epoch (millisecond precision): the minimum over the non-idle source partitions; absent before the first."},
	{WatermarkLag, Gauge, nil, Info, "Wall clock minus the global watermark, in seconds, sampled about once a second whether or not the watermark moved; absent before the first watermark."},
	{WatermarkAdvance, Counter, nil, Info, "How often the global watermark moved forward."},
	{DroppedRecords, Counter, []string{"reason"}, Info, "Records dropped on purpose, by reason: late_window and late_session (their window had closed), no_event_time (no event time at the source), deserialization and processing (skipped by a continue handler), null_key and null_value, expired_version (an update of a versioned table older than its history retention)."},
	{WatermarkPreview, Gauge, nil, Info, "Source partitions whose next record waits behind older records of other partitions, within a poll being dispatched while a barrier is cut, and counts toward the global watermark as if processed (their preview watermark); only for sources whose event time is the record timestamp under a built-in strategy."},
	{AlignmentHeld, Gauge, []string{"group"}, Info, "Source partitions of each watermark alignment group whose fetch is paused because their watermark is ahead of the group's minimum by more than its maximum drift; absent without alignment groups."},
	{EventTimeTracking, Gauge, nil, Info, "1 when the engine tracks watermarks for this topology, 0 when it decided the topology has no event time."},
	{TimerLaneMismatch, Counter, nil, Info, "Timer operations on a key that does not hash to the lane processing it, over every processor."},
	{ClientState, Gauge, nil, Info, "The engine's state: 0 CREATED, 1 NOT_RUNNING, 2 REBALANCING, 3 RESTORING, 4 RUNNING, 5 PAUSED, 6 PENDING_SHUTDOWN, 7 ERROR."},
	{WatermarkPartitions, Gauge, []string{"state"}, Info, "Registered source partitions, by state: active or idle."},
	{RecordsIn, Counter, []string{"topic"}, Info, "Records dispatched from each source topic, aborted epochs included."},
	{ConsumerLag, Gauge, []string{"topic"}, Info, "Records in each source topic past what was dispatched, from the high watermarks of the last fetches."},
	{RecordsOut, Counter, []string{"topic"}, Info, "Records produced to each sink topic (changelogs left out), aborted epochs included."},
	{EpochRecords, Histogram, nil, Info, "Source records per committed epoch."},
	{CommitDuration, Histogram, nil, Info, "How long an epoch's commit took, in seconds."},
	{EpochsCommitted, Counter, nil, Info, "Epochs committed."},
	{EpochsAborted, Counter, nil, Info, "Epochs aborted and reprocessed."},
	{Rebalances, Counter, nil, Info, "Runtime resets: rebalances, aborts and reconnections, each rebuilding the lanes."},
	{BarrierInterval, Gauge, nil, Info, "The commit barrier cadence in force, in seconds."},
	{LaneQueueBatches, Gauge, nil, Info, "Record batches waiting in the lanes' queues, over every lane."},
	{Restoring, Gauge, nil, Info, "1 while state is being restored from the changelogs."},
	{RestoreRemaining, Gauge, nil, Info, "While restoring, about how many changelog records are still to read (an upper bound: transaction markers count); 0 otherwise."},
	{RestoredRecords, Counter, nil, Info, "Changelog records applied while restoring, over every restoration of this run."},
	{StandbyTasks, Gauge, nil, Info, "Standby tasks the group's last assignment gave this instance (num.standby.replicas), warm-ups included; an instance keeps them warm while it runs no task."},
	{WarmupTasks, Gauge, nil, Info, "Of the standby tasks, those warming up a task planned to move here (KIP-441's warm-up replicas, max.warmup.replicas)."},
	{StandbyLagMax, Gauge, nil, Info, "The largest standby lag over this instance's standby tasks, in changelog records: what the local copy lacked of its changelog partitions' ends as the last warm-up began, against where the one before left it (measured once per stoatflow.standby.interval-ms; decision 0040); absent while no lag is measured (no standby, or the instance runs tasks and keeps none)."},
	{StoreSegmentCount, Gauge, []string{"store_name", "store_type"}, Info, "Segments each window and session store holds data in, over every lane: it follows the expiry clock (the emit frontier or the committed watermark), not the write volume, and grows while the watermark stalls."},
	{ProcessRecords, Counter, []string{"subtopology"}, Info, "Records each sub-topology processed, over its tasks and lanes (added at each sampled record and each commit barrier): those read from its source topics and those that crossed an in-memory boundary into it (Kafka Streams' thread-level process-total)."},
	{ProcessLatency, Summary, []string{"subtopology"}, Info, "How long a record took to process in each sub-topology, from its source's decoding to the return of the last node it reached, in seconds; timed on sampled records (one in 64 and the first of every batch a lane receives), so _count counts the sampled records and rate(_sum) / rate(_count) is the average."},
	{ProcessLatencyMax, Gauge, []string{"subtopology"}, Info, "The longest sampled record's processing in each sub-topology over the last 30 to 60 seconds, in seconds; absent when no record was sampled in that span."},
	{E2ELatency, Summary, []string{"processor", "kind"}, Info, "End-to-end latency of the sampled records at each source and sink node (kind source or sink): the wall clock when the node processed the record less the record's timestamp, in seconds, 0 for a timestamp ahead of the clock (Kafka Streams' record-e2e-latency); rate(_sum) / rate(_count) is the average."},
	{E2ELatencyMin, Gauge, []string{"processor", "kind"}, Info, "The least sampled end-to-end latency at each source and sink node over the last 30 to 60 seconds, in seconds; absent when no record was sampled in that span."},
	{E2ELatencyMax, Gauge, []string{"processor", "kind"}, Info, "The greatest sampled end-to-end latency at each source and sink node over the last 30 to 60 seconds, in seconds; absent when no record was sampled in that span."},
	{KafkaRequestDuration, Histogram, []string{"request"}, Info, "Requests of the engine's main Kafka client (sources, sinks, changelogs, transactions) by request type (produce, fetch, end_txn, ...), from the write to the end of the response, in seconds; a fetch includes the broker's wait for data (fetch.max.wait.ms). Series appear with the first request of a type."},
	{KafkaRequestErrors, Counter, []string{"request"}, Info, "Requests of the main client that failed on the connection (a write or read error; not those the client cancelled itself), by request type; series appear with the first failure."},
	{KafkaRecordErrors, Counter, []string{"topic"}, Info, "Records the main client failed to produce, by topic: refused by the broker or timed out (not those of a transaction the engine aborted itself, which it replays); series appear with the first failure."},
	{KafkaProduceBytes, Counter, []string{"topic"}, Info, "Bytes of record batches the main client produced, by topic (as written, after compression); series appear with the first batch."},
	{KafkaFetchBytes, Counter, []string{"topic"}, Info, "Bytes of record batches the main client fetched, by topic (as read, before decompression); series appear with the first batch."},
	{RocksEstimatedKeys, Gauge, nil, Info, "RocksDB's estimate of the keys in the lanes' databases (rocksdb.estimate-num-keys), summed over them; absent without RocksDB state."},
	{RocksSSTSize, Gauge, nil, Info, "Bytes of every SST file of the lanes' databases (rocksdb.total-sst-files-size)."},
	{RocksLiveSSTSize, Gauge, nil, Info, "Bytes of the SST files the lanes' databases' current versions use (rocksdb.live-sst-files-size)."},
	{RocksMemtableSize, Gauge, nil, Info, "Bytes of the active and unflushed memtables (rocksdb.cur-size-all-mem-tables)."},
	{RocksMemtableTotalSize, Gauge, nil, Info, "Bytes of every memtable, the pinned ones included (rocksdb.size-all-mem-tables)."},
	{RocksImmutableMemtable, Gauge, nil, Info, "Immutable memtables not yet flushed (rocksdb.num-immutable-mem-table)."},
	{RocksBlockCacheUsage, Gauge, nil, Info, "Bytes the block caches hold (rocksdb.block-cache-usage)."},
	{RocksBlockCachePinned, Gauge, nil, Info, "Bytes of the block caches pinned by readers (rocksdb.block-cache-pinned-usage)."},
	{RocksTableReadersMem, Gauge, nil, Info, "Bytes the table readers use outside the block cache: indexes and filters (rocksdb.estimate-table-readers-mem)."},
	{RocksPendingCompaction, Gauge, nil, Info, "Bytes compaction estimates it has to rewrite (rocksdb.estimate-pending-compaction-bytes)."},
	{RocksRunningCompaction, Gauge, nil, Info, "Compactions running (rocksdb.num-running-compactions)."},
	{RocksRunningFlushes, Gauge, nil, Info, "Memtable flushes running (rocksdb.num-running-flushes)."},
	{RocksBackgroundErrors, Counter, nil, Info, "Errors of RocksDB's background work, compactions and flushes (rocksdb.background-errors)."},
	{PartitionWatermark, Gauge, []string{"topic", "partition"}, Debug, "Each source partition's own watermark, in seconds since the epoch; absent before its first."},
	{PartitionIdle, Gauge, []string{"topic", "partition"}, Debug, "1 when the partition is idle and excluded from the global watermark."},
	{PartitionLastEventTime, Gauge, []string{"topic", "partition"}, Debug, "The largest event time seen on the partition, in seconds since the epoch; absent before the first."},
	{PartitionIdlenessTimout, Gauge, []string{"topic", "partition"}, Debug, "The idleness timeout in force for the partition, in seconds; 0 when it never idles."},
	{LateRecords, Counter, []string{"topic", "partition"}, Debug, "Arrivals behind the watermark, most of them still inside grace and folded in."},
	{ConsumerPartitionLag, Gauge, []string{"topic", "partition"}, Debug, "Records in each source partition past what was dispatched, from the high watermark of its last fetch (Kafka's records-lag); absent before its first fetch."},
	{TaskProcessRecords, Counter, []string{"task"}, Debug, "Records each task processed, over the lanes that run its shards (Kafka Streams' task-level process-total)."},
	{TaskProcessLatency, Summary, []string{"task"}, Debug, "How long a sampled record took to process in each task, in seconds (Kafka Streams' task-level process-latency); rate(_sum) / rate(_count) is the average."},
	{TaskProcessLatencyMax, Gauge, []string{"task"}, Debug, "The longest sampled record's processing in each task over the last 30 to 60 seconds, in seconds; absent when none was sampled."},
	{ProcessorRecords, Counter, []string{"task", "processor"}, Debug, "Records each processor and sink node of each task processed (Kafka Streams' processor-node process-total)."},
	{ProcessorLatency, Summary, []string{"task", "processor"}, Debug, "How long each processor node took over a sampled record, the nodes it forwarded to included, in seconds (Kafka Streams' processor-node process-latency); sinks are counted, not timed."},
	{ProcessorLatencyMax, Gauge, []string{"task", "processor"}, Debug, "The longest sampled record at each processor node over the last 30 to 60 seconds, in seconds; absent when none was sampled."},
	{StoreOperations, Counter, []string{"store_name", "operation"}, Debug, "Operations on each store's byte store, by operation (put, put_if_absent, put_all, get, delete, range, prefix_scan, flush), over its instances; a window or session store counts the byte operations of its indexes (Kafka Streams' state-store put-total, get-total, ...)."},
	{StoreOperationLatency, Summary, []string{"store_name", "operation"}, Debug, "How long a sampled store operation took (one in 64 of each kind, every flush), in seconds; a scan to its iterator's opening (Kafka Streams' state-store put-latency, get-latency, ...)."},
	{StoreOperationMax, Gauge, []string{"store_name", "operation"}, Debug, "The longest sampled store operation over the last 30 to 60 seconds, in seconds; absent when none was sampled."},
	{StandbyLag, Gauge, []string{"task"}, Debug, "Each standby task's lag, in changelog records: what its local copy lacked of the ends of its changelog partitions as the last warm-up began, against where the one before left it (a task ahead of an in-memory re-key counts the re-keyed tasks' changelogs); absent until a warm-up measured it."},
	{OutOfOrderness, Gauge, nil, Debug, "The spread between the most and least advanced non-idle partition watermarks, in seconds; absent while no non-idle partition has a watermark."},
}

// StateValue is ClientState's number for an engine state; a RUNNING
// engine that is paused reads 5 (PAUSED), so alerts joined on == 4 do not
// page for it.
func StateValue(state string, paused bool) float64 {
	switch state {
	case "CREATED":
		return 0
	case "NOT_RUNNING":
		return 1
	case "REBALANCING":
		return 2
	case "RESTORING":
		return 3
	case "RUNNING":
		if paused {
			return 5
		}
		return 4
	case "PENDING_SHUTDOWN":
		return 6
	}
	return 7
}
