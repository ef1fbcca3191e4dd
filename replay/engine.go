package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/testdriver"
)

// EngineOptions configure RunEngine.
type EngineOptions struct {
	// Bootstrap is the broker to run on, an embedded one or a cluster the
	// caller owns: the topics the fixture's topology reads and writes are
	// deleted and created afresh for every fixture.
	Bootstrap string
	// Partitions is the partition count of those topics (default 4).
	Partitions int32
	// Lanes is num.stream.threads (default: the fixture's, else 4).
	Lanes int
	// Config holds engine keys applied last (barrier interval, lane queue
	// size).
	Config map[string]string
	// Logger receives the engine's log (default: discard).
	Logger *slog.Logger
	// StepTimeout bounds how long one step may take to settle (default
	// 60 s).
	StepTimeout time.Duration
	// SettleEveryStep settles after every step, record steps that could
	// share one settle (see joinable) included.
	SettleEveryStep bool
}

// appSeq makes every engine run's application id unique, so that runs on
// one broker share no group offsets and no internal topics.
var appSeq atomic.Int64

// RunEngine runs a parsed fixture through the live engine on the broker
// at o.Bootstrap and compares what it committed with the fixture's
// expectations.
//
// Each record step is produced with its timestamp (the driver's wall
// clock when it has none) and its key's default partition; an
// advance-watermark step moves the engine's watermark through an
// engine.EventTime, under which the watermark is the driver's (the
// largest event time dispatched or advanced to); an advance-wall-clock
// step moves the engine's injected wall clock; a commit-barrier step is a
// barrier. After every step the engine is settled (its records dispatched,
// or applied to the global stores when written to a global table's topic,
// and everything they and the watermark made due emitted and committed), and
// the output topics are read committed up to their ends, so each output
// record has the step that wrote it. At the end the engine stops, which
// commits a final barrier (a final flush).
//
// A fixture whose outputs match in everything but the steps that wrote
// them (`after`) is TimingOnly: the live engine emits at barriers, the
// driver per step, and that is the design's divergence, reported apart
// from a failure. Drops are compared from the engine's metrics, key-value
// stores after rebuilding them from their changelogs (restoreStores);
// windowed and session stores are not compared.
func RunEngine(ctx context.Context, f *Fixture, o EngineOptions) *Result {
	res := &Result{Path: f.Path, fixture: f, Engine: true}
	r, err := newEngineRun(ctx, f, o)
	if err != nil {
		res.Status, res.Err = Errored, err
		return res
	}
	defer r.close()
	runErr := r.run(ctx)
	if stopErr := r.stop(); runErr == nil && stopErr != nil {
		runErr = &RunError{Code: CodeStep, Err: fmt.Errorf("%s: engine: %w", f.Path, stopErr)}
	}
	if runErr == nil {
		runErr = r.readOutputs(ctx, len(f.Steps))
	}
	if runErr != nil {
		res.Status, res.Err = Errored, runErr
		return res
	}
	if len(f.Expect.Stores) > 0 {
		if err := r.restoreStores(ctx); err != nil {
			res.Status, res.Err = Errored, err
			return res
		}
		defer r.d.Close()
	}
	if err := r.compare(res); err != nil {
		res.Status, res.Err = Errored, err
		return res
	}
	res.finish()
	return res
}

