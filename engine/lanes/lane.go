package lanes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// noPin marks an item judged against its lane's own floor.
const noPin = math.MinInt64

// noItem is a lane's current item between items: no record, no topic.
var noItem Item

type itemKind uint8

const (
	itemRecord itemKind = iota
	itemMarker
)

// Item is what travels down a lane: a record, or a barrier marker from
// one of the lane's producers. The dispatcher makes records with
// SourceRecord; markers travel through Lane.Mark.
type Item struct {
	kind itemKind
	// from is the producer's slot at the receiving lane: 0 the
	// dispatcher, 1+ an upstream lane across a boundary.
	from  int
	in    task.Input
	floor int64
	// source says in came from a source topic (the dispatcher), so its
	// event time counts towards its partition's watermark.
	source bool
	// b is the barrier of a marker, shared by every lane it reaches.
	b *barrier.Barrier
}

// SourceRecord is a record read from a source topic, as the dispatcher
// hands it to a lane: judged against the lane's own floor, its event time
// counting towards its partition's watermark.
func SourceRecord(in task.Input) Item {
	return Item{kind: itemRecord, from: 0, in: in, floor: noPin, source: true}
}

// AppendSource appends SourceRecord of an empty input to batch and returns
// the input, for the dispatcher to fill in where it lies: a record is
// written once, into its batch, not built and then copied there. The
// room of batch past its length must be zero, as NewBatch's is (a
// recycled batch is cleared whole): the new item takes it as it is.
func AppendSource(batch []Item) ([]Item, *task.Input) {
	n := len(batch)
	if n < cap(batch) {
		batch = batch[:n+1]
	} else {
		batch = append(batch, Item{})
	}
	it := &batch[n]
	it.kind, it.floor, it.source = itemRecord, noPin, true
	return batch, &it.in
}

// BatchSize is how many records the dispatcher hands a lane at once: one
// channel operation (and one wake-up) per batch, not per record.
const BatchSize = 256

// batchPool recycles the arrays of drained batches: a batch of records is
// the largest allocation per record on the dispatch path.
var batchPool = sync.Pool{New: func() any { b := make([]Item, 0, BatchSize); return &b }}

// NewBatch returns an empty batch of BatchSize room, recycled when one is
// free: the lane a batch is delivered to hands its array back once it
// processed it.
func NewBatch() []Item { return (*batchPool.Get().(*[]Item))[:0] }

func putBatch(b []Item) {
	b = b[:cap(b)]
	clear(b)
	b = b[:0]
	batchPool.Put(&b)
}

// Config is what makes one lane.
type Config struct {
	// Sub is the lane's sub-topology, Index its index within it, Global
	// its index across the generation (reports and producer slots name a
	// lane by it).
	Sub, Index, Global int
	// Floor is the lane's floor before its first barrier.
	Floor int64
	// OnCommit, when set, runs after the task committed an epoch's writes
	// at its barrier: the lane's database seals them.
	OnCommit func(epoch int64)
	// CoalesceBytes bounds the changelog records the lane holds back in
	// an epoch to write only each store key's last (coalescer); 0 writes
	// every change as it happens.
	CoalesceBytes int
}

// Env is what a lane needs of the generation that runs it; the lanes of
// one generation share it.
type Env struct {
	// Ctx ends the lane's waits: for credit, for room in a queue, for the
	// committer.
	Ctx context.Context
	// Watermark is the global watermark now: the lanes' stream time.
	Watermark func() int64
	// Wall is the wall clock, in epoch milliseconds.
	Wall func() int64
	// OnLate, when set, is told of a source record whose event time is
	// behind the global watermark.
	OnLate func(watermark.Partition)
	// Probe, when set, runs in a lane before it processes a record
	// (barrier false) or crosses a barrier (barrier true).
	Probe func(sub, idx int, barrier bool)
	// Outputs is non-zero once the lanes wrote a record since the runner
	// last reset it, so that an epoch that only emitted final results is
	// not taken for idle. It is a mark, not a count (noteOutput).
	Outputs *atomic.Int64
	// Sink is the committer's side: where finished epochs go.
	Sink *Sink
	// Downstream is the group of the sub-topology a boundary's source
	// node reads in.
	Downstream func(sourceNode string) *Group
	// GiveBack is how many processed records of one producer a lane
	// gives back at once while it has more input (the dispatcher's batch
	// size, or the queue size when that is smaller).
	GiveBack int
	// Pace, when positive, is how much of the lane's own processing time
	// its producers may queue ahead of it: the lane measures its rate and
	// caps each producer's outstanding credit at rate × Pace, so that a
	// barrier cut behind the queue is crossed within about Pace however
	// slow the lane's records are (a slow join, a processor that calls a
	// service). Decision 0025.
	Pace time.Duration
}

