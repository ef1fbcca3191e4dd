package benchbase

import (
	"bytes"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Topology is one of the topologies the engine's benchmarks run over the
// loaded input (string keys, byte values), reading in and writing out.
type Topology struct {
	Name  string
	Build func(in, out string) *topology.Topology
}

// Topologies are make bench's: the same for the whole engine against the
// baseline (engine.BenchmarkEngineVsBaseline) and for one lane alone
// (lanes.BenchmarkLane).
//   - stateless: the baseline's transform (upper-casing the value), so
//     that a ratio compares the paths, not two ways to upper-case.
//   - count: a per-key count into a changelogged store, every update
//     written to out.
//   - window-update: bench-compare's tumbling count, one-minute windows,
//     every update written to out.
//   - count-store: the count into its changelogged store alone; the
//     changelog is the only output.
var Topologies = []Topology{
	{"stateless", func(in, out string) *topology.Topology {
		bld := dsl.NewBuilder()
		dsl.MapValues(dsl.Stream(bld, dsl.ConsumedWith(serde.String(), serde.Bytes()), in), func(_ string, v []byte) []byte {
			return bytes.ToUpper(v)
		}).To(out, dsl.ProducedWith(serde.String(), serde.Bytes()))
		return bld.Topology()
	}},
	{"count", func(in, out string) *topology.Topology {
		bld := dsl.NewBuilder()
		dsl.Stream(bld, dsl.ConsumedWith(serde.String(), serde.Bytes()), in).GroupByKey().
			Count(dsl.MaterializedAs[string, int64]("counts")).ToStream().To(out, dsl.ProducedWith(serde.String(), serde.Int64()))
		return bld.Topology()
	}},
	{"window-update", func(in, out string) *topology.Topology {
		bld := dsl.NewBuilder()
		g := dsl.Stream(bld, dsl.ConsumedWith(serde.String(), serde.Bytes()), in).GroupByKey().
			WindowedBy(window.TimeWindowsOfSizeWithNoGrace(time.Minute))
		dsl.CountWindowed(g, dsl.MaterializedAs[string, int64]("win")).ToStream().
			To(out, dsl.ProducedWith(window.TimeWindowedSerde(serde.String(), time.Minute.Milliseconds()), serde.Int64()))
		return bld.Topology()
	}},
	{"count-store", func(in, _ string) *topology.Topology {
		bld := dsl.NewBuilder()
		dsl.Stream(bld, dsl.ConsumedWith(serde.String(), serde.Bytes()), in).GroupByKey().
			Count(dsl.MaterializedAs[string, int64]("counts"))
		return bld.Topology()
	}},
}
