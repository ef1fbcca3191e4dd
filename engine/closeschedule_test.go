package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// hoppingCounts counts hopping windows of 1 s every 250 ms with 100 ms of
// grace, emitted on close.
func hoppingCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Second, 100*time.Millisecond).AdvanceBy(250*time.Millisecond)).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("hop")).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 1_000), serde.Int64()))
	return b.Topology()
}

// The cadence's close schedule: time windows emitted on close have one,
// on their grid; windows emitted on update and sessions do not.
func TestCloseSchedule(t *testing.T) {
	const unknown = math.MinInt64
	for _, tc := range []struct {
		name  string
		topo  *topology.Topology
		none  bool
		after []int64
		want  []int64
	}{
		// Tumbling 10 s with 2 s grace: closes at 12 s, 22 s, ...
		{name: "tumbling on close", topo: windowedCounts(), after: []int64{unknown, -5, 0, 11_999, 12_000, 12_001, 31_999, 32_000}, want: []int64{12_000, 12_000, 12_000, 12_000, 22_000, 22_000, 32_000, 42_000}},
		// Hopping 1 s every 250 ms, 100 ms grace: closes at 1100, 1350, ...
		{name: "hopping on close", topo: hoppingCounts(), after: []int64{unknown, 1_099, 1_100, 1_349, 1_350, 1_351}, want: []int64{1_100, 1_100, 1_350, 1_350, 1_600, 1_600}},
		{name: "tumbling on update", topo: updatedCounts(), none: true},
		{name: "sessions on close", topo: sessionCounts(), none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built, err := tc.topo.Build(config.New(map[string]string{"application.id": "cadence"}))
			if err != nil {
				t.Fatal(err)
			}
			closes := engine.CloseSchedule(built)
			if tc.none {
				if closes != nil {
					if c, known := closes(0); known {
						t.Fatalf("closes(0) = %d, known; want no schedule", c)
					}
				}
				return
			}
			if closes == nil {
				t.Fatal("no close schedule")
			}
			for i, after := range tc.after {
				if c, known := closes(after); !known || c != tc.want[i] {
					t.Errorf("closes(%d) = %d, %v; want %d, true", after, c, known, tc.want[i])
				}
			}
		})
	}
}
