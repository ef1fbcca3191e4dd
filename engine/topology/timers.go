package topology

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// TimerSpec is what Build resolves for a timer-aware processor: one whose
// processor implements OnTimer (processor.OnTimerOf).
type TimerSpec struct {
	// Store is the processor's timer store, TimerStoreName(node). It is
	// registered like any other store, so it is in Built.Stores and its
	// changelog is "<application.id>-<node>-timers-changelog".
	Store string
	// KeySerde is the timer key serde: the serde declared for the key the
	// processor receives (see resolveTimers), else default.key.serde.
	KeySerde serde.Any
	// KeySerdeFrom says where KeySerde came from: "source <node>",
	// "boundary <topic>", "sink <node>" or "config default.key.serde".
	KeySerdeFrom string
	// EventTime is whether the processor declared event-time timers
	// (processor.EventTimeTimerUser).
	EventTime bool
}

// TimerStoreName is the name of node's timer store.
func TimerStoreName(node string) string { return node + "-timers" }

// Warning is a finding of a validation rule set to warn: the topology runs,
// and the runtime logs it when it starts.
type Warning struct {
	// Rule is the rule's configuration key.
	Rule   string
	Node   string
	Reason string
}

func (w Warning) String() string {
	return fmt.Sprintf("topology: node %s: %s (rule %s)", w.Node, w.Reason, w.Rule)
}

// resolveTimers finds the timer-aware processors, gives each its timer
// store, resolves its timer key serde, marks the ones declaring event-time
// timers as needing event time, and runs the timer-key-lane-affinity rule.
// It must run after defaults and boundary serdes are applied to nodes and
// before grouping; t.nodes, untouched by Build, says what was declared.
//
// The timer key serde is the key serde declared for the key the processor
// receives, searched in this order:
//
//  1. upstream: the processor's source, when its key serde was declared
//     with a serde (ConsumedWith; not a deserializer only, not left to the
//     default), or the boundary it reads, whose key serde wrote the bytes
//     its records were laned by;
//  2. downstream before any key change: a sink's or boundary's declared key
//     serde (Produced, Repartitioned, Grouped);
//  3. default.key.serde.
//
// Only key-preserving processors (processor.KeyPreserving, fixed-key
// processors) are looked through: any other processor in between counts as
// a key change. The processor itself is not: its records' key is the key
// its timers are for.
func (t *Topology) resolveTimers(appID string, cfg config.Config, nodes map[string]*Node, stores map[string]*StoreInfo, defKey serde.Any, errs *[]error, fail func(string, string, ...any)) []Warning {
	preserving := map[string]bool{}
	var timed []*Node
	for _, name := range t.order {
		n := nodes[name]
		if n.Kind != ProcessorNode || n.Supplier == nil {
			continue
		}
		p := instantiate(n)
		if p == nil {
			// The probe reports a supplier that panics or returns nil.
			continue
		}
		preserving[name] = processor.PreservesKey(p)
		_, receives := processor.OnTimerOf(p)
		eventTime := processor.UsesEventTimeTimers(p)
		if !receives {
			if eventTime {
				fail(name, "declares event-time timers but cannot receive them: implement OnTimer(processor.Timer[K]) error on its input key type")
			}
			continue
		}
		n.Timers = &TimerSpec{Store: TimerStoreName(name), EventTime: eventTime}
		if eventTime && n.EventTime == "" {
			n.EventTime = "event-time timer"
		}
		timed = append(timed, n)
	}
	if len(timed) == 0 {
		return nil
	}
	verdict, err := cfg.Verdict(config.TimerKeyLaneAffinityRule)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("topology: %w", err))
	}
	var warnings []Warning
	for _, n := range timed {
		registerTimerStore(appID, n, stores, fail)
		n.Timers.KeySerde, n.Timers.KeySerdeFrom = t.timerKeySerde(n, nodes, preserving, defKey)
		if n.Timers.KeySerde == nil {
			fail(n.Name, "receives timers but has no timer key serde: declare the key serde of its source (topology.ConsumedWith) or of a sink after it, or set config %s", config.DefaultKeySerde)
			continue
		}
		for _, reason := range t.laneAffinity(n, nodes) {
			switch verdict {
			case config.VerdictError:
				fail(n.Name, "%s", reason)
			case config.VerdictWarn:
				warnings = append(warnings, Warning{Rule: config.TimerKeyLaneAffinityRule, Node: n.Name, Reason: reason})
			}
		}
	}
	return warnings
}

// instantiate makes one instance of n's processor to read the interfaces it
// implements, or nil when the supplier fails (which the probe reports).
func instantiate(n *Node) (p processor.Untyped) {
	defer func() {
		if recover() != nil {
			p = nil
		}
	}()
	return n.Supplier()
}

// registerTimerStore adds n's timer store: a changelogged key-value store
// of raw bytes, laid out by the runtime (package task documents the
// layout).
func registerTimerStore(appID string, n *Node, stores map[string]*StoreInfo, fail func(string, string, ...any)) {
	name := n.Timers.Store
	if _, dup := stores[name]; dup {
		fail(n.Name, "timer store %s: a state store with this name already exists", name)
		return
	}
	stores[name] = &StoreInfo{
		Builder:        state.KeyValueStoreBuilder(name, serde.Bytes(), serde.Bytes(), state.Default()),
		Processors:     []string{n.Name},
		ChangelogTopic: ChangelogTopic(appID, name),
	}
	n.Stores = append(n.Stores, name)
}

