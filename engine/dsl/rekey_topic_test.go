package dsl_test

import (
	"slices"
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// TestRekeyThroughTopicBuild: under stoatflow.topology.rekey=topic a
// re-key builds as a sink and a source of
// <application.id>-<name>-repartition, with no in-memory boundary left
// and the declared partition count kept.
func TestRekeyThroughTopicBuild(t *testing.T) {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.GroupBy(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(_, v string) string { return v }, dsl.GroupedWith(str, str).WithName("words")).
		Count(dsl.MaterializedAs[string, int64]("counts")).ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
	built, err := b.Topology().Build(config.New(map[string]string{"application.id": "wc", config.TopologyRekey: config.RekeyTopic}))
	if err != nil {
		t.Fatal(err)
	}
	if len(built.Boundaries) != 0 || len(built.Repartitions) != 1 {
		t.Fatalf("boundaries %v, repartitions %v: want none and one", built.Boundaries, built.Repartitions)
	}
	rp := built.Repartitions[0]
	if rp.Topic != "wc-words-repartition" {
		t.Fatalf("repartition topic %q, want wc-words-repartition", rp.Topic)
	}
	sink, src := built.Nodes[rp.SinkNodes[0]], built.Nodes[rp.SourceNode]
	if sink.Sink.Topic != rp.Topic || !slices.Equal(src.Source.Topics, []string{rp.Topic}) || sink.Boundary != nil || src.Boundary != nil {
		t.Fatalf("sink writes %q, source reads %v (boundaries %v, %v)", sink.Sink.Topic, src.Source.Topics, sink.Boundary, src.Boundary)
	}
	if built.SourceTopics[rp.Topic] != src.Name {
		t.Fatalf("source topics %v do not name %s", built.SourceTopics, rp.Topic)
	}
}
