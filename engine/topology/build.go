package topology

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// Built is a validated topology, split into sub-topologies, with defaults
// applied: every source, sink and boundary has serdes and every source a
// timestamp extractor. It is immutable; runtimes instantiate it.
type Built struct {
	ApplicationID string
	Config        config.Config
	Nodes         map[string]*Node
	Subtopologies []*Subtopology
	// Global is the sub-topology that maintains global stores, or nil.
	Global *Subtopology
	Stores map[string]*StoreInfo
	// Boundaries by topic: the in-memory re-key boundaries
	// (stoatflow.topology.rekey=memory, the default).
	Boundaries map[string]*Boundary
	// Repartitions are the re-key boundaries that cross through a topic
	// (stoatflow.topology.rekey=topic), in topic order.
	Repartitions []Repartition
	// SourceTopics maps every source topic (boundary topics included) to
	// its source node.
	SourceTopics map[string]string
	// EventTime says whether the runtime tracks watermarks for this
	// topology: under AUTO coordination, when a node needs event time or a
	// source declares a watermark strategy; always under ENABLED.
	EventTime bool
	// DefaultWatermark is the strategy of sources that declare none.
	DefaultWatermark watermark.Strategy
	// Warnings are what validation rules set to warn found; runtimes log
	// them when they start.
	Warnings []Warning
	// Copartitions are the co-partition groups: the source nodes whose
	// records must meet in one task (a join's inputs), by the node that
	// needs them to. Their topics' partition counts are known only to a
	// runtime, which checks them.
	Copartitions []Copartition
}

// Copartition is a co-partition group: Node needs the records of Sources
// (source node names) with equal keys to meet in one task.
type Copartition struct {
	Node    string
	Sources []string
}

// Watermark is the event-time strategy of a source node.
func (b *Built) Watermark(source *Node) watermark.Strategy {
	if source.Source != nil && source.Source.Watermark != nil {
		return *source.Source.Watermark
	}
	return b.DefaultWatermark
}

// Subtopology is one connected part of the topology.
type Subtopology struct {
	ID     int
	Global bool
	// Nodes in topological order: every node after its parents.
	Nodes   []*Node
	Sources []*Node
	Stores  []string
}

// StoreInfo is a store's place in a built topology.
type StoreInfo struct {
	Builder     state.StoreBuilder
	Processors  []string
	Subtopology int
	Global      bool
	// ChangelogTopic is "<application.id>-<store>-changelog", or "" when
	// logging is disabled.
	ChangelogTopic string
}

// ChangelogTopic is the changelog topic name Kafka Streams uses.
func ChangelogTopic(appID, store string) string {
	return appID + "-" + store + "-changelog"
}

// SourceNodeFor returns the source node reading topic, matching patterns
// when no source names the topic.
func (b *Built) SourceNodeFor(topic string) (*Node, bool) {
	if name, ok := b.SourceTopics[topic]; ok {
		return b.Nodes[name], true
	}
	for _, st := range append(slices.Clone(b.Subtopologies), b.Global) {
		if st == nil {
			continue
		}
		for _, s := range st.Sources {
			if s.Source.Pattern != nil && s.Source.Pattern.MatchString(topic) {
				return s, true
			}
		}
	}
	return nil, false
}

