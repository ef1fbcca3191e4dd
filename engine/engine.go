package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/prom"
	"github.com/stoatflow/stoatctl/engine/rest"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/twmb/franz-go/pkg/kgo"
)

// State is where an engine is in its life, as Kafka Streams names it.
type State string

const (
	Created         State = "CREATED"
	Rebalancing     State = "REBALANCING"
	Running         State = "RUNNING"
	PendingShutdown State = "PENDING_SHUTDOWN"
	NotRunning      State = "NOT_RUNNING"
	Error           State = "ERROR"
)

// Configuration keys of the commit barrier cadence and the engine.
const (
	BarrierIntervalMs     = "stoatflow.commit-barrier.interval-ms"
	BarrierIntervalFactor = "stoatflow.commit-barrier.interval-factor"
	BarrierMinIntervalMs  = "stoatflow.commit-barrier.min-interval-ms"
	BarrierMaxIntervalMs  = "stoatflow.commit-barrier.max-interval-ms"
	// LaneQueueSize bounds, in records, what a lane holds of each of its
	// producers (the dispatcher, and each upstream lane across an
	// in-memory boundary), queued or stashed while the lane aligns a
	// barrier; a producer with nothing left waits, and a waiting
	// dispatcher stops fetching.
	LaneQueueSize = "stoatflow.lane.queue-size"
	// CommitHeldRecords bounds the records the committer holds for the
	// epoch after the one committing; a lane with more to hand over
	// waits.
	CommitHeldRecords = "stoatflow.commit.held-records"
	// ChangelogCoalesceBytes bounds, per lane, the changelog records held
	// back within an epoch so that only each store key's last write goes
	// out (default 4 MiB); 0 writes every change as it happens.
	ChangelogCoalesceBytes = "stoatflow.changelog.coalesce-bytes"
	// RestoreChunkRecords bounds the changelog records a restore holds
	// before it writes them to the stores.
	RestoreChunkRecords = "stoatflow.restore.chunk-records"
	// RestoreRocksDBBatchBytes bounds the bytes of one write batch of a
	// restore into a lane's RocksDB database.
	RestoreRocksDBBatchBytes = "stoatflow.restore.rocksdb.batch-bytes"
	// NumStandbyReplicas is Kafka Streams' key: how many other instances
	// keep a warm copy of each task's state (default 0).
	NumStandbyReplicas = "num.standby.replicas"
	// AcceptableRecoveryLag, MaxWarmupReplicas and
	// ProbingRebalanceIntervalMs are Kafka Streams' keys for warm-ups
	// (KIP-441): how far behind its changelogs an instance may be and
	// still take a stateful task at once, how many tasks warm up at once,
	// and how often an instance warming some up asks for a rebalance.
	AcceptableRecoveryLag      = "acceptable.recovery.lag"
	MaxWarmupReplicas          = "max.warmup.replicas"
	ProbingRebalanceIntervalMs = "probing.rebalance.interval.ms"
	// StandbyIntervalMs is how often an instance that runs no task brings
	// the standby tasks it keeps up to date with their changelogs.
	StandbyIntervalMs = "stoatflow.standby.interval-ms"
	// RestoreFetchMaxBytes bounds the bytes a restore fetches of a
	// changelog partition at once.
	RestoreFetchMaxBytes = "stoatflow.restore.fetch-max-bytes"
	// BufferMemory bounds the bytes of records produced and not yet
	// acknowledged (Kafka's producer key; franz-go's MaxBufferedBytes).
	BufferMemory = "buffer.memory"
	// CreateTopics says whether the engine may create its internal topics
	// (default true); when false, a missing one is a start-up error.
	CreateTopics = "stoatflow.topics.create"
	// ShutdownTimeoutMs bounds how long a stop waits for the final
	// barrier's commit (default 30000); past it, Run returns and what did
	// not commit is reprocessed on the next start.
	ShutdownTimeoutMs = "stoatflow.shutdown.timeout-ms"
)

