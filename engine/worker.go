package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// noPin marks an item judged against its lane's own floor.
const noPin = math.MinInt64

// laneHashHeader carries, on a changelog record written while processing a
// record or a timer, the murmur2 hash of the key bytes that picked the
// lane. Restoration routes the record to lane hash mod N for whatever N
// the restarted engine runs with; a record without it (written by a
// barrier or punctuator) goes to every lane.
const laneHashHeader = "__stoatflow.lane.hash"

type itemKind uint8

const (
	itemRecord itemKind = iota
	itemMarker
)

// item is what travels down a lane: a record, or a barrier marker from one
// of the lane's producers.
type item struct {
	kind itemKind
	// from is the producer's slot at the receiving lane: 0 the
	// dispatcher, 1+ an upstream lane across a boundary.
	from  int
	in    task.Input
	floor int64
	// source says in came from a source topic (the dispatcher), so its
	// event time counts towards its partition's watermark.
	source bool
	b      *marker
}

// marker is barrier epoch as it travels down the lanes. stamp is the global
// watermark when it was cut.
type marker struct {
	epoch int64
	stamp int64
	// final is the shutdown barrier: lanes flush every window up to its
	// stamp inside the epoch it closes.
	final bool
}

// report is a lane's finished epoch: what it wrote, and the largest event
// time it processed per source partition.
type report struct {
	epoch int64
	lane  int
	outs  []task.Output
	// final is the lane's last report of the epoch: it crossed the
	// barrier, and partTimes is set. Earlier reports hand over records
	// as they pile up, so that producing overlaps processing.
	final     bool
	partTimes map[watermark.Partition]int64
	// credit is what the report took of the committer's budget of held
	// records (stoatflow.commit.held-records), given back once they are
	// produced; 0 for a report of the epoch being produced.
	credit int64
}

// reportChunk is how many records a lane collects before handing them
// to the committer mid-epoch.
const reportChunk = 512

// subRun is one sub-topology's lanes.
type subRun struct {
	id    int
	lanes []*worker
	// downstream are the sub-topologies this one feeds through in-memory
	// boundaries; slot is this sub's lanes' producer slots there.
	downstream []*subRun
	// producers is how many markers a lane of this sub waits for per
	// epoch: the dispatcher's and one per upstream lane.
	producers int
	// upstreamSlots maps an upstream lane's global index to its slot.
	upstreamSlots map[int]int
	// changelogPartitions is the partition count of this sub's
	// changelogs, which changelog writes outside a record hash over.
	changelogPartitions int32
}

// worker is one lane: it runs one task on one goroutine. Its fields are owned by that
// goroutine, except partTimes (under ptMu) which the dispatcher reads to
// move the watermark.
type worker struct {
	g    *generation
	sub  *subRun
	idx  int // within the sub-topology
	gid  int // across the generation
	task *task.Task
	// in is the lane's queue, shared by its producers. Each producer
	// takes credit (credits[slot], stoatflow.lane.queue-size records)
	// before it sends and the lane gives it back as it processes what the
	// producer sent, so in never fills: the lane always receives, and the
	// marker it waits for always arrives, while a producer that is ahead
	// waits at its own end once its credit is spent on stashed records.
	in      chan []item
	credits []*credit
	// owed is the credit of processed records not given back yet, per
	// producer slot.
	owed  []int64
	clock laneClock

	// align aligns the markers of the lane's producers (and holds what
	// arrives early); proto is the lane's floor and frontier bookkeeping.
	// Both are the protocol of engine/barrier: the order of the work at a
	// barrier is proto.Cross's, not the lane's.
	align  *barrier.Aligner[item]
	proto  *barrier.Lane
	replay []item
	// batch is the last batch received, recycled once replayed.
	batch []item
	// stashPeak is the most items the aligner held at once, for the
	// tests (atomic: they read it while the lane runs).
	stashPeak atomic.Int64

	// epoch and floor are what the lane's work runs under now; they
	// follow proto at each barrier's Enter step.
	epoch int64
	floor int64
	// pinned is the floor of the item in progress, or noPin; fwdFloor is
	// the floor records it forwards across a boundary are pinned to.
	pinned   int64
	fwdFloor int64
	cur      item
	seq      int64

	outs []task.Output
	// sendErr is the first failure to forward across a boundary.
	sendErr error
	ctx     context.Context

	ptMu      sync.Mutex
	partTimes map[watermark.Partition]int64

	// local is the lane's RocksDB database, nil when its stores are in
	// memory.
	local *laneState
}

