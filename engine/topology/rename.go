package topology

import "fmt"

// RenameTopics points the topology's input and output at other topics
// before it is built: every source node's topics (but a global store's,
// which is read without a group and never written) through input, every
// sink's topic through output, a topic chooser's pick included. Boundaries
// keep their topics: they are the topology's own. It is how a shadow run
// (migrate.Shadow) runs a topology beside the application it mirrors,
// reading a copy of its input and writing topics of its own.
//
// A source reading a pattern is refused: the topics it would read are
// only known to a runtime, and a shadow run must copy each of them.
func (t *Topology) RenameTopics(input, output func(topic string) string) error {
	for _, name := range t.order {
		n := t.nodes[name]
		if n.Boundary != nil || n.Global {
			continue
		}
		switch n.Kind {
		case SourceNode:
			if n.Source.Pattern != nil {
				return fmt.Errorf("source %s reads the pattern %s: its topics cannot be renamed", name, n.Source.Pattern)
			}
			renamed := make([]string, len(n.Source.Topics))
			for i, topic := range n.Source.Topics {
				renamed[i] = input(topic)
			}
			n.Source.Topics = renamed
		case SinkNode:
			if n.Sink.Chooser != nil {
				choose := n.Sink.Chooser
				n.Sink.Chooser = func(key, value any, rec RecordContext) string { return output(choose(key, value, rec)) }
				continue
			}
			n.Sink.Topic = output(n.Sink.Topic)
		}
	}
	return nil
}