// Build validates t against cfg and returns the runnable form. All problems
// found are reported together, each naming its node.
func (t *Topology) Build(cfg config.Config) (*Built, error) {
	errs := slices.Clone(t.errs)
	fail := func(node, format string, args ...any) {
		errs = append(errs, &Error{Node: node, Reason: fmt.Sprintf(format, args...)})
	}
	appID := cfg.String(config.ApplicationID)
	if appID == "" {
		errs = append(errs, errors.New("topology: config application.id is not set"))
	}

	nodes, stores := t.shape(appID, fail)
	if cyc := findCycle(t.order, nodes); cyc != nil {
		fail(cyc[0], "topology has a cycle: %s", strings.Join(cyc, " -> "))
	}

	// Defaults for serdes and extractors.
	defKey, defValue := defaultSerde(cfg, config.DefaultKeySerde, &errs), defaultSerde(cfg, config.DefaultValueSerde, &errs)
	defExtractor, err := ExtractorByName(cfg.String(config.DefaultTimestampExtractor))
	if err != nil {
		errs = append(errs, fmt.Errorf("topology: config %s: %w", config.DefaultTimestampExtractor, err))
		defExtractor = RecordTimestamp
	}
	for _, name := range t.order {
		n := nodes[name]
		switch n.Kind {
		case SourceNode:
			if n.Source.KeySerde == nil {
				if n.Source.KeySerde = defKey; defKey == nil {
					fail(name, "source has no key serde and config %s is not set", config.DefaultKeySerde)
				}
			}
			if n.Source.ValueSerde == nil {
				if n.Source.ValueSerde = defValue; defValue == nil {
					fail(name, "source has no value serde and config %s is not set", config.DefaultValueSerde)
				}
			}
			if n.Source.Extractor == nil {
				n.Source.Extractor = defExtractor
			}
			if len(n.Children) == 0 {
				fail(name, "source has no children")
			}
		case SinkNode:
			if n.Sink.KeySerde == nil {
				if n.Sink.KeySerde = defKey; defKey == nil {
					fail(name, "sink has no key serde and config %s is not set", config.DefaultKeySerde)
				}
			}
			if n.Sink.ValueSerde == nil {
				if n.Sink.ValueSerde = defValue; defValue == nil {
					fail(name, "sink has no value serde and config %s is not set", config.DefaultValueSerde)
				}
			}
		}
	}

	// Serdes that read configuration (a topology file's Avro serde and the
	// schema registry) become what the configuration makes of them.
	configure := func(name string, s serde.Any, isKey bool) serde.Any {
		c, ok := s.(serde.Configurable)
		if !ok {
			return s
		}
		out, err := c.Configure(cfg, isKey)
		if err != nil {
			what := "value"
			if isKey {
				what = "key"
			}
			fail(name, "%s serde: %v", what, err)
			return s
		}
		return out
	}
	for _, name := range t.order {
		switch n := nodes[name]; n.Kind {
		case SourceNode:
			n.Source.KeySerde, n.Source.ValueSerde = configure(name, n.Source.KeySerde, true), configure(name, n.Source.ValueSerde, false)
		case SinkNode:
			n.Sink.KeySerde, n.Sink.ValueSerde = configure(name, n.Sink.KeySerde, true), configure(name, n.Sink.ValueSerde, false)
		}
	}

	// Boundaries: the source side takes the sink side's final serdes.
	boundaries := map[string]*Boundary{}
	for _, b := range t.boundaries {
		sink, src := nodes[b.SinkNode], nodes[b.SourceNode]
		if sink == nil || src == nil {
			continue
		}
		nb := *b
		nb.KeySerde, nb.ValueSerde = sink.Sink.KeySerde, sink.Sink.ValueSerde
		src.Source.KeySerde, src.Source.ValueSerde = nb.KeySerde, nb.ValueSerde
		sink.Boundary, src.Boundary = &nb, &nb
		boundaries[b.Topic] = &nb
	}

	sourceTopics := map[string]string{}
	for _, name := range t.order {
		n := nodes[name]
		if n.Kind != SourceNode {
			continue
		}
		for _, topic := range n.Source.Topics {
			if other, dup := sourceTopics[topic]; dup {
				fail(name, "topic %s is already read by source %s", topic, other)
				continue
			}
			sourceTopics[topic] = name
		}
	}

	// A topology that reads only tables keeps their records as its time.
	onlyTables := true
	for _, name := range t.order {
		if n := nodes[name]; n.Kind == SourceNode && !n.Global && !n.Source.Table && n.Boundary == nil {
			onlyTables = false
		}
	}
	if onlyTables {
		for _, name := range t.order {
			if n := nodes[name]; n.Kind == SourceNode {
				n.Source.Table = false
			}
		}
	}

	// Timer-aware processors get their timer stores before grouping, so the
	// stores land in their sub-topologies like any other.
	warnings := t.resolveTimers(appID, cfg, nodes, stores, defKey, &errs, fail)

	subs, global := group(t.order, nodes, stores)
	for _, st := range append(slices.Clone(subs), global) {
		if st == nil {
			continue
		}
		for _, s := range st.Stores {
			stores[s].Subtopology = st.ID
		}
	}
	for _, c := range t.copartitions {
		checkCopartition(c, nodes, fail)
	}
	if len(errs) == 0 {
		for _, name := range t.order {
			if n := nodes[name]; n.Kind == ProcessorNode {
				probe(n, stores, appID, cfg, fail)
			}
		}
	}
	eventTime, defWatermark := checkEventTime(t.order, nodes, cfg, &errs, fail)
	rekey, err := cfg.OneOf(config.TopologyRekey, config.RekeyMemory, config.RekeyTopic)
	if err != nil {
		errs = append(errs, fmt.Errorf("topology: %w", err))
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	checkJoins(boundaries, nodes, fail)
	if rekey == config.RekeyTopic {
		for _, name := range slices.Sorted(maps.Keys(boundaries)) {
			if why := boundaries[name].InMemoryOnly; why != "" {
				fail(boundaries[name].SinkNode, "%s=%s cannot be used: %s; run one instance with %s", config.TopologyRekey, config.RekeyTopic, why, config.RekeyMemory)
			}
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	var repartitions []Repartition
	if rekey == config.RekeyTopic {
		repartitions = throughTopics(appID, boundaries, nodes, sourceTopics)
		boundaries = map[string]*Boundary{}
	}
	return &Built{
		ApplicationID:    appID,
		Config:           cfg,
		Nodes:            nodes,
		Subtopologies:    subs,
		Global:           global,
		Stores:           stores,
		Boundaries:       boundaries,
		SourceTopics:     sourceTopics,
		EventTime:        eventTime,
		DefaultWatermark: defWatermark,
		Warnings:         warnings,
		Copartitions:     copartitions(t.copartitions),
		Repartitions:     repartitions,
	}, nil
}

// Repartition is a re-key boundary that crosses through a Kafka topic
// (stoatflow.topology.rekey=topic): its sink writes Topic, its source
// reads it, like any sink and source.
type Repartition struct {
	// Topic is <application.id>-<name>-repartition, Kafka Streams' name.
	Topic string
	// SinkNodes write the topic: one, or more when other boundaries join
	// this one's topic (Boundary.Joins); they may sit in different
	// sub-topologies.
	SinkNodes  []string
	SourceNode string
	// Partitions is the declared count (Repartitioned.withNumberOfPartitions),
	// or 0: the runtime then takes its upstream's.
	Partitions int32
}

// checkJoins checks every Boundary.Joins: the boundary it names exists,
// joins none itself, feeds the same sub-topology and carries keys the
// same way, so that its source can read both boundaries' records.
func checkJoins(boundaries map[string]*Boundary, nodes map[string]*Node, fail func(string, string, ...any)) {
	for _, name := range slices.Sorted(maps.Keys(boundaries)) {
		b := boundaries[name]
		if b.Joins == "" {
			continue
		}
		to := boundaries[b.Joins]
		switch {
		case to == nil:
			fail(b.SinkNode, "boundary %s joins boundary %s, which the topology does not have", b.Topic, b.Joins)
		case to.Joins != "":
			fail(b.SinkNode, "boundary %s joins boundary %s, which joins %s itself", b.Topic, b.Joins, to.Joins)
		case nodes[b.SourceNode].Subtopology != nodes[to.SourceNode].Subtopology:
			fail(b.SinkNode, "boundary %s joins boundary %s, which feeds another sub-topology", b.Topic, b.Joins)
		case b.Partitions != to.Partitions || b.Partitioner != nil || to.Partitioner != nil || !serde.Same(b.KeySerde, to.KeySerde):
			fail(b.SinkNode, "boundary %s joins boundary %s, which places keys differently (partitions, partitioner or key serde)", b.Topic, b.Joins)
		}
	}
}

// throughTopics turns every boundary into a sink and a source of a
// repartition topic, named as Kafka Streams names it, with the boundary's
// serdes and partitioner (murmur2 of the serialized key when it has none,
// Kafka's default). The sub-topologies do not change: a boundary already
// splits them where a topic would. Sources reading the topic are then
// ordinary sources, whose partitions the consumer group spreads over the
// instances. An empty appID leaves the application id out of the names,
// as Kafka Streams' TopologyDescription does (Topology.DescribeWith).
func throughTopics(appID string, boundaries map[string]*Boundary, nodes map[string]*Node, sourceTopics map[string]string) []Repartition {
	var out []Repartition
	at := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(boundaries)) {
		b := boundaries[name]
		if b.Joins != "" {
			continue
		}
		topic := b.Topic
		if appID != "" {
			topic = appID + "-" + b.Topic
		}
		sink, src := nodes[b.SinkNode], nodes[b.SourceNode]
		sink.Sink.Topic = topic
		sink.Sink.Partitioner = b.Partitioner
		src.Source.Topics = []string{topic}
		sink.Boundary, src.Boundary = nil, nil
		delete(sourceTopics, b.Topic)
		sourceTopics[topic] = src.Name
		at[b.Topic] = len(out)
		out = append(out, Repartition{Topic: topic, SinkNodes: []string{sink.Name}, SourceNode: src.Name, Partitions: b.Partitions})
	}
	// A boundary that joins another writes that one's topic; its own
	// source reads nothing (checkJoins made sure the other's can read
	// its records).
	for _, name := range slices.Sorted(maps.Keys(boundaries)) {
		b := boundaries[name]
		if b.Joins == "" {
			continue
		}
		rp := &out[at[b.Joins]]
		sink, src := nodes[b.SinkNode], nodes[b.SourceNode]
		sink.Sink.Topic = rp.Topic
		src.Source.Topics = nil
		sink.Boundary, src.Boundary = nil, nil
		delete(sourceTopics, b.Topic)
		rp.SinkNodes = append(rp.SinkNodes, sink.Name)
	}
	return out
}

// checkEventTime validates the sources' event-time declarations, refuses
// nodes that need a moving watermark where none can move, and derives
// whether the topology tracks event time at all.
func checkEventTime(order []string, nodes map[string]*Node, cfg config.Config, errs *[]error, fail func(string, string, ...any)) (bool, watermark.Strategy) {
	bound, err := cfg.BoundedInt(config.WatermarkMaxOutOfOrdernessMs, 10_000)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("topology: %w", err))
	}
	def := watermark.ForBoundedOutOfOrderness(time.Duration(bound) * time.Millisecond)
	mode, err := cfg.OneOf(config.TimestampCoordinationMode, config.CoordinationAuto, config.CoordinationEnabled, config.CoordinationDisabled)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("topology: %w", err))
	}

	declared := false
	var frozen []string // sources whose watermark never moves
	type alignmentDecl struct {
		watermark.Alignment
		source string
	}
	groups := map[string]alignmentDecl{}
	for _, name := range order {
		n := nodes[name]
		if n.Kind != SourceNode || n.Global || n.Source.Watermark == nil {
			continue
		}
		declared = true
		if err := n.Source.Watermark.Validate(name); err != nil {
			fail(name, "%v", err)
		}
		if !n.Source.Watermark.AdvancesWatermark() {
			frozen = append(frozen, name)
		}
		if a := n.Source.Watermark.AlignmentGroup(); a != nil {
			if first, ok := groups[a.Group]; ok && (first.MaxDrift != a.MaxDrift || first.UpdateInterval != a.UpdateInterval) {
				fail(name, "alignment group %s: maximum drift %s and update interval %s differ from source %s's %s and %s; every member of a group must declare the same",
					a.Group, a.MaxDrift, a.UpdateInterval, first.source, first.MaxDrift, first.UpdateInterval)
			} else if !ok {
				groups[a.Group] = alignmentDecl{Alignment: *a, source: name}
			}
		}
	}
	needs := false
	for _, name := range order {
		n := nodes[name]
		if n.EventTime == "" {
			continue
		}
		needs = true
		switch {
		case mode == config.CoordinationDisabled:
			fail(name, "%s needs event time, but %s is DISABLED", n.EventTime, config.TimestampCoordinationMode)
		case len(frozen) > 0:
			fail(name, "%s needs event time, but source %s declares noWatermarks(): the global watermark is a minimum over every source, so it would never move and nothing would close",
				n.EventTime, strings.Join(frozen, ", "))
		case !readsATopic(name, nodes):
			fail(name, "%s needs event time, but no Kafka topic feeds it, so no watermark can move", n.EventTime)
		}
	}
	switch mode {
	case config.CoordinationEnabled:
		return true, def
	case config.CoordinationDisabled:
		return false, def
	}
	return needs || declared, def
}

