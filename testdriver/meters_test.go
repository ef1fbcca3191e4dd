package testdriver_test

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// TestRecordPathMeters runs 100 records through a map to a sink and a
// count to another, at each recording level, with the wall clock one
// second past every record's timestamp: every record is counted, one in
// metrics.SampleEvery is timed (the first, the 33rd, ...), the sampled
// end-to-end latency at the source and at both sinks is that second, and
// only debug level meters the processor nodes and the count's store.
func TestRecordPathMeters(t *testing.T) {
	const n, wall, ts = 100, 10_000, 9_000
	sampled := int64((n + metrics.SampleEvery - 1) / metrics.SampleEvery)
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			str := serde.String()
			bld := dsl.NewBuilder()
			s := dsl.Stream(bld, dsl.ConsumedWith(str, str), "in")
			dsl.MapValues(s, func(_, v string) string { return v + "!" }).To("out", dsl.ProducedWith(str, str))
			s.GroupByKey().Count(dsl.MaterializedWith(str, serde.Int64())).ToStream().To("counts", dsl.ProducedWith(str, serde.Int64()))
			d, err := testdriver.New(bld.Topology(), map[string]string{"stoatflow.metrics.recording.level": level}, testdriver.WithWallClock(wall))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			in := testdriver.CreateInputTopic(d, "in", str, str)
			for i := range n {
				if err := in.PipeInputAt(string(rune('a'+i%5)), "v", ts); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now()
			var tasks int
			kinds := map[string]int{}
			d.Metrics().EachTask(func(m *metrics.TaskMeter) {
				tasks++
				if p := m.Process.Snapshot(now); p.Events != n || p.Count != sampled || !p.Extremes {
					t.Errorf("task %s: %+v, want %d records, %d timed", m.ID, p, n, sampled)
				}
				for _, nd := range m.Nodes {
					kinds[nd.Kind]++
					e2e := nd.E2E.Snapshot(now)
					if nd.Kind == metrics.KindProcessor {
						if e2e.Count != 0 {
							t.Errorf("processor %s has an end-to-end latency: %+v", nd.Name, e2e)
						}
					} else if e2e.Count != sampled || e2e.Min != time.Second || e2e.Max != time.Second || e2e.Sum != time.Duration(sampled)*time.Second {
						t.Errorf("%s %s: end-to-end %+v, want %d samples of 1s", nd.Kind, nd.Name, e2e, sampled)
					}
					p := nd.Process.Snapshot(now)
					switch {
					case level == "info" || nd.Kind == metrics.KindSource:
						if p.Events != 0 || p.Count != 0 {
							t.Errorf("%s %s metered at %s level: %+v", nd.Kind, nd.Name, level, p)
						}
					case nd.Kind == metrics.KindSink:
						if p.Events != n || p.Count != 0 {
							t.Errorf("sink %s: %+v, want %d records counted, none timed", nd.Name, p, n)
						}
					default:
						if p.Events != n || p.Count != sampled {
							t.Errorf("processor %s: %+v, want %d records, %d timed", nd.Name, p, n, sampled)
						}
					}
				}
			})
			if tasks != 1 || kinds[metrics.KindSource] != 1 || kinds[metrics.KindSink] != 2 || kinds[metrics.KindProcessor] < 2 {
				t.Errorf("%d tasks with nodes %v, want one task with a source, two sinks and the processors", tasks, kinds)
			}
			stores := 0
			d.Metrics().EachStore(func(m *metrics.StoreMeter) {
				stores++
				get, put := m.Ops[metrics.OpGet].Snapshot(now), m.Ops[metrics.OpPut].Snapshot(now)
				if get.Events != n || put.Events != n || get.Count+put.Count == 0 {
					t.Errorf("store %s: get %+v put %+v, want %d of each, some timed", m.Store, get, put, n)
				}
			})
			if want := map[string]int{"info": 0, "debug": 1}[level]; stores != want {
				t.Errorf("%d stores metered at %s level, want %d", stores, level, want)
			}
		})
	}
}

// BenchmarkMetersLevel is the record path's cost of the debug level's
// meters (processor nodes and the count's store) over the info level's,
// on a count of 1 M records through the driver, with no commit barrier
// per record: the two levels in turn, in one run, so that their ratio is
// not the machine's noise.
func BenchmarkMetersLevel(b *testing.B) {
	str := serde.String()
	run := func(level string) time.Duration {
		bld := dsl.NewBuilder()
		dsl.Stream(bld, dsl.ConsumedWith(str, str), "in").GroupByKey().Count(dsl.MaterializedWith(str, serde.Int64())).
			ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
		// No commit per pipe: the live engine flushes its stores (timed
		// every time) once a barrier, not once a record.
		d, err := testdriver.New(bld.Topology(), map[string]string{"stoatflow.metrics.recording.level": level, "test.driver.commit-per-pipe": "false"})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		start := time.Now()
		pipeAll(b, d, benchInput)
		return time.Since(start)
	}
	var info, debug time.Duration
	for range b.N {
		info += run("info")
		debug += run("debug")
	}
	b.ReportMetric(float64(info.Nanoseconds())/float64(b.N*benchRecords), "info-ns/rec")
	b.ReportMetric(float64(debug.Nanoseconds())/float64(b.N*benchRecords), "debug-ns/rec")
	b.ReportMetric(debug.Seconds()/info.Seconds(), "debug/info")
	b.ReportMetric(0, "ns/op")
}
