package testdriver

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// ErrNoRecord is returned when reading an output topic that is empty.
var ErrNoRecord = errors.New("no record in output topic")

// ErrUnknownTopic is returned when piping into a topic no source reads.
var ErrUnknownTopic = errors.New("no source reads this topic")

// Driver runs a topology in the calling goroutine.
type Driver struct {
	built   *topology.Built
	cfg     config.Config
	clock   *task.StreamClock
	wall    int64
	tasks   []*task.Task
	global  *task.Task
	metrics *metrics.Registry
	log     *slog.Logger

	commitPerPipe bool
	// queue is a FIFO read from qhead; it is reset when drained so that
	// its backing array is reused pipe after pipe.
	queue    []task.Input
	qhead    int
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
}

// WithWallClock sets the initial wall-clock time in epoch milliseconds
// (default 0, so that tests are deterministic).
func WithWallClock(ms int64) Option { return func(o *options) { o.wallClock = ms } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

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
	built, err := topo.Build(c)
	if err != nil {
		return nil, err
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
	}
	d.clock = task.NewStreamClock(func() int64 { return d.wall })
	collector := task.CollectorFunc(func(out task.Output) error {
		d.pending = append(d.pending, out)
		return nil
	})
	var globalStores map[string]state.Store
	if built.Global != nil {
		g, err := task.New(built, built.Global, task.Options{ID: "global", Collector: collector, Time: d.clock, Logger: d.log, Metrics: d.metrics})
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
		t, err := task.New(built, st, task.Options{Collector: collector, Time: d.clock, Logger: d.log, Metrics: d.metrics, GlobalStores: globalStores})
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
	// Processors may write (to stores, and so to changelogs) in Init.
	d.capture()
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

// pipe processes one input record and everything it leads to.
func (d *Driver) pipe(in task.Input) error {
	if d.closed {
		return errors.New("test driver is closed")
	}
	if _, ok := d.taskFor(in.Topic); !ok {
		return fmt.Errorf("pipe into topic %s: %w", in.Topic, ErrUnknownTopic)
	}
	d.enqueue(in)
	return d.drain()
}

func (d *Driver) enqueue(in task.Input) {
	in.Offset = d.offsets[in.Topic]
	d.offsets[in.Topic]++
	d.queue = append(d.queue, in)
}

// drain processes queued records until none is left, each followed by
// stream-time punctuation, a commit and the capture of what it wrote, as
// Kafka Streams' driver does.
func (d *Driver) drain() error {
	for d.qhead < len(d.queue) {
		in := d.queue[d.qhead]
		d.queue[d.qhead] = task.Input{}
		d.qhead++
		if d.qhead == len(d.queue) {
			d.queue, d.qhead = d.queue[:0], 0
		}
		t, ok := d.taskFor(in.Topic)
		if !ok {
			d.clearQueue()
			return fmt.Errorf("record for topic %s: %w", in.Topic, ErrUnknownTopic)
		}
		if err := t.Process(in); err != nil {
			d.clearQueue()
			d.pending = d.pending[:0]
			return err
		}
		if t != d.global {
			for _, t := range d.tasks {
				if _, err := t.PunctuateStreamTime(); err != nil {
					d.clearQueue()
					d.pending = d.pending[:0]
					return err
				}
			}
		}
		if d.commitPerPipe {
			if err := d.commit(); err != nil {
				return err
			}
		}
		d.capture()
	}
	return nil
}

func (d *Driver) clearQueue() {
	clear(d.queue)
	d.queue, d.qhead = d.queue[:0], 0
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
// records that the topology itself reads: boundary crossings and writes to
// its own source topics.
func (d *Driver) capture() {
	out := d.pending
	// The records are copied into the output topics, so the pending
	// buffer can be reused; enqueue never appends to it.
	defer func() { clear(out); d.pending = out[:0] }()
	for _, o := range out {
		d.outputs[o.Topic] = append(d.outputs[o.Topic], o)
		d.produced[o.Topic] = true
		if o.Boundary != nil || (o.Store == "" && d.readsTopic(o.Topic)) {
			d.enqueue(task.Input{Topic: o.Topic, Partition: 0, Key: o.Key, Value: o.Value, Timestamp: o.Timestamp, Headers: o.Headers})
		}
	}
}

func (d *Driver) readsTopic(topic string) bool {
	_, ok := d.taskFor(topic)
	return ok
}

// Commit flushes every task's stores; with test.driver.commit-per-pipe off,
// tests call it to mark an epoch.
func (d *Driver) Commit() error {
	if err := d.commit(); err != nil {
		return err
	}
	d.capture()
	return d.drain()
}

// AdvanceWallClockTime moves the wall clock, fires the wall-clock
// punctuators that are due, then commits. It never moves stream time.
func (d *Driver) AdvanceWallClockTime(by time.Duration) error {
	if by < 0 {
		return fmt.Errorf("advance wall clock by %s: negative duration", by)
	}
	d.wall += by.Milliseconds()
	for _, t := range d.tasks {
		if _, err := t.PunctuateWallClock(); err != nil {
			d.pending = d.pending[:0]
			return err
		}
	}
	if err := d.commit(); err != nil {
		return err
	}
	d.capture()
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
