package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// generation is one incarnation of the lanes, from a reset (or the start)
// to the next. Nothing survives a generation but what was committed.
type generation struct {
	e     *Engine
	built *topology.Built
	subs  []*subRun
	lanes []*worker
	// segmented is what publishSegmented handed the scrape.
	segmented *[]segmentedStore

	watermark atomic.Int64
	// outputs counts records the lanes wrote, so an epoch that only
	// emitted final results is not taken for idle.
	outputs atomic.Int64
	reports chan report
	// batches are the dispatcher's per-lane records not sent yet.
	batches [][]item
	// global are the global stores every lane reads.
	global map[string]state.Store
	// wallClock says a task has wall-clock punctuators or timers: they
	// fire at barriers, so barriers keep coming when the input is idle.
	wallClock bool
	// local opens the lanes' RocksDB databases; nil keeps the stores in
	// memory.
	local *localState

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error
}

// restoreSource reads a store's changelog partitions into the lanes'
// stores, each partition from its offset in from or else from its log
// start, and returns where it stopped; nil means nothing to restore.
type restoreSource func(ctx context.Context, sub *subRun, store string, from map[int32]int64, apply func(rec changelogRecord) error) (kafka.Positions, error)

// changelogRecord is one record of a changelog, with the lane hash it was
// written with (hashed false when it had none).
type changelogRecord struct {
	key, value []byte
	timestamp  int64
	hash       int32
	hashed     bool
	partition  int32
	offset     int64
}

// newGeneration builds the lanes of every sub-topology, their tasks and
// stores, restored through restore, with each lane's floor at floor.
func newGeneration(ctx context.Context, e *Engine, built *topology.Built, s settings, partitions func(sub *topology.Subtopology) int32, floor int64, restore restoreSource, global map[string]state.Store, local *localState) (*generation, error) {
	g := &generation{e: e, built: built, global: global, local: local}
	g.watermark.Store(max(floor, task.Unknown))
	// Shutdown outlives the caller's context: the final barrier still has
	// to travel and commit after it is cancelled.
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, st := range built.Subtopologies {
		g.subs = append(g.subs, &subRun{id: st.ID, upstreamSlots: map[int]int{}, changelogPartitions: max(partitions(st), 1)})
	}
	for _, st := range built.Subtopologies {
		sr := g.subs[st.ID]
		for i := 0; i < s.lanes; i++ {
			l := &worker{g: g, sub: sr, idx: i, gid: len(g.lanes), in: make(chan []item, max(1, s.queue/dispatchBatch)),
				floor: max(floor, task.Unknown), proto: barrier.NewLane(max(floor, task.Unknown)), pinned: noPin, fwdFloor: noPin,
				partTimes: map[watermark.Partition]int64{}, epoch: 1, ctx: g.ctx}
			l.clock = laneClock{l}
			sr.lanes = append(sr.lanes, l)
			g.lanes = append(g.lanes, l)
		}
	}
	for _, bd := range built.Boundaries {
		from := g.subs[built.Nodes[bd.SinkNode].Subtopology]
		to := g.subs[built.Nodes[bd.SourceNode].Subtopology]
		if from == to || containsSub(from.downstream, to) {
			continue
		}
		from.downstream = append(from.downstream, to)
		for _, l := range from.lanes {
			to.upstreamSlots[l.gid] = 1 + len(to.upstreamSlots)
		}
	}
	g.reports = make(chan report, 4*len(g.lanes))
	for _, sr := range g.subs {
		sr.producers = 1 + len(sr.upstreamSlots)
		for _, l := range sr.lanes {
			l.align = barrier.NewAligner[item](sr.producers)
		}
	}
	// Stores are restored lane by lane: a changelog record goes to the
	// lane its hash picks, or to every lane when it has none.
	for _, sr := range g.subs {
		if err := g.initTasks(ctx, sr, s, restore); err != nil {
			g.close()
			return nil, err
		}
	}
	g.publishSegmented()
	return g, nil
}