// backend is the supplier of the lane's default.dsl.store stores: its
// database under default.dsl.store=rocksDB, else nil (in memory).
func (l *worker) backend() state.BytesSupplier {
	if l.local == nil || !l.local.defaults {
		return nil
	}
	return l.local.db.Supplier()
}

// persistent is the supplier of the lane's state.RocksDB stores: its
// database; in memory in a generation with nothing assigned, which opens
// none and processes nothing; nil without RocksDB.
func (l *worker) persistent() state.BytesSupplier {
	switch {
	case l.local != nil:
		return l.local.db.Supplier()
	case l.g.local != nil:
		return state.InMemory()
	}
	return nil
}

// laneClock is a lane's view of time: the global watermark for stream
// time, the lane's floor (or the pinned floor of the item in progress) for
// late drops.
type laneClock struct{ l *worker }

func (c laneClock) StreamTime() int64 { return c.l.g.watermark.Load() }

func (c laneClock) ObserveStreamTime(ts int64) {
	l := c.l
	if !l.cur.source {
		return
	}
	p := watermark.Partition{Topic: l.cur.in.Topic, Partition: l.cur.in.Partition}
	if late := l.g.e.obs.onLate; late != nil && ts < l.g.watermark.Load() {
		late(p)
	}
	l.ptMu.Lock()
	if old, ok := l.partTimes[p]; !ok || ts > old {
		l.partTimes[p] = ts
	}
	l.ptMu.Unlock()
}

func (c laneClock) Floor() int64 {
	if c.l.pinned != noPin {
		return c.l.pinned
	}
	return c.l.floor
}

func (c laneClock) WallClock() int64 { return c.l.g.e.opts.wall() }

func (l *worker) snapshotPartTimes() map[watermark.Partition]int64 {
	l.ptMu.Lock()
	defer l.ptMu.Unlock()
	out := make(map[watermark.Partition]int64, len(l.partTimes))
	for k, v := range l.partTimes {
		out[k] = v
	}
	return out
}

// Send is the task's collector: boundary records go to the downstream
// lane of their key, everything else joins the epoch's output.
func (l *worker) Send(o task.Output) error {
	if o.Boundary != nil {
		return l.forward(o)
	}
	if o.Store != "" {
		l.routeChangelog(&o)
	}
	if l.cur.kind == itemRecord && l.cur.in.Topic != "" {
		o.Origin = l.origin()
	}
	l.outs = append(l.outs, o)
	l.g.outputs.Add(1)
	if len(l.outs) >= reportChunk {
		r := report{epoch: l.epoch, lane: l.gid, outs: l.outs}
		l.outs = make([]task.Output, 0, reportChunk)
		return l.report(r)
	}
	return nil
}

// report hands r to the committer. Records of an epoch after the one
// being produced are held by the committer until their transaction
// opens; they take credit of its budget first, so that a lane ahead of a
// slow one waits here rather than the committer's buffer growing. A
// report of the epoch being produced never waits for credit: the commit
// every held record waits for needs it.
func (l *worker) report(r report) error {
	if len(r.outs) > 0 && r.epoch > l.g.committed.Load()+1 {
		n, err := l.g.held.take(l.ctx, int64(len(r.outs)))
		if err != nil {
			return err
		}
		r.credit = n
	}
	select {
	case l.g.reports <- r:
		return nil
	case <-l.ctx.Done():
		if r.credit > 0 {
			l.g.held.give(r.credit)
		}
		return l.ctx.Err()
	}
}

