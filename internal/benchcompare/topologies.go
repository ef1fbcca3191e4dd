package benchcompare

import (
	"bytes"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// The topologies, by the names the report uses; Kafka Streams' are
// "bench-" and the same name (interop/.../Bench.java). count-store counts
// into a changelogged store and writes no output topic: the changelog is
// its only output.
const (
	TopoMap          = "map"
	TopoCount        = "count"
	TopoCountStore   = "count-store"
	TopoWindowUpdate = "window-update"
	TopoWindowClose  = "window-close"
	TopoJoin         = "join"
)

// Topologies is every topology, in the report's order.
var Topologies = []string{TopoMap, TopoCount, TopoCountStore, TopoWindowUpdate, TopoWindowClose, TopoJoin}

// Window is the tumbling window of the windowed counts, and JoinWindow
// the join's; Bench.java has the same.
const (
	Window     = time.Minute
	JoinWindow = time.Second
)

// Topics names the topics of one run: prefix-in (prefix-left and
// prefix-right for the join) and prefix-out.
type Topics struct{ Prefix string }

func (t Topics) In() string    { return t.Prefix + "-in" }
func (t Topics) Left() string  { return t.Prefix + "-left" }
func (t Topics) Right() string { return t.Prefix + "-right" }
func (t Topics) Out() string   { return t.Prefix + "-out" }

// Inputs is the input topics of topo.
func (t Topics) Inputs(topo string) []string {
	if topo == TopoJoin {
		return []string{t.Left(), t.Right()}
	}
	return []string{t.In()}
}

// stateful says whether topo has a store that Kafka Streams' record cache
// sits in front of: those run with the cache off too.
func stateful(topo string) bool {
	return topo == TopoCount || topo == TopoCountStore || topo == TopoWindowUpdate || topo == TopoWindowClose
}

// Build returns stoatctl's topology topo over t's topics, with window
// the tumbling window of the windowed counts.
func Build(topo string, t Topics, win time.Duration) *topology.Topology {
	str, raw := serde.String(), serde.Bytes()
	b := dsl.NewBuilder()
	switch topo {
	case TopoMap:
		// The bare loop's transform, so that the ratio compares paths.
		dsl.MapValues(dsl.Stream(b, dsl.ConsumedWith(str, raw), t.In()), func(_ string, v []byte) []byte {
			return bytes.ToUpper(v)
		}).To(t.Out(), dsl.ProducedWith(str, raw))
	case TopoCount:
		dsl.Stream(b, dsl.ConsumedWith(str, raw), t.In()).GroupByKey().
			Count(dsl.MaterializedAs[string, int64]("counts")).ToStream().
			To(t.Out(), dsl.ProducedWith(str, serde.Int64()))
	case TopoCountStore:
		dsl.Stream(b, dsl.ConsumedWith(str, raw), t.In()).GroupByKey().
			Count(dsl.MaterializedAs[string, int64]("counts"))
	case TopoWindowUpdate, TopoWindowClose:
		g := dsl.Stream(b, dsl.ConsumedWith(str, raw), t.In()).GroupByKey().
			WindowedBy(window.TimeWindowsOfSizeWithNoGrace(win))
		if topo == TopoWindowClose {
			g = g.EmitStrategy(dsl.OnWindowClose())
		}
		dsl.CountWindowed(g, dsl.MaterializedAs[string, int64]("win")).ToStream().
			To(t.Out(), dsl.ProducedWith(window.TimeWindowedSerde(str, win.Milliseconds()), serde.Int64()))
	case TopoJoin:
		left := dsl.Stream(b, dsl.ConsumedWith(str, raw), t.Left())
		right := dsl.Stream(b, dsl.ConsumedWith(str, raw), t.Right())
		dsl.JoinStream(left, right, func(_ string, l, r []byte) []byte {
			v := make([]byte, 0, len(l)+1+len(r))
			return append(append(append(v, l...), '+'), r...)
		}, window.JoinWindowsOfTimeDifferenceWithNoGrace(JoinWindow)).
			To(t.Out(), dsl.ProducedWith(str, raw))
	default:
		panic("benchcompare: unknown topology " + topo)
	}
	return b.Topology()
}