// paceWindow is how much busy time a lane measures before it sets its
// producers' limits anew.
const paceWindow = 100 * time.Millisecond

// paceStart is each producer's limit before the lane has measured its
// rate (Env.Pace): one dispatcher batch, so that a fast lane is handed
// batches as large as without pacing from the start, and a slow one
// queues one batch before it has measured.
const paceStart = BatchSize

// paceRecords is how many records a lane processes before it sets its
// producers' limits anew even within paceWindow: a fast lane that is
// mostly idle (its producers are the bottleneck) reaches its full limit
// after a few batches, not after 100 ms of busy time.
const paceRecords = 4096

// paceEvery is how many records a lane processes between two looks at
// the clock within a batch, so that a batch of slow records sets the
// limits before it ends.
const paceEvery = 16

// Lane is one lane: it runs its tasks on one goroutine (Run). Its fields
// are owned by that goroutine, except partTimes (the map under ptMu, the
// times atomic), which the dispatcher reads to move the watermark.
//
// A lane of a sub-topology with state runs one task per task partition
// the instance owns (its shard of the task: the keys of that partition
// whose hash picks this lane), and a record goes to the task of its
// partition; a lane of a stateless sub-topology runs one task for every
// partition (SetTask).
type Lane struct {
	cfg   Config
	env   *Env
	group *Group
	// task is the task at work now: the one of the record in progress,
	// or the one a barrier step is running.
	task *task.Task
	// one is the lane's only task, serving every partition; byPart are
	// its tasks by task partition (nil where the instance owns none),
	// all the same tasks in partition order.
	one    *task.Task
	byPart []*task.Task
	all    []*task.Task
	// in is the lane's queue, shared by its producers. Each producer
	// takes credit (credits[slot], stoatflow.lane.queue-size records)
	// before it sends and the lane gives it back as it processes what the
	// producer sent, so in never fills: the lane always receives, and the
	// marker it waits for always arrives, while a producer that is ahead
	// waits at its own end once its credit is spent on stashed records.
	in      chan []Item
	credits []*Credit
	// owed is the credit of processed records not given back yet, per
	// producer slot.
	owed []int64

	// align aligns the markers of the lane's producers (and holds what
	// arrives early); proto is the lane's floor and frontier bookkeeping.
	// Both are the protocol of engine/barrier: the order of the work at a
	// barrier is proto.Cross's, not the lane's.
	align  *barrier.Aligner[Item]
	proto  *barrier.Lane
	replay []Item
	// batch is the last batch received, recycled once replayed.
	batch []Item
	// stashPeak is the most items the aligner held at once, for the
	// tests (atomic: they read it while the lane runs).
	stashPeak atomic.Int64

	// recvAt is when the batch in progress was received (zero between
	// batches); busy and done are the processing time and the records
	// processed since the producers' limits were last set (Env.Pace).
	// batchLimit is the limit the dispatcher sizes its batches by.
	recvAt     time.Time
	busy       time.Duration
	done       int64
	batchLimit atomic.Int64
	// fresh says no record of the batch last received was processed
	// yet: its first is timed (task.SampleNext), so that a quiet input
	// is timed record by record and a busy one one record in
	// metrics.SampleEvery.
	fresh bool

	// epoch and floor are what the lane's work runs under now; they
	// follow proto at each barrier's Enter step.
	epoch int64
	floor int64
	// pinned is the floor of the item in progress, or noPin; fwdFloor is
	// the floor records it forwards across a boundary are pinned to.
	pinned   int64
	fwdFloor int64
	// cur is the item in progress, in its batch (no copy of it is made
	// per record), or noItem between items.
	cur *Item
	seq int64
	// arena holds the lane hash headers of its changelog records.
	arena outArena
	// coalesce holds the epoch's changelog records, the last per key.
	coalesce *coalescer

	outs []task.Output
	// sendErr is the first failure to forward across a boundary.
	sendErr error

	// ptMu guards the map; the times are atomic, so that the lane moves
	// the time of a partition it has seen without the lock, once a
	// record.
	ptMu      sync.Mutex
	partTimes map[watermark.Partition]*atomic.Int64
	// recentPT remembers the entries of the partitions observed last, so
	// that a record takes neither the lock nor the map's hashing of the
	// topic. The lane's goroutine alone uses it.
	recentPT watermark.Recent[atomic.Int64]
}