// routeChangelog picks a changelog record's partition: the hash of its
// changelog key, so that every write of one store key lands in one
// partition, in order, whether a record, a timer or an emission pass wrote
// it. (Kafka Streams writes a task's changes to the task's partition; here
// a lane holds keys of many partitions, and a delete made by an emission
// pass in another partition than the put it undoes could be restored
// before it.) It also stamps the hash of the key bytes that picked the
// lane, which restoration routes by.
func (l *worker) routeChangelog(o *task.Output) {
	_, _, keyBytes, laned := l.task.Laning()
	o.Partition = int32(lane.For(o.Key, int(l.sub.changelogPartitions)))
	if laned {
		h := binary.BigEndian.AppendUint32(nil, uint32(lane.Murmur2(keyBytes)))
		o.Headers = append(o.Headers[:len(o.Headers):len(o.Headers)], processor.Header{Key: laneHashHeader, Value: h})
	}
}

func (l *worker) forward(o task.Output) error {
	down := l.g.subs[l.g.built.Nodes[o.Boundary.SourceNode].Subtopology]
	n := len(down.lanes)
	var idx int
	part := o.Partition
	if o.Boundary.Partitioner != nil && part >= 0 {
		idx = int(part) % n
	} else {
		idx = lane.For(o.Key, n)
		part = int32(lane.For(o.Key, int(down.changelogPartitions)))
	}
	l.seq++
	it := item{
		kind: itemRecord, from: down.upstreamSlots[l.gid], floor: l.fwdFloor,
		in: task.Input{Topic: o.Topic, Partition: part, Offset: l.seq, Key: o.Key, Value: o.Value, Timestamp: o.Timestamp, Headers: o.Headers},
	}
	if l.cur.kind == itemRecord && l.cur.in.Topic != "" {
		it.in.Origin = l.origin()
	}
	dl := down.lanes[idx]
	if _, err := dl.credits[it.from].take(l.ctx, 1); err != nil {
		if l.sendErr == nil {
			l.sendErr = err
		}
		return err
	}
	select {
	case dl.in <- []item{it}:
		return nil
	case <-l.ctx.Done():
		if l.sendErr == nil {
			l.sendErr = l.ctx.Err()
		}
		return l.ctx.Err()
	}
}

// origin is the source-topic record the item in progress descends from.
func (l *worker) origin() task.Origin {
	if l.cur.in.Origin.Topic != "" {
		return l.cur.in.Origin
	}
	return task.Origin{Topic: l.cur.in.Topic, Partition: l.cur.in.Partition, Offset: l.cur.in.Offset}
}

func (l *worker) sendMarker(b *marker) error {
	for _, down := range l.sub.downstream {
		it := item{kind: itemMarker, from: down.upstreamSlots[l.gid], b: b}
		for _, dl := range down.lanes {
			select {
			case dl.in <- []item{it}:
			case <-l.ctx.Done():
				return l.ctx.Err()
			}
		}
	}
	return nil
}

