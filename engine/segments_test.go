package engine_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// sessionCounts counts sessions of a 3 s gap, emitted on close.
func sessionCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(3*time.Second, 2*time.Second)).EmitStrategy(dsl.OnWindowClose()),
		dsl.MaterializedAs[string, int64]("sess")).
		ToStream().To("out", dsl.ProducedWith(window.SessionWindowedSerde(str), serde.Int64()))
	return b.Topology()
}

// updatedCounts counts tumbling windows, forwarding every update: expiry
// follows the committed watermark.
func updatedCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 2*time.Second)),
		dsl.MaterializedAs[string, int64]("win")).
		ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
	return b.Topology()
}

// TestSegmentedStoresExpire runs ten minutes of event time through
// windowed and session counts, over both store backends: the stores'
// segments (a minute each, by default, for these retentions of 12 and
// 5 s) are dropped as the expiry clock passes them, so the segments gauge
// ends at a lane's one or two live segments rather than the ten the input
// spans, and every result is committed exactly as the driver emits it:
// no window or session emitted on close is lost to expiry.
func TestSegmentedStoresExpire(t *testing.T) {
	needRocks(t)
	const keys, steps, lanes = 3, 600, 2
	var in []kv
	for s := range steps {
		for k := range keys {
			// A gap of 4 s every 20 s closes sessions along the way.
			if s%20 < 4 && s > 0 {
				continue
			}
			in = append(in, kv{Key: "k" + strconv.Itoa(k), Value: "x", Timestamp: int64(s)*1000 + 1})
		}
	}
	for _, c := range []struct {
		name, store string
		topo        func() *topology.Topology
	}{
		{"windows-on-close", "rocksDB", windowedCounts},
		{"windows-on-close", "in_memory", windowedCounts},
		{"windows-on-update", "rocksDB", updatedCounts},
		{"sessions-on-close", "rocksDB", sessionCounts},
		{"sessions-on-close", "in_memory", sessionCounts},
	} {
		t.Run(c.name+"/"+c.store, func(t *testing.T) {
			want := driverOutputOf(t, c.topo(), "seg", in)
			// One partition: a second, keyless one would hold the watermark back.
			addr := startBroker(t, map[string]int32{"in": 1, "out": 1})
			conf := storeCfg(addr, "seg", c.store, t.TempDir(), "num.stream.threads", strconv.Itoa(lanes),
				"stoatflow.watermark.max-out-of-orderness-ms", "0")
			e, stop := runEngine(t, c.topo(), conf)
			produce(t, addr, "in", in)
			var got []string
			for _, r := range readCommitted(t, addr, "out", len(want), 60*time.Second) {
				got = append(got, fmt.Sprintf("%x=%x", r.Key, r.Value))
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("engine committed %d results, driver %d; first engine %q, first driver %q", len(got), len(want), head(got), head(want))
			}
			// The last commit has run the expiry its watermark allows.
			var segs int
			eventually(t, 20*time.Second, func() string { return fmt.Sprintf("the store holds %d segments over %d lanes", segs, lanes) }, func() bool {
				segs = scrapeSegments(t, e.MetricsHandler())
				return segs >= 1 && segs <= 2*lanes
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

var segmentsLine = regexp.MustCompile(`(?m)^stoatflow_store_segments\{[^}]*\} (\d+)$`)

// scrapeSegments sums the stoatflow_store_segments series of a scrape.
func scrapeSegments(t *testing.T, h http.Handler) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	n := 0
	for _, m := range segmentsLine.FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}
