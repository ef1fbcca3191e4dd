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
	// Debug adds the per-partition families.
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
)

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
	{WatermarkPreview, Gauge, nil, Info, "Partitions whose next record waits behind older records and counts toward the watermark as if processed; always 0, the engine has no preview."},
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
	{StoreSegmentCount, Gauge, []string{"store_name", "store_type"}, Info, "Segments each window and session store holds data in, over every lane: it follows the expiry clock (the emit frontier or the committed watermark), not the write volume, and grows while the watermark stalls."},
	{PartitionWatermark, Gauge, []string{"topic", "partition"}, Debug, "Each source partition's own watermark, in seconds since the epoch; absent before its first."},
	{PartitionIdle, Gauge, []string{"topic", "partition"}, Debug, "1 when the partition is idle and excluded from the global watermark."},
	{PartitionLastEventTime, Gauge, []string{"topic", "partition"}, Debug, "The largest event time seen on the partition, in seconds since the epoch; absent before the first."},
	{PartitionIdlenessTimout, Gauge, []string{"topic", "partition"}, Debug, "The idleness timeout in force for the partition, in seconds; 0 when it never idles."},
	{LateRecords, Counter, []string{"topic", "partition"}, Debug, "Arrivals behind the watermark, most of them still inside grace and folded in."},
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
