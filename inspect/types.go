package inspect

import "math"

// MinWatermark is the global watermark before the first one was emitted
// (Kafka Streams' and Java's Long.MIN_VALUE); its readable form is NotAvailable.
const MinWatermark int64 = math.MinInt64

// NotAvailable is the readable time of MinWatermark.
const NotAvailable = "N/A"

// Watermarks is the document of GET /watermarks: the global watermark and
// each registered input partition's view, keyed "topic:partition".
type Watermarks struct {
	GlobalMs  int64  `json:"globalMs"`
	GlobalIso string `json:"globalIso"`
	// AlignmentGroupMins is the minimum watermark of each alignment group.
	AlignmentGroupMins map[string]int64 `json:"alignmentGroupMins"`
	// AlignmentBinding names the group whose hold currently stops dispatch,
	// nil when none does.
	AlignmentBinding *string                       `json:"alignmentBinding"`
	Partitions       map[string]PartitionWatermark `json:"partitions"`
}

// PartitionWatermark is one input partition's entry in Watermarks.
type PartitionWatermark struct {
	WatermarkMs      int64  `json:"watermarkMs"`
	WatermarkIso     string `json:"watermarkIso"`
	Idle             bool   `json:"idle"`
	LastEventTimeMs  int64  `json:"lastEventTimeMs"`
	LastEventTimeIso string `json:"lastEventTimeIso"`
	// LastRecordMs is the wall-clock time the partition last delivered a
	// record, whatever its event time; absent before the first. It moves
	// for late records too, so a reader can tell a live partition whose
	// watermark is held back by old timestamps from a quiet one.
	LastRecordMs *int64 `json:"lastRecordMs,omitempty"`
	// LastAdvanceMs is the wall-clock time the partition's watermark last
	// moved in the engine's process; absent before its first move there
	// (a watermark resumed from committed offsets has not moved yet).
	// With it one look tells how long a watermark has stood still.
	LastAdvanceMs *int64 `json:"lastAdvanceMs,omitempty"`
	// IdleSinceMs is the wall-clock time the partition was marked idle;
	// absent while it is not.
	IdleSinceMs *int64 `json:"idleSinceMs,omitempty"`
	// WaitingSinceMs is, for a partition whose watermark has not moved in
	// the engine's process (lastAdvanceMs absent: one that never had a
	// record, or resumed from committed offsets), the wall-clock time the
	// engine started tracking it; absent once the watermark moved.
	WaitingSinceMs *int64 `json:"waitingSinceMs,omitempty"`
	// SinceAdvanceMs is how long, by the engine's own clock, the
	// partition's watermark has not moved: since lastAdvanceMs, else since
	// waitingSinceMs. One poll judges a stall by it, whatever the reader's
	// clock; absent from an engine that tracks neither.
	SinceAdvanceMs *int64 `json:"sinceAdvanceMs,omitempty"`
	// PreviewWatermarkMs and HeadHeldSinceMs are set while the partition's
	// next record is stamped ahead of the others and waits behind them.
	PreviewWatermarkMs  *int64  `json:"previewWatermarkMs,omitempty"`
	PreviewWatermarkIso *string `json:"previewWatermarkIso,omitempty"`
	HeadHeldSinceMs     *int64  `json:"headHeldSinceMs,omitempty"`
	AlignmentGroup      *string `json:"alignmentGroup"`
	AlignmentHeld       bool    `json:"alignmentHeld"`
	DriftFromGroupMinMs int64   `json:"driftFromGroupMinMs"`
	// IdlenessTimeoutMs is the timeout in force for this partition: its
	// source's own, else the global default; 0 when idleness is off.
	IdlenessTimeoutMs int64 `json:"idlenessTimeoutMs"`
	// Writers is set for a repartition topic's partition whose watermark
	// the tasks writing the topic tell in markers: the lowest of their
	// marks, once every one has told.
	Writers *RepartitionWriters `json:"writers,omitempty"`
}

