package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/lanes"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// generation is one incarnation of the lanes, from a reset (or the start)
// to the next. Nothing survives a generation but what was committed.
type generation struct {
	e     *Engine
	built *topology.Built
	subs  []*subRun
	lanes []*laneRun
	// segmented is what publishSegmented handed the scrape.
	segmented *[]segmentedStore
	// warmOnly marks a standby's warm-up (settings.warmOnly).
	warmOnly bool

	watermark atomic.Int64
	// outputs is non-zero once the lanes wrote a record since the last
	// cut took it, so an epoch that only emitted final results is not
	// taken for idle (a mark, not a count: lanes.Env.Outputs).
	outputs atomic.Int64
	// sink is where the lanes hand the committer their reports, with its
	// budget of held records and the last epoch it committed.
	sink *lanes.Sink
	// batchMax is how many records the dispatcher hands a lane at once:
	// lanes.BatchSize, or the queue size when that is smaller.
	batchMax int
	// batches are the dispatcher's per-lane records not sent yet.
	batches [][]lanes.Item
	// global are the global stores every lane reads.
	global map[string]state.Store
	// wallClock says a task has wall-clock punctuators or timers: they
	// fire at barriers, so barriers keep coming when the input is idle.
	wallClock bool
	// local opens the lanes' RocksDB databases; nil keeps the stores in
	// memory.
	local *localState
	// sinkParts is a sink topic's partition count (runner.partitionCount).
	sinkParts func(topic string) (int32, error)
	// kept is the in-memory state the last generation left this one
	// (keep.go); nil when every store is restored.
	kept *keptMemory
	// revokes is runner.revokes when the generation began: once it
	// differs, a partition was revoked or lost, and no epoch of the
	// generation commits.
	revokes int64

	ctx    context.Context
	cancel context.CancelFunc
	// dispatch is the context of the dispatcher's waits on the lanes
	// (room in a lane, a marker): the generation's, ended early by a stop
	// before the shutdown and by the shutdown's deadline during it
	// (runner.watchStop), so that a dispatcher waiting for a lane that
	// waits for a hanging commit sees both.
	dispatch context.Context
	// unwatch ends what watches for the stop.
	unwatch func()
	wg      sync.WaitGroup
	errMu   sync.Mutex
	err     error
}

// subRun is one sub-topology's lanes.
type subRun struct {
	id    int
	lanes []*laneRun
	// group is the same lanes as package lanes wires them: producer
	// slots, the groups this one feeds.
	group *lanes.Group
	// changelogPartitions is the partition count of this sub's
	// changelogs: its task count.
	changelogPartitions int32
	// tasks are the partitions of the tasks the instance runs of this
	// sub-topology, sorted; each lane runs its shard of each. A
	// sub-topology without stores owns no state, and its lanes run one
	// task for every partition instead (stateless).
	tasks     []int32
	stateless bool
	// kept are, per store, the partitions whose tasks kept the store
	// in memory from the last generation (every lane's shard of it):
	// their changelog partitions are not restored.
	kept map[string]map[int32]bool
}

// laneRun is a lane as the generation runs it: the lane (package lanes),
// where it sits, and the RocksDB database its stores live in.
type laneRun struct {
	*lanes.Lane
	sub *subRun
	idx int // within the sub-topology
	gid int // across the generation
	// local is the lane's RocksDB database, which holds its shards of
	// its tasks' stores, each task's under its own prefix
	// (rocks.TaskSupplier); nil when its stores are in memory.
	local *laneState
	// memory are the lane's shards of its tasks' default stores when
	// those are in memory, by task partition: each task's state.Retained,
	// which the next generation may keep (keep.go).
	memory map[int32]*state.Retained
}

// backend is the supplier of the default.dsl.store stores of the lane's
// task of partition p: the task's part of the lane's database under
// default.dsl.store=rocksDB, else its shard in memory (memory).
func (l *laneRun) backend(p int32) state.BytesSupplier {
	if l.inMemory() {
		if r := l.memory[p]; r != nil {
			return r
		}
		return nil
	}
	return l.local.db.TaskSupplier(p)
}

