package testdriver

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// ErrNoRecord is returned when reading an output topic that is empty.
var ErrNoRecord = errors.New("no record in output topic")

// ErrUnknownTopic is returned when piping into a topic no source reads.
var ErrUnknownTopic = errors.New("no source reads this topic")

// ErrWatermarkBackwards is returned by AdvanceWatermark for a request
// behind the clock when test.driver.commit-per-pipe is off.
var ErrWatermarkBackwards = errors.New("watermark cannot move backwards")

// Driver runs a topology in the calling goroutine.
type Driver struct {
	built  *topology.Built
	cfg    config.Config
	clock  *task.StreamClock
	wall   int64
	tasks  []*task.Task
	global *task.Task
	// flushOrder is tasks with every sub-topology after those feeding it.
	flushOrder []*task.Task
	// timed are the tasks with timer-aware processors, the global one
	// included: a global store's processor may time its keys too.
	timed   []*task.Task
	metrics *metrics.Registry
	log     *slog.Logger

	commitPerPipe bool
	// queue is a FIFO read from qhead; it is reset when drained so that
	// its backing array is reused pipe after pipe.
	queue []queued
	qhead int
	// lane is the driver's side of the barrier protocol: one solo lane
	// (engine/barrier), whose floor is the watermark at the last commit
	// barrier and whose frontier the watermark of the last emission pass.
	// The order of the work, and those two numbers, are the protocol's;
	// the driver only runs its steps (step).
	lane     *barrier.Lane
	pending  []task.Output
	outputs  map[string][]task.Output
	produced map[string]bool
	offsets  map[string]int64
	closed   bool
}

// Option configures a Driver.
type Option func(*options)

type options struct {
	wallClock int64
	logger    *slog.Logger
	lanes     int
}

