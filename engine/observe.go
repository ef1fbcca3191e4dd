package engine

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/twmb/franz-go/pkg/kadm"
)

// This file is the engine's observation surface: what the REST API, the
// meters and the progress log read of a running engine. The dispatcher
// owns the watermark tracker; it publishes an immutable view of it each
// time it recomputes the watermark (at most every viewEvery), and readers
// load the last one. Nothing here takes a lock the record path holds.

// viewEvery bounds how often the dispatcher copies the tracker.
const viewEvery = 100 * time.Millisecond

// view is one published copy of the dispatcher's event-time state.
type view struct {
	// at is the wall clock (epoch ms) of the copy.
	at int64
	// global is the tracker's global watermark, watermark.Unset before
	// the first one.
	global     int64
	partitions []watermark.PartitionState
	// queued is the number of records waiting in the lanes' queues
	// (batches, not records, are queued: this counts batches).
	queued int
	// interval is the barrier cadence in force.
	interval time.Duration
	// offsets are the next offset the dispatcher will dispatch per
	// partition: a partition whose offset moves is delivering records.
	offsets map[watermark.Partition]int64
	// lag is, per source topic, the records between what was dispatched
	// and the high watermarks the last fetches reported; partLag is the
	// same per partition.
	lag     map[string]int64
	partLag map[watermark.Partition]int64
	// writers is, per repartition partition read here, what the tasks
	// writing it told in markers (subClocks).
	writers map[watermark.Partition]RepartitionWriters
}

// RepartitionWriters is what the markers of a repartition partition told
// (decision 0042): the tasks writing the topic, by Kafka Streams' task id,
// and of them those that have not told yet (the partition's watermark
// waits for them), those idle, and those whose mark is the partition's
// watermark.
type RepartitionWriters struct {
	Tasks, NotTold, Idle, Holding []string
}

// noteHighWatermark records a fetched partition's high watermark; the
// dispatcher's alone.
func (r *runner) noteHighWatermark(topic string, partition int32, hw int64) {
	if hw < 0 {
		return
	}
	if r.highWater == nil {
		r.highWater = map[watermark.Partition]int64{}
	}
	r.highWater[watermark.Partition{Topic: topic, Partition: partition}] = hw
}

// Observation is a consistent read of a running engine, for the REST API
// and the meters. Partitions and Global come from the last copy of the
// watermark tracker the dispatcher published; the rest is read when
// Observe is called.
type Observation struct {
	State  State
	Paused bool
	// Initialised says the runtime has registered its partitions at
	// least once in this Run: before that there is no watermark view.
	Initialised bool
	// EventTime says the topology tracks watermarks (topology.Built's
	// EventTime); false before the topology is built.
	EventTime bool
	// Lanes per sub-topology; 0 before Run read its configuration.
	Lanes      int
	Assignment map[string][]int32
	// Tasks are the ids of the tasks the lanes run (Engine.Tasks).
	Tasks []string
	// Standbys are the ids of the standby tasks of the last assignment
	// (Engine.Standbys).
	Standbys []string
	// StandbyTasks are the same with whether each warms up and its lag
	// (Engine.StandbyTasks).
	StandbyTasks []StandbyTask
	// Global is the global watermark, watermark.Unset before the first.
	Global int64
	// Partitions are the registered source partitions, sorted.
	Partitions []watermark.PartitionState
	// ViewAt is when Global and Partitions were copied, epoch ms.
	ViewAt int64
	// Dispatched is the next offset to dispatch per partition, as of
	// ViewAt; a partition whose offset moves is delivering records.
	Dispatched map[watermark.Partition]int64
	// Lag is, per source topic, the records fetched partitions hold past
	// what was dispatched, as of ViewAt (the high watermarks of the last
	// fetches; a partition not fetched since keeps its last one).
	Lag map[string]int64
	// PartitionLag is Lag per source partition, for the partitions
	// fetched so far.
	PartitionLag map[watermark.Partition]int64
	// Writers is, for each repartition partition whose watermark its
	// writers' markers tell, what they told, as of ViewAt.
	Writers map[watermark.Partition]RepartitionWriters
	// QueuedBatches is how many record batches wait in the lanes' queues.
	QueuedBatches int
	// BarrierInterval is the barrier cadence in force.
	BarrierInterval time.Duration
	// Restoring is true while the lanes' stores are rebuilt from their
	// changelogs; Restored counts the changelog records applied so far
	// in this Run.
	Restoring bool
	Restored  int64
	// RestoreRemaining is, while restoring, about how many changelog
	// records are still to read: the offsets of the changelogs listed so
	// far less what was applied (transaction markers and aborted records
	// count, so it is an upper bound); 0 otherwise.
	RestoreRemaining int64
	Stats            Stats
	// RecordsIn and RecordsOut count records dispatched from each source
	// topic and produced to each sink topic (changelogs left out). They
	// count what was processed, including epochs later aborted.
	RecordsIn, RecordsOut map[string]int64
}