// inMemory says the lane's default stores are in memory.
func (l *laneRun) inMemory() bool { return l.local == nil || !l.local.defaults }

// persistent is the supplier of the state.RocksDB stores of the lane's
// task of partition p: the task's part of the lane's database; in memory
// in a generation with nothing assigned, which opens none and processes
// nothing; nil without RocksDB.
func (l *laneRun) persistent(g *generation, p int32) state.BytesSupplier {
	switch {
	case l.local != nil:
		return l.local.db.TaskSupplier(p)
	case g.local != nil:
		return state.InMemory()
	}
	return nil
}

// seal seals the epoch's writes in the lane's database, if it has one:
// what follows is the next epoch's, a layer of its own.
func (l *laneRun) seal(epoch int64) {
	if l.local != nil {
		l.local.db.Seal(epoch)
	}
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

// newGeneration builds the lanes of every sub-topology, their tasks (those
// of the partitions tasks names) and stores, restored through restore,
// with each lane's floor at floor, or at its sub-topology's in subFloors
// when given (event time per sub-topology, subClocks).
//
// sinkParts is a sink topic's partition count, which a custom partitioner
// is given (Kafka Streams gives its StreamPartitioner the topic's).
func newGeneration(ctx context.Context, e *Engine, built *topology.Built, s settings, partitions func(sub *topology.Subtopology) int32, tasks func(sub *topology.Subtopology, partitions int32) []int32, sinkParts func(topic string) (int32, error), floor int64, subFloors []int64, restore restoreSource, global map[string]state.Store, local *localState, kept *keptMemory) (*generation, error) {
	g := &generation{e: e, built: built, global: global, local: local, sinkParts: sinkParts, batchMax: min(lanes.BatchSize, max(s.queue, 1)), warmOnly: s.warmOnly, kept: kept}
	g.watermark.Store(max(floor, task.Unknown))
	// Shutdown outlives the caller's context: the final barrier still has
	// to travel and commit after it is cancelled.
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.dispatch, g.unwatch = g.ctx, func() {}
	g.sink = &lanes.Sink{Held: lanes.NewCredit(int64(max(s.held, 1)))}
	// What the lanes use of the generation.
	env := &lanes.Env{
		Ctx:       g.ctx,
		Watermark: g.watermark.Load,
		Wall:      e.opts.wall,
		OnLate:    e.obs.onLate,
		Outputs:   &g.outputs,
		Sink:      g.sink,
		Downstream: func(node string) *lanes.Group {
			return g.subs[built.Nodes[node].Subtopology].group
		},
		GiveBack: g.batchMax,
		// A producer queues about one barrier interval of a lane's
		// work: a barrier cut behind it is crossed in about that
		// (issue 37: a slow join held the first epoch for minutes).
		Pace: s.interval,
	}
	if p := e.opts.probe; p != nil {
		env.Probe = p.lane
	}
	for _, st := range built.Subtopologies {
		parts := max(partitions(st), 1)
		sr := &subRun{id: st.ID, group: lanes.NewGroup(parts), changelogPartitions: parts, stateless: len(st.Stores) == 0}
		if !sr.stateless {
			sr.tasks = tasks(st, parts)
		}
		g.subs = append(g.subs, sr)
	}
	for _, st := range built.Subtopologies {
		sr := g.subs[st.ID]
		for i := 0; i < s.lanes; i++ {
			l := &laneRun{sub: sr, idx: i, gid: len(g.lanes)}
			start := floor
			if subFloors != nil {
				start = subFloors[sr.id]
			}
			l.Lane = lanes.New(sr.group, lanes.Config{Sub: sr.id, Index: i, Global: l.gid, Floor: max(start, task.Unknown), OnCommit: l.seal, CoalesceBytes: s.coalesceBytes}, env)
			sr.lanes = append(sr.lanes, l)
			g.lanes = append(g.lanes, l)
		}
	}
	for _, bd := range built.Boundaries {
		from := g.subs[built.Nodes[bd.SinkNode].Subtopology]
		to := g.subs[built.Nodes[bd.SourceNode].Subtopology]
		from.group.Feed(to.group)
	}
	g.sink.Reports = make(chan lanes.Report, 4*len(g.lanes))
	for _, sr := range g.subs {
		sr.group.Open(s.queue)
	}
	// Stores are restored sub-topology by sub-topology: a changelog
	// record goes to the task of its partition, in the lane its hash
	// picks, or in every lane when it has none.
	for _, sr := range g.subs {
		if err := g.initTasks(ctx, sr, s, restore); err != nil {
			g.close()
			return nil, err
		}
	}
	g.publishSegmented()
	g.publishRocks()
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
		for _, t := range l.Tasks() {
			for name, s := range t.Stores() {
				if sg, ok := s.(state.Segmented); ok {
					list = append(list, segmentedStore{name: name, store: sg})
				}
			}
		}
	}
	g.segmented = &list
	g.e.obs.segmented.Store(g.segmented)
}

