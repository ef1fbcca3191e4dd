package topology

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// NodeKind is what a node does.
type NodeKind int

const (
	SourceNode NodeKind = iota
	ProcessorNode
	SinkNode
)

func (k NodeKind) String() string {
	switch k {
	case SourceNode:
		return "Source"
	case SinkNode:
		return "Sink"
	}
	return "Processor"
}

// Node is one node of a topology. Parents are as added; Children are filled
// in, in the order children were added, by Build and Describe.
type Node struct {
	Name     string
	Kind     NodeKind
	Parents  []string
	Children []string
	// Source is set for source nodes.
	Source *SourceSpec
	// Supplier and Stores are set for processor nodes.
	Supplier processor.Supplier
	Stores   []string
	// Sink is set for sink nodes.
	Sink *SinkSpec
	// Boundary is the boundary a sink feeds or a source reads, or nil.
	Boundary *Boundary
	// Global marks the source and processor of a global store.
	Global bool
	// EventTime says why the node needs a moving watermark ("window",
	// "suppress", "stream-stream join", "event-time timer", "stream-time
	// punctuator"), or is "" when it does not.
	EventTime string
	// Timers is set by Build on a timer-aware processor (one implementing
	// OnTimer): its timer store and resolved timer key serde.
	Timers *TimerSpec
	// Subtopology is assigned by Build.
	Subtopology int
	order       int
}

// Boundary is an in-memory re-key point between two sub-topologies.
type Boundary struct {
	// Topic is the name records cross under: "<name>-repartition", the
	// repartition topic Kafka Streams would use, which keeps names
	// familiar and leaves room for a real topic later.
	Topic      string
	SinkNode   string
	SourceNode string
	KeySerde   serde.Any
	ValueSerde serde.Any
	// Partitions is the explicit partition count of a repartition(), or 0.
	Partitions int32
	// Partitioner is a custom partitioner of a repartition(), or nil; lanes
	// behind it are not picked by hashing the key.
	Partitioner Partitioner
	// InMemoryOnly, when set, says why this boundary cannot cross
	// through a repartition topic: Build refuses
	// stoatflow.topology.rekey=topic with it.
	InMemoryOnly string
	// Joins, when set, is the Topic of another boundary into the same
	// sub-topology whose repartition topic this one's records travel
	// in under stoatflow.topology.rekey=topic: the other boundary's
	// source reads both, so that records of one key from the two keep
	// the order they were written in (Kafka's order within a
	// partition), and this boundary's source reads nothing. Both must
	// have one key serde, one partitioner and one value serde that
	// reads the other's records. In memory it changes nothing.
	Joins string
}

type storeEntry struct {
	builder    state.StoreBuilder
	processors []string
	global     bool
}

type copartition struct {
	node    string
	sources []string
}

// Topology is a graph under construction. Its methods record errors instead
// of returning them, so that additions chain; Build reports them all.
type Topology struct {
	nodes        map[string]*Node
	order        []string
	stores       map[string]*storeEntry
	storeOrder   []string
	boundaries   []*Boundary
	copartitions []copartition
	errs         []error
	index        int
}

// New returns an empty topology.
func New() *Topology {
	return &Topology{nodes: map[string]*Node{}, stores: map[string]*storeEntry{}}
}

// NextIndex returns the next number for a generated name; the DSL names
// nodes PREFIX-0000000007 as Kafka Streams does, so that names (and the
// changelog topics derived from store names) match an application ported
// from Kafka Streams.
func (t *Topology) NextIndex() int {
	i := t.index
	t.index++
	return i
}

// GeneratedName returns prefix followed by the next index in ten digits.
func (t *Topology) GeneratedName(prefix string) string {
	return fmt.Sprintf("%s%010d", prefix, t.NextIndex())
}

func (t *Topology) fail(node, format string, args ...any) {
	t.errs = append(t.errs, &Error{Node: node, Reason: fmt.Sprintf(format, args...)})
}