// readsATopic reports whether a Kafka topic feeds node: some ancestor,
// followed back across in-memory boundaries, is a source that is not a
// boundary's.
func readsATopic(name string, nodes map[string]*Node) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(name string) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		n, ok := nodes[name]
		if !ok {
			return false
		}
		if n.Kind == SourceNode {
			if n.Boundary == nil {
				return !n.Global
			}
			return walk(n.Boundary.SinkNode)
		}
		for _, p := range n.Parents {
			if walk(p) {
				return true
			}
		}
		return false
	}
	return walk(name)
}

// shape copies the nodes (so that Build never mutates t: a topology can be
// built many times, the driver builds one per test), links children to
// parents and stores to processors, reporting what does not resolve.
func (t *Topology) shape(appID string, fail func(string, string, ...any)) (map[string]*Node, map[string]*StoreInfo) {
	nodes := make(map[string]*Node, len(t.nodes))
	for name, n := range t.nodes {
		c := *n
		c.Children = nil
		c.Parents = slices.Clone(n.Parents)
		c.Stores = nil
		if n.Source != nil {
			s := *n.Source
			c.Source = &s
		}
		if n.Sink != nil {
			s := *n.Sink
			c.Sink = &s
		}
		nodes[name] = &c
	}
	for _, name := range t.order {
		n := nodes[name]
		for _, p := range n.Parents {
			parent, ok := nodes[p]
			switch {
			case !ok:
				fail(name, "parent %s does not exist", p)
			case parent.Kind == SinkNode:
				fail(name, "parent %s is a sink, which has no children", p)
			default:
				parent.Children = append(parent.Children, name)
			}
		}
	}
	stores := map[string]*StoreInfo{}
	for _, s := range t.storeOrder {
		e := t.stores[s]
		if e.builder == nil {
			for _, p := range e.processors {
				fail(p, "connected to state store %s, which was never added", s)
			}
			continue
		}
		info := &StoreInfo{Builder: e.builder, Global: e.global, Processors: slices.Clone(e.processors)}
		if e.builder.LoggingEnabled() && !e.global {
			info.ChangelogTopic = ChangelogTopic(appID, s)
		}
		for _, p := range e.processors {
			n, ok := nodes[p]
			switch {
			case !ok:
				fail(s, "state store is connected to processor %s, which does not exist", p)
			case n.Kind != ProcessorNode:
				fail(s, "state store is connected to %s, which is a %s, not a processor", p, n.Kind)
			default:
				n.Stores = append(n.Stores, s)
			}
		}
		stores[s] = info
	}
	return nodes, stores
}