// run processes items until ctx ends or processing fails.
func (l *worker) run(ctx context.Context) error {
	for {
		if len(l.replay) == 0 {
			// About to wait for input: what was processed is given back
			// to its producers first.
			l.giveBack()
			if cap(l.batch) >= dispatchBatch {
				// Nothing holds a drained batch any more (a barrier
				// copies what it stashes): hand its array back.
				putBatch(l.batch)
			}
			l.batch = nil
			select {
			case <-ctx.Done():
				return nil
			case l.batch = <-l.in:
			}
			l.replay = l.batch
			continue
		}
		it := l.replay[0]
		l.replay = l.replay[1:]
		done, err := l.handle(it)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// giveBack returns the credit of the records processed to their
// producers.
func (l *worker) giveBack() {
	for slot, n := range l.owed {
		if n > 0 {
			l.credits[slot].give(n)
			l.owed[slot] = 0
		}
	}
}

// handle processes one item; done reports the final barrier crossed.
func (l *worker) handle(it item) (done bool, err error) {
	if l.align.Blocked(it.from) {
		// The producer's credit should have held it back.
		return false, fmt.Errorf("lane %d: producer %d sent past its %d records: %w", l.gid, it.from, l.align.Bound()-1, barrier.ErrOverBound)
	}
	if !l.align.Offer(it.from, it) {
		// Its producer is already past the barrier this lane waits at:
		// the item belongs to the next epoch. Its credit stays taken
		// until it is processed: that is what holds the producer back.
		if n := int64(l.align.Stashed()); n > l.stashPeak.Load() {
			l.stashPeak.Store(n)
		}
		return false, nil
	}
	if it.kind == itemRecord {
		err := l.process(it)
		if l.owed[it.from]++; l.owed[it.from] >= int64(l.g.batchMax) {
			l.credits[it.from].give(l.owed[it.from])
			l.owed[it.from] = 0
		}
		return false, err
	}
	aligned, released := l.align.Marker(it.from)
	if !aligned {
		return false, nil
	}
	l.replay = append(released, l.replay...)
	if err := l.cross(it.b); err != nil {
		return false, err
	}
	return it.b.final, nil
}

func (l *worker) process(it item) error {
	if p := l.g.e.opts.probe; p != nil && p.lane != nil {
		p.lane(l.sub.id, l.idx, false)
	}
	l.cur = it
	l.pinned = it.floor
	err := l.task.Process(it.in)
	l.pinned = noPin
	l.cur = item{}
	if l.sendErr != nil {
		return l.sendErr
	}
	return err
}

// cross does the work of crossing b, in the protocol's order
// (barrier.Lane.Cross): the listeners, on the final barrier every window
// up to b's stamp, the commit, the report and the marker downstream inside
// the epoch b closes; then, in the next epoch, the emission pass up to the
// frontier, timers and punctuators.
func (l *worker) cross(b *marker) error {
	if p := l.g.e.opts.probe; p != nil && p.lane != nil {
		p.lane(l.sub.id, l.idx, true)
	}
	for _, s := range l.proto.Cross(barrier.Barrier{Epoch: b.epoch, Stamp: b.stamp, Final: b.final}) {
		if err := l.step(s, b); err != nil {
			return err
		}
	}
	return nil
}

// step does one piece of barrier work. fwdFloor pins what the work
// forwards across a boundary to the floor it runs under, so that a result
// is not late downstream by the frontier that emitted it.
func (l *worker) step(s barrier.Step, b *marker) error {
	var err error
	switch s.Kind {
	case barrier.Listen:
		err = l.forwardingAt(s.Floor, func() error { return l.task.Barrier(s.Floor) })
	case barrier.Flush:
		err = l.forwardingAt(s.Floor, func() error {
			if err := l.task.AdvanceWatermark(s.Frontier, s.Floor); err != nil {
				return fmt.Errorf("lane %d: watermark %d: %w", l.gid, s.Frontier, err)
			}
			return nil
		})
	case barrier.Commit:
		err = l.task.Commit()
		if err == nil && l.local != nil {
			// The epoch's writes are complete; what follows is the next
			// epoch's, a layer of its own.
			l.local.db.Seal(b.epoch)
		}
	case barrier.Report:
		r := report{epoch: s.Epoch, lane: l.gid, outs: l.outs, final: true, partTimes: l.snapshotPartTimes()}
		l.outs = make([]task.Output, 0, reportChunk)
		err = l.report(r)
	case barrier.Forward:
		err = l.sendMarker(b)
	case barrier.Enter:
		l.epoch, l.floor = s.Epoch, s.Floor
	case barrier.EventTimers:
		if l.task.HasTimers() {
			_, err = l.task.FireEventTimers(s.Due, s.Floor)
		}
	case barrier.ProcessingTimers:
		if l.task.HasTimers() {
			_, err = l.task.FireProcessingTimers(l.g.e.opts.wall(), s.Floor)
		}
	case barrier.PunctuateStreamTime:
		err = l.forwardingAt(s.Floor, func() error { _, err := l.task.PunctuateStreamTime(s.Floor); return err })
	case barrier.PunctuateWallClock:
		err = l.forwardingAt(s.Floor, func() error { _, err := l.task.PunctuateWallClock(s.Floor); return err })
	}
	if err != nil {
		return err
	}
	return l.sendErr
}

// forwardingAt runs fn with what it forwards pinned to floor.
func (l *worker) forwardingAt(floor int64, fn func() error) error {
	l.fwdFloor = floor
	defer func() { l.fwdFloor = noPin }()
	return fn()
}