// New makes a lane of group g. It takes input once g is opened
// (Group.Open) and runs once it has its tasks (SetTask, AddTask).
func New(g *Group, cfg Config, env *Env) *Lane {
	l := &Lane{cfg: cfg, env: env, group: g,
		floor: cfg.Floor, proto: barrier.NewLane(cfg.Floor), pinned: noPin, fwdFloor: noPin, cur: &noItem,
		partTimes: map[watermark.Partition]*atomic.Int64{}, epoch: 1}
	l.batchLimit.Store(math.MaxInt64)
	if cfg.CoalesceBytes > 0 {
		l.coalesce = newCoalescer(cfg.CoalesceBytes)
	}
	g.lanes = append(g.lanes, l)
	return l
}

// open readies the lane for producers producers, each with queue
// records' credit.
func (l *Lane) open(producers, queue int) {
	// A producer has queue records' credit; what it sent past the
	// barrier the lane waits at is stashed, and it cannot send more than
	// that (the bound counts its marker too).
	l.align = barrier.NewBoundedAligner[Item](producers, queue+1)
	l.credits = make([]*Credit, producers)
	for slot := range l.credits {
		l.credits[slot] = NewCredit(int64(queue))
		if l.env.Pace > 0 {
			// Until the lane has measured its rate, its producers start
			// small: a first batch of slow records must not hold the
			// first barrier back for minutes.
			l.credits[slot].SetLimit(paceStart)
		}
	}
	if l.env.Pace > 0 {
		l.batchLimit.Store(paceStart)
	}
	l.owed = make([]int64, producers)
	// Room for every record a producer's credit covers, one channel slot
	// each at worst, and its marker: no send ever waits on the channel
	// itself.
	l.in = make(chan []Item, producers*(queue+1))
}

// SetTask gives the lane the one task it runs for records of every
// partition: a sub-topology that owns no state.
func (l *Lane) SetTask(t *task.Task) {
	l.one, l.byPart, l.all, l.task = t, nil, []*task.Task{t}, t
}

// AddTask gives the lane its shard of the task of t's partition. A lane
// with tasks added runs a record only in the task of its partition.
func (l *Lane) AddTask(t *task.Task) {
	p := int(t.Partition())
	if p >= len(l.byPart) {
		l.byPart = append(l.byPart, make([]*task.Task, p+1-len(l.byPart))...)
	}
	l.one, l.byPart[p] = nil, t
	l.all = l.all[:0]
	for _, bt := range l.byPart {
		if bt != nil {
			l.all = append(l.all, bt)
		}
	}
	if l.task == nil {
		l.task = t
	}
}

// Tasks are the tasks the lane runs, in partition order.
func (l *Lane) Tasks() []*task.Task { return l.all }

// TaskFor is the task that runs a record of partition p, nil when the
// lane has none.
func (l *Lane) TaskFor(p int32) *task.Task {
	if l.one != nil {
		return l.one
	}
	if p >= 0 && int(p) < len(l.byPart) {
		return l.byPart[p]
	}
	return nil
}

// ErrNoTask is returned for a record of a partition no task of the lane
// owns: the dispatcher or an upstream lane sent it where its state is not.
var ErrNoTask = errors.New("no task owns the record's partition")

// Collector is what the lane's task writes to: boundary records go to the
// downstream lane of their key, everything else joins the epoch's output.
func (l *Lane) Collector() task.Collector { return task.CollectorFunc(l.send) }

