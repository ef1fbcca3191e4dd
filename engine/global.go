package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
)

// globalRunner keeps the global stores: it reads every partition of the
// global topics to their end before the lanes start (the topic is the
// store's changelog, as in Kafka Streams), then follows them with one
// consumer for as long as the engine runs. Lanes read the stores while it writes them; the
// in-memory store guards each call, and a lookup sees the table as of
// some moment, as a Kafka Streams global table does.
type globalRunner struct {
	e      *Engine
	task   *task.Task
	topics []string
	seeds  []string
	dial   []kgo.Opt
	// next is the offset to read next, per topic and partition.
	next map[string]kafka.Positions
	// applied mirrors next for the dispatcher, which reads it while the
	// runner follows: an EventTime's settle waits until the records it
	// produced to a global topic are in the stores (appliedTo). Its shape
	// is fixed before the bootstrap, so only the counters move and no
	// lock is taken (the dispatcher reads it under EventTime.mu).
	applied map[string]map[int32]*atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}
	errMu  sync.Mutex
	err    error
}

// startGlobal builds the global task, bootstraps it and starts following.
// It returns nil, nil for a topology without global stores.
func (r *runner) startGlobal(ctx context.Context) (*globalRunner, error) {
	st := r.built.Global
	if st == nil {
		return nil, nil
	}
	g := &globalRunner{e: r.e, seeds: r.s.seeds, dial: r.s.globalOpts, next: map[string]kafka.Positions{},
		applied: map[string]map[int32]*atomic.Int64{}}
	for _, src := range st.Sources {
		if src.Source.Pattern != nil {
			return nil, fmt.Errorf("engine: global source %s reads a topic pattern, which the live engine does not support yet", src.Name)
		}
		g.topics = append(g.topics, src.Source.Topics...)
	}
	slices.Sort(g.topics)
	details, err := r.adm.ListTopics(ctx, g.topics...)
	if err != nil {
		return nil, fmt.Errorf("engine: global topics: %w", err)
	}
	var missing []string
	for _, t := range g.topics {
		d, ok := details[t]
		if !ok || d.Err != nil {
			missing = append(missing, t)
			continue
		}
		from := kafka.Positions{}
		applied := map[int32]*atomic.Int64{}
		for p := range d.Partitions {
			from[p] = kafka.LogStart
			applied[p] = new(atomic.Int64)
		}
		g.next[t], g.applied[t] = from, applied
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, &MissingTopicError{Topics: missing, Hint: "global table topics; create them first"}
	}
	g.task, err = task.New(r.built, st, task.Options{
		ID: "global",
		// Global stores are not logged: their topic is their changelog.
		Collector: task.CollectorFunc(func(task.Output) error { return nil }),
		Time:      task.NewStreamClock(nil),
		Logger:    r.e.log,
		Metrics:   r.e.metrics,
	})
	if err != nil {
		return nil, err
	}
	if err := g.task.Init(); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := g.readToEnd(ctx); err != nil {
		g.task.Close()
		return nil, fmt.Errorf("engine: bootstrap global stores: %w", err)
	}
	r.e.log.Info("global stores bootstrapped", "topics", g.topics, "took", time.Since(start))
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.cancel, g.done = cancel, make(chan struct{})
	go g.follow(fctx)
	return g, nil
}

// stores are the global stores, for the lanes' tasks.
func (g *globalRunner) stores() map[string]state.Store {
	if g == nil {
		return nil
	}
	return g.task.Stores()
}

func (g *globalRunner) process(rec *kgo.Record) error {
	in := task.Input{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: rec.Key, Value: rec.Value,
		Timestamp: rec.Timestamp.UnixMilli()}
	for _, h := range rec.Headers {
		in.Headers = append(in.Headers, headerOf(h.Key, h.Value))
	}
	if err := g.task.Process(&in); err != nil {
		return err
	}
	g.moved(rec.Topic, rec.Partition, rec.Offset+1)
	g.e.addStats(func(s *Stats) { s.GlobalRecords++ })
	return nil
}

// moved records that partition p of topic is applied up to next.
func (g *globalRunner) moved(topic string, p int32, next int64) {
	g.next[topic][p] = next
	if a := g.applied[topic][p]; a != nil {
		a.Store(next)
	}
}

// appliedTo says whether topic is a global topic (global) and, if so,
// whether partition p of it is applied up to end, the offset after the
// last record wanted (reached). A partition added to the topic after the
// start is never read (docs/engine.md), so it is never reached. Safe to
// call from any goroutine.
func (g *globalRunner) appliedTo(topic string, p int32, end int64) (reached, global bool) {
	if g == nil {
		return false, false
	}
	ps, global := g.applied[topic]
	if !global {
		return false, false
	}
	a := ps[p]
	return a != nil && a.Load() >= end, true
}

// readToEnd processes every global topic from where it stands to its end
// offsets as they are now.
func (g *globalRunner) readToEnd(ctx context.Context) error {
	for _, t := range g.topics {
		ends, err := kafka.ReadToEnd(ctx, g.seeds, t, g.next[t], g.process, g.dial...)
		if err != nil {
			return fmt.Errorf("topic %s: %w", t, err)
		}
		for p, end := range ends {
			g.moved(t, p, end)
		}
	}
	return nil
}

// follow keeps reading the global topics, from where the bootstrap
// ended, with one long-lived consumer, until cancelled.
func (g *globalRunner) follow(ctx context.Context) {
	defer close(g.done)
	fail := func(err error) {
		g.errMu.Lock()
		g.err = err
		g.errMu.Unlock()
	}
	starts := map[string]map[int32]kgo.Offset{}
	for t, ps := range g.next {
		starts[t] = map[int32]kgo.Offset{}
		for p, off := range ps {
			starts[t][p] = kgo.NewOffset().At(off)
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(g.seeds...), kgo.ConsumePartitions(starts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500 * time.Millisecond)}, g.dial...)...)
	if err != nil {
		fail(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		var perr error
		fs.EachError(func(t string, p int32, err error) {
			g.e.log.Warn("global topic fetch error", "topic", t, "partition", p, "err", err)
		})
		// The first record of a poll is timed, as the lanes time the
		// first of a batch (task.Task.SampleNext).
		g.task.SampleNext()
		fs.EachRecord(func(rec *kgo.Record) {
			if perr == nil {
				perr = g.process(rec)
			}
		})
		if perr != nil {
			fail(perr)
			return
		}
	}
}

// failure is the error that stopped following, or nil.
func (g *globalRunner) failure() error {
	if g == nil {
		return nil
	}
	g.errMu.Lock()
	defer g.errMu.Unlock()
	if g.err != nil {
		return fmt.Errorf("engine: global stores: %w", g.err)
	}
	return nil
}

func (g *globalRunner) close() {
	if g == nil {
		return
	}
	g.cancel()
	<-g.done
	if err := g.task.Close(); err != nil {
		g.e.log.Warn("close global task", "err", err)
	}
}