// segmentedStore is one lane's window or session store, for the
// stoatflow_store_segments gauge.
type segmentedStore struct {
	name  string
	store state.Segmented
}

// publishSegmented hands the scrape the generation's window and session
// stores; close takes them back.
func (g *generation) publishSegmented() {
	var list []segmentedStore
	for _, l := range g.lanes {
		if l.task == nil {
			continue
		}
		for name, s := range l.task.Stores() {
			if sg, ok := s.(state.Segmented); ok {
				list = append(list, segmentedStore{name: name, store: sg})
			}
		}
	}
	g.segmented = &list
	g.e.obs.segmented.Store(g.segmented)
}

func containsSub(list []*subRun, s *subRun) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (g *generation) initTasks(ctx context.Context, sr *subRun, s settings, restore restoreSource) error {
	st := g.built.Subtopologies[sr.id]
	if g.local != nil {
		if err := g.local.open(ctx, g, sr); err != nil {
			return err
		}
	}
	restored := map[string][][]state.ChangelogRecord{}
	began, total := time.Now(), 0
	if restore != nil {
		for _, name := range st.Stores {
			info := g.built.Stores[name]
			if info.ChangelogTopic == "" {
				continue
			}
			var from map[int32]int64
			if g.local != nil {
				from = restoreFrom(sr, info.ChangelogTopic)
			}
			perLane := make([][]state.ChangelogRecord, len(sr.lanes))
			n := 0
			began := time.Now()
			ends, err := restore(ctx, sr, name, from, func(rec changelogRecord) error {
				cr := state.ChangelogRecord{Key: rec.key, Value: rec.value, Timestamp: rec.timestamp}
				// A lane database skips what its checkpoint says it holds.
				keep := func(i int) bool { return !sr.lanes[i].local.has(info.ChangelogTopic, rec.partition, rec.offset) }
				if rec.hashed {
					i := lane.For32(rec.hash, len(sr.lanes))
					if keep(i) {
						perLane[i] = append(perLane[i], cr)
						n++
					}
					return nil
				}
				for i := range perLane {
					if keep(i) {
						perLane[i] = append(perLane[i], cr)
						n++
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("restore state store %s from %s: %w", name, info.ChangelogTopic, err)
			}
			restored[name] = perLane
			if g.local != nil {
				for p, end := range ends {
					g.local.pos.advance(info.ChangelogTopic, p, end)
				}
				g.local.log.Info("state store restored", "store", name, "changelog", info.ChangelogTopic, "records", n, "from_checkpoint", from != nil, "read", time.Since(began))
			}
			g.e.addStats(func(s *Stats) { s.Restored += int64(n) })
			if g.e.metrics != nil {
				g.e.metrics.Counter(metrics.RestoredRecords, "store", name).Add(int64(n))
			}
			total += n
		}
	}
	for _, l := range sr.lanes {
		l := l
		t, err := task.New(g.built, st, task.Options{
			ID:        fmt.Sprintf("%d_lane%d", st.ID, l.idx),
			Collector: l,
			Time:      l.clock,
			Logger:    g.e.log,
			Metrics:   g.e.metrics,
			Lanes:     len(sr.lanes),
			// Lanes read them while the global runner writes them; the
			// in-memory store guards every call.
			GlobalStores: g.global,
			PartitionCount: func(string) int32 {
				return sr.changelogPartitions
			},
			Restore: func(stores map[string]state.Store) error {
				if l.local != nil {
					// Restored records go to the database in bulk, not to
					// an epoch layer.
					l.local.db.BeginRestore()
				}
				for name, perLane := range restored {
					recs := perLane[l.idx]
					if len(recs) == 0 {
						continue
					}
					r, ok := stores[name].(state.Restorer)
					if !ok {
						return fmt.Errorf("state store %s cannot be restored from its changelog", name)
					}
					if err := r.Restore(recs); err != nil {
						return fmt.Errorf("state store %s: %w", name, err)
					}
				}
				if l.local != nil {
					// What was restored is committed state: it is made
					// durable now, with the positions read up to.
					return l.local.db.EndRestore(l.local.checkpoint(g.local.pos.snapshot()))
				}
				return nil
			},
			Backend:    l.backend(),
			Persistent: l.persistent(),
		})
		if err != nil {
			return err
		}
		l.task = t
		if err := t.Init(); err != nil {
			return err
		}
		if t.HasWallClockWork() {
			g.wallClock = true
		}
	}
	if total > 0 {
		// Read, written to the stores and, for RocksDB, committed.
		g.e.log.Info("state restored", "sub_topology", sr.id, "records", total, "took", time.Since(began))
	}
	return nil
}

// start runs the lanes.
func (g *generation) start() {
	for _, l := range g.lanes {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if err := l.run(g.ctx); err != nil && !errors.Is(err, context.Canceled) {
				g.fail(fmt.Errorf("sub-topology %d lane %d: %w", l.sub.id, l.idx, err))
			}
		}()
	}
}

func (g *generation) fail(err error) {
	g.errMu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.errMu.Unlock()
	g.cancel()
}

func (g *generation) failure() error {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err
}

// stop cancels the lanes, waits for them and closes their tasks.
func (g *generation) stop() {
	g.cancel()
	g.wg.Wait()
	g.close()
}

func (g *generation) close() {
	if g.segmented != nil {
		g.e.obs.segmented.CompareAndSwap(g.segmented, nil)
	}
	for _, l := range g.lanes {
		if l.task != nil {
			if err := l.task.Close(); err != nil {
				g.e.log.Warn("close task", "task", l.task.ID(), "err", err)
			}
		}
	}
	g.closeLocal()
}

// dispatchBatch is how many records the dispatcher hands a lane at once:
// one channel operation (and one wake-up) per batch, not per record.
const dispatchBatch = 64

// dispatch queues a source record for its lane; flush sends what is
// queued.
func (g *generation) dispatch(sub int, in task.Input, laneIdx int) error {
	l := g.subs[sub].lanes[laneIdx]
	if g.batches == nil {
		g.batches = make([][]item, len(g.lanes))
	}
	g.batches[l.gid] = append(g.batches[l.gid], item{kind: itemRecord, from: 0, in: in, floor: noPin, source: true})
	if len(g.batches[l.gid]) >= dispatchBatch {
		return g.send(l)
	}
	return nil
}

func (g *generation) send(l *worker) error {
	batch := g.batches[l.gid]
	if len(batch) == 0 {
		return nil
	}
	g.batches[l.gid] = getBatch()
	select {
	case l.in <- batch:
		return nil
	case <-g.ctx.Done():
		return g.ctx.Err()
	}
}

// batchPool recycles the arrays of drained batches: a batch of records is
// the largest allocation per record on the dispatch path.
var batchPool = sync.Pool{New: func() any { b := make([]item, 0, dispatchBatch); return &b }}

func getBatch() []item { return (*batchPool.Get().(*[]item))[:0] }

func putBatch(b []item) {
	b = b[:cap(b)]
	clear(b)
	b = b[:0]
	batchPool.Put(&b)
}

// flush sends every lane what the dispatcher queued for it.
func (g *generation) flush() error {
	for _, l := range g.lanes {
		if g.batches != nil {
			if err := g.send(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// cut sends barrier b to every lane, after everything dispatched before.
func (g *generation) cut(b *marker) error {
	if err := g.flush(); err != nil {
		return err
	}
	for _, l := range g.lanes {
		select {
		case l.in <- []item{{kind: itemMarker, from: 0, b: b}}:
		case <-g.ctx.Done():
			return g.ctx.Err()
		}
	}
	return nil
}