// Clock is the lane's task's view of time: the global watermark for
// stream time, the lane's floor (or the pinned floor of the item in
// progress) for late drops.
func (l *Lane) Clock() task.Time { return clock{l} }

// Queued is how many hand-overs wait in the lane's queue.
func (l *Lane) Queued() int { return len(l.in) }

// StashPeak is the most items the lane's aligner held at once.
func (l *Lane) StashPeak() int64 { return l.stashPeak.Load() }

// StashBound is the most items of one producer the aligner may hold.
func (l *Lane) StashBound() int { return l.align.Bound() }

// QueueWaits counts the hand-overs to the lane that waited for credit:
// the dispatcher's (producer slot 0) and the upstream lanes'.
func (l *Lane) QueueWaits() (dispatcher, upstream int64) {
	for slot, c := range l.credits {
		if slot == 0 {
			dispatcher += c.Waits()
		} else {
			upstream += c.Waits()
		}
	}
	return dispatcher, upstream
}

// PartTimes is a copy of the largest event time the lane processed per
// source partition.
func (l *Lane) PartTimes() map[watermark.Partition]int64 {
	l.ptMu.Lock()
	defer l.ptMu.Unlock()
	out := make(map[watermark.Partition]int64, len(l.partTimes))
	for k, v := range l.partTimes {
		out[k] = v.Load()
	}
	return out
}

// Deliver hands the lane a batch of the dispatcher's records, taking the
// dispatcher's credit first: a lane whose records of this producer wait
// in its stash for alignment holds the dispatcher here, not in an
// unbounded stash. The lane owns batch from here on.
//
// A batch it could not deliver (ctx ended) is the caller's still, and the
// credit it took is given back: the dispatcher may deliver it later, in
// the shutdown, or drop it with the generation.
func (l *Lane) Deliver(ctx context.Context, batch []Item) error {
	n, err := l.credits[0].Take(ctx, int64(len(batch)))
	if err != nil {
		return err
	}
	// The queue has room for what the credit covers: the send does not
	// wait, and is tried first so that an ended ctx does not win a race
	// with it.
	select {
	case l.in <- batch:
		return nil
	default:
	}
	select {
	case l.in <- batch:
		return nil
	case <-ctx.Done():
		l.credits[0].Give(n)
		return ctx.Err()
	}
}

