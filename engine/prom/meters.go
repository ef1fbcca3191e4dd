package prom

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// Sample is what the engine reports at a scrape.
type Sample struct {
	State     string
	Paused    bool
	EventTime bool
	// Global is the global watermark, watermark.Unset before the first.
	Global     int64
	Partitions []watermark.PartitionState
	// LagMs is the last once-a-second lag sample, in milliseconds;
	// negative before the first watermark (the series is then absent).
	LagMs            int64
	QueuedBatches    int
	BarrierInterval  time.Duration
	Restoring        bool
	Restored         int64
	RestoreRemaining int64
	Committed        int64
	Aborted          int64
	Resets           int64
	RecordsIn        map[string]int64
	RecordsOut       map[string]int64
	// Lag is the consumer lag per source topic, in records.
	Lag map[string]int64
	// Segments are the window and session stores' segments.
	Segments []StoreSegments
	// PartitionLag is the consumer lag of each source partition fetched
	// so far, in records.
	PartitionLag map[watermark.Partition]int64
	// RocksDB are the RocksDB properties (rocks.PropertyNames) summed
	// over the lanes' databases; nil without RocksDB state, and then the
	// RocksDB families are absent.
	RocksDB map[string]uint64
	// Standbys and Warmups count the standby tasks of the last
	// assignment and those of them that are warm-ups; StandbyLag is the
	// lag of those the last warm-up measured, by task id (absent ones
	// are not measured).
	Standbys, Warmups int
	StandbyLag        map[string]int64
}

// StoreSegments is how many segments a window or session store holds
// data in, over every lane.
type StoreSegments struct {
	Store, Type string
	Segments    int
}

// Meters are one engine's Prometheus meters.
type Meters struct {
	level    Level
	reg      *prometheus.Registry
	sample   func() Sample
	counters *metrics.Registry
	descs    map[string]*prometheus.Desc

	advance prometheus.Counter
	commit  prometheus.Histogram
	epoch   prometheus.Histogram
	late    *prometheus.CounterVec
	client  *clientMeters
}

// New returns the meters of an engine at level. sample is called once
// per scrape; counters is the engine/metrics registry to bridge.
func New(level Level, sample func() Sample, counters *metrics.Registry) *Meters {
	m := &Meters{level: level, reg: prometheus.NewRegistry(), sample: sample, counters: counters, descs: map[string]*prometheus.Desc{}}
	help := map[string]string{}
	for _, f := range Families {
		help[f.Name] = f.Help
		if f.Level <= level && f.Type != Histogram {
			m.descs[f.Name] = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		}
	}
	m.advance = prometheus.NewCounter(prometheus.CounterOpts{Name: WatermarkAdvance, Help: help[WatermarkAdvance]})
	m.commit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: CommitDuration, Help: help[CommitDuration],
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}})
	m.epoch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: EpochRecords, Help: help[EpochRecords],
		Buckets: prometheus.ExponentialBuckets(1, 4, 10)})
	m.client = newClientMeters(help)
	for _, name := range []string{WatermarkAdvance, LateRecords, KafkaRequestErrors, KafkaRecordErrors, KafkaProduceBytes, KafkaFetchBytes} {
		delete(m.descs, name)
	}
	m.reg.MustRegister(m.advance, m.commit, m.epoch, collector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.client.collectors()...)
	if level >= Debug {
		m.late = prometheus.NewCounterVec(prometheus.CounterOpts{Name: LateRecords, Help: help[LateRecords]}, []string{"topic", "partition"})
		m.reg.MustRegister(m.late)
	}
	return m
}

// Level is the recording level.
func (m *Meters) Level() Level { return m.level }

// Registry is the Prometheus registry holding every family.
func (m *Meters) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' text format.
func (m *Meters) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Committed records an epoch's commit.
func (m *Meters) Committed(records int64, took time.Duration) {
	m.commit.Observe(took.Seconds())
	m.epoch.Observe(float64(records))
}

// Advanced records a move of the global watermark.
func (m *Meters) Advanced() { m.advance.Inc() }

// Late records an arrival behind the watermark on p; a no-op below Debug.
func (m *Meters) Late(p watermark.Partition) {
	if m.late != nil {
		m.late.WithLabelValues(p.Topic, strconv.Itoa(int(p.Partition))).Inc()
	}
}

// collector emits the families read from a Sample and from the bridged
// registry.
type collector struct{ m *Meters }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.m.descs {
		ch <- d
	}
}