func (g *generation) initTasks(ctx context.Context, sr *subRun, s settings, restore restoreSource) error {
	st := g.built.Subtopologies[sr.id]
	if g.local != nil {
		if err := g.local.open(ctx, g, sr); err != nil {
			return err
		}
	}
	// Every task's stores are opened first, so that a changelog is read
	// once and streamed into them, chunk by chunk; the processors are
	// initialised after, on restored state.
	for _, l := range sr.lanes {
		parts := sr.tasks
		if sr.stateless {
			parts = []int32{0}
		}
		for _, p := range parts {
			if !sr.stateless && l.inMemory() {
				// The task's shard in memory: the one the last
				// generation kept, or a new one.
				r := g.kept.shard(sr.id, sr.changelogPartitions, len(sr.lanes), p, l.idx)
				if r == nil {
					r = state.NewRetained()
				}
				r.Begin()
				for _, name := range st.Stores {
					if !state.Keepable(g.built.Stores[name].Builder) {
						r.Forget(name)
					}
				}
				if l.memory == nil {
					l.memory = map[int32]*state.Retained{}
				}
				l.memory[p] = r
			}
			t, err := task.New(g.built, st, task.Options{
				ID:        taskName(st.ID, p, sr.stateless, l.idx),
				Partition: p,
				Collector: l.Collector(),
				Time:      l.Clock(),
				Logger:    g.e.log.With("lane", l.idx),
				Metrics:   g.e.metrics,
				Lanes:     len(sr.lanes),
				// Lanes read them while the global runner writes them; the
				// in-memory store guards every call.
				GlobalStores: g.global,
				// A custom partitioner is given the sink topic's partition
				// count, as Kafka Streams gives it; behind an in-memory
				// boundary, the downstream sub-topology's task count (its
				// partition number picks the task, and the lane).
				PartitionCount: func(topic string) (int32, error) {
					if bd := g.built.Boundaries[topic]; bd != nil {
						return g.subs[g.built.Nodes[bd.SourceNode].Subtopology].changelogPartitions, nil
					}
					return g.sinkParts(topic)
				},
				Backend:    l.backend(p),
				Persistent: l.persistent(g, p),
			})
			if err != nil {
				return err
			}
			if sr.stateless {
				l.SetTask(t)
			} else {
				l.AddTask(t)
			}
			if err := t.OpenStores(); err != nil {
				return err
			}
		}
		if l.local != nil {
			// Restored records go to the database in bulk, not to an
			// epoch layer.
			l.local.db.SetRestoreBatchBytes(s.restoreBatchBytes)
			l.local.db.BeginRestore()
		}
	}
	sr.kept = keptStores(sr, st.Stores)
	if len(sr.kept) > 0 {
		g.e.log.Info("state kept in memory across the rebalance", "sub_topology", sr.id, "stores", sr.kept)
	}
	began, total := time.Now(), 0
	if restore != nil {
		for _, name := range st.Stores {
			info := g.built.Stores[name]
			if info.ChangelogTopic == "" {
				continue
			}
			n, err := g.restoreStore(ctx, sr, name, info.ChangelogTopic, max(s.restoreChunk, 1), restore)
			if err != nil {
				return err
			}
			total += n
		}
	}
	if g.local != nil {
		// What was restored is committed state: it is made durable now,
		// with the positions read up to, the lanes' databases side by
		// side (each writes the last of its bulk).
		pos := g.local.pos.snapshot()
		g.e.log.Debug("restored state checkpointed", "sub_topology", sr.id, "tasks", sr.tasks, "offsets", pos, "warm_only", g.warmOnly)
		errs := make([]error, len(sr.lanes))
		var wg sync.WaitGroup
		for i, l := range sr.lanes {
			if l.local == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.local.db.EndRestore(l.local.checkpoint(pos)); err != nil {
					errs[i] = fmt.Errorf("sub-topology %d lane %d: restore state: %w", sr.id, l.idx, err)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	if g.warmOnly {
		// A standby's warm-up: the state is what it is for; nothing
		// runs on it.
		return nil
	}
	for _, l := range sr.lanes {
		for _, t := range l.Tasks() {
			if err := t.Init(); err != nil {
				return err
			}
			if t.HasWallClockWork() {
				g.wallClock = true
			}
		}
	}
	if total > 0 {
		// Read, written to the stores and, for RocksDB, committed.
		g.e.log.Info("state restored", "sub_topology", sr.id, "records", total, "took", time.Since(began))
	}
	return nil
}

// keptStores are, per store of sr, the partitions of the tasks whose
// every lane reopened the store with the entries the last generation left
// in it (state.Retained.Reopened).
func keptStores(sr *subRun, stores []string) map[string]map[int32]bool {
	var kept map[string]map[int32]bool
	for _, name := range stores {
		for _, p := range sr.tasks {
			all := len(sr.lanes) > 0
			for _, l := range sr.lanes {
				if r := l.memory[p]; r == nil || !r.Reopened(name) {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			if kept == nil {
				kept = map[string]map[int32]bool{}
			}
			if kept[name] == nil {
				kept[name] = map[int32]bool{}
			}
			kept[name][p] = true
		}
	}
	return kept
}

// restoreEntry is a changelog record on its way to the lanes' stores:
// lane is the lane its hash picks, or -1 for every lane (a record
// written outside a record, without a lane hash).
type restoreEntry struct {
	rec       state.ChangelogRecord
	lane      int
	partition int32
	offset    int64
}

// restoreStore streams store's changelog into the stores of sr's lanes:
// restore reads it partition by partition, and every chunk records it
// delivers is handed to an applier goroutine, which writes it to the
// lanes' stores, each record to the store of the lane its hash picks (a
// record without one to every lane's, from the one copy in the chunk),
// the lanes side by side. The read goes on into the next chunk while the
// applier writes the last one, so fetching and decoding overlap writing;
// there are two chunks, and the read waits for the one being written
// before it starts a third. What a restore holds is so two chunks, the
// lanes' parts of one, and what the read has fetched, whatever the
// changelog's length. It returns how many records the lanes' stores took.
func (g *generation) restoreStore(ctx context.Context, sr *subRun, name, topic string, chunk int, restore restoreSource) (int, error) {
	var from map[int32]int64
	if g.local != nil {
		from = restoreFrom(sr, topic)
	}
	w := newChunkWriter(sr, name, topic, chunk)
	go w.run()
	began := time.Now()
	buf := w.take()
	ends, err := restore(ctx, sr, name, from, func(rec changelogRecord) error {
		e := restoreEntry{rec: state.ChangelogRecord{Key: rec.key, Value: rec.value, Timestamp: rec.timestamp}, lane: -1, partition: rec.partition, offset: rec.offset}
		if rec.hashed {
			e.lane = lane.For32(rec.hash, len(sr.lanes))
		}
		buf = append(buf, e)
		if len(buf) < chunk {
			return nil
		}
		if err := w.hand(ctx, buf); err != nil {
			return err
		}
		buf = nil
		select {
		case buf = <-w.free:
			return nil
		case <-w.failed:
			return w.err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err == nil && len(buf) > 0 {
		err = w.hand(ctx, buf)
	}
	n, werr := w.finish()
	if err == nil {
		err = werr
	}
	if err != nil {
		return 0, fmt.Errorf("restore state store %s from %s: %w", name, topic, err)
	}
	if g.local != nil {
		for p, end := range ends {
			g.local.pos.advance(topic, p, end)
		}
		level := slog.LevelInfo
		if g.warmOnly {
			level = slog.LevelDebug // a standby's, every few seconds
		}
		g.local.log.Log(ctx, level, "state store restored", "store", name, "changelog", topic, "records", n, "from_checkpoint", from != nil, "read", time.Since(began))
	}
	if g.warmOnly {
		g.e.addStats(func(s *Stats) { s.StandbyRecords += int64(n) })
	} else {
		g.e.addStats(func(s *Stats) { s.Restored += int64(n) })
	}
	if g.e.metrics != nil {
		g.e.metrics.Counter(metrics.RestoredRecords, "store", name).Add(int64(n))
	}
	return n, nil
}

// chunkWriter is restoreStore's applier: it writes the chunks the read
// hands it to the lanes' stores, one lane per goroutine, and gives each
// chunk back, emptied, on free. A failure stops it: err holds it and
// failed is closed.
type chunkWriter struct {
	sr          *subRun
	name, topic string
	full, free  chan []restoreEntry
	failed      chan struct{}
	done        chan struct{}
	err         error
	// parts are each lane's records of the chunk being written, counted
	// how many the lane's stores took of it.
	parts   [][]state.ChangelogRecord
	counted []int
	// n counts the records the lanes' stores took; read after done.
	n int
}

func newChunkWriter(sr *subRun, name, topic string, chunk int) *chunkWriter {
	w := &chunkWriter{sr: sr, name: name, topic: topic, full: make(chan []restoreEntry), free: make(chan []restoreEntry, 2),
		failed: make(chan struct{}), done: make(chan struct{}), parts: make([][]state.ChangelogRecord, len(sr.lanes)), counted: make([]int, len(sr.lanes))}
	for range 2 {
		w.free <- make([]restoreEntry, 0, chunk)
	}
	return w
}

// take is the read's first chunk.
func (w *chunkWriter) take() []restoreEntry { return <-w.free }

// hand gives the applier a chunk to write, or returns why it cannot.
func (w *chunkWriter) hand(ctx context.Context, buf []restoreEntry) error {
	select {
	case w.full <- buf:
		return nil
	case <-w.failed:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish waits for the applier to write what it was handed, and returns
// how many records the stores took and the applier's failure.
func (w *chunkWriter) finish() (int, error) {
	close(w.full)
	<-w.done
	return w.n, w.err
}

func (w *chunkWriter) run() {
	defer close(w.done)
	for buf := range w.full {
		if err := w.write(buf); err != nil {
			w.err = err
			close(w.failed)
			// Drain, so that a hand in flight does not wait on a
			// writer that has stopped (finish closes full).
			for range w.full {
			}
			return
		}
		clear(buf)
		w.free <- buf[:0]
	}
}

// write writes one chunk to the lanes' stores, the lanes side by side:
// each has its own database (or in-memory stores), which no one else
// touches during a restore.
func (w *chunkWriter) write(buf []restoreEntry) error {
	lanes := w.sr.lanes
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i := range lanes {
		if i == len(lanes)-1 {
			errs[i] = w.writeLane(i, buf)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.writeLane(i, buf)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, n := range w.counted {
		w.n += n
	}
	return nil
}

// writeLane writes lane i's part of buf to its tasks' stores: each
// record to the store of the task of its changelog partition.
func (w *chunkWriter) writeLane(i int, buf []restoreEntry) error {
	l := w.sr.lanes[i]
	part := w.parts[i][:0]
	defer func() { clear(part); w.parts[i] = part[:0] }()
	// A run of records of one partition goes to its task's store in one
	// call; a chunk holds one partition's records, two where the read
	// moved on to the next.
	run, at := 0, int32(-1)
	flush := func() error {
		if len(part) == run {
			return nil
		}
		recs := part[run:]
		run = len(part)
		t := l.TaskFor(at)
		if t == nil {
			return fmt.Errorf("lane %d: changelog %s partition %d: no task of the instance owns it", l.idx, w.topic, at)
		}
		r, ok := t.Stores()[w.name].(state.Restorer)
		if !ok {
			return fmt.Errorf("state store %s cannot be restored from its changelog", w.name)
		}
		if err := r.Restore(recs); err != nil {
			return fmt.Errorf("task %s lane %d: state store %s: %w", t.ID(), l.idx, w.name, err)
		}
		return nil
	}
	for _, e := range buf {
		if e.lane != i && e.lane >= 0 {
			continue
		}
		if e.partition != at {
			if err := flush(); err != nil {
				return err
			}
			at = e.partition
		}
		// A task's database skips what its checkpoint says it holds.
		if !l.local.has(w.topic, e.partition, e.offset) {
			part = append(part, e.rec)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	w.counted[i] = len(part)
	return nil
}

// start runs the lanes.
func (g *generation) start() {
	for _, l := range g.lanes {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if err := l.Run(g.ctx); err != nil && !errors.Is(err, context.Canceled) {
				var pe *task.PanicError
				var proc *task.ProcessingError
				if errors.As(err, &pe) && !errors.As(err, &proc) {
					// Outside a processor: the task did not log it.
					g.e.log.Error("lane panicked", "sub_topology", l.sub.id, "lane", l.idx, "err", err, "stack", string(pe.Stack))
				}
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
	g.unwatch()
	if g.segmented != nil {
		g.e.obs.segmented.CompareAndSwap(g.segmented, nil)
	}
	for _, l := range g.lanes {
		for _, t := range l.Tasks() {
			if err := t.Close(); err != nil {
				g.e.log.Warn("close task", "task", t.ID(), "lane", l.idx, "err", err)
			}
		}
	}
	g.closeLocal()
}

// owns says the instance runs the task of partition of sub-topology sub
// (a stateless sub-topology runs every partition).
func (g *generation) owns(sub int, partition int32) bool {
	sr := g.subs[sub]
	if sr.stateless {
		return true
	}
	_, ok := slices.BinarySearch(sr.tasks, partition)
	return ok
}

// slot queues a source record for lane laneIdx of sub-topology sub: it
// appends the record to the lane's batch and returns its input, for the
// dispatcher to fill in before it calls sendFull. flush sends what is
// queued.
func (g *generation) slot(sub, laneIdx int) (*task.Input, *laneRun) {
	l := g.subs[sub].lanes[laneIdx]
	if g.batches == nil {
		g.batches = make([][]lanes.Item, len(g.lanes))
	}
	var in *task.Input
	g.batches[l.gid], in = lanes.AppendSource(g.batches[l.gid])
	return in, l
}

// sendFull hands l its batch once the batch is full.
func (g *generation) sendFull(l *laneRun) error {
	if n := len(g.batches[l.gid]); n >= g.batchMax || int64(n) >= l.BatchLimit() {
		return g.send(l)
	}
	return nil
}

// send hands l its batch. A batch not delivered (the dispatch context
// ended) stays queued: its records count as dispatched, and the shutdown
// may still deliver them before the final barrier.
func (g *generation) send(l *laneRun) error {
	batch := g.batches[l.gid]
	if len(batch) == 0 {
		return nil
	}
	if err := l.Deliver(g.dispatch, batch); err != nil {
		return err
	}
	g.batches[l.gid] = lanes.NewBatch()
	return nil
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
func (g *generation) cut(b barrier.Barrier) error {
	if err := g.flush(); err != nil {
		return err
	}
	var per []barrier.Barrier
	if b.Subs != nil {
		per = make([]barrier.Barrier, len(b.Subs))
		for s, w := range b.Subs {
			per[s] = barrier.Barrier{Epoch: b.Epoch, Stamp: w, Final: b.Final}
		}
	}
	for _, l := range g.lanes {
		bp := &b
		if per != nil {
			bp = &per[l.sub.id]
		}
		if err := l.Mark(g.dispatch, bp); err != nil {
			return err
		}
	}
	return nil
}

// taskName names a task in logs and errors: Kafka Streams' task id,
// "<sub-topology>_<partition>", or for the one task a lane of a
// stateless sub-topology runs for every partition, the lane's.
func taskName(sub int, p int32, stateless bool, lane int) string {
	if stateless {
		return fmt.Sprintf("%d_lane%d", sub, lane)
	}
	return taskID(sub, p)
}