// Mark sends the dispatcher's marker of barrier b, behind what it
// delivered before. b is shared by every lane and never changed.
func (l *Lane) Mark(ctx context.Context, b *barrier.Barrier) error {
	it := []Item{{kind: itemMarker, from: 0, b: b}}
	// The queue has room for a producer's marker besides what its credit
	// covers: the send does not wait, and an ended ctx must not win a
	// race with it (a barrier whose markers went to some lanes only
	// would never complete).
	select {
	case l.in <- it:
		return nil
	default:
	}
	select {
	case l.in <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run processes items until ctx ends or processing fails. A panic that
// the task did not turn into a processing error (one outside a
// processor: a deserializer, a timestamp extractor, the runtime itself)
// fails the lane with an error naming what it was doing, instead of
// ending the process.
func (l *Lane) Run(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = l.panicked(r)
		}
	}()
	for {
		if len(l.replay) == 0 {
			// About to wait for input: what was processed is given back
			// to its producers first.
			l.pace(false)
			l.giveBack()
			if cap(l.batch) >= BatchSize {
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
			if l.env.Pace > 0 {
				l.recvAt = time.Now()
			}
			l.fresh = true
			l.replay = l.batch
			continue
		}
		// The item stays in its batch while it is handled: the batch is
		// recycled only once replay is empty, after this.
		it := &l.replay[0]
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

// panicked is the error of a panic the lane recovered, r being what
// recover returned.
func (l *Lane) panicked(r any) error {
	pe := &task.PanicError{Value: r, Stack: debug.Stack()}
	what := "between records"
	if l.cur.kind == itemRecord && l.cur.in.Topic != "" {
		what = "processing " + l.origin().String()
	}
	id := "no task"
	if l.task != nil {
		id = "task " + l.task.ID()
	}
	return fmt.Errorf("lane %d of sub-topology %d, %s, %s: %w", l.cfg.Index, l.cfg.Sub, id, what, pe)
}

// pace ends a busy period (a batch processed) and, once it has measured
// enough of them, caps every producer's outstanding credit at what the
// lane processes in Env.Pace at its measured rate. A lane that waits on
// something else while it processes (the committer's credit, a
// downstream lane) measures the rate it achieves, which is the one that
// counts.
func (l *Lane) pace(more bool) {
	if l.recvAt.IsZero() {
		return
	}
	now := time.Now()
	l.busy += now.Sub(l.recvAt)
	l.recvAt = time.Time{}
	if more {
		l.recvAt = now
	}
	if l.busy < paceWindow && l.done < paceRecords {
		return
	}
	limit := int64(float64(l.done) / l.busy.Seconds() * l.env.Pace.Seconds())
	for _, c := range l.credits {
		c.SetLimit(limit)
	}
	l.batchLimit.Store(max(limit, 1))
	l.busy, l.done = 0, 0
}

// BatchLimit is the most records a producer should hand the lane at once
// now: the pace limit (Env.Pace), or no limit.
func (l *Lane) BatchLimit() int64 { return l.batchLimit.Load() }

// giveBack returns the credit of the records processed to their
// producers.
func (l *Lane) giveBack() {
	for slot, n := range l.owed {
		if n > 0 {
			l.credits[slot].Give(n)
			l.owed[slot] = 0
		}
	}
}

// handle processes one item; done reports the final barrier crossed.
func (l *Lane) handle(it *Item) (done bool, err error) {
	if l.align.Blocked(it.from) {
		// The producer's credit should have held it back.
		return false, fmt.Errorf("lane %d: producer %d sent past its %d records: %w", l.cfg.Global, it.from, l.align.Bound()-1, barrier.ErrOverBound)
	}
	if !l.align.Offer(it.from, *it) {
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
		if l.done++; l.done%paceEvery == 0 && l.env.Pace > 0 {
			l.pace(true)
		}
		if l.owed[it.from]++; l.owed[it.from] >= int64(l.env.GiveBack) {
			l.credits[it.from].Give(l.owed[it.from])
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
	return it.b.Final, nil
}

func (l *Lane) process(it *Item) error {
	if p := l.env.Probe; p != nil {
		p(l.cfg.Sub, l.cfg.Index, false)
	}
	t := l.TaskFor(it.in.Partition)
	if t == nil {
		return fmt.Errorf("lane %d of sub-topology %d: %s[%d]@%d: %w", l.cfg.Index, l.cfg.Sub, it.in.Topic, it.in.Partition, it.in.Offset, ErrNoTask)
	}
	l.task = t
	l.cur = it
	l.pinned = it.floor
	if l.fresh {
		l.fresh = false
		t.SampleNext()
	}
	err := t.Process(&it.in)
	l.pinned = noPin
	l.cur = &noItem
	if l.sendErr != nil {
		return l.sendErr
	}
	return err
}

// clock is a lane's view of time: the global watermark for stream time,
// the lane's floor (or the pinned floor of the item in progress) for late
// drops.
type clock struct{ l *Lane }

func (c clock) StreamTime() int64 { return c.l.env.Watermark() }

func (c clock) ObserveStreamTime(ts int64) {
	l := c.l
	if !l.cur.source {
		return
	}
	p := watermark.Partition{Topic: l.cur.in.Topic, Partition: l.cur.in.Partition}
	if late := l.env.OnLate; late != nil && ts < l.env.Watermark() {
		late(p)
	}
	pt := l.recentPT.Get(p.Topic, p.Partition)
	if pt == nil {
		l.ptMu.Lock()
		var ok bool
		pt, ok = l.partTimes[p]
		if !ok {
			pt = new(atomic.Int64)
			pt.Store(ts)
			l.partTimes[p] = pt
		}
		l.ptMu.Unlock()
		l.recentPT.Put(p.Topic, p.Partition, pt)
	}
	// Only this goroutine writes the time: a load and a store make the
	// maximum.
	if ts > pt.Load() {
		pt.Store(ts)
	}
}

func (c clock) Floor() int64 {
	if c.l.pinned != noPin {
		return c.l.pinned
	}
	return c.l.floor
}

func (c clock) WallClock() int64 { return c.l.env.Wall() }