func defaultSerde(cfg config.Config, key string, errs *[]error) serde.Any {
	name := cfg.String(key)
	if name == "" {
		return nil
	}
	s, err := serde.ByName(name)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("topology: config %s: %w", key, err))
		return nil
	}
	return s
}

// findCycle returns a cycle as a node path (first node repeated at the
// end), or nil. Boundary sinks lead to their boundary sources, because the
// engine forwards across them in memory and a loop there never drains.
func findCycle(order []string, nodes map[string]*Node) []string {
	const (
		unvisited = iota
		onStack
		done
	)
	mark := map[string]int{}
	var stack []string
	var cycle []string
	var visit func(string) bool
	next := func(n *Node) []string {
		if n.Kind == SinkNode && n.Boundary != nil {
			return []string{n.Boundary.SourceNode}
		}
		return n.Children
	}
	visit = func(name string) bool {
		mark[name] = onStack
		stack = append(stack, name)
		for _, c := range next(nodes[name]) {
			if _, ok := nodes[c]; !ok {
				continue
			}
			switch mark[c] {
			case onStack:
				i := slices.Index(stack, c)
				cycle = append(slices.Clone(stack[i:]), c)
				return true
			case unvisited:
				if visit(c) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		mark[name] = done
		return false
	}
	for _, name := range order {
		if mark[name] == unvisited && visit(name) {
			return cycle
		}
	}
	return nil
}

// group splits nodes into sub-topologies: connected components over parent
// edges and shared stores, numbered in the order of their first source's
// name, as Kafka Streams numbers them.
func group(order []string, nodes map[string]*Node, stores map[string]*StoreInfo) ([]*Subtopology, *Subtopology) {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		p, ok := parent[x]
		if !ok || p == x {
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	union := func(a, b string) {
		ra, rb := find(a), find(b)
		if ra != rb {
			parent[ra] = rb
		}
	}
	for _, name := range order {
		for _, p := range nodes[name].Parents {
			if _, ok := nodes[p]; ok {
				union(name, p)
			}
		}
	}
	for _, s := range stores {
		if s.Global {
			continue
		}
		for i := 1; i < len(s.Processors); i++ {
			if _, ok := nodes[s.Processors[i]]; ok {
				union(s.Processors[0], s.Processors[i])
			}
		}
	}

	var sources []string
	for _, name := range order {
		if nodes[name].Kind == SourceNode {
			sources = append(sources, name)
		}
	}
	slices.Sort(sources)
	ids := map[string]int{}
	var subs []*Subtopology
	var global *Subtopology
	for _, s := range sources {
		root := find(s)
		if _, seen := ids[root]; seen {
			continue
		}
		if nodes[s].Global {
			ids[root] = -1
			continue
		}
		ids[root] = len(subs)
		subs = append(subs, &Subtopology{ID: len(subs)})
	}
	for _, name := range topoOrder(order, nodes) {
		n := nodes[name]
		id, ok := ids[find(name)]
		if !ok {
			// A processor with no source upstream (its parents are missing,
			// already reported); give it a sub-topology of its own.
			id = len(subs)
			ids[find(name)] = id
			subs = append(subs, &Subtopology{ID: id})
		}
		var st *Subtopology
		if id == -1 {
			if global == nil {
				global = &Subtopology{ID: -1, Global: true}
			}
			st = global
		} else {
			st = subs[id]
		}
		n.Subtopology = id
		st.Nodes = append(st.Nodes, n)
		if n.Kind == SourceNode {
			st.Sources = append(st.Sources, n)
		}
		for _, s := range n.Stores {
			if !slices.Contains(st.Stores, s) {
				st.Stores = append(st.Stores, s)
			}
		}
	}
	for name, info := range stores {
		if info.Global && global != nil && !slices.Contains(global.Stores, name) {
			global.Stores = append(global.Stores, name)
		}
	}
	if global != nil {
		slices.Sort(global.Stores)
	}
	return subs, global
}

// topoOrder orders nodes so that every node follows its parents, breaking
// ties by insertion order; nodes on a cycle come last in insertion order.
func topoOrder(order []string, nodes map[string]*Node) []string {
	indeg := map[string]int{}
	for _, name := range order {
		for _, p := range nodes[name].Parents {
			if _, ok := nodes[p]; ok {
				indeg[name]++
			}
		}
	}
	var out []string
	placed := map[string]bool{}
	for len(out) < len(order) {
		progressed := false
		for _, name := range order {
			if placed[name] || indeg[name] > 0 {
				continue
			}
			placed[name] = true
			out = append(out, name)
			progressed = true
			for _, c := range nodes[name].Children {
				indeg[c]--
			}
		}
		if !progressed {
			for _, name := range order {
				if !placed[name] {
					placed[name] = true
					out = append(out, name)
				}
			}
		}
	}
	return out
}

func copartitions(cs []copartition) []Copartition {
	out := make([]Copartition, len(cs))
	for i, c := range cs {
		out[i] = Copartition{Node: c.node, Sources: slices.Clone(c.sources)}
	}
	return out
}

func checkCopartition(c copartition, nodes map[string]*Node, fail func(string, string, ...any)) {
	type side struct {
		name       string
		keySerde   serde.Any
		partitions int32
	}
	var sides []side
	for _, s := range c.sources {
		n, ok := nodes[s]
		if !ok || n.Source == nil {
			continue
		}
		sd := side{name: s, keySerde: n.Source.KeySerde}
		if n.Boundary != nil {
			sd.partitions = n.Boundary.Partitions
			if n.Boundary.Partitioner != nil {
				fail(c.node, "input %s is partitioned by a custom partitioner, so equal keys need not meet on one lane; join inputs must be partitioned by their key", s)
			}
		}
		sides = append(sides, sd)
	}
	for i := 1; i < len(sides); i++ {
		a, b := sides[0], sides[i]
		if a.partitions > 0 && b.partitions > 0 && a.partitions != b.partitions {
			fail(c.node, "inputs are not co-partitioned: %s has %d partitions, %s has %d", a.name, a.partitions, b.name, b.partitions)
		}
		if a.keySerde != nil && b.keySerde != nil && !serde.Same(a.keySerde, b.keySerde) {
			fail(c.node, "inputs are not co-partitioned: %s is keyed by serde %s and %s by serde %s, so equal keys would hash to different lanes; declare the same key serde on both",
				a.name, a.keySerde.Name(), b.name, b.keySerde.Name())
		}
	}
}

// probe instantiates a processor once and runs its Init against a context
// that records which stores it reaches, so that a processor using a store it
// is not connected to is refused at build time rather than at its first
// record.
func probe(n *Node, stores map[string]*StoreInfo, appID string, cfg config.Config, fail func(string, string, ...any)) {
	ctx := &probeContext{node: n, stores: stores, appID: appID, cfg: cfg}
	defer func() {
		if r := recover(); r != nil {
			fail(n.Name, "init panicked: %v", r)
		}
	}()
	p := n.Supplier()
	if p == nil {
		fail(n.Name, "supplier returned a nil processor")
		return
	}
	err := p.Init(ctx)
	for _, s := range ctx.unconnected {
		fail(n.Name, "uses state store %s but is not connected to it (connect it with ConnectProcessorAndStateStores or AddStateStore)", s)
	}
	if err != nil && len(ctx.unconnected) == 0 {
		fail(n.Name, "init: %v", err)
	}
	_ = p.Close()
	for _, s := range ctx.opened {
		_ = s.Close()
	}
}

type probeContext struct {
	node        *Node
	stores      map[string]*StoreInfo
	appID       string
	cfg         config.Config
	unconnected []string
	opened      []state.Store
}

func (c *probeContext) ApplicationID() string { return c.appID }
func (c *probeContext) TaskID() string        { return "probe" }
func (c *probeContext) NodeName() string      { return c.node.Name }
func (c *probeContext) RecordMetadata() (processor.RecordMetadata, bool) {
	return processor.RecordMetadata{}, false
}
func (c *probeContext) CurrentStreamTime() int64                     { return -1 }
func (c *probeContext) CurrentSystemTime() int64                     { return time.Now().UnixMilli() }
func (c *probeContext) Watermark() int64                             { return -1 }
func (c *probeContext) Floor() int64                                 { return -1 }
func (c *probeContext) IsLate() bool                                 { return false }
func (c *probeContext) Forward(processor.Record[any, any])           {}
func (c *probeContext) ForwardTo(processor.Record[any, any], string) {}
func (c *probeContext) Commit()                                      {}
func (c *probeContext) AppConfig() map[string]string                 { return c.cfg.Map() }

// Schedule records that a stream-time punctuator makes the node depend on
// event time.
func (c *probeContext) Schedule(_ time.Duration, typ processor.PunctuationType, _ processor.Punctuator) (processor.Cancellable, error) {
	if typ == processor.StreamTime && c.node.EventTime == "" {
		c.node.EventTime = "stream-time punctuator"
	}
	return noCancel{}, nil
}

func (c *probeContext) StateStore(name string) (any, error) {
	info, ok := c.stores[name]
	if !ok || (!info.Global && !slices.Contains(c.node.Stores, name)) {
		c.unconnected = append(c.unconnected, name)
		return nil, fmt.Errorf("processor %s: state store %s: %w", c.node.Name, name, processor.ErrStoreNotConnected)
	}
	s, err := info.Builder.Build()
	if err != nil {
		return nil, err
	}
	if err := s.Init(probeStateContext{appID: c.appID}); err != nil {
		return nil, err
	}
	c.opened = append(c.opened, s)
	return s, nil
}

type noCancel struct{}

func (noCancel) Cancel() {}

type probeStateContext struct{ appID string }

func (p probeStateContext) ApplicationID() string          { return p.appID }
func (p probeStateContext) ChangelogTopic(s string) string { return "probe-" + s + "-changelog" }
func (p probeStateContext) RecordTimestamp() int64         { return 0 }
func (p probeStateContext) LogChange(string, []byte, []byte, int64, []state.Header) error {
	return nil
}

func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
