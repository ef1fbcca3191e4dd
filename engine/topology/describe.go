package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stoatflow/stoatctl/engine/config"
)

// Description is a printable summary of a topology in the layout of Kafka
// Streams' TopologyDescription, plus the in-memory boundaries between
// sub-topologies and a list of stores.
type Description struct {
	text string
	data DescriptionData
}

func (d Description) String() string { return d.text }

// Data is the description as data, for -o json: what String prints.
func (d Description) Data() DescriptionData { return d.data }

// DescriptionData is a topology's description as data.
type DescriptionData struct {
	Subtopologies []SubtopologyDescription `json:"subtopologies"`
	Stores        []StoreDescription       `json:"stores"`
}

// SubtopologyDescription is one sub-topology and its nodes, in order.
type SubtopologyDescription struct {
	ID int `json:"id"`
	// Global marks the sub-topology of global stores, which makes no tasks.
	Global bool              `json:"global,omitempty"`
	Nodes  []NodeDescription `json:"nodes"`
}

// NodeDescription is one node: a source with its topics (or pattern), a
// processor with its stores, a sink with its topic (or a topic chooser).
type NodeDescription struct {
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	Topics       []string `json:"topics,omitempty"`
	Pattern      string   `json:"pattern,omitempty"`
	Topic        string   `json:"topic,omitempty"`
	TopicChooser bool     `json:"topicChooser,omitempty"`
	Stores       []string `json:"stores,omitempty"`
	Children     []string `json:"children,omitempty"`
	Parents      []string `json:"parents,omitempty"`
	// Boundary is the in-memory boundary a sink feeds or a source reads.
	Boundary *BoundaryDescription `json:"boundary,omitempty"`
}

// BoundaryDescription is the other end of an in-memory boundary.
type BoundaryDescription struct {
	Node        string `json:"node"`
	Subtopology int    `json:"subtopology"`
	// KeySerde is the serde records are laned by, on the sink's side.
	KeySerde string `json:"keySerde,omitempty"`
}

// StoreDescription is one state store.
type StoreDescription struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Backend    string `json:"backend"`
	KeySerde   string `json:"keySerde"`
	ValueSerde string `json:"valueSerde"`
	// Changelog is the changelog topic, or empty when there is none.
	Changelog string `json:"changelog,omitempty"`
}

// Describe summarises t with its re-key boundaries in memory
// (stoatflow.topology.rekey=memory, the default). It needs no
// configuration, so serdes left to the defaults print as "default".
func (t *Topology) Describe() Description { return t.describe(false) }

// DescribeWith summarises t as cfg runs it: under
// stoatflow.topology.rekey=topic each re-key boundary is a sink writing a
// repartition topic and a source reading it, named as Kafka Streams'
// TopologyDescription names them: without the application id, which
// Build puts before them. An invalid value of the key is an error.
func (t *Topology) DescribeWith(cfg config.Config) (Description, error) {
	rekey, err := cfg.OneOf(config.TopologyRekey, config.RekeyMemory, config.RekeyTopic)
	if err != nil {
		return Description{}, fmt.Errorf("topology: %w", err)
	}
	return t.describe(rekey == config.RekeyTopic), nil
}

func (t *Topology) describe(throughTopic bool) Description {
	const appID = "<application.id>"
	nodes, stores := t.shape(appID, func(string, string, ...any) {})
	if throughTopic {
		boundaries := map[string]*Boundary{}
		for _, b := range t.boundaries {
			if nodes[b.SinkNode] != nil && nodes[b.SourceNode] != nil {
				boundaries[b.Topic] = b
			}
		}
		throughTopics("", boundaries, nodes, map[string]string{})
	} else {
		for _, b := range t.boundaries {
			if n := nodes[b.SinkNode]; n != nil {
				n.Boundary = b
			}
			if n := nodes[b.SourceNode]; n != nil {
				n.Boundary = b
			}
		}
	}
	subs, global := group(t.order, nodes, stores)
	var w strings.Builder
	data := DescriptionData{Subtopologies: []SubtopologyDescription{}, Stores: []StoreDescription{}}
	w.WriteString("Topologies:\n")
	for _, st := range subs {
		fmt.Fprintf(&w, "   Sub-topology: %d\n", st.ID)
		data.Subtopologies = append(data.Subtopologies, SubtopologyDescription{ID: st.ID, Nodes: describeNodes(&w, st, nodes)})
	}
	if global != nil {
		fmt.Fprintf(&w, "   Sub-topology: %d for global store (will not generate tasks)\n", len(subs))
		data.Subtopologies = append(data.Subtopologies, SubtopologyDescription{ID: len(subs), Global: true, Nodes: describeNodes(&w, global, nodes)})
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
			data.Stores = append(data.Stores, StoreDescription{Name: s, Kind: fmt.Sprint(b.Kind()), Backend: fmt.Sprint(b.Backend()),
				KeySerde: orDefault(b.KeySerdeName()), ValueSerde: orDefault(b.ValueSerdeName()), Changelog: info.ChangelogTopic})
		}
	}
	return Description{text: w.String(), data: data}
}

func describeNodes(w *strings.Builder, st *Subtopology, nodes map[string]*Node) []NodeDescription {
	out := []NodeDescription{}
	for _, n := range st.Nodes {
		d := NodeDescription{Name: n.Name, Children: n.Children, Parents: n.Parents}
		switch n.Kind {
		case SourceNode:
			d.Kind = "source"
			topics := strings.Join(n.Source.Topics, ", ")
			d.Topics = n.Source.Topics
			if n.Source.Pattern != nil {
				topics = n.Source.Pattern.String()
				d.Topics, d.Pattern = nil, topics
			}
			fmt.Fprintf(w, "    Source: %s (topics: [%s])\n", n.Name, topics)
		case ProcessorNode:
			d.Kind = "processor"
			d.Stores = n.Stores
			fmt.Fprintf(w, "    Processor: %s (stores: [%s])\n", n.Name, strings.Join(n.Stores, ", "))
		case SinkNode:
			d.Kind = "sink"
			if n.Sink.Chooser != nil {
				d.TopicChooser = true
				fmt.Fprintf(w, "    Sink: %s (extractor: topic chooser)\n", n.Name)
			} else {
				d.Topic = n.Sink.Topic
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
			d.Boundary = &BoundaryDescription{Node: b.SourceNode, Subtopology: to.Subtopology, KeySerde: key}
		}
		if len(n.Parents) > 0 {
			fmt.Fprintf(w, "      <-- %s\n", strings.Join(n.Parents, ", "))
		}
		if b := n.Boundary; b != nil && n.Kind == SourceNode {
			from := nodes[b.SinkNode]
			fmt.Fprintf(w, "      <~~ %s in sub-topology %d (in-memory boundary)\n", b.SinkNode, from.Subtopology)
			d.Boundary = &BoundaryDescription{Node: b.SinkNode, Subtopology: from.Subtopology}
		}
		out = append(out, d)
	}
	w.WriteString("\n")
	return out
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}