// timestamp emits an epoch-millisecond time as seconds, and nothing for
// watermark.Unset or a negative time: Prometheus' convention is an
// absent series, not a sentinel a query must know to filter out.
func timestamp(emit func(float64), v int64) {
	if v != watermark.Unset && v >= 0 {
		emit(float64(v) / 1000)
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	s := m.sample()
	emit := func(name string, t prometheus.ValueType, v float64, labels ...string) {
		if d := m.descs[name]; d != nil {
			ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
		}
	}
	gauge := prometheus.GaugeValue
	counter := prometheus.CounterValue
	timestamp(func(v float64) { emit(WatermarkTimestamp, gauge, v) }, s.Global)
	if s.LagMs >= 0 {
		emit(WatermarkLag, gauge, float64(s.LagMs)/1000)
	}
	previews := 0
	for _, p := range s.Partitions {
		if p.Previewing {
			previews++
		}
	}
	emit(WatermarkPreview, gauge, float64(previews))
	emit(EventTimeTracking, gauge, b2f(s.EventTime))
	emit(ClientState, gauge, StateValue(s.State, s.Paused))
	emit(BarrierInterval, gauge, s.BarrierInterval.Seconds())
	emit(LaneQueueBatches, gauge, float64(s.QueuedBatches))
	emit(Restoring, gauge, b2f(s.Restoring))
	emit(RestoredRecords, counter, float64(s.Restored))
	emit(RestoreRemaining, gauge, float64(s.RestoreRemaining))
	emit(EpochsCommitted, counter, float64(s.Committed))
	emit(EpochsAborted, counter, float64(s.Aborted))
	emit(Rebalances, counter, float64(s.Resets))
	for t, v := range s.RecordsIn {
		emit(RecordsIn, counter, float64(v), t)
	}
	for t, v := range s.RecordsOut {
		emit(RecordsOut, counter, float64(v), t)
	}
	for t, v := range s.Lag {
		emit(ConsumerLag, gauge, float64(v), t)
	}
	active, idle := 0, 0
	lo, hi, any := int64(0), int64(0), false
	for _, p := range s.Partitions {
		if p.Idle {
			idle++
		} else {
			active++
			if p.Watermark != watermark.Unset {
				if !any || p.Watermark < lo {
					lo = p.Watermark
				}
				if !any || p.Watermark > hi {
					hi = p.Watermark
				}
				any = true
			}
		}
		part := strconv.Itoa(int(p.Partition.Partition))
		timestamp(func(v float64) { emit(PartitionWatermark, gauge, v, p.Topic, part) }, p.Watermark)
		emit(PartitionIdle, gauge, b2f(p.Idle), p.Topic, part)
		timestamp(func(v float64) { emit(PartitionLastEventTime, gauge, v, p.Topic, part) }, p.LastEventTime)
		emit(PartitionIdlenessTimout, gauge, p.IdlenessTimeout.Seconds(), p.Topic, part)
	}
	emit(StandbyTasks, gauge, float64(s.Standbys))
	emit(WarmupTasks, gauge, float64(s.Warmups))
	if len(s.StandbyLag) > 0 {
		var most int64
		for task, lag := range s.StandbyLag {
			most = max(most, lag)
			emit(StandbyLag, gauge, float64(lag), task)
		}
		emit(StandbyLagMax, gauge, float64(most))
	}
	held := map[string]int{}
	for _, p := range s.Partitions {
		if p.Alignment != "" {
			held[p.Alignment] += int(b2f(p.AlignmentHeld))
		}
	}
	for g, n := range held {
		emit(AlignmentHeld, gauge, float64(n), g)
	}
	for _, sg := range s.Segments {
		emit(StoreSegmentCount, gauge, float64(sg.Segments), sg.Store, sg.Type)
	}
	emit(WatermarkPartitions, gauge, float64(active), "active")
	emit(WatermarkPartitions, gauge, float64(idle), "idle")
	if any {
		emit(OutOfOrderness, gauge, float64(hi-lo)/1000)
	}

	dropped := map[string]float64{}
	for _, r := range Reasons {
		dropped[r] = 0
	}
	var mismatch float64
	if m.counters != nil {
		m.counters.Each(func(l metrics.Labelled, v int64) {
			switch l.Name {
			case metrics.DroppedRecords:
				dropped[reasonOf(metrics.Label(l.Labels, "reason"))] += float64(v)
			case timerLaneMismatch:
				mismatch += float64(v)
			}
		})
	}
	for r, v := range dropped {
		emit(DroppedRecords, counter, v, r)
	}
	emit(TimerLaneMismatch, counter, mismatch)

	for p, lag := range s.PartitionLag {
		emit(ConsumerPartitionLag, gauge, float64(lag), p.Topic, strconv.Itoa(int(p.Partition)))
	}
	for prop, v := range s.RocksDB {
		if name, ok := RocksProperties[prop]; ok {
			t := gauge
			if name == RocksBackgroundErrors {
				t = counter
			}
			emit(name, t, float64(v))
		}
	}
	if m.counters != nil {
		c.collectMeters(ch, emit)
	}
}

// collectMeters emits the record path's and the stores' meters
// (metrics.TaskMeter, metrics.StoreMeter), summing the instances of a
// task or a store.
func (c collector) collectMeters(ch chan<- prometheus.Metric, emit func(string, prometheus.ValueType, float64, ...string)) {
	m := c.m
	now := time.Now()
	type nodeKey struct{ task, node string }
	type e2eKey struct{ node, kind string }
	subs := map[string]*metrics.MeterSnapshot{}
	tasks := map[string]*metrics.MeterSnapshot{}
	nodes := map[nodeKey]*metrics.MeterSnapshot{}
	sinks := map[nodeKey]bool{}
	e2e := map[e2eKey]*metrics.TimingSnapshot{}
	add := func(to *metrics.MeterSnapshot, s metrics.MeterSnapshot) *metrics.MeterSnapshot {
		if to == nil {
			to = &metrics.MeterSnapshot{}
		}
		to.Add(s)
		return to
	}
	debug := m.level >= Debug
	m.counters.EachTask(func(t *metrics.TaskMeter) {
		ps := t.Process.Snapshot(now)
		sub := strconv.Itoa(t.Subtopology)
		subs[sub] = add(subs[sub], ps)
		if debug {
			tasks[t.ID] = add(tasks[t.ID], ps)
		}
		for _, n := range t.Nodes {
			if n.Kind != metrics.KindProcessor {
				k := e2eKey{n.Name, n.Kind}
				if e2e[k] == nil {
					e2e[k] = &metrics.TimingSnapshot{}
				}
				e2e[k].Add(n.E2E.Snapshot(now))
			}
			if debug && n.Kind != metrics.KindSource {
				k := nodeKey{t.ID, n.Name}
				nodes[k] = add(nodes[k], n.Process.Snapshot(now))
				sinks[k] = n.Kind == metrics.KindSink
			}
		}
	})
	summary := func(name string, s metrics.TimingSnapshot, labels ...string) {
		if d := m.descs[name]; d != nil {
			ch <- prometheus.MustNewConstSummary(d, uint64(s.Count), s.Sum.Seconds(), nil, labels...)
		}
	}
	extreme := func(name string, v time.Duration, ok bool, labels ...string) {
		if ok {
			emit(name, prometheus.GaugeValue, v.Seconds(), labels...)
		}
	}
	for sub, s := range subs {
		emit(ProcessRecords, prometheus.CounterValue, float64(s.Events), sub)
		summary(ProcessLatency, s.TimingSnapshot, sub)
		extreme(ProcessLatencyMax, s.Max, s.Extremes, sub)
	}
	for k, s := range e2e {
		summary(E2ELatency, *s, k.node, k.kind)
		extreme(E2ELatencyMin, s.Min, s.Extremes, k.node, k.kind)
		extreme(E2ELatencyMax, s.Max, s.Extremes, k.node, k.kind)
	}
	for id, s := range tasks {
		emit(TaskProcessRecords, prometheus.CounterValue, float64(s.Events), id)
		summary(TaskProcessLatency, s.TimingSnapshot, id)
		extreme(TaskProcessLatencyMax, s.Max, s.Extremes, id)
	}
	for k, s := range nodes {
		emit(ProcessorRecords, prometheus.CounterValue, float64(s.Events), k.task, k.node)
		if !sinks[k] {
			summary(ProcessorLatency, s.TimingSnapshot, k.task, k.node)
			extreme(ProcessorLatencyMax, s.Max, s.Extremes, k.task, k.node)
		}
	}
	if !debug {
		return
	}
	type opKey struct{ store, op string }
	ops := map[opKey]*metrics.MeterSnapshot{}
	m.counters.EachStore(func(st *metrics.StoreMeter) {
		for op := range st.Ops {
			k := opKey{st.Store, metrics.OpNames[op]}
			ops[k] = add(ops[k], st.Ops[op].Snapshot(now))
		}
	})
	for k, s := range ops {
		emit(StoreOperations, prometheus.CounterValue, float64(s.Events), k.store, k.op)
		summary(StoreOperationLatency, s.TimingSnapshot, k.store, k.op)
		extreme(StoreOperationMax, s.Max, s.Extremes, k.store, k.op)
	}
}

// timerLaneMismatch is task.TimerLaneMismatch (not imported: this package
// stays below the task package).
const timerLaneMismatch = "timer.lane.mismatch.total"

func reasonOf(r string) string {
	switch r {
	case metrics.ReasonDeserialization:
		return "deserialization"
	case metrics.ReasonProcessing:
		return "processing"
	case "":
		return "unknown"
	}
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