// observed is the Engine's share of the observation surface.
type observed struct {
	view      atomic.Pointer[view]
	lanes     atomic.Int64
	eventTime atomic.Bool
	restoring atomic.Bool
	restored  atomic.Int64
	// restoreBase is restored when the current restoration began, and
	// restoreTarget the offsets it has to read (restoration remaining).
	restoreBase, restoreTarget atomic.Int64
	built                      atomic.Pointer[topology.Built]
	// segmented are the running generation's window and session stores,
	// rocks its lanes' RocksDB databases.
	segmented   atomic.Pointer[[]segmentedStore]
	rocks       atomic.Pointer[[]*rocks.DB]
	in, out     counterSet
	onCommit    func(records int64, took time.Duration)
	onAdvance   func()
	onLate      func(p watermark.Partition)
	lastPublish time.Time // dispatcher only
}

// counterSet is a set of counters by name, made on first use.
type counterSet struct{ m sync.Map }

func (c *counterSet) get(name string) *atomic.Int64 {
	if v, ok := c.m.Load(name); ok {
		return v.(*atomic.Int64)
	}
	v, _ := c.m.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func (c *counterSet) snapshot() map[string]int64 {
	out := map[string]int64{}
	c.m.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// Observe reads the running engine. It is safe to call from any
// goroutine, at any time, including before Run and after it returned.
func (e *Engine) Observe() Observation {
	o := Observation{State: e.State(), Paused: e.paused.Load(), Global: watermark.Unset,
		EventTime: e.obs.eventTime.Load(), Lanes: int(e.obs.lanes.Load()), Assignment: e.Assignment(), Tasks: e.Tasks(), Standbys: e.Standbys(), StandbyTasks: e.StandbyTasks(),
		Restoring: e.obs.restoring.Load(), Restored: e.obs.restored.Load(), Stats: e.Stats(),
		RecordsIn: e.obs.in.snapshot(), RecordsOut: e.obs.out.snapshot()}
	if o.Restoring {
		o.RestoreRemaining = max(e.obs.restoreTarget.Load()-(o.Restored-e.obs.restoreBase.Load()), 0)
	}
	if v := e.obs.view.Load(); v != nil {
		o.Initialised = true
		o.Global, o.Partitions, o.ViewAt = v.global, slices.Clone(v.partitions), v.at
		o.QueuedBatches, o.BarrierInterval, o.Dispatched, o.Lag = v.queued, v.interval, maps.Clone(v.offsets), maps.Clone(v.lag)
		o.PartitionLag, o.Writers = maps.Clone(v.partLag), maps.Clone(v.writers)
	}
	return o
}

// Built is the topology as this Run built it, nil before.
func (e *Engine) Built() *topology.Built { return e.obs.built.Load() }

// Wall is the engine's wall clock, epoch ms (WithWallClock).
func (e *Engine) Wall() int64 { return e.opts.wall() }

// publishView copies the tracker for readers; force skips the rate limit.
func (r *runner) publishView(force bool) {
	if r.tracker == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(r.e.obs.lastPublish) < viewEvery {
		return
	}
	r.e.obs.lastPublish = now
	v := &view{at: r.e.opts.wall(), global: r.tracker.Global(), partitions: r.tracker.Snapshot(), interval: r.interval(),
		offsets: map[watermark.Partition]int64{}}
	for t, ps := range r.cutOffsets {
		for p, o := range ps {
			v.offsets[watermark.Partition{Topic: t, Partition: p}] = o
		}
	}
	v.lag = map[string]int64{}
	v.partLag = map[watermark.Partition]int64{}
	for p, hw := range r.highWater {
		if o, ok := v.offsets[p]; ok {
			v.lag[p.Topic] += max(hw-o, 0)
			v.partLag[p] = max(hw-o, 0)
		}
	}
	if r.gen != nil {
		for _, l := range r.gen.lanes {
			v.queued += l.Queued()
		}
	}
	if r.sc != nil {
		v.writers = r.sc.writers()
	}
	r.e.obs.view.Store(v)
}

// started records what a Run knows once its configuration and topology
// are read.
func (e *Engine) started(s settings, built *topology.Built) {
	e.obs.lanes.Store(int64(s.lanes))
	e.obs.eventTime.Store(built.EventTime)
	e.obs.built.Store(built)
	guarantee := "exactly_once_v2"
	if !s.exactlyOnce {
		guarantee = "at_least_once"
	}
	api := "off"
	if a := e.HTTPAddr(); a != "" {
		api = "http://" + a
	}
	e.log.Info("engine starting", "application.id", s.appID, "instance", e.cfg.String(kafka.InstanceID), "instance_from", e.instanceFrom,
		"guarantee", guarantee, "lanes_per_subtopology", s.lanes,
		"subtopologies", len(built.Subtopologies), "lane_queue", s.queue, "barrier_interval", s.interval,
		"event_time", built.EventTime, "metrics_level", e.meters.Level().String(), "rest_api", api)
}

// committed reports an epoch's commit to the meters.
func (e *Engine) committed(records int64, took time.Duration) {
	if f := e.obs.onCommit; f != nil {
		f(records, took)
	}
}

// addRestoreTarget adds the offsets a restoration reads from a changelog
// (every partition, log start to end) to the remaining count. A failed
// listing leaves the count short; restoration itself does not depend on it.
func (r *runner) addRestoreTarget(ctx context.Context, topic string) {
	starts, err := r.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return
	}
	ends, err := r.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return
	}
	var n int64
	ends.Each(func(end kadm.ListedOffset) {
		if start, ok := starts.Lookup(end.Topic, end.Partition); ok && end.Err == nil && start.Err == nil {
			n += max(end.Offset-start.Offset, 0)
		}
	})
	r.e.obs.restoreTarget.Add(n)
}

// publishRocks hands the scrape the generation's lane databases, for the
// RocksDB property families; a database closed since answers nothing.
func (g *generation) publishRocks() {
	var dbs []*rocks.DB
	for _, l := range g.lanes {
		if l.local != nil && l.local.db != nil {
			dbs = append(dbs, l.local.db)
		}
	}
	g.e.obs.rocks.Store(&dbs)
}

// rocksProperties sums the RocksDB properties over the running
// generation's lane databases: nil without any, so that the families are
// absent rather than 0 for an engine that keeps no state in RocksDB.
func (e *Engine) rocksProperties() map[string]uint64 {
	dbs := e.obs.rocks.Load()
	if dbs == nil {
		return nil
	}
	var out map[string]uint64
	for _, db := range *dbs {
		for k, v := range db.Properties() {
			if out == nil {
				out = map[string]uint64{}
			}
			out[k] += v
		}
	}
	return out
}
