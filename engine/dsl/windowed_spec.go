package dsl

import (
	"github.com/stoatflow/stoatctl/engine/state"
)

// WindowSpec is a windowed aggregation's window definition, as its store
// builder tells it to tools that check a store's bytes against it: a
// migration compares Kafka Streams' changelog of the same store with it
// (migrate/). Times are in milliseconds.
type WindowSpec struct {
	// Kind is "tumbling", "hopping", "sliding" or "session".
	Kind string `json:"kind"`
	// Size is a time window's size, or a sliding window's time
	// difference; Advance is a time window's advance (Size when
	// tumbling). Both are 0 for sessions.
	Size    int64 `json:"size_ms"`
	Advance int64 `json:"advance_ms"`
	// Gap is a session window's inactivity gap, 0 otherwise.
	Gap   int64 `json:"gap_ms"`
	Grace int64 `json:"grace_ms"`
	// Retention is the store's: how long it keeps a window past the
	// frontier.
	Retention int64 `json:"retention_ms"`
}

// WindowedStore is implemented by the store builder of a windowed
// aggregation (topology.StoreInfo.Builder). The engine itself does not use
// it.
type WindowedStore interface {
	state.StoreBuilder
	WindowSpec() WindowSpec
}

func (d windowDef) spec(retention int64) WindowSpec {
	switch d.kind {
	case slidingWindowKind:
		return WindowSpec{Kind: "sliding", Size: d.sliding.TimeDifference(), Grace: d.sliding.Grace(), Retention: retention}
	case sessionWindowKind:
		return WindowSpec{Kind: "session", Gap: d.session.Gap(), Grace: d.session.Grace(), Retention: retention}
	}
	kind := "hopping"
	if d.time.Advance() == d.time.Size() {
		kind = "tumbling"
	}
	return WindowSpec{Kind: kind, Size: d.time.Size(), Advance: d.time.Advance(), Grace: d.time.Grace(), Retention: retention}
}

// timeWindowStore and sessionWindowStore are the windowed aggregations'
// store builders with their window definition. They embed the builders so
// that what those tell (Retention, WindowSize, SegmentInterval) is still
// there.
type timeWindowStore[K, V any] struct {
	*state.TimestampedWindowBuilder[K, V]
	spec WindowSpec
}

func (s timeWindowStore[K, V]) WindowSpec() WindowSpec { return s.spec }

type sessionWindowStore[K, V any] struct {
	*state.SessionBuilder[K, V]
	spec WindowSpec
}

func (s sessionWindowStore[K, V]) WindowSpec() WindowSpec { return s.spec }