// ErrSplitBoundary is returned when a topology that must run as one
// instance would be split across several: one with an in-memory re-key
// boundary (its downstream state needs every upstream partition in one
// process until repartition topics exist), or one that closes windows on
// event time (its floor and emit frontiers are per application).
var ErrSplitBoundary = errors.New("this topology cannot be split across instances")

// ErrMissingTopic is returned, as a *MissingTopicError, when a source
// topic does not exist.
var ErrMissingTopic = errors.New("source topic does not exist")

// MissingTopicError names the source topics (or the pattern) that were
// not found at start. It matches ErrMissingTopic.
type MissingTopicError struct {
	// Topics are the missing topics, sorted; empty for a pattern.
	Topics []string
	// Pattern is the source pattern that matched no topic, if any, and
	// Node the source node that reads it.
	Pattern, Node string
	// Hint says what to do, after the names.
	Hint string
}

func (e *MissingTopicError) Error() string {
	if e.Pattern != "" {
		return fmt.Sprintf("engine: %v: source %s reads pattern %s, which matches no topic (%s)", ErrMissingTopic, e.Node, e.Pattern, e.Hint)
	}
	return fmt.Sprintf("engine: %v: %s (%s)", ErrMissingTopic, strings.Join(e.Topics, ", "), e.Hint)
}

// Is makes errors.Is(err, ErrMissingTopic) hold.
func (e *MissingTopicError) Is(target error) bool { return target == ErrMissingTopic }

// Engine runs one topology. Create it with New, start it with Run.
type Engine struct {
	topo *topology.Topology
	cfg  config.Config
	// raw is the configuration as given, for warnUnknownKeys.
	raw  map[string]string
	opts options

	log     *slog.Logger
	metrics *metrics.Registry

	mu        sync.Mutex
	state     State
	listeners []func(old, new State)

	paused atomic.Bool

	// obs is what Observe reads (observe.go); meters, api and lagMs are
	// the meters, the REST API and the last lag sample (api.go,
	// monitor.go).
	obs    observed
	meters *prom.Meters
	api    atomic.Pointer[rest.Server]
	lagMs  atomic.Int64

	// instanceFrom says where stoatflow.instance.id came from, for the
	// start summary (instance.go).
	instanceFrom string
	// releaseState drops the lock on a default state directory's slot
	// (claimDefaultStateDir), when Run returns; nil when none is held.
	releaseState func()

	statsMu sync.Mutex
	stats   Stats
	// assignment is what the running lanes process (under statsMu).
	assignment map[string][]int32
	// tasks are the ids of the tasks the lanes run now ("sub_partition",
	// as Kafka Streams names them), sorted.
	tasks    []string
	standbys []string
	// warmups are the standbys that warm a task up to move here
	// (KIP-441); standbyLag is what the last warm-up measured of each
	// standby, by task id (standby.go).
	warmups    []string
	standbyLag map[string]int64
}

// Stats are running totals, for tests and the REST API.
type Stats struct {
	// Committed is the number of epochs committed.
	Committed int64
	// Aborted is the number of epochs aborted (and reprocessed).
	Aborted int64
	// Records is the number of source records whose epoch committed.
	Records int64
	// Resets counts runtime resets (rebalances and aborts).
	Resets int64
	// Watermark is the stamp of the last committed barrier.
	Watermark int64
	// GlobalRecords is the number of records applied to global stores.
	GlobalRecords int64
	// Restored is the number of changelog records the last start or reset
	// restored into the stores.
	Restored int64
	// StandbyRecords is the number of changelog records the warm-ups of
	// standby tasks applied (num.standby.replicas).
	StandbyRecords int64
}

// Option configures an Engine.
type Option func(*options)

type options struct {
	logger  *slog.Logger
	metrics *metrics.Registry
	wall    func() int64
	dial    func(ctx context.Context, network, host string) (net.Conn, error)
	http    *HTTP
	version string
	commit  string
	// eventTime and barrierClock are eventtime.go's.
	eventTime    *EventTime
	barrierClock func() int64
	// probe is the tests' view into the lanes (export_test.go): nil
	// outside them.
	probe *probe
	// configChecked: the caller told the user of unknown keys already.
	configChecked bool
}

