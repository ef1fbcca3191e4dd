package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// BenchmarkEngineHTTP measures what serving the REST API costs: the same
// stateless exactly-once topology over the same input, without the API
// and with it while a client scrapes /metrics every 100 ms and reads
// /watermarks every 50 ms (far more often than Prometheus or stoatctl
// watch would), in one run. It reports the mean rates and the median of
// three with/without ratios, which issue 12 wants above 0.97.
func BenchmarkEngineHTTP(b *testing.B) {
	n := 300_000
	if testing.Short() {
		n = 10_000
	}
	str := serde.String()
	build := func(out string) *dsl.Builder {
		bld := dsl.NewBuilder()
		dsl.MapValues(dsl.Stream(bld, dsl.ConsumedWith(str, serde.Bytes()), "in"), func(_ string, v []byte) []byte {
			return bytes.ToUpper(v)
		}).To(out, dsl.ProducedWith(str, serde.Bytes()))
		return bld
	}
	for i := 0; i < b.N; i++ {
		const pairs = 3
		topics := map[string]int32{}
		for p := range 2 * pairs {
			topics[fmt.Sprintf("out-%d", p)] = 4
		}
		addr := startBroker(b, topics)
		if err := benchbase.Load(context.Background(), []string{addr}, "in", 4, n, 100); err != nil {
			b.Fatal(err)
		}
		c := func(app string) map[string]string {
			return cfg(addr, app, "num.stream.threads", fmt.Sprint(runtime.NumCPU()),
				engine.BarrierIntervalMs, "500", engine.BarrierMinIntervalMs, "150")
		}
		// Pairs of runs, without then with the API, each over the whole
		// input under its own application id; the median of the pairs'
		// ratios is reported, so that one run slowed by a busy machine
		// does not decide it.
		var ratios []float64
		var off, on float64
		for p := range pairs {
			o := runEngineScraped(b, build(fmt.Sprintf("out-%d", 2*p)).Topology(), c(fmt.Sprintf("http-off-%d", p)), n, false)
			w := runEngineScraped(b, build(fmt.Sprintf("out-%d", 2*p+1)).Topology(), c(fmt.Sprintf("http-on-%d", p)), n, true)
			ratios = append(ratios, w/o)
			off, on = off+o/pairs, on+w/pairs
		}
		slices.Sort(ratios)
		b.ReportMetric(off, "without-http-rec/s")
		b.ReportMetric(on, "with-http-rec/s")
		b.ReportMetric(ratios[pairs/2], "ratio")
		b.ReportMetric(ratios[0], "min-ratio")
		b.ReportMetric(ratios[pairs-1], "max-ratio")
	}
}

// runEngineScraped runs the engine until n source records committed and
// returns records/s from its last RUNNING before the first commit (group
// joined, state restored); with api it serves the REST API on a free
// port, and a client reads it the whole time.
func runEngineScraped(b *testing.B, topo *topology.Topology, c map[string]string, n int, api bool) float64 {
	b.Helper()
	opts := []engine.Option{engine.WithLogger(testLogger(b))}
	if api {
		opts = append(opts, engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	}
	e := engine.New(topo, c, opts...)
	var mu sync.Mutex
	var start time.Time
	e.OnStateChange(func(_, s engine.State) {
		mu.Lock()
		defer mu.Unlock()
		if s == engine.Running && e.Stats().Records == 0 {
			start = time.Now()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var scrapes sync.WaitGroup
	if api {
		scrapes.Add(1)
		go func() {
			defer scrapes.Done()
			read := func(path string) {
				if a := e.HTTPAddr(); a != "" {
					if resp, err := http.Get("http://" + a + path); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				read("/watermarks")
				if k%2 == 0 {
					read("/metrics")
				}
			}
		}()
	}
	began := time.Now()
	for e.Stats().Records < int64(n) {
		select {
		case err := <-done:
			b.Fatalf("engine stopped: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Since(began) > 10*time.Minute {
			b.Fatal("engine did not finish within 10 minutes")
		}
	}
	mu.Lock()
	elapsed := time.Since(start)
	mu.Unlock()
	cancel()
	scrapes.Wait()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return float64(n) / elapsed.Seconds()
}
