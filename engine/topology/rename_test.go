package topology_test

import (
	"regexp"
	"testing"

	"github.com/stoatflow/stoatctl/engine/topology"
)

// TestRenameTopics: sources and sinks are renamed, a chooser's pick too;
// boundaries keep theirs; a pattern source is refused.
func TestRenameTopics(t *testing.T) {
	topo := topology.New().
		AddSource("in", topology.SourceSpec{}, "lines").
		AddProcessor("p", passSupplier(), "in").
		AddSink("out", topology.SinkSpec{}, "counts", "p").
		AddSinkChooser("chosen", topology.SinkSpec{}, func(key, value any, rec topology.RecordContext) string { return "picked" }, "p")
	topo.AddBoundary("rekey-sink", "rekey-source", "rekey-repartition", nil, nil, "p")
	if err := topo.RenameTopics(func(s string) string { return "in-" + s }, func(s string) string { return "out-" + s }); err != nil {
		t.Fatal(err)
	}
	node := func(name string) *topology.Node { n, _ := topo.Node(name); return n }
	if got := node("in").Source.Topics; len(got) != 1 || got[0] != "in-lines" {
		t.Errorf("source topics: %v", got)
	}
	if got := node("out").Sink.Topic; got != "out-counts" {
		t.Errorf("sink topic: %s", got)
	}
	if got := node("chosen").Sink.Chooser(nil, nil, topology.RecordContext{}); got != "out-picked" {
		t.Errorf("chooser: %s", got)
	}
	if got := node("rekey-sink").Boundary.Topic; got != "rekey-repartition" {
		t.Errorf("boundary: %s", got)
	}
	pat := topology.New().AddSourcePattern("in", topology.SourceSpec{}, regexp.MustCompile("l.*"))
	if err := pat.RenameTopics(func(s string) string { return s }, func(s string) string { return s }); err == nil {
		t.Error("a pattern source was renamed")
	}
}