// probe lets a test slow a lane and see each generation the engine
// builds.
type probe struct {
	// lane runs in a lane before it processes a record (barrier false)
	// or crosses a barrier (barrier true).
	lane func(sub, idx int, barrier bool)
	// generation sees every generation once it is built.
	generation func(g *generation)
}

// WithConfigChecked says the caller has checked the configuration
// against the catalogue and told the user of its unknown keys, as
// stoatctl run does, so Run does not warn of them again.
func WithConfigChecked() Option { return func(o *options) { o.configChecked = true } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithWallClock sets the wall clock the engine's processing runs under,
// in epoch milliseconds: what wall-clock punctuators and processing-time
// timers see and fire by, and the idleness clock of the watermark. The
// default is the system clock. The barrier cadence and the network
// deadlines stay on real time.
func WithWallClock(now func() int64) Option { return func(o *options) { o.wall = now } }

// WithDialer makes every connection the engine opens to a broker (its
// group and transactional client, the admin client, restoration and
// global-table readers) go through dial, instead of a plain TCP dial: for
// a proxy, a custom resolver, or a test that puts faults in the network.
func WithDialer(dial func(ctx context.Context, network, host string) (net.Conn, error)) Option {
	return func(o *options) { o.dial = dial }
}

// WithMetrics sets the registry the engine counts into.
func WithMetrics(r *metrics.Registry) Option { return func(o *options) { o.metrics = r } }

// New returns an engine for topo under cfg (Kafka Streams-style keys:
// application.id, bootstrap.servers, processing.guarantee,
// num.stream.threads, and the stoatflow.* keys). Problems with either are
// reported by Run.
func New(topo *topology.Topology, cfg map[string]string, opts ...Option) *Engine {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.metrics == nil {
		o.metrics = metrics.NewRegistry()
	}
	if o.wall == nil {
		o.wall = func() int64 { return time.Now().UnixMilli() }
	}
	e := &Engine{topo: topo, cfg: config.New(cfg), raw: maps.Clone(cfg), opts: o, log: o.logger, metrics: o.metrics, state: Created}
	e.newMeters()
	return e
}

// State is the engine's current state.
func (e *Engine) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// OnStateChange registers fn to be called on every state change, from the
// goroutine making it. Register before Run.
func (e *Engine) OnStateChange(fn func(old, new State)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.listeners = append(e.listeners, fn)
}

func (e *Engine) setState(s State) {
	e.mu.Lock()
	old := e.state
	if old == s {
		e.mu.Unlock()
		return
	}
	e.state = s
	ls := e.listeners
	e.mu.Unlock()
	e.log.Info("state change", "from", string(old), "to", string(s))
	for _, fn := range ls {
		fn(old, s)
	}
}

// Pause stops processing: nothing more is dispatched until Resume (what
// a poll in flight returns waits for it); barriers keep committing what
// was already dispatched.
func (e *Engine) Pause() { e.paused.Store(true) }

// Resume undoes Pause.
func (e *Engine) Resume() { e.paused.Store(false) }

// Stats returns the running totals.
func (e *Engine) Stats() Stats {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return e.stats
}

// Assignment returns the source partitions the lanes process now, by
// topic, sorted: the group's assignment as of the last (re)start of the
// lanes. It is empty before the first start and after a stop.
func (e *Engine) Assignment() map[string][]int32 {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	out := make(map[string][]int32, len(e.assignment))
	for t, ps := range e.assignment {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (e *Engine) setAssignment(a map[string][]int32) {
	e.statsMu.Lock()
	e.assignment = a
	if a == nil {
		e.tasks = nil
	}
	e.statsMu.Unlock()
}

// Tasks returns the ids of the tasks the lanes run now, "sub_partition"
// as Kafka Streams names them, sorted: those of the sub-topologies with
// state (a stateless sub-topology's lanes serve every partition and own
// nothing). Empty before the first start and after a stop.
func (e *Engine) Tasks() []string {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return slices.Clone(e.tasks)
}

// Standbys are the ids of the standby tasks the group's last assignment
// gave this instance, "sub_partition", sorted (num.standby.replicas).
// They are kept warm while the instance runs no task (engine/standby.go).
func (e *Engine) Standbys() []string {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return slices.Clone(e.standbys)
}

func (e *Engine) setStandbys(ids, warmups []string) {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	e.standbys, e.warmups = ids, warmups
}

// setStandbyLag records what the last warm-up measured; nil when no
// warm-up runs (the instance runs tasks, or keeps no standby).
func (e *Engine) setStandbyLag(lag map[string]int64) {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	e.standbyLag = lag
}

// StandbyTask is one standby task of the last assignment, as GET /info
// and the meters show it.
type StandbyTask struct {
	// ID is the task id, "sub_partition".
	ID string
	// Warmup says the task warms up here to move here (KIP-441) rather
	// than stay a standby.
	Warmup bool
	// Lag is how many changelog records the local copy was behind the
	// changelog partitions' ends as the last warm-up began (decision
	// 0040; the first of a run measures after it restored), summed
	// over the task's changelog partitions (a task ahead of an in-memory
	// re-key counts those of the tasks behind it). LagKnown is false
	// until a warm-up measured it, and while the instance keeps no
	// standby (it runs tasks): the lag is then not known, not 0.
	Lag      int64
	LagKnown bool
}

// StandbyTasks are the standby tasks of the last assignment with what
// the last warm-up measured of them, sorted by id.
func (e *Engine) StandbyTasks() []StandbyTask {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	out := make([]StandbyTask, 0, len(e.standbys))
	for _, id := range e.standbys {
		lag, ok := e.standbyLag[id]
		out = append(out, StandbyTask{ID: id, Warmup: slices.Contains(e.warmups, id), Lag: lag, LagKnown: ok})
	}
	return out
}

// setTasks records the tasks the lanes run and returns the previous ones.
func (e *Engine) setTasks(ids []string) (before []string) {
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	before, e.tasks = e.tasks, ids
	return before
}

func (e *Engine) addStats(fn func(*Stats)) {
	e.statsMu.Lock()
	fn(&e.stats)
	e.statsMu.Unlock()
}

// Metrics is the registry the engine counts into.
func (e *Engine) Metrics() *metrics.Registry { return e.metrics }

// settings are the engine's configuration, read once.
type settings struct {
	appID       string
	seeds       []string
	exactlyOnce bool
	lanes       int
	queue       int
	// held, restoreChunk and restoreBatchBytes are CommitHeldRecords,
	// RestoreChunkRecords and RestoreRocksDBBatchBytes.
	held              int
	coalesceBytes     int
	restoreChunk      int
	restoreBatchBytes int
	// restoreFetchBytes is RestoreFetchMaxBytes; bufferMemory is
	// BufferMemory.
	restoreFetchBytes int
	bufferMemory      int
	createTopic       bool
	// production is default.production.exception.handler: fail or
	// continue for a sink record too large for its topic.
	production string
	// deadLetterTopic is errors.dead.letter.queue.topic.name, where the
	// dead-letter production handler sends the input behind an
	// oversized output (deadletter.go).
	deadLetterTopic string
	interval        time.Duration
	factor          float64
	minInterval     time.Duration
	maxInterval     time.Duration
	clientOpts      []kgo.Opt
	// dialOpts are how a restore consumer connects (TLS, SASL,
	// WithDialer), for clients made from the seeds alone; adminOpts,
	// globalOpts and mainOpts are the admin's, the global consumer's and
	// the main consumer's (each under its prefixes). clientOpts include
	// the main consumer's.
	dialOpts, adminOpts, globalOpts, mainOpts []kgo.Opt
	// maxRequest is the producer's max.request.size: the largest record
	// it sends.
	maxRequest int
	// metadataAge is retry.backoff.ms, the admin client's metadata min
	// age: franz-go answers a metadata request from what it learnt within
	// that age, 5 s by its default, and a source topic created just
	// before the start would look missing that long.
	metadataAge time.Duration
	// shutdown is ShutdownTimeoutMs.
	shutdown time.Duration
	// stateDir is where the lanes' RocksDB databases are, under
	// <state.dir>/<application.id>; "" when this binary has no RocksDB.
	// rocksDefault says default.dsl.store is rocksDB.
	stateDir     string
	rocksDefault bool
	// standbys is NumStandbyReplicas; standbyEvery, StandbyIntervalMs;
	// recoveryLag, warmups and probeEvery the warm-up keys.
	standbys     int
	standbyEvery time.Duration
	recoveryLag  int
	warmups      int
	probeEvery   time.Duration
	// rackTags are config.RackAwareAssignmentTags and clientTags the
	// instance's client.tag. keys, for standby placement (KIP-708).
	rackTags   []string
	clientTags map[string]string
	// warmOnly marks a generation that only restores (a standby's
	// warm-up): its processors are not initialised, its lanes never run.
	warmOnly bool
}

func readSettings(c config.Config) (settings, error) {
	var s settings
	if err := s.connect(c, nil); err != nil {
		return s, err
	}
	var err error
	if s.maxRequest, err = kafka.MaxRequestBytes(c); err != nil {
		return s, err
	}
	s.appID = c.String(config.ApplicationID)
	s.seeds = splitList(c.String(config.BootstrapServers))
	g, err := c.OneOf(config.ProcessingGuarantee, kafka.ExactlyOnceV2, kafka.AtLeastOnce)
	if err != nil {
		return s, err
	}
	s.exactlyOnce = g != kafka.AtLeastOnce
	lanes := int64(runtime.NumCPU())
	if lanes, err = c.BoundedInt(config.NumStreamThreads, lanes); err != nil {
		return s, err
	}
	s.lanes = int(lanes)
	// The least values are the catalogue's (config.BoundedInt).
	for _, k := range []struct {
		key string
		def int64
		to  *int
	}{{LaneQueueSize, 1024, &s.queue}, {CommitHeldRecords, 65536, &s.held}, {ChangelogCoalesceBytes, 4 << 20, &s.coalesceBytes}, {RestoreChunkRecords, 16384, &s.restoreChunk},
		{RestoreRocksDBBatchBytes, 8 << 20, &s.restoreBatchBytes}, {RestoreFetchMaxBytes, 1 << 20, &s.restoreFetchBytes}, {BufferMemory, 32 << 20, &s.bufferMemory},
		{NumStandbyReplicas, 0, &s.standbys}, {AcceptableRecoveryLag, 10000, &s.recoveryLag}, {MaxWarmupReplicas, 2, &s.warmups}} {
		from := c
		if k.key == BufferMemory {
			from = c.ForClient(config.Producer)
		}
		v, err := from.BoundedInt(k.key, k.def)
		if err != nil {
			return s, err
		}
		*k.to = int(v)
	}
	// Kafka Streams' cache at 0 means every write logged; our own key,
	// when set, says what it says.
	if !c.IsSet(ChangelogCoalesceBytes) {
		cache, err := c.Int(config.StateStoreCacheMaxBytes, 1)
		if err != nil {
			return s, err
		}
		if cache == 0 {
			s.coalesceBytes = 0
		}
	}
	if s.createTopic, err = c.Bool(CreateTopics, true); err != nil {
		return s, err
	}
	if s.production, err = task.HandlerVerdict(c, config.ProductionHandler, true); err != nil {
		return s, err
	}
	s.deadLetterTopic = strings.TrimSpace(c.String(config.DeadLetterQueueTopic))
	if s.production == handlerDeadLetter && s.deadLetterTopic == "" {
		return s, fmt.Errorf("config %s is dead-letter but %s is not set", config.ProductionHandler, config.DeadLetterQueueTopic)
	}
	ms := func(key string, def int64) (time.Duration, error) {
		v, err := c.BoundedInt(key, def)
		return time.Duration(v) * time.Millisecond, err
	}
	if s.interval, err = ms(BarrierIntervalMs, 500); err != nil {
		return s, err
	}
	if s.metadataAge, err = ms(kafka.RetryBackoffMs, kafka.DefaultRetryBackoff.Milliseconds()); err != nil {
		return s, err
	}
	if s.minInterval, err = ms(BarrierMinIntervalMs, 150); err != nil {
		return s, err
	}
	if s.maxInterval, err = ms(BarrierMaxIntervalMs, 5000); err != nil {
		return s, err
	}
	if s.shutdown, err = ms(ShutdownTimeoutMs, 30000); err != nil {
		return s, err
	}
	if s.standbyEvery, err = ms(StandbyIntervalMs, 2000); err != nil {
		return s, err
	}
	if s.probeEvery, err = ms(ProbingRebalanceIntervalMs, 600000); err != nil {
		return s, err
	}
	if s.rackTags, s.clientTags, err = c.RackAwareness(); err != nil {
		return s, err
	}
	if s.exactlyOnce {
		if err := s.fitTransactionTimeout(c); err != nil {
			return s, err
		}
	}
	if s.minInterval > s.maxInterval {
		return s, fmt.Errorf("config %s (%s) is above %s (%s)", BarrierMinIntervalMs, s.minInterval, BarrierMaxIntervalMs, s.maxInterval)
	}
	if s.stateDir, s.rocksDefault, err = stateDirOf(c, s.appID); err != nil {
		return s, err
	}
	s.factor = 1.5
	if v, ok := c.Lookup(BarrierIntervalFactor); ok {
		if _, err := fmt.Sscanf(v, "%g", &s.factor); err != nil || s.factor < 0 {
			return s, fmt.Errorf("config %s: %q is not a non-negative number", BarrierIntervalFactor, v)
		}
	}
	return s, nil
}

// connect sets the options every client connects with, over dial when
// it is not nil.
func (s *settings) connect(c config.Config, dial conn.DialFunc) error {
	opts, err := kafka.ClientOptionsDial(c, dial)
	if err != nil {
		return err
	}
	s.clientOpts = opts
	for _, o := range []struct {
		cl config.Client
		to *[]kgo.Opt
	}{{config.RestoreConsumer, &s.dialOpts}, {config.Admin, &s.adminOpts}, {config.GlobalConsumer, &s.globalOpts}, {config.MainConsumer, &s.mainOpts}} {
		if *o.to, err = kafka.ConnOptions(c, o.cl, dial); err != nil {
			return err
		}
	}
	return nil
}

// txnTimeoutShare is how many of the longest barrier intervals fit in
// transaction.timeout.ms: an epoch's transaction lasts its interval,
// then the lanes' queued work (about one interval more, lanes.Env.Pace),
// then the commit; a third of the timeout leaves the commit the last
// third.
const txnTimeoutShare = 3

// fitTransactionTimeout holds the cadence to the transaction timeout:
// the longest barrier interval is at most a third of
// transaction.timeout.ms, so that an epoch commits well inside it under
// any backlog. An interval the user set above that is refused; defaults
// are lowered to fit (a short timeout set for fast failover brings a
// short cadence with it).
func (s *settings) fitTransactionTimeout(c config.Config) error {
	producer := c.ForClient(config.Producer)
	timeoutMs, err := producer.BoundedInt(kafka.TransactionTimeoutMs, kafka.DefaultTransactionTimeout.Milliseconds())
	if err != nil {
		return err
	}
	most := time.Duration(timeoutMs) * time.Millisecond / txnTimeoutShare
	for _, k := range []struct {
		key string
		d   *time.Duration
	}{{BarrierMaxIntervalMs, &s.maxInterval}, {BarrierIntervalMs, &s.interval}, {BarrierMinIntervalMs, &s.minInterval}} {
		if *k.d <= most {
			continue
		}
		if c.IsSet(k.key) {
			return fmt.Errorf("config %s (%s) is above a third of %s (%s): an epoch could outlive its transaction; lower %s or raise %s",
				k.key, *k.d, kafka.TransactionTimeoutMs, time.Duration(timeoutMs)*time.Millisecond, k.key, kafka.TransactionTimeoutMs)
		}
		*k.d = most
	}
	return nil
}

// nextInterval is the barrier cadence after a commit that took took: the
// configured interval, or the commit time scaled by the factor when that
// is longer, within the configured bounds.
func (s settings) nextInterval(took time.Duration) time.Duration {
	d := s.interval
	if scaled := time.Duration(float64(took) * s.factor); scaled > d {
		d = scaled
	}
	return min(max(d, s.minInterval), s.maxInterval)
}

// Run runs the engine until ctx is cancelled (then it commits a final
// barrier, closes cleanly and returns nil) or a fatal error stops it.
func (e *Engine) Run(ctx context.Context) error {
	if e.State() != Created {
		return errors.New("engine: Run called twice")
	}
	e.warnUnknownKeys()
	err := e.resolveInstance()
	if e.releaseState != nil {
		defer e.releaseState()
	}
	if err != nil {
		e.setState(Error)
		e.log.Error("engine stopped", "err", err)
		return err
	}
	progressEvery, stallAfter, err := monitorSettings(e.cfg)
	if err != nil {
		e.setState(Error)
		e.log.Error("engine stopped", "err", err)
		return err
	}
	stopAPI, err := e.startAPI()
	if err != nil {
		e.setState(Error)
		return err
	}
	defer stopAPI()
	mctx, stopMonitor := context.WithCancel(ctx)
	monitorDone := e.monitor(mctx, progressEvery, stallAfter)
	defer func() { stopMonitor(); <-monitorDone }()
	err = e.run(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Stopped while starting, or while the lanes were being rebuilt
		// after a rebalance: the call that failed was cut short by the
		// caller's own cancellation. Nothing uncommitted is lost (it is
		// reprocessed from the committed offsets), so this is a clean stop,
		// as SIGINT during start-up should be.
		e.log.Info("stopped before the lanes were running", "cause", err)
		err = nil
	}
	if err != nil {
		e.setState(Error)
		e.log.Error("engine stopped", "err", err)
		return err
	}
	e.setState(NotRunning)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Topics lists the topics topo reads and writes under cfg, boundaries
// left out (they never leave the process), sorted: what an embedded
// broker must hold for the topology to run.
func Topics(topo *topology.Topology, cfg map[string]string) (sources, sinks []string, err error) {
	built, err := topo.Build(config.New(cfg))
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, n := range built.Nodes {
		if n.Boundary != nil {
			continue
		}
		switch {
		case n.Source != nil:
			for _, t := range n.Source.Topics {
				if !seen[t] {
					seen[t] = true
					sources = append(sources, t)
				}
			}
		case n.Sink != nil && n.Sink.Topic != "":
			if !seen[n.Sink.Topic] {
				seen[n.Sink.Topic] = true
				sinks = append(sinks, n.Sink.Topic)
			}
		}
	}
	slices.Sort(sources)
	slices.Sort(sinks)
	return sources, sinks, nil
}

// warnUnknownKeys logs a warning for each configuration key the
// catalogue does not know, with the closest known key: a typo such as
// num.stream.thread would otherwise pass silently, as Kafka Streams warns
// "supplied but isn't a known config". Not an error: a key of a newer
// version, or one meant for another reader, is not fatal.
func (e *Engine) warnUnknownKeys() {
	if e.opts.configChecked {
		return
	}
	for _, p := range config.Check(e.raw) {
		if p.Kind == config.Unknown {
			e.log.Warn(p.String(), "key", p.Key, "did_you_mean", p.Suggestion)
		}
	}
}