// restoreStores rebuilds the stores the fixture checks from the changelogs
// the engine committed, in a test driver's tasks that run nothing: the
// engine's own stores lived in its lanes, one share of the keys each, and
// are gone. A store without a changelog cannot be rebuilt; the comparison
// then says it is not checked.
func (r *engineRun) restoreStores(ctx context.Context) *RunError {
	topo, _, err := resolveTopology(r.f.Topology, filepath.Dir(r.f.Path))
	if err != nil {
		return &RunError{Code: CodeTopology, Err: r.f.at(r.f.topoNode, err)}
	}
	d, err := testdriver.New(topo, r.cfg)
	if err != nil {
		return &RunError{Code: CodeTopology, Err: r.f.at(r.f.topoNode, fmt.Errorf("topology %s: %w", r.f.Topology, err))}
	}
	r.d = d
	r.unlogged = map[string]string{}
	for _, se := range r.f.Expect.Stores {
		info, ok := r.built.Stores[se.Store]
		st, found := d.StateStore(se.Store)
		if !ok || !found {
			continue // compareStore names the stores there are
		}
		restorer, canRestore := st.(state.Restorer)
		switch kind := info.Builder.Kind(); {
		case info.ChangelogTopic == "" || !canRestore:
			r.unlogged[se.Store] = "it has no changelog to rebuild it from"
			continue
		case kind != state.KindKeyValue && kind != state.KindTimestampedKeyValue && kind != state.KindVersionedKeyValue:
			// A windowed store drops what expired by stream time, which
			// its changelog does not record: rebuilt, it would hold every
			// window ever written.
			r.unlogged[se.Store] = fmt.Sprintf("a %s store's expiry is not in its changelog", kind)
			continue
		}
		var recs []state.ChangelogRecord
		n, err := r.changelogParts(ctx, info.ChangelogTopic)
		if err == nil {
			// Every write of one key is in one partition, in order.
			_, err = kafka.ReadToEnd(ctx, r.seeds, info.ChangelogTopic, kafka.FromLogStart(partitionList(n)...), func(rec *kgo.Record) error {
				recs = append(recs, state.ChangelogRecord{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp.UnixMilli()})
				return nil
			})
		}
		if err == nil {
			err = restorer.Restore(recs)
		}
		if err != nil {
			return &RunError{Code: CodeOutput, Err: fmt.Errorf("%s: store %s: restore from %s: %w", r.f.Path, se.Store, info.ChangelogTopic, err)}
		}
	}
	return nil
}

// changelogParts is a changelog's partition count.
func (r *engineRun) changelogParts(ctx context.Context, topic string) (int32, error) {
	td, err := r.adm.ListTopics(ctx, topic)
	if err == nil {
		err = td[topic].Err
	}
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", topic, err)
	}
	return int32(len(td[topic].Partitions)), nil
}

// RunEngineFile loads the fixture at path and runs it with RunEngine.
func RunEngineFile(ctx context.Context, path string, o EngineOptions) *Result {
	f, err := Load(path)
	if err != nil {
		return &Result{Path: path, Status: Errored, Err: &RunError{Code: CodeFixture, Err: err}, Engine: true}
	}
	return RunEngine(ctx, f, o)
}

// engineRun is one fixture on the engine.
type engineRun struct {
	*runner
	o       EngineOptions
	seeds   []string
	e       *engine.Engine
	et      *engine.EventTime
	clock   atomic.Int64
	reg     *metrics.Registry
	prod    *kgo.Client
	adm     *kadm.Client
	sinks   []string
	parts   map[string]int32
	pos     map[string]kafka.Positions
	ends    map[string]map[int32]int64
	pending []*kgo.Record
	cfg     map[string]string
	cancel  context.CancelFunc
	done    chan error
}

