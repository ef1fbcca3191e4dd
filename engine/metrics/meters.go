package metrics

import "slices"

// Node kinds of a NodeMeter.
const (
	KindSource    = "source"
	KindProcessor = "processor"
	KindSink      = "sink"
)

// Store operations of a StoreMeter, Kafka Streams' state-store metric
// names (put, get, delete, range, ...).
const (
	OpPut = iota
	OpPutIfAbsent
	OpPutAll
	OpGet
	OpDelete
	OpRange
	OpPrefixScan
	OpFlush
	NumOps
)

// OpNames are the operations' names, by Op.
var OpNames = [NumOps]string{"put", "put_if_absent", "put_all", "get", "delete", "range", "prefix_scan", "flush"}

// TaskMeter is the meters of one task instance. A task runs in several
// lanes at once (each lane its shard of the task's keys), and each
// instance writes meters of its own, so that no two lanes write one
// cache line on the record path; a read sums the instances of an id.
// Instances are claimed and released (ClaimTask, Release), so that a
// rebalance's new instance continues the counts of the one it replaces
// and the exported counters stay monotonic.
type TaskMeter struct {
	ID          string
	Subtopology int
	// Process counts every record the task processed and times the
	// sampled ones, from the source's decoding to the return of the last
	// node it reached.
	Process Meter
	// Nodes are the task's nodes, in the order given to ClaimTask.
	Nodes []*NodeMeter
	inUse bool
}

// NodeMeter is one node's meters in a task instance.
type NodeMeter struct {
	Name, Kind string
	// Process counts the records the node processed and times the
	// sampled ones, the work of the nodes it forwards to included (as
	// Kafka Streams' processor-node process-latency does); kept at
	// debug level only.
	Process Meter
	// E2E is the sampled records' end-to-end latency at the node: the
	// wall clock when the node processed the record less the record's
	// timestamp (Kafka Streams' record-e2e-latency), at sources and sinks.
	E2E Timing
}

// NodeSpec names a node for ClaimTask.
type NodeSpec struct{ Name, Kind string }

// StoreMeter is the operation meters of one store instance (a store of a
// task in a lane), claimed like a TaskMeter.
type StoreMeter struct {
	Store string
	Ops   [NumOps]Meter
	inUse bool
}

// meters are a Registry's task and store meters, in the order claimed;
// byID indexes the task meters, so that a rebalance's claims of many tasks
// do not scan every instance each.
type meters struct {
	debug  bool
	tasks  []*TaskMeter
	byID   map[string][]*TaskMeter
	stores []*StoreMeter
}

// SetDebug turns on the debug level's meters (processor nodes, stores)
// for the tasks made after it: stoatflow.metrics.recording.level=debug.
func (r *Registry) SetDebug(on bool) {
	r.mu.Lock()
	r.meters.debug = on
	r.mu.Unlock()
}

// Debug says the debug level's meters are on.
func (r *Registry) Debug() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meters.debug
}

// ClaimTask returns a task instance's meters: a released instance of id
// with the same nodes, or a new one.
func (r *Registry) ClaimTask(id string, sub int, nodes []NodeSpec) *TaskMeter {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.meters.byID[id] {
		if !m.inUse && m.Subtopology == sub && sameNodes(m.Nodes, nodes) {
			m.inUse = true
			return m
		}
	}
	m := &TaskMeter{ID: id, Subtopology: sub, inUse: true}
	for _, n := range nodes {
		m.Nodes = append(m.Nodes, &NodeMeter{Name: n.Name, Kind: n.Kind})
	}
	if r.meters.byID == nil {
		r.meters.byID = map[string][]*TaskMeter{}
	}
	r.meters.tasks = append(r.meters.tasks, m)
	r.meters.byID[id] = append(r.meters.byID[id], m)
	return m
}

func sameNodes(have []*NodeMeter, want []NodeSpec) bool {
	return slices.EqualFunc(have, want, func(a *NodeMeter, b NodeSpec) bool { return a.Name == b.Name && a.Kind == b.Kind })
}

// ReleaseTask hands m back for the next instance of its task.
func (r *Registry) ReleaseTask(m *TaskMeter) {
	r.mu.Lock()
	m.inUse = false
	r.mu.Unlock()
}

// ClaimStore returns a store instance's meters, a released one of store
// or a new one.
func (r *Registry) ClaimStore(store string) *StoreMeter {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.meters.stores {
		if !m.inUse && m.Store == store {
			m.inUse = true
			return m
		}
	}
	m := &StoreMeter{Store: store, inUse: true}
	r.meters.stores = append(r.meters.stores, m)
	return m
}

// ReleaseStore hands m back for the next instance of its store.
func (r *Registry) ReleaseStore(m *StoreMeter) {
	r.mu.Lock()
	m.inUse = false
	r.mu.Unlock()
}

// EachTask calls fn for every task instance's meters ever claimed, in
// use or not (their counts are part of the totals). fn must not call
// back into r; it may read the meters (their Timing locks are taken
// under r's, never the other way round).
func (r *Registry) EachTask(fn func(m *TaskMeter)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.meters.tasks {
		fn(m)
	}
}

// EachStore is EachTask for the store meters.
func (r *Registry) EachStore(fn func(m *StoreMeter)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.meters.stores {
		fn(m)
	}
}