// WithWallClock sets the initial wall-clock time in epoch milliseconds
// (default 0, so that tests are deterministic).
func WithWallClock(ms int64) Option { return func(o *options) { o.wallClock = ms } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithNumberOfLanes sets the lane count the timer lane checks judge splits
// over (the numberOfLanes override). Without it: config
// test.driver.number-of-lanes, else num.stream.threads, else 16 — never
// the machine's core count, so a test gives the same answer everywhere.
// The driver stays single-threaded; it computes lanes, it does not run
// them.
func WithNumberOfLanes(n int) Option { return func(o *options) { o.lanes = n } }

// laneCount resolves the lane count, see WithNumberOfLanes. Only timers
// are judged over lanes, so a bad lane setting refuses only a topology
// with timers.
func laneCount(o options, c config.Config, b *topology.Built) (int, error) {
	if o.lanes > 0 {
		return o.lanes, nil
	}
	n, err := configuredLanes(c)
	if err != nil {
		if slices.ContainsFunc(slices.Collect(maps.Values(b.Nodes)), func(n *topology.Node) bool { return n.Timers != nil }) {
			return 0, err
		}
		return lane.ReferenceCount, nil
	}
	return n, nil
}

func configuredLanes(c config.Config) (int, error) {
	if !c.IsSet(config.TestDriverNumberOfLanes) {
		return lane.Configured(c)
	}
	n, err := c.BoundedInt(config.TestDriverNumberOfLanes, 0)
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// New builds topo with cfg and initialises its tasks. cfg needs at least
// application.id; "test-driver" is used when it is missing, as the driver
// never talks to a cluster.
func New(topo *topology.Topology, cfg map[string]string, opts ...Option) (*Driver, error) {
	o := options{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(&o)
	}
	c := config.New(cfg)
	if c.String(config.ApplicationID) == "" {
		c = c.With(config.ApplicationID, "test-driver")
	}
	commitPerPipe, err := c.Bool(config.TestDriverCommitPerPipe, true)
	if err != nil {
		return nil, err
	}
	// The driver is one process: a re-key crosses in memory whatever
	// stoatflow.topology.rekey says, with the same records and keys a
	// repartition topic would carry.
	built, err := topo.Build(c.With(config.TopologyRekey, config.RekeyMemory))
	if err != nil {
		return nil, err
	}
	lanes, err := laneCount(o, c, built)
	if err != nil {
		return nil, err
	}
	for _, w := range built.Warnings {
		o.logger.Warn(w.String(), "rule", w.Rule, "node", w.Node)
	}
	d := &Driver{
		built:         built,
		cfg:           c,
		wall:          o.wallClock,
		metrics:       metrics.NewRegistry(),
		log:           o.logger,
		commitPerPipe: commitPerPipe,
		outputs:       map[string][]task.Output{},
		produced:      map[string]bool{},
		offsets:       map[string]int64{},
		lane:          barrier.NewSoloLane(barrier.Unknown),
	}
	// stoatflow.metrics.recording.level=debug meters the processor nodes
	// and the stores too, as in the live engine (engine/prom).
	d.metrics.SetDebug(strings.EqualFold(strings.TrimSpace(c.String(metricsLevel)), "debug"))
	d.clock = task.NewStreamClock(func() int64 { return d.wall })
	collector := task.CollectorFunc(func(out task.Output) error {
		d.pending = append(d.pending, out)
		return nil
	})
	var globalStores map[string]state.Store
	if built.Global != nil {
		g, err := task.New(built, built.Global, task.Options{ID: "global", Collector: collector, Time: d.clock, Logger: d.log, Metrics: d.metrics, Lanes: lanes, Persistent: state.InMemory()})
		if err != nil {
			return nil, err
		}
		if err := g.Init(); err != nil {
			return nil, err
		}
		d.global = g
		globalStores = g.Stores()
	}
	for _, st := range built.Subtopologies {
		t, err := task.New(built, st, task.Options{Collector: collector, Time: d.clock, Logger: d.log, Metrics: d.metrics, GlobalStores: globalStores, Lanes: lanes,
			// Stores kept in RocksDB (state.RocksDB, a persistent versioned
			// store) are in memory in the driver, as state.RocksDB says.
			Persistent: state.InMemory()})
		if err != nil {
			d.Close()
			return nil, err
		}
		d.tasks = append(d.tasks, t)
		if err := t.Init(); err != nil {
			d.Close()
			return nil, err
		}
	}
	for _, t := range append(slices.Clone(d.tasks), d.global) {
		if t != nil && t.HasTimers() {
			d.timed = append(d.timed, t)
		}
	}
	d.flushOrder = flushOrder(built, d.tasks)
	// Processors may write (to stores, and so to changelogs) in Init.
	d.capture(unpinned)
	return d, nil
}

// Built is the validated topology the driver runs.
func (d *Driver) Built() *topology.Built { return d.built }

// Metrics is the registry the driver's tasks count into.
func (d *Driver) Metrics() *metrics.Registry { return d.metrics }

// WallClock is the driver's wall-clock time in epoch milliseconds.
func (d *Driver) WallClock() int64 { return d.wall }

// StreamTime is the largest record timestamp processed, or -1.
func (d *Driver) StreamTime() int64 { return d.clock.StreamTime() }

func (d *Driver) taskFor(topic string) (*task.Task, bool) {
	for _, t := range d.tasks {
		if t.Reads(topic) {
			return t, true
		}
	}
	if d.global != nil && d.global.Reads(topic) {
		return d.global, true
	}
	return nil, false
}

// flushOrder orders tasks so that every sub-topology comes after those that
// feed it through boundaries: sub-topology numbers follow source names, not
// the flow, and a downstream window must not close before the upstream's
// final results for the same watermark have reached it.
func flushOrder(b *topology.Built, tasks []*task.Task) []*task.Task {
	n := len(tasks)
	feeds := make([][]int, n)
	indeg := make([]int, n)
	for _, bd := range b.Boundaries {
		from, to := b.Nodes[bd.SinkNode].Subtopology, b.Nodes[bd.SourceNode].Subtopology
		if from >= 0 && to >= 0 && from < n && to < n && from != to {
			feeds[from] = append(feeds[from], to)
			indeg[to]++
		}
	}
	var order []*task.Task
	done := make([]bool, n)
	for len(order) < n {
		progressed := false
		for i := 0; i < n; i++ {
			if done[i] || indeg[i] > 0 {
				continue
			}
			done[i], progressed = true, true
			order = append(order, tasks[i])
			for _, j := range feeds[i] {
				indeg[j]--
			}
			break
		}
		if !progressed { // a cycle, which Build refuses; keep the rest in order
			for i := 0; i < n; i++ {
				if !done[i] {
					done[i] = true
					order = append(order, tasks[i])
				}
			}
		}
	}
	return order
}

// pipe processes one input record and everything it leads to.
func (d *Driver) pipe(in task.Input) error {
	if d.closed {
		return errors.New("test driver is closed")
	}
	if _, ok := d.taskFor(in.Topic); !ok {
		return fmt.Errorf("pipe into topic %s: %w", in.Topic, ErrUnknownTopic)
	}
	d.enqueue(in, unpinned)
	return d.drain()
}

// unpinned marks a queued record judged against the watermark current when
// it is processed.
const unpinned = math.MinInt64

// queued is a record waiting to be processed and the floor it is judged
// against: unpinned for piped records and records written while processing
// one, the flush's floor for records a watermark flush or a punctuator
// wrote.
type queued struct {
	in    task.Input
	floor int64
}

func (d *Driver) enqueue(in task.Input, floor int64) {
	in.Offset = d.offsets[in.Topic]
	d.offsets[in.Topic]++
	d.queue = append(d.queue, queued{in: in, floor: floor})
}

// drain processes queued records until none is left. Each record is
// followed, as in Kafka Streams' driver, by the work its time allows: the
// solo lane's Advance (the emission pass, synchronously, event-time timers,
// stream-time punctuation), a commit barrier when committing per pipe, and
// the capture of everything written.
func (d *Driver) drain() error {
	for d.qhead < len(d.queue) {
		q := d.queue[d.qhead]
		d.queue[d.qhead] = queued{}
		d.qhead++
		if d.qhead == len(d.queue) {
			d.queue, d.qhead = d.queue[:0], 0
		}
		t, ok := d.taskFor(q.in.Topic)
		if !ok {
			d.abort()
			return fmt.Errorf("record for topic %s: %w", q.in.Topic, ErrUnknownTopic)
		}
		if q.floor != unpinned {
			d.clock.PinFloor(q.floor)
		}
		err := t.Process(&q.in)
		d.clock.UnpinFloor()
		if err != nil {
			d.abort()
			return err
		}
		d.capture(unpinned)
		if t != d.global {
			if err := d.advance(); err != nil {
				d.abort()
				return err
			}
		}
		if d.commitPerPipe {
			if err := d.barrier(); err != nil {
				d.abort()
				return err
			}
		}
	}
	return nil
}

// advance runs what the event-time clock has made due: the solo lane's
// Advance at the watermark now (barrier.Lane.Advance has the order and the
// floor of each piece).
//
// The emission pass drains what it re-queues, and with commit-per-pipe
// each drained record crosses a barrier: the lane has then moved on, and
// the rest of the work (timers against the floor) is asked for again.
// Asked again at the same watermark, Advance leaves out the pass already
// made.
func (d *Driver) advance() error {
	w := d.clock.StreamTime()
	steps := d.lane.Advance(w)
	if len(steps) > 0 && steps[0].Kind == barrier.Flush {
		epoch := d.lane.Epoch
		if err := d.step(steps[0]); err != nil {
			return err
		}
		steps = steps[1:]
		if d.lane.Epoch != epoch {
			steps = d.lane.Advance(w)
		}
	}
	return d.run(steps)
}

// barrier is a commit barrier, stamped with the watermark now: the solo
// lane's Cross (barrier listeners judged against the last barrier's
// stamp, then the stores' commit; the clock work has run as the clock
// moved).
func (d *Driver) barrier() error {
	return d.run(d.lane.Cross(barrier.Barrier{Epoch: d.lane.Epoch, Stamp: d.clock.StreamTime()}))
}

// run does the protocol's steps in the order given.
func (d *Driver) run(steps []barrier.Step) error {
	for _, s := range steps {
		if err := d.step(s); err != nil {
			return err
		}
	}
	return nil
}

// step does one piece of the protocol's work on the driver's tasks. What
// it writes that the topology reads again is re-queued pinned to the floor
// the step ran under, so that a result is not late downstream by the
// frontier that emitted it.
func (d *Driver) step(s barrier.Step) error {
	switch s.Kind {
	case barrier.Listen:
		for _, t := range d.tasks {
			if err := t.Barrier(s.Floor); err != nil {
				return err
			}
		}
	case barrier.Flush:
		for _, t := range d.flushOrder {
			if err := t.AdvanceWatermark(s.Frontier, s.Floor); err != nil {
				return err
			}
			// Final results crossing a boundary reach the downstream
			// sub-topology before the same watermark closes its windows,
			// so a window over a window loses nothing. (The engine gets
			// the same order from its barrier lag per hop.) The lane is
			// already marked flushed: the records processed here come
			// back through advance and do not flush again.
			d.capture(s.Floor)
			if err := d.drain(); err != nil {
				return err
			}
		}
	case barrier.Commit:
		if err := d.commit(); err != nil {
			return err
		}
	case barrier.Report, barrier.Forward, barrier.Enter:
		// One lane, written as it goes: what it wrote is already in the
		// output topics, no lane downstream waits for its marker, and
		// the epoch it enters is the protocol's state, not the driver's.
	case barrier.EventTimers:
		for _, t := range d.timed {
			if _, err := t.FireEventTimers(s.Due, s.Floor); err != nil {
				return err
			}
		}
	case barrier.ProcessingTimers:
		for _, t := range d.timed {
			if _, err := t.FireProcessingTimers(d.wall, s.Floor); err != nil {
				return err
			}
		}
	case barrier.PunctuateStreamTime:
		for _, t := range d.tasks {
			if _, err := t.PunctuateStreamTime(s.Floor); err != nil {
				return err
			}
		}
	case barrier.PunctuateWallClock:
		for _, t := range d.tasks {
			if _, err := t.PunctuateWallClock(s.Floor); err != nil {
				return err
			}
		}
	}
	d.capture(s.Floor)
	return nil
}

// abort drops what a failed record left queued or pending: nothing of it
// is written.
func (d *Driver) abort() {
	clear(d.queue)
	d.queue, d.qhead = d.queue[:0], 0
	clear(d.pending)
	d.pending = d.pending[:0]
}

func (d *Driver) commit() error {
	for _, t := range d.tasks {
		if err := t.Commit(); err != nil {
			return err
		}
	}
	if d.global != nil {
		return d.global.Commit()
	}
	return nil
}

// capture moves what the tasks wrote to the output topics and queues the
// records that the topology itself reads (boundary crossings and writes to
// its own source topics) with floor.
func (d *Driver) capture(floor int64) {
	out := d.pending
	// The records are copied into the output topics, so the pending
	// buffer can be reused; enqueue never appends to it.
	defer func() { clear(out); d.pending = out[:0] }()
	for _, o := range out {
		d.outputs[o.Topic] = append(d.outputs[o.Topic], o)
		d.produced[o.Topic] = true
		if o.Boundary != nil || (o.Store == "" && d.readsTopic(o.Topic)) {
			d.enqueue(task.Input{Topic: o.Topic, Partition: 0, Key: o.Key, Value: o.Value, Timestamp: o.Timestamp, Headers: o.Headers}, floor)
		}
	}
}

func (d *Driver) readsTopic(topic string) bool {
	_, ok := d.taskFor(topic)
	return ok
}

// CommitBarrier commits a barrier: suppress-until-barrier buffers release
// and stores flush. With test.driver.commit-per-pipe on (the default) every
// pipe already ends with one; tests of epoch behaviour turn that off and
// call this.
func (d *Driver) CommitBarrier() error {
	if err := d.barrier(); err != nil {
		d.abort()
		return err
	}
	return d.drain()
}

// AdvanceWatermark raises the event-time clock to ts, as a record stamped
// ts would, and runs what that makes due: final results, event-time timers
// and stream-time punctuators; with test.driver.commit-per-pipe on (the
// default) a commit barrier follows. A request behind the clock is a no-op,
// because every pipe already moves event time forward; with
// test.driver.commit-per-pipe off it is an error instead.
func (d *Driver) AdvanceWatermark(ts int64) error {
	if ts <= d.clock.StreamTime() {
		if !d.commitPerPipe && ts < d.clock.StreamTime() {
			return fmt.Errorf("advance watermark to %d: %w (it is at %d)", ts, ErrWatermarkBackwards, d.clock.StreamTime())
		}
		return nil
	}
	d.clock.ObserveStreamTime(ts)
	if err := d.advance(); err != nil {
		d.abort()
		return err
	}
	if d.commitPerPipe {
		if err := d.barrier(); err != nil {
			d.abort()
			return err
		}
	}
	return d.drain()
}

// Watermark is the driver's event-time clock: the largest timestamp piped
// or advanced to, -1 before any.
func (d *Driver) Watermark() int64 { return d.clock.StreamTime() }

// AdvanceWallClockTime moves the wall clock, fires the processing-time
// timers (judged against the last barrier's watermark) and the wall-clock
// punctuators that are due, then commits a barrier. It never moves event
// time.
func (d *Driver) AdvanceWallClockTime(by time.Duration) error {
	if by < 0 {
		return fmt.Errorf("advance wall clock by %s: negative duration", by)
	}
	d.wall += by.Milliseconds()
	if err := d.run(d.lane.Tick()); err != nil {
		d.abort()
		return err
	}
	if err := d.barrier(); err != nil {
		d.abort()
		return err
	}
	return d.drain()
}

// ProducedTopicNames lists every topic written so far, changelog and
// boundary topics included, sorted.
func (d *Driver) ProducedTopicNames() []string {
	return slices.Sorted(maps.Keys(d.produced))
}

// StateStore returns a store by name, from whichever task owns it.
func (d *Driver) StateStore(name string) (state.Store, bool) {
	for _, t := range d.tasks {
		if s, ok := t.Stores()[name]; ok {
			return s, true
		}
	}
	if d.global != nil {
		if s, ok := d.global.Stores()[name]; ok {
			return s, true
		}
	}
	return nil, false
}

// Close closes every task.
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, t := range d.tasks {
		errs = append(errs, t.Close())
	}
	if d.global != nil {
		errs = append(errs, d.global.Close())
	}
	return errors.Join(errs...)
}

// metricsLevel is engine/prom's LevelKey (not imported: the driver does
// not depend on the Prometheus client).
const metricsLevel = "stoatflow.metrics.recording.level"