func (t *Topology) add(n *Node) *Topology {
	if n.Name == "" {
		t.fail("", "a %s node has an empty name", n.Kind)
		return t
	}
	if _, dup := t.nodes[n.Name]; dup {
		t.fail(n.Name, "a node with this name already exists")
		return t
	}
	n.order = len(t.order)
	t.nodes[n.Name] = n
	t.order = append(t.order, n.Name)
	return t
}

// AddSource adds a source node reading topics.
func (t *Topology) AddSource(name string, spec SourceSpec, topics ...string) *Topology {
	if len(topics) > 0 {
		spec.Topics = topics
	}
	if len(spec.Topics) == 0 && spec.Pattern == nil {
		t.fail(name, "source has no topics")
	}
	s := spec
	return t.add(&Node{Name: name, Kind: SourceNode, Source: &s})
}

// AddSourcePattern adds a source node reading every topic matching pattern.
func (t *Topology) AddSourcePattern(name string, spec SourceSpec, pattern *regexp.Regexp) *Topology {
	spec.Topics = nil
	spec.Pattern = pattern
	if pattern == nil {
		t.fail(name, "source has a nil pattern")
	}
	s := spec
	return t.add(&Node{Name: name, Kind: SourceNode, Source: &s})
}

// AddProcessor adds a processor fed by parents.
func (t *Topology) AddProcessor(name string, supplier processor.Supplier, parents ...string) *Topology {
	if supplier == nil {
		t.fail(name, "processor has no supplier")
	}
	if len(parents) == 0 {
		t.fail(name, "processor has no parent")
	}
	return t.add(&Node{Name: name, Kind: ProcessorNode, Supplier: supplier, Parents: parents})
}

// AddSink adds a sink writing to topic.
func (t *Topology) AddSink(name string, spec SinkSpec, topic string, parents ...string) *Topology {
	spec.Topic = topic
	if topic == "" && spec.Chooser == nil {
		t.fail(name, "sink has no topic")
	}
	if len(parents) == 0 {
		t.fail(name, "sink has no parent")
	}
	s := spec
	return t.add(&Node{Name: name, Kind: SinkNode, Sink: &s, Parents: parents})
}

// AddSinkChooser adds a sink that picks its topic per record.
func (t *Topology) AddSinkChooser(name string, spec SinkSpec, chooser TopicChooser, parents ...string) *Topology {
	spec.Topic = ""
	spec.Chooser = chooser
	if chooser == nil {
		t.fail(name, "sink has a nil topic chooser")
	}
	if len(parents) == 0 {
		t.fail(name, "sink has no parent")
	}
	s := spec
	return t.add(&Node{Name: name, Kind: SinkNode, Sink: &s, Parents: parents})
}

// AddBoundary adds a re-key boundary after parents (one, but for a
// foreign-key join's response, which two processors send): a sink node
// sinkName and a source node sourceName, joined in memory under topic. It
// returns the Boundary, which callers may refine (partitions, partitioner)
// before Build.
func (t *Topology) AddBoundary(sinkName, sourceName, topic string, keySerde, valueSerde serde.Any, parents ...string) *Boundary {
	b := &Boundary{Topic: topic, SinkNode: sinkName, SourceNode: sourceName, KeySerde: keySerde, ValueSerde: valueSerde}
	if len(parents) == 0 {
		t.fail(sinkName, "boundary sink has no parent")
	}
	t.add(&Node{Name: sinkName, Kind: SinkNode, Sink: &SinkSpec{Topic: topic, KeySerde: keySerde, ValueSerde: valueSerde}, Parents: slices.Clone(parents), Boundary: b})
	t.add(&Node{Name: sourceName, Kind: SourceNode, Source: &SourceSpec{Topics: []string{topic}, KeySerde: keySerde, ValueSerde: valueSerde}, Boundary: b})
	t.boundaries = append(t.boundaries, b)
	return b
}