func newEngineRun(ctx context.Context, f *Fixture, o EngineOptions) (*engineRun, *RunError) {
	if o.Bootstrap == "" {
		return nil, &RunError{Code: CodeStep, Err: errors.New("engine mode: no broker address")}
	}
	if o.Partitions <= 0 {
		o.Partitions = 4
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	topo, cfg, err := resolveTopology(f.Topology, filepath.Dir(f.Path))
	if err != nil {
		return nil, &RunError{Code: CodeTopology, Err: f.at(f.topoNode, err)}
	}
	maps.Copy(cfg, f.Driver.Config)
	for k := range cfg {
		if strings.HasPrefix(k, "test.driver.") {
			delete(cfg, k)
		}
	}
	app := cfg[config.ApplicationID]
	if app == "" {
		app = "fixture"
	}
	cfg[config.ApplicationID] = fmt.Sprintf("replay-%s-%d", app, appSeq.Add(1))
	cfg[config.BootstrapServers] = o.Bootstrap
	switch {
	case o.Lanes > 0:
		cfg[config.NumStreamThreads] = strconv.Itoa(o.Lanes)
	case cfg[config.NumStreamThreads] == "":
		cfg[config.NumStreamThreads] = "4"
	}
	maps.Copy(cfg, o.Config)
	built, err := topo.Build(config.New(cfg))
	if err != nil {
		return nil, &RunError{Code: CodeTopology, Err: f.at(f.topoNode, fmt.Errorf("topology %s: %w", f.Topology, err))}
	}
	sources, sinks, err := engine.Topics(topo, cfg)
	if err != nil {
		return nil, &RunError{Code: CodeTopology, Err: f.at(f.topoNode, fmt.Errorf("topology %s: %w", f.Topology, err))}
	}
	r := &engineRun{runner: newComparer(f, built), o: o, seeds: []string{o.Bootstrap}, et: engine.NewEventTime(), reg: metrics.NewRegistry(),
		sinks: sinks, parts: map[string]int32{}, pos: map[string]kafka.Positions{}, ends: map[string]map[int32]int64{}}
	r.cfg = cfg
	r.clock.Store(f.Driver.WallClock)
	r.wall = r.clock.Load
	r.send = r.produce
	r.drops = func() map[string]int64 { return dropsOf(r.reg) }
	fail := func(err error) *RunError {
		if r.cancel != nil {
			_ = r.stop()
		}
		r.close()
		return &RunError{Code: CodeStep, Err: fmt.Errorf("%s: engine mode: %w", f.Path, err)}
	}
	if r.prod, err = kgo.NewClient(kgo.SeedBrokers(r.seeds...), kgo.ProducerLinger(0)); err != nil {
		return nil, fail(err)
	}
	r.adm = kadm.NewClient(r.prod)
	topics := append(slices.Clone(sources), sinks...)
	if err := r.freshTopics(ctx, topics); err != nil {
		return nil, fail(err)
	}
	for _, t := range sinks {
		r.pos[t] = kafka.FromLogStart(partitionList(o.Partitions)...)
	}
	// The engine builds its own topology: a built topology holds the
	// processors' state.
	fresh, _, err := resolveTopology(f.Topology, filepath.Dir(f.Path))
	if err != nil {
		return nil, fail(err)
	}
	r.e = engine.New(fresh, cfg, engine.WithLogger(o.Logger), engine.WithMetrics(r.reg), engine.WithWallClock(r.clock.Load), engine.WithEventTime(r.et))
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- r.e.Run(rctx) }()
	deadline := time.Now().Add(o.StepTimeout)
	for r.e.State() != engine.Running {
		select {
		case err := <-r.done:
			r.done <- err
			r.cancel = nil
			if err == nil {
				err = errors.New("stopped before it ran")
			}
			return nil, fail(err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fail(fmt.Errorf("not running after %s", o.StepTimeout))
		}
	}
	return r, nil
}

func partitionList(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// freshTopics deletes topics and creates them again, empty, so that a
// fixture sees nothing an earlier one on the same broker wrote.
func (r *engineRun) freshTopics(ctx context.Context, topics []string) error {
	if _, err := r.adm.DeleteTopics(ctx, topics...); err != nil {
		return fmt.Errorf("delete topics %s: %w", strings.Join(topics, ", "), err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := r.adm.CreateTopics(ctx, r.o.Partitions, 1, nil, topics...)
		if err != nil {
			return fmt.Errorf("create topics %s: %w", strings.Join(topics, ", "), err)
		}
		again := false
		for _, t := range resp.Sorted() {
			switch {
			case t.Err == nil:
			case errors.Is(t.Err, kerr.TopicAlreadyExists):
				// Still being deleted: retried below. Only what this
				// attempt created is left alone.
				again = true
			default:
				return fmt.Errorf("create topic %s: %w", t.Topic, t.Err)
			}
		}
		if !again {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topics %s: still being deleted after 30s", strings.Join(topics, ", "))
		}
		time.Sleep(20 * time.Millisecond)
		var left []string
		for _, t := range resp.Sorted() {
			if t.Err != nil {
				left = append(left, t.Topic)
			}
		}
		topics = left
	}
	for _, t := range topics {
		r.parts[t] = r.o.Partitions
	}
	return nil
}

// produce queues a record step's record; flush sends what is queued.
func (r *engineRun) produce(topic string, rec testdriver.RawRecord) error {
	kr := &kgo.Record{Topic: topic, Key: rec.Key, Value: rec.Value, Timestamp: time.UnixMilli(rec.Timestamp)}
	for _, h := range rec.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	r.pending = append(r.pending, kr)
	return nil
}

func (r *engineRun) flush(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	results := r.prod.ProduceSync(ctx, r.pending...)
	r.pending = r.pending[:0]
	for _, pr := range results {
		if pr.Err != nil {
			return fmt.Errorf("produce to %s: %w", pr.Record.Topic, pr.Err)
		}
		if r.ends[pr.Record.Topic] == nil {
			r.ends[pr.Record.Topic] = map[int32]int64{}
		}
		r.ends[pr.Record.Topic][pr.Record.Partition] = max(r.ends[pr.Record.Topic][pr.Record.Partition], pr.Record.Offset+1)
	}
	return nil
}

// settle waits for the engine to finish what the step started.
func (r *engineRun) settle(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, r.o.StepTimeout)
	defer cancel()
	ends := make(map[string]map[int32]int64, len(r.ends))
	for t, ps := range r.ends {
		ends[t] = maps.Clone(ps)
	}
	if err := r.et.Settle(sctx, ends); err != nil {
		if errors.Is(err, engine.ErrNotRunning) {
			select {
			case runErr := <-r.done:
				r.done <- runErr
				if runErr != nil {
					return fmt.Errorf("%w: %w", err, runErr)
				}
			default:
			}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the engine did not settle within %s", r.o.StepTimeout)
		}
		return err
	}
	return nil
}

func (r *engineRun) run(ctx context.Context) *RunError {
	// A records file's records go out in batches as they are read; the
	// step settles once, after its last.
	r.midFile = func() error { return r.flush(ctx) }
	j := newJoiner(r.f, r.built)
	for i, st := range r.f.Steps {
		r.step = st.Index
		if st.Kind == StepRecord {
			j.piped(r.stamp(st.Record))
		}
		if st.Kind == StepAdvanceWatermark {
			j.piped(st.Time)
		}
		if !r.o.SettleEveryStep && i+1 < len(r.f.Steps) && j.joinable(st, r.f.Steps[i+1], r.stamp) {
			// The next record step shares this one's settle.
			if err := r.pipe(st.Record); err != nil {
				return r.stepErr(st, err)
			}
			if len(r.pending) >= collectEvery {
				if err := r.flush(ctx); err != nil {
					return r.stepErr(st, err)
				}
			}
			continue
		}
		var err error
		switch st.Kind {
		case StepRecord:
			err = r.pipe(st.Record)
		case StepAdvanceWatermark:
			r.et.Advance(st.Time)
		case StepAdvanceWallClock:
			now := r.clock.Load()
			to := now + st.By.Milliseconds()
			if st.Absolute {
				to = st.Time
			}
			if to < now {
				err = fmt.Errorf("wall clock is at %d, cannot move back to %d", now, to)
				break
			}
			if st.By < 0 {
				err = fmt.Errorf("advance wall clock by %s: negative duration", st.By)
				break
			}
			r.clock.Store(to)
		case StepCommitBarrier:
			// Settling cuts barriers.
		case StepRecordsFile:
			err = r.recordsFile(st.File)
		}
		if err == nil {
			err = r.flush(ctx)
		}
		if err == nil {
			err = r.settle(ctx)
		}
		if err != nil {
			return r.stepErr(st, err)
		}
		if err := r.readOutputs(ctx, st.Index); err != nil {
			return err
		}
	}
	return nil
}

// stamp is the timestamp a record step's record is produced with.
func (r *engineRun) stamp(rec *Record) int64 {
	if rec.HasTimestamp {
		return rec.Timestamp
	}
	return r.wall()
}

// readOutputs reads every sink topic, read committed, from where the last
// read stopped to its end, as written by step.
func (r *engineRun) readOutputs(ctx context.Context, step int) *RunError {
	for _, topic := range r.sinks {
		if r.internal[topic] {
			continue
		}
		pos, err := kafka.ReadToEnd(ctx, r.seeds, topic, r.pos[topic], func(rec *kgo.Record) error {
			if r.countOnly[topic] || r.f.countAll {
				r.counts[topic]++
				return nil
			}
			raw := testdriver.RawRecord{Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp.UnixMilli()}
			for _, h := range rec.Headers {
				raw.Headers = append(raw.Headers, processor.Header{Key: h.Key, Value: h.Value})
			}
			r.raw[topic] = append(r.raw[topic], raw)
			r.rawSteps[topic] = append(r.rawSteps[topic], step)
			return nil
		})
		if err != nil {
			return &RunError{Code: CodeOutput, Err: fmt.Errorf("%s: read output %s: %w", r.f.Path, topic, err)}
		}
		r.pos[topic] = pos
	}
	return nil
}

// stop stops the engine (its final barrier commits).
func (r *engineRun) stop() error {
	r.cancel()
	err := <-r.done
	r.done <- err
	return err
}

func (r *engineRun) close() {
	if r.prod != nil {
		r.prod.Close()
		r.prod = nil
	}
}
