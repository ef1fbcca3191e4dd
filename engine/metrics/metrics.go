package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Well-known counter names.
const (
	DroppedRecords = "dropped.records.total"
	// RestoredRecords counts the changelog records restored into state
	// stores, by store.
	RestoredRecords = "restored.records.total"
)

// Reasons for DroppedRecords.
const (
	ReasonDeserialization = "deserialization_error"
	ReasonProcessing      = "processing_error"
	ReasonNoEventTime     = "no_event_time"
	ReasonNullKey         = "null_key"
	ReasonNullValue       = "null_value"
	ReasonLateWindow      = "late_window"
	ReasonLateSession     = "late_session"
	// ReasonExpiredVersion is an update of a versioned table older than
	// its history retention (Kafka Streams counts these expired puts in
	// its dropped-records sensor too).
	ReasonExpiredVersion = "expired_version"
)

// Registry holds counters. It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	counters map[string]*atomic.Int64
	// labels keeps each counter's name and label pairs, for Each.
	labels map[string]Labelled
	// meters are the task and store meters (meters.go), under mu too.
	meters meters
}

// Labelled is a counter's name and its label pairs (key, value, ...) in
// the order first given.
type Labelled struct {
	Name   string
	Labels []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{counters: map[string]*atomic.Int64{}, labels: map[string]Labelled{}}
}

// Counter returns the counter for name and label pairs ("reason", "late"),
// creating it at zero.
func (r *Registry) Counter(name string, labels ...string) *atomic.Int64 {
	id := ID(name, labels...)
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.counters[id]
	if !ok {
		c = new(atomic.Int64)
		r.counters[id] = c
		r.labels[id] = Labelled{Name: name, Labels: slices.Clone(labels)}
	}
	return c
}

// Value reads a counter without creating it.
func (r *Registry) Value(name string, labels ...string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.counters[ID(name, labels...)]; ok {
		return c.Load()
	}
	return 0
}

// Snapshot returns every counter by ID, sorted keys available via
// slices.Sorted(maps.Keys(...)).
func (r *Registry) Snapshot() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.counters))
	for k, c := range r.counters {
		out[k] = c.Load()
	}
	return out
}

// Each calls fn for every counter with its name, label pairs and value,
// in no particular order. fn must not call back into r.
func (r *Registry) Each(fn func(l Labelled, v int64)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.counters {
		fn(r.labels[id], c.Load())
	}
}

// Label returns the value of label key in pairs, "" when absent.
func Label(pairs []string, key string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == key {
			return pairs[i+1]
		}
	}
	return ""
}

// Names returns the counter IDs in sorted order.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.Snapshot()))
}

// ID renders a counter's identity as name{k="v",...} with labels sorted by
// key, the form Prometheus users read.
func ID(name string, labels ...string) string {
	if len(labels) < 2 {
		return name
	}
	type kv struct{ k, v string }
	var pairs []kv
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, kv{labels[i], labels[i+1]})
	}
	slices.SortFunc(pairs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.k)
		b.WriteString(`="`)
		b.WriteString(p.v)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