func (t *Topology) timerKeySerde(n *Node, nodes map[string]*Node, preserving map[string]bool, defKey serde.Any) (serde.Any, string) {
	if s, from := t.upstreamKeySerde(n, nodes, preserving, map[string]bool{}); s != nil {
		return s, from
	}
	if s, from := t.downstreamKeySerde(n, nodes, preserving, map[string]bool{}); s != nil {
		return s, from
	}
	if defKey != nil {
		return defKey, "config " + config.DefaultKeySerde
	}
	return nil, ""
}

func (t *Topology) upstreamKeySerde(n *Node, nodes map[string]*Node, preserving, seen map[string]bool) (serde.Any, string) {
	for _, name := range n.Parents {
		p, ok := nodes[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		switch {
		case p.Kind == SourceNode:
			if s, from := t.declaredSourceKey(p); s != nil {
				return s, from
			}
		case p.Kind == ProcessorNode && preserving[name]:
			if s, from := t.upstreamKeySerde(p, nodes, preserving, seen); s != nil {
				return s, from
			}
		}
	}
	return nil, ""
}

// declaredSourceKey is the key serde a source declares for its records'
// key bytes, or nil. A boundary's key serde always counts, declared or
// defaulted: the engine itself wrote the bytes its records are laned by.
func (t *Topology) declaredSourceKey(src *Node) (serde.Any, string) {
	if src.Boundary != nil {
		return src.Boundary.KeySerde, "boundary " + src.Boundary.Topic
	}
	orig, ok := t.nodes[src.Name]
	if !ok || orig.Source == nil || orig.Source.KeySerde == nil || orig.Source.KeyDeserializerOnly {
		return nil, ""
	}
	return src.Source.KeySerde, "source " + src.Name
}

func (t *Topology) downstreamKeySerde(n *Node, nodes map[string]*Node, preserving, seen map[string]bool) (serde.Any, string) {
	for _, name := range n.Children {
		c, ok := nodes[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		switch {
		case c.Kind == SinkNode:
			orig, ok := t.nodes[name]
			if !ok || orig.Sink == nil || orig.Sink.KeySerde == nil {
				continue
			}
			if c.Boundary != nil {
				return c.Sink.KeySerde, "boundary " + c.Boundary.Topic
			}
			return c.Sink.KeySerde, "sink " + name
		case c.Kind == ProcessorNode && preserving[name]:
			if s, from := t.downstreamKeySerde(c, nodes, preserving, seen); s != nil {
				return s, from
			}
		}
	}
	return nil, ""
}

// laneAffinity is the timer-key-lane-affinity rule: the reasons n's timer
// bytes may differ from the bytes its records were laned by, one per
// source of its sub-topology that feeds it. It can only say "may": whether
// a default writes the producer's bytes is not known at build time.
func (t *Topology) laneAffinity(n *Node, nodes map[string]*Node) []string {
	timer, from := n.Timers.KeySerde, n.Timers.KeySerdeFrom
	var reasons []string
	for _, src := range laneSources(n, nodes) {
		if src.Boundary != nil {
			// A custom partitioner picks lanes without hashing the key:
			// outside the contract, nothing to judge.
			if src.Boundary.Partitioner == nil && !serde.Same(src.Boundary.KeySerde, timer) {
				reasons = append(reasons, fmt.Sprintf("its records cross boundary %s, laned by key serde %s, but its timer key serde is %s (from %s), so its timers may fire on another lane than its records; declare one key serde for both",
					src.Boundary.Topic, src.Boundary.KeySerde.Name(), timer.Name(), from))
			}
			continue
		}
		orig, ok := t.nodes[src.Name]
		if !ok || orig.Source == nil {
			continue
		}
		switch {
		case orig.Source.KeyDeserializerOnly || orig.Source.KeySerde == nil:
			how := "declares no key serde"
			if orig.Source.KeyDeserializerOnly {
				how = fmt.Sprintf("declares its key with deserializer %s only", orig.Source.KeySerde.Name())
			}
			reasons = append(reasons, fmt.Sprintf("source %s %s, so its timer key serde is %s (from %s), which may write other bytes than the topic's producer: its timers may fire on another lane than its records; declare the key serde with topology.ConsumedWith, or set %s to off if %s writes the topic's key bytes",
				src.Name, how, timer.Name(), from, config.TimerKeyLaneAffinityRule, timer.Name()))
		case !serde.Same(src.Source.KeySerde, timer):
			reasons = append(reasons, fmt.Sprintf("source %s is keyed by serde %s, but its timer key serde is %s (from %s), so its timers may fire on another lane than its records; declare one key serde for both",
				src.Name, src.Source.KeySerde.Name(), timer.Name(), from))
		}
	}
	return reasons
}

// laneSources are the sources whose records reach n: the sources of its
// sub-topology upstream of it, through any processor, since a record keeps
// the lane its source gave it whatever a processor does to its key.
func laneSources(n *Node, nodes map[string]*Node) []*Node {
	var out []*Node
	seen := map[string]bool{}
	var walk func(*Node)
	walk = func(x *Node) {
		for _, name := range x.Parents {
			p, ok := nodes[name]
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			if p.Kind == SourceNode {
				out = append(out, p)
				continue
			}
			walk(p)
		}
	}
	walk(n)
	return out
}

// TimerService lets a processor fetch its timer service in Init while it
// is probed; registrations made there are ignored.
func (c *probeContext) TimerService() (processor.ErasedTimerService, error) {
	if c.node.Timers == nil {
		return nil, fmt.Errorf("processor %s: %w", c.node.Name, processor.ErrNoTimers)
	}
	return probeTimers{}, nil
}

type probeTimers struct{}

func (probeTimers) Register(processor.Timer[any]) error { return nil }
func (probeTimers) Delete(processor.Timer[any]) error   { return nil }
func (probeTimers) CurrentKey() (any, bool)             { return nil, false }
