package testdriver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// A window over a window across a boundary: the upstream's final results
// must reach the downstream aggregation before the same watermark closes the
// downstream's windows, or they land in windows already emitted and vanish.
func TestWindowOverWindowAcrossBoundary(t *testing.T) {
	b := dsl.NewBuilder()
	tumbling := window.TimeWindowsOfSizeWithNoGrace(10 * time.Millisecond)
	perKey := dsl.CountWindowed(
		dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey().WindowedBy(tumbling).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("per-key"))
	// Re-key every final count to one key and count the finals per window.
	finals := dsl.Map(perKey.ToStream(), func(k window.Windowed[string], n int64) (string, int64) { return "all", n })
	dsl.CountWindowed(
		finals.GroupByKey(dsl.GroupedWith(str, i64)).WindowedBy(tumbling).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("finals")).
		ToStream().
		To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10), i64))

	d, err := testdriver.New(b.Topology(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "x", 1)
	in.PipeInputAt("b", "x", 5)
	in.PipeInputAt("a", "x", 12) // closes [0,10) upstream and, in the same advance, downstream
	rs, err := testdriver.CreateOutputTopic(d, "out", window.TimeWindowedSerde(str, 10), i64).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s@[%d,%d)=%d ts=%d", r.Key.Key, r.Key.Window.Start, r.Key.Window.End, r.Value, r.Timestamp))
	}
	if want := "all@[0,10)=2 ts=5"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
