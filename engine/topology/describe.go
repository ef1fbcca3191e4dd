package topology

import (
	"fmt"
	"slices"
	"strings"
)

// Description is a printable summary of a topology in the layout of Kafka
// Streams' TopologyDescription, plus the in-memory boundaries between
// sub-topologies and a list of stores.
type Description struct {
	text string
}

func (d Description) String() string { return d.text }

// Describe summarises t. It needs no configuration, so serdes left to the
// defaults print as "default".
func (t *Topology) Describe() Description {
	nodes, stores := t.shape("<application.id>", func(string, string, ...any) {})
	for _, b := range t.boundaries {
		if n := nodes[b.SinkNode]; n != nil {
			n.Boundary = b
		}
		if n := nodes[b.SourceNode]; n != nil {
			n.Boundary = b
		}
	}
	subs, global := group(t.order, nodes, stores)
	var w strings.Builder
	w.WriteString("Topologies:\n")
	for _, st := range subs {
		fmt.Fprintf(&w, "   Sub-topology: %d\n", st.ID)
		describeNodes(&w, st, nodes)
	}
	if global != nil {
		fmt.Fprintf(&w, "   Sub-topology: %d for global store (will not generate tasks)\n", len(subs))
		describeNodes(&w, global, nodes)
	}
	if len(t.storeOrder) > 0 {
		w.WriteString("Stores:\n")
		names := slices.Clone(t.storeOrder)
		slices.Sort(names)
		for _, s := range names {
			info, ok := stores[s]
			if !ok {
				continue
			}
			b := info.Builder
			changelog := "none"
			if info.ChangelogTopic != "" {
				changelog = info.ChangelogTopic
			}
			fmt.Fprintf(&w, "    Store: %s (%s, %s; key serde: %s, value serde: %s; changelog: %s)\n",
				s, b.Kind(), b.Backend(), orDefault(b.KeySerdeName()), orDefault(b.ValueSerdeName()), changelog)
		}
	}
	return Description{text: w.String()}
}

func describeNodes(w *strings.Builder, st *Subtopology, nodes map[string]*Node) {
	for _, n := range st.Nodes {
		switch n.Kind {
		case SourceNode:
			topics := strings.Join(n.Source.Topics, ", ")
			if n.Source.Pattern != nil {
				topics = n.Source.Pattern.String()
			}
			fmt.Fprintf(w, "    Source: %s (topics: [%s])\n", n.Name, topics)
		case ProcessorNode:
			fmt.Fprintf(w, "    Processor: %s (stores: [%s])\n", n.Name, strings.Join(n.Stores, ", "))
		case SinkNode:
			if n.Sink.Chooser != nil {
				fmt.Fprintf(w, "    Sink: %s (extractor: topic chooser)\n", n.Name)
			} else {
				fmt.Fprintf(w, "    Sink: %s (topic: %s)\n", n.Name, n.Sink.Topic)
			}
		}
		if len(n.Children) > 0 {
			fmt.Fprintf(w, "      --> %s\n", strings.Join(n.Children, ", "))
		}
		if b := n.Boundary; b != nil && n.Kind == SinkNode {
			to := nodes[b.SourceNode]
			key := "default"
			if b.KeySerde != nil {
				key = b.KeySerde.Name()
			}
			fmt.Fprintf(w, "      ~~> %s in sub-topology %d (in-memory boundary, laned by key serde %s)\n", b.SourceNode, to.Subtopology, key)
		}
		if len(n.Parents) > 0 {
			fmt.Fprintf(w, "      <-- %s\n", strings.Join(n.Parents, ", "))
		}
		if b := n.Boundary; b != nil && n.Kind == SourceNode {
			from := nodes[b.SinkNode]
			fmt.Fprintf(w, "      <~~ %s in sub-topology %d (in-memory boundary)\n", b.SinkNode, from.Subtopology)
		}
	}
	w.WriteString("\n")
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}
