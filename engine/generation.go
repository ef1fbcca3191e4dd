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

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error
}

// subRun is one sub-topology's lanes.
type subRun struct {
	id    int
	lanes []*laneRun
	// group is the same lanes as package lanes wires them: producer
	// slots, the groups this one feeds.
	group *lanes.Group
	// changelogPartitions is the partition count of this sub's
	// changelogs, which changelog writes outside a record hash over.
	changelogPartitions int32
}

// laneRun is a lane as the generation runs it: the lane (package lanes),
// where it sits, and the RocksDB database its stores live in.
type laneRun struct {
	*lanes.Lane
	sub *subRun
	idx int // within the sub-topology
	gid int // across the generation
	// local is the lane's RocksDB database, nil when its stores are in
	// memory.
	local *laneState
}

// backend is the supplier of the lane's default.dsl.store stores: its
// database under default.dsl.store=rocksDB, else nil (in memory).
func (l *laneRun) backend() state.BytesSupplier {
	if l.local == nil || !l.local.defaults {
		return nil
	}
	return l.local.db.Supplier()
}

// persistent is the supplier of the lane's state.RocksDB stores: its
// database; in memory in a generation with nothing assigned, which opens
// none and processes nothing; nil without RocksDB.
func (l *laneRun) persistent(g *generation) state.BytesSupplier {
	switch {
	case l.local != nil:
		return l.local.db.Supplier()
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

// newGeneration builds the lanes of every sub-topology, their tasks and
// stores, restored through restore, with each lane's floor at floor.
// sinkParts is a sink topic's partition count, which a custom partitioner
// is given (Kafka Streams gives its StreamPartitioner the topic's).
func newGeneration(ctx context.Context, e *Engine, built *topology.Built, s settings, partitions func(sub *topology.Subtopology) int32, sinkParts func(topic string) (int32, error), floor int64, restore restoreSource, global map[string]state.Store, local *localState) (*generation, error) {
	g := &generation{e: e, built: built, global: global, local: local, sinkParts: sinkParts, batchMax: min(lanes.BatchSize, max(s.queue, 1))}
	g.watermark.Store(max(floor, task.Unknown))
	// Shutdown outlives the caller's context: the final barrier still has
	// to travel and commit after it is cancelled.
	g.ctx, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
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
	}
	if p := e.opts.probe; p != nil {
		env.Probe = p.lane
	}
	for _, st := range built.Subtopologies {
		parts := max(partitions(st), 1)
		g.subs = append(g.subs, &subRun{id: st.ID, group: lanes.NewGroup(parts), changelogPartitions: parts})
	}
	for _, st := range built.Subtopologies {
		sr := g.subs[st.ID]
		for i := 0; i < s.lanes; i++ {
			l := &laneRun{sub: sr, idx: i, gid: len(g.lanes)}
			l.Lane = lanes.New(sr.group, lanes.Config{Sub: sr.id, Index: i, Global: l.gid, Floor: max(floor, task.Unknown), OnCommit: l.seal, CoalesceBytes: s.coalesceBytes}, env)
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
	// record goes to the lane its hash picks, or to every lane when it
	// has none.
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
		if l.Task() == nil {
			continue
		}
		for name, s := range l.Task().Stores() {
			if sg, ok := s.(state.Segmented); ok {
				list = append(list, segmentedStore{name: name, store: sg})
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
	// Every lane's stores are opened first, so that a changelog is read
	// once and streamed into them, chunk by chunk; the processors are
	// initialised after, on restored state.
	for _, l := range sr.lanes {
		t, err := task.New(g.built, st, task.Options{
			ID:        fmt.Sprintf("%d_lane%d", st.ID, l.idx),
			Collector: l.Collector(),
			Time:      l.Clock(),
			Logger:    g.e.log,
			Metrics:   g.e.metrics,
			Lanes:     len(sr.lanes),
			// Lanes read them while the global runner writes them; the
			// in-memory store guards every call.
			GlobalStores: g.global,
			// A custom partitioner is given the sink topic's partition
			// count, as Kafka Streams gives it; behind an in-memory
			// boundary, the sub-topology's (its partition number picks
			// the lane).
			PartitionCount: func(topic string) (int32, error) {
				if g.built.Boundaries[topic] != nil {
					return sr.changelogPartitions, nil
				}
				return g.sinkParts(topic)
			},
			Backend:    l.backend(),
			Persistent: l.persistent(g),
		})
		if err != nil {
			return err
		}
		l.SetTask(t)
		if err := t.OpenStores(); err != nil {
			return err
		}
		if l.local != nil {
			// Restored records go to the database in bulk, not to an
			// epoch layer.
			l.local.db.SetRestoreBatchBytes(s.restoreBatchBytes)
			l.local.db.BeginRestore()
		}
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
	for _, l := range sr.lanes {
		if err := l.Task().Init(); err != nil {
			return err
		}
		if l.Task().HasWallClockWork() {
			g.wallClock = true
		}
	}
	if total > 0 {
		// Read, written to the stores and, for RocksDB, committed.
		g.e.log.Info("state restored", "sub_topology", sr.id, "records", total, "took", time.Since(began))
	}
	return nil
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
		g.local.log.Info("state store restored", "store", name, "changelog", topic, "records", n, "from_checkpoint", from != nil, "read", time.Since(began))
	}
	g.e.addStats(func(s *Stats) { s.Restored += int64(n) })
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
	// parts are each lane's records of the chunk being written.
	parts [][]state.ChangelogRecord
	// n counts the records the lanes' stores took; read after done.
	n int
}

func newChunkWriter(sr *subRun, name, topic string, chunk int) *chunkWriter {
	w := &chunkWriter{sr: sr, name: name, topic: topic, full: make(chan []restoreEntry), free: make(chan []restoreEntry, 2),
		failed: make(chan struct{}), done: make(chan struct{}), parts: make([][]state.ChangelogRecord, len(sr.lanes))}
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
	for _, p := range w.parts {
		w.n += len(p)
	}
	return nil
}

// writeLane writes lane i's part of buf to its store.
func (w *chunkWriter) writeLane(i int, buf []restoreEntry) error {
	l := w.sr.lanes[i]
	part := w.parts[i][:0]
	for _, e := range buf {
		// A lane database skips what its checkpoint says it holds.
		if (e.lane == i || e.lane < 0) && !l.local.has(w.topic, e.partition, e.offset) {
			part = append(part, e.rec)
		}
	}
	w.parts[i] = part
	defer clear(part)
	if len(part) == 0 {
		return nil
	}
	r, ok := l.Task().Stores()[w.name].(state.Restorer)
	if !ok {
		return fmt.Errorf("state store %s cannot be restored from its changelog", w.name)
	}
	if err := r.Restore(part); err != nil {
		return fmt.Errorf("lane %d: state store %s: %w", l.idx, w.name, err)
	}
	return nil
}

// start runs the lanes.
func (g *generation) start() {
	for _, l := range g.lanes {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if err := l.Run(g.ctx); err != nil && !errors.Is(err, context.Canceled) {
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
		if l.Task() != nil {
			if err := l.Task().Close(); err != nil {
				g.e.log.Warn("close task", "task", l.Task().ID(), "err", err)
			}
		}
	}
	g.closeLocal()
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
	if len(g.batches[l.gid]) >= g.batchMax {
		return g.send(l)
	}
	return nil
}

func (g *generation) send(l *laneRun) error {
	batch := g.batches[l.gid]
	if len(batch) == 0 {
		return nil
	}
	g.batches[l.gid] = lanes.NewBatch()
	return l.Deliver(g.ctx, batch)
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
	for _, l := range g.lanes {
		if err := l.Mark(g.ctx, &b); err != nil {
			return err
		}
	}
	return nil
}