// RepartitionWriters are the tasks writing a repartition topic, by Kafka
// Streams' task id ("<sub-topology>_<partition>"): all of them, those
// whose marker has not reached this partition yet (its watermark waits
// for them), those idle, and those whose mark is its watermark.
type RepartitionWriters struct {
	Tasks   []string `json:"tasks"`
	NotTold []string `json:"notTold"`
	Idle    []string `json:"idle"`
	Holding []string `json:"holding"`
}

// Info is the document of GET /info.
type Info struct {
	ApplicationID string `json:"applicationId"`
	InstanceID    string `json:"instanceId,omitempty"`
	State         string `json:"state"`
	// Paused says POST /pause stopped processing (State stays RUNNING).
	Paused  bool   `json:"paused"`
	Version string `json:"version"`
	// Commit is the VCS commit the binary was built from, as `stoatctl
	// version` says it (runtime/debug.ReadBuildInfo, or the build's
	// stamp); "unknown" when nothing tells.
	Commit string `json:"commit"`
	// Topology is a one-line summary: sub-topologies, sources, sinks, stores.
	Topology string `json:"topology"`
	Lanes    int    `json:"lanes"`
	// Partitions owned by this instance, per input topic.
	Partitions map[string][]int32 `json:"partitions"`
	// Tasks are the ids of the tasks this instance runs, "sub_partition"
	// as Kafka Streams names them: the sub-topologies with state.
	Tasks []string `json:"tasks"`
	// StandbyTasks are the tasks this instance keeps a warm copy of
	// (num.standby.replicas), "sub_partition".
	StandbyTasks []string `json:"standbyTasks,omitempty"`
	// Standbys are the same tasks with whether each is a warm-up and
	// its lag, sorted by task.
	Standbys []StandbyTask `json:"standbys,omitempty"`
	// EventTimeTracking is false when the topology has no event time.
	EventTimeTracking bool `json:"eventTimeTracking"`
	// GlobalMs and GlobalIso are left out when
	// runtime.endpoints.info.show-watermarks is off; GlobalMs also before
	// the first watermark (GlobalIso is then N/A).
	GlobalMs  *int64  `json:"globalMs,omitempty"`
	GlobalIso *string `json:"globalIso,omitempty"`
}

// StandbyTask is one standby task of GET /info.
type StandbyTask struct {
	// Task is the task id, "sub_partition".
	Task string `json:"task"`
	// Warmup says the task warms up here to move here (KIP-441) rather
	// than stay a standby.
	Warmup bool `json:"warmup"`
	// LagRecords is how many changelog records the local copy was behind
	// the ends of the task's changelog partitions as the last warm-up
	// began (the first of a run measures after it restored); absent until a warm-up measured it and while the
	// instance keeps no standby (it runs tasks).
	LagRecords *int64 `json:"lagRecords,omitempty"`
}

// Error is the body of every error response: a stable code callers can
// branch on and a message for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Stable error codes.
const (
	CodeNotInitialised = "not_initialised"
	CodeUnauthorized   = "unauthorized"
	CodeNotFound       = "not_found"
	CodeBadRequest     = "bad_request"
	CodeMethod         = "method_not_allowed"
	CodeInternal       = "internal"
)

// More stable error codes.
const (
	// CodeNoEventTime: GET /watermarks of a topology without event time.
	CodeNoEventTime = "no_event_time"
	// CodeUnreachable is what `stoatctl inspect -o json` prints when no
	// answer came back; no server sends it.
	CodeUnreachable = "unreachable"
)

// Health is the document of GET /health/liveness and /health/readiness.
type Health struct {
	// Status is StatusUp (HTTP 200) or StatusDown (503).
	Status string `json:"status"`
	State  string `json:"state"`
	// Reason says why the engine is down, when it is.
	Reason string `json:"reason,omitempty"`
}

// Health statuses.
const (
	StatusUp   = "UP"
	StatusDown = "DOWN"
)

// ControlRequest is the optional JSON body of POST /pause and /resume.
type ControlRequest struct {
	// Reason is logged with the request.
	Reason string `json:"reason,omitempty"`
}

// Control is the answer of POST /pause and /resume.
type Control struct {
	Paused bool   `json:"paused"`
	State  string `json:"state"`
}