// AddStateStore adds a store and connects it to processors.
func (t *Topology) AddStateStore(b state.StoreBuilder, processors ...string) *Topology {
	if b == nil {
		t.fail("", "a nil store builder was added")
		return t
	}
	if _, dup := t.stores[b.Name()]; dup {
		t.fail(b.Name(), "a state store with this name already exists")
		return t
	}
	t.stores[b.Name()] = &storeEntry{builder: b}
	t.storeOrder = append(t.storeOrder, b.Name())
	return t.ConnectProcessorAndStateStores("", b.Name()).connectMany(b.Name(), processors)
}

func (t *Topology) connectMany(store string, processors []string) *Topology {
	for _, p := range processors {
		t.ConnectProcessorAndStateStores(p, store)
	}
	return t
}

// ConnectProcessorAndStateStores gives a processor access to stores. The
// connection is checked by Build, so processors and stores may be added in
// any order.
func (t *Topology) ConnectProcessorAndStateStores(processorName string, stores ...string) *Topology {
	if processorName == "" {
		return t
	}
	for _, s := range stores {
		e, ok := t.stores[s]
		if !ok {
			// Remember the connection; Build reports the missing store.
			e = &storeEntry{}
			t.stores[s] = e
			t.storeOrder = append(t.storeOrder, s)
		}
		e.processors = append(e.processors, processorName)
	}
	return t
}

// AddGlobalStore adds a store that every task can read, kept up to date by
// processorName from the whole of topic (all partitions, from the
// beginning). Global stores are never changelogged: the topic is their log.
func (t *Topology) AddGlobalStore(b state.StoreBuilder, sourceName string, spec SourceSpec, topic string, processorName string, supplier processor.Supplier) *Topology {
	spec.Topics = []string{topic}
	spec.Reset = ResetEarliest
	s := spec
	t.add(&Node{Name: sourceName, Kind: SourceNode, Source: &s, Global: true})
	t.add(&Node{Name: processorName, Kind: ProcessorNode, Supplier: supplier, Parents: []string{sourceName}, Global: true})
	if b == nil {
		t.fail(processorName, "global store builder is nil")
		return t
	}
	if b.LoggingEnabled() {
		t.fail(b.Name(), "a global store must have logging disabled: its source topic is its changelog")
	}
	if _, dup := t.stores[b.Name()]; dup {
		t.fail(b.Name(), "a state store with this name already exists")
		return t
	}
	t.stores[b.Name()] = &storeEntry{builder: b, processors: []string{processorName}, global: true}
	t.storeOrder = append(t.storeOrder, b.Name())
	return t
}

// RequireEventTime marks node as driven by the watermark, for reason; Build
// refuses it where no watermark can move.
func (t *Topology) RequireEventTime(node, reason string) *Topology {
	if n, ok := t.nodes[node]; ok {
		n.EventTime = reason
	} else {
		t.fail(node, "marked as needing event time, but no such node exists")
	}
	return t
}

// Copartition declares that the sources (or boundary sources) feeding node
// must be co-partitioned: equal keys must meet on one lane.
func (t *Topology) Copartition(node string, sources ...string) *Topology {
	t.copartitions = append(t.copartitions, copartition{node: node, sources: sources})
	return t
}

// Node returns a node by name, for builders that refine a node after adding
// it (the DSL attaches stores this way).
func (t *Topology) Node(name string) (*Node, bool) {
	n, ok := t.nodes[name]
	return n, ok
}

// Err returns the errors recorded so far, joined, or nil.
func (t *Topology) Err() error {
	if len(t.errs) == 0 {
		return nil
	}
	return joinErrors(t.errs)
}

// Fail records an error against a node; the DSL reports misuse this way.
func (t *Topology) Fail(node string, err error) {
	t.errs = append(t.errs, &Error{Node: node, Reason: err.Error(), Err: err})
}

// Error is a topology that cannot run, naming the node (or store) at fault.
type Error struct {
	Node   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Node == "" {
		return "topology: " + e.Reason
	}
	return fmt.Sprintf("topology: node %s: %s", e.Node, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }
