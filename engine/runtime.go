package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stoatflow/stoatctl/engine/assign"
	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/internal/backoff"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// errStopNow ends a shutdown early without an error.
var errStopNow = errors.New("stop now")

// errAborted is a transaction that did not commit: the runtime resets and
// reprocesses from the committed offsets.
var errAborted = errors.New("transaction aborted")

// errCommitUnknown is a transaction whose end failed: it may have
// committed, aborted, or still be open on the broker. The runtime makes a
// new session, whose fencing settles it, and resets from what the broker
// says was committed. Errors that no retry can cure (fencing,
// authorization, an unsupported broker) are not wrapped in it.
var errCommitUnknown = errors.New("transaction outcome unknown")

// ErrFenced is returned, wrapped, when this instance's transactional id
// is taken over again and again: another instance runs with it.
var ErrFenced = errors.New("transactional id fenced by another instance")

// maxUncertainCommits bounds the commits in a row whose outcome is
// unknown before the engine gives up with the last error.
const maxUncertainCommits = 8

// runner is one Run of the engine.
type runner struct {
	e     *Engine
	s     settings
	built *topology.Built
	standbyState

	// sess owns the client (cl is sess.client()): polls and the
	// transaction's begin and end go through it, never overlapping.
	sess *session
	// sessOpts make a session: the first, and a new one after a commit
	// whose outcome is unknown.
	sessOpts []kgo.Opt
	// fetchPool holds the arrays the session's fetches decode into.
	fetchPool fetchPool
	cl        *kgo.Client
	adm       *kadm.Client

	sources    []string
	patterns   []patternSource
	topicSub   map[string]int
	partitions map[string]int32
	stampTopic string
	// sc keeps event time per sub-topology, when the topology allows it
	// (perSubReason); nil otherwise.
	sc *subClocks

	assignMu   sync.Mutex
	assigned   map[string]map[int32]bool
	rebalanced atomic.Bool
	// joining is set while the group rebalances: from the end of a
	// session (franz-go's revoke callback, with nothing revoked under the
	// cooperative protocol) until the next assignment, which franz-go
	// reports after every completed join (awaitJoined).
	joining atomic.Bool
	// joined says the group has completed a rebalance for the current
	// session and told this member its assignment (franz-go calls
	// OnPartitionsAssigned after every completed join, even with nothing
	// assigned); until then the engine is not RUNNING, so not ready.
	joined atomic.Bool
	// closing says the runner is closing: leaving the group revokes the
	// partitions, which is the end, not a rebalance.
	closing atomic.Bool
	// revokes counts the revocations and losses of partitions (and the
	// ends of sessions); genRevokes is its value when the last reset
	// read the assignment (generation.revokes, the committer's), and
	// keep what the last generation left the next one of its in-memory
	// state (keep.go).
	revokes    atomic.Int64
	genRevokes int64
	keep       *keptMemory

	gen       *generation
	global    *globalRunner
	committer chan struct{}
	// held are records polled as a pause began, dispatched on resume.
	held kgo.Fetches
	// pending are the heads of tasks that wait for another of their
	// inputs, dispatched with a later poll (taskinputs.go); inputs is
	// what the dispatcher knows of the inputs of tasks that read several
	// topics, nil when none does.
	pending []*mergeHead
	inputs  *taskInputs
	// abandonCommit cancels the committer's context: only a shutdown
	// past its deadline does, so that Run returns with the broker gone.
	abandonCommit context.CancelFunc
	cuts          chan epochCut
	tracker       *watermark.Tracker
	// alignLog rate-limits the alignment log (alignment.go).
	alignLog alignLog
	// waiting are the poll's heads not yet dispatched while a barrier is
	// cut within the poll, nil otherwise; recordTime are the source
	// topics whose event time is the record's timestamp (no assigner, a
	// built-in extractor), the only ones whose waiting head the
	// dispatcher can preview.
	waiting    []*mergeHead
	recordTime map[string]bool

	// cutter is the protocol's dispatcher side (engine/barrier): the next
	// epoch, the one-in-flight gate, the idle rule. committedEpoch is the
	// committer's report of what committed, which the cutter catches up
	// with before it decides.
	cutter         *barrier.Cutter
	committedEpoch atomic.Int64
	commitTook     atomic.Int64
	commitFailed   atomic.Pointer[error]
	// groupFailed is a group error no retry mends (groupProtocolHook).
	groupFailed atomic.Pointer[error]
	// uncertain counts the commits in a row whose outcome was unknown;
	// committedAtRecovery is Stats.Committed at the last of them.
	uncertain           int
	committedAtRecovery int64
	// purge deletes what was committed of the repartition topics.
	purge *purger
	// tableTopics are the assigned topics read as tables, whose
	// partitions take no part in the watermark.
	tableTopics map[string]bool
	// fence judges the fencings recoverSession meets: a broker's
	// restart or another instance.
	fence      fenceRule
	cutOffsets map[string]map[int32]int64
	partTimes  map[watermark.Partition]int64
	dispatched int64
	// lastBarrierAt is when the last barrier was cut, on the barrier
	// clock (eventtime.go).
	lastBarrierAt int64
	rr            atomic.Uint32
	// drained says the last poll returned no record; caughtUp that it
	// reached the end of every partition it returned records of (a
	// steady input the engine keeps up with: its polls are never empty).
	drained, caughtUp bool
	// inCount caches the records-in counter of each source topic
	// (observe.go); the dispatcher's alone.
	inCount map[string]*atomic.Int64
	// activeOffsets are the dispatched offsets watermarkNow last saw per
	// partition; one that moved marks its partition active.
	activeOffsets map[watermark.Partition]int64
	// highWater is each source partition's high watermark as the last
	// fetch of it reported (observe.go: the lag per input).
	highWater map[watermark.Partition]int64

	// ptMu guards what the committer and the dispatcher share:
	// knownPartTimes (each partition's time as last committed, kept for
	// partitions an epoch did not touch), and the writes of sinkParts.
	ptMu           sync.Mutex
	knownPartTimes map[watermark.Partition]int64
	// sinkParts holds the sink topics' partition counts, read for every
	// record the committer partitions: a map never written once
	// published, replaced whole (under ptMu) when a topic is added, so
	// that the read takes no lock.
	sinkParts  atomic.Pointer[map[string]int32]
	sinkLimits map[string]int
}

// patternSource is a source reading the topics a pattern matches.
type patternSource struct {
	node string
	re   *regexp.Regexp
	sub  int
}

// resolvePatterns adds the topics that exist now and match a pattern
// source to the sources. Topics created later are read after a restart.
func (r *runner) resolvePatterns(ctx context.Context) error {
	if len(r.patterns) == 0 {
		return nil
	}
	all, err := r.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("engine: list topics for pattern sources: %w", err)
	}
	for _, p := range r.patterns {
		matched := 0
		for _, t := range all.Names() {
			if strings.HasPrefix(t, "__") || strings.HasPrefix(t, r.s.appID+"-") || !p.re.MatchString(t) {
				continue
			}
			if _, dup := r.topicSub[t]; dup {
				continue
			}
			r.sources = append(r.sources, t)
			r.topicSub[t] = p.sub
			matched++
		}
		if matched == 0 {
			return &MissingTopicError{Pattern: p.re.String(), Node: p.node,
				Hint: "create one first; topics created later are read after a restart"}
		}
	}
	return nil
}

// epochCut is what the dispatcher knows of an epoch when it cuts it.
type epochCut struct {
	epoch   int64
	stamp   int64
	final   bool
	records int64
	offsets map[string]map[int32]int64
	// With event time per sub-topology (subClocks): each one's stamp,
	// the markers the epoch writes to repartition topics, and the marks
	// each repartition partition read here commits.
	subStamps []int64
	markers   []*kgo.Record
	marks     map[watermark.Partition]map[string]int64
}

func (e *Engine) run(ctx context.Context) error {
	s, err := readSettings(e.cfg)
	if err != nil {
		return err
	}
	if e.opts.dial != nil {
		if err := s.connect(e.cfg, e.opts.dial); err != nil {
			return err
		}
	}
	built, err := e.topo.Build(e.cfg)
	if err != nil {
		return err
	}
	for _, w := range built.Warnings {
		e.log.Warn(w.String(), "rule", w.Rule, "node", w.Node)
	}
	e.started(s, built)
	r := &runner{e: e, s: s, built: built, topicSub: map[string]int{}, assigned: map[string]map[int32]bool{}, sinkLimits: map[string]int{},
		stampTopic: s.appID + "-stoatflow-watermark-changelog", cutter: barrier.NewCutter(task.Unknown)}
	for _, st := range built.Subtopologies {
		for _, src := range st.Sources {
			if src.Boundary != nil {
				continue
			}
			if src.Source.Pattern != nil {
				r.patterns = append(r.patterns, patternSource{node: src.Name, re: src.Source.Pattern, sub: st.ID})
				continue
			}
			for _, t := range src.Source.Topics {
				r.sources = append(r.sources, t)
				r.topicSub[t] = st.ID
			}
		}
	}
	if len(r.sources) == 0 && len(r.patterns) == 0 {
		return errors.New("engine: the topology reads no topic")
	}
	detach, err := r.attachEventTime()
	if err != nil {
		return err
	}
	defer detach()
	if err := r.connect(ctx); err != nil {
		return err
	}
	defer r.close()
	if r.global, err = r.startGlobal(ctx); err != nil {
		return err
	}
	return r.loop(ctx)
}

// connect checks the topics, creates the internal ones and joins the group.
func (r *runner) connect(ctx context.Context) error {
	e := r.e
	admCl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.s.seeds...), kgo.RetryTimeout(30 * time.Second),
		kgo.MetadataMinAge(r.s.metadataAge)}, r.s.adminOpts...)...)
	if err != nil {
		return fmt.Errorf("engine: admin client: %w", err)
	}
	r.adm = kadm.NewClient(admCl)
	// Repartition topics are the engine's to create, once the topics
	// they take their partition count from are known.
	repartition := map[string]bool{}
	for _, rp := range r.built.Repartitions {
		repartition[rp.Topic] = true
	}
	external := slices.DeleteFunc(slices.Clone(r.sources), func(t string) bool { return repartition[t] })
	var details kadm.TopicDetails
	for attempt := 0; ; attempt++ {
		details, err = r.adm.ListTopics(ctx, external...)
		if err == nil {
			break
		}
		if conn.Fatal(err) {
			// A wrong password or an untrusted certificate does not
			// get better with retries.
			return fmt.Errorf("engine: brokers %s: %w", strings.Join(r.s.seeds, ","), conn.Explain(err, "describe", "topic "+strings.Join(r.sources, ", ")))
		}
		if attempt >= 10 || ctx.Err() != nil {
			return fmt.Errorf("engine: cannot reach the brokers %s: %w", strings.Join(r.s.seeds, ","), err)
		}
		wait := brokersBackoff.Delay(attempt + 1)
		e.log.Warn("brokers unreachable, retrying", "brokers", strings.Join(r.s.seeds, ","), "err", err, "attempt", attempt+1, "retry_in", wait)
		if err := backoff.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	if len(r.patterns) > 0 {
		if err := r.resolvePatterns(ctx); err != nil {
			return err
		}
		if details, err = r.adm.ListTopics(ctx, r.sources...); err != nil {
			return fmt.Errorf("engine: list source topics: %w", err)
		}
	}
	slices.Sort(r.sources)
	r.partitions = map[string]int32{}
	var missing []string
	for _, t := range r.sources {
		if repartition[t] {
			continue
		}
		d, ok := details[t]
		if ok && conn.Fatal(d.Err) {
			return fmt.Errorf("engine: %w", conn.Explain(d.Err, "describe", "topic "+t))
		}
		if !ok || d.Err != nil {
			missing = append(missing, t)
			continue
		}
		r.partitions[t] = int32(len(d.Partitions))
	}
	// A topic created a moment ago may not be in every broker's metadata
	// yet: Apache Kafka answers UNKNOWN_TOPIC_OR_PARTITION until its
	// broker has the controller's record, which a script that creates
	// its topics and starts the engine at once meets (bench-compare's
	// latency run did, on Kafka 4.4). A missing topic is asked for again
	// for a little under two seconds (missingTopicsFor) before it is an
	// error; the jitter changes how often, not for how long.
	askUntil := time.Now().Add(missingTopicsFor)
	for attempt := 1; len(missing) > 0 && time.Now().Before(askUntil); attempt++ {
		wait := min(missingTopicBackoff.Delay(attempt), time.Until(askUntil))
		e.log.Info("source topics not found yet, asking again", "topics", strings.Join(missing, ","), "in", wait)
		if err := backoff.Sleep(ctx, wait); err != nil {
			return err
		}
		again, err := r.adm.ListTopics(ctx, missing...)
		if err != nil {
			return fmt.Errorf("engine: list source topics: %w", err)
		}
		still := missing[:0]
		for _, t := range missing {
			if d, ok := again[t]; ok && d.Err == nil {
				r.partitions[t] = int32(len(d.Partitions))
				continue
			}
			still = append(still, t)
		}
		missing = still
	}
	if len(missing) > 0 {
		return &MissingTopicError{Topics: missing, Hint: "create it first, or check bootstrap.servers"}
	}
	if err := r.ensureRepartitionTopics(ctx); err != nil {
		return err
	}
	topics := make([]string, len(r.built.Repartitions))
	for i, rp := range r.built.Repartitions {
		topics[i] = rp.Topic
	}
	if r.purge, err = newPurger(r.adm, topics, e.cfg, e.log.Warn); err != nil {
		return err
	}
	if err := checkCopartitioned(r.built, r.partitions); err != nil {
		return err
	}
	single := r.singleInstanceReason()
	if r.s.standbys > 0 {
		// Further instances of a topology that cannot be split are
		// its standbys (engine/assign puts every task on one).
		single = ""
	}
	if err := r.awaitGroup(ctx, single); err != nil {
		return err
	}
	// Changelogs take the partition count of the most partitioned source,
	// or of a repartition declared with more, so that every task of every
	// sub-topology has its partition (a sub-topology with fewer tasks
	// leaves the others empty; changelogs made by earlier versions have
	// this count too).
	var most int32 = 1
	for _, n := range r.partitions {
		most = max(most, n)
	}
	for _, st := range r.built.Subtopologies {
		most = max(most, r.changelogPartitions(st))
	}
	specs := kafka.InternalTopics(r.built, most)
	specs = append(specs, kafka.TopicSpec{Name: r.stampTopic, Store: "stoatflow-watermark", Partitions: 1, ReplicationFactor: -1,
		Configs: map[string]string{"cleanup.policy": kafka.PolicyCompact}})
	if specs, err = kafka.ApplyTopicSettings(e.cfg, specs); err != nil {
		return err
	}
	if err := kafka.EnsureTopics(ctx, r.adm, specs, r.s.createTopic); err != nil {
		return fmt.Errorf("engine: internal topics: %w", conn.Explain(err, "create", "the internal topics"))
	}
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = sp.Name
	}
	e.log.Info("topics ready", "sources", r.sources, "internal (created or found)", names)

	opts := append(slices.Clone(r.s.clientOpts),
		kgo.ConsumeTopics(r.sources...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// A partition's batch waits linger.ms, 10 ms by default
		// (kafka.ProducerOptions), for more records before it is sent:
		// on a real broker, 5 ms made about a quarter more produce work
		// for Kafka per record (docs/performance.md, 2026-12-03 16:10),
		// and a transaction's end flushes without waiting, so commits are
		// not held back.
		kgo.MaxBufferedRecords(1<<20),
		// What the committer produces waits here for the broker, at
		// most buffer.memory bytes: a full buffer holds the committer,
		// which holds the lanes (docs/engine.md, "Bounded memory").
		kgo.MaxBufferedBytes(r.s.bufferMemory),
		// fetch.max.wait.ms, 200 ms by default, is in clientOpts
		// (kafka.ConsumerOptions).
		// Fetched records are decoded into arrays the dispatcher gives
		// back (dispatchMerged recycles each record it dispatched).
		kgo.WithPools(&r.fetchPool),
		// A fencing right after a broker connection failed is a
		// restart's, not another instance's (fenceRule).
		kgo.WithHooks(brokerTroubleHook{&r.fence}, groupProtocolHook{r}),
		// The Kafka client's families of /metrics (engine/prom, kafka.go).
		kgo.WithHooks(r.e.meters.ClientHooks()),
		kgo.WithLogger(kafka.Logger(r.e.log.With("instance", r.e.cfg.String(kafka.InstanceID)))),
		// Tasks, not partitions, are assigned: a task's partitions go to
		// one member together (package assign).
		kgo.Balancers(assign.New(assign.Options{
			Subtopologies: maps.Clone(r.topicSub),
			OneActive:     r.singleInstanceReason() != "",
			Standbys:      r.s.standbys,
			OnStandbys:    r.onStandbys,
			KeepsState:    r.standbysUnkept() == "",
			TaskOffsets:   r.warmOffsets,
			EndOffsets:    r.taskEnds,
			AcceptableLag: int64(r.s.recoveryLag),
			MaxWarmups:    r.s.warmups,
			RackTags:      r.s.rackTags,
			Tags:          r.s.clientTags,
			Process:       r.e.cfg.String(kafka.InstanceID),
			Log:           r.e.log,
		})),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.onAssign("assigned", m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.onAssign("revoked", m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { r.onAssign("lost", m, false) }),
	)
	groupOpts, err := groupOptions(r.e.cfg.ForClient(config.MainConsumer))
	if err != nil {
		return err
	}
	r.sessOpts = append(opts, groupOpts...)
	return r.openSession(ctx)
}

// openSession makes the client and joins the group, fencing under
// exactly-once the previous holder of the transactional id.
func (r *runner) openSession(ctx context.Context) error {
	var err error
	r.sess, err = newSession(r.s.exactlyOnce, r.sessOpts...)
	if err != nil {
		return fmt.Errorf("engine: kafka client: %w", err)
	}
	r.cl = r.sess.client()
	r.client.Store(r.cl)
	if r.s.exactlyOnce {
		// Fence the previous incarnation of this transactional id now: a
		// crashed one's open transaction holds back the last stable
		// offset of every partition it wrote, and with it restoration and
		// the group's committed offsets, until it is aborted. After a
		// commit whose outcome is unknown, this also settles that
		// transaction: the broker finishes or aborts it before it answers.
		if _, _, err := r.cl.ProducerID(ctx); err != nil {
			txnID, _ := kafka.TransactionalID(r.e.cfg)
			return fmt.Errorf("engine: initialise transactional producer: %w", conn.Explain(err, "write", "transactional id "+txnID))
		}
	}
	return nil
}

// groupOptions reads the Kafka consumer keys that shape group membership:
// session.timeout.ms, heartbeat.interval.ms, and group.instance.id for
// static membership, with which a restarted instance takes its place back
// at once instead of waiting for the session of its dead predecessor to
// time out.
func groupOptions(c config.Config) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	for _, k := range []struct {
		key string
		opt func(time.Duration) kgo.GroupOpt
	}{{"session.timeout.ms", kgo.SessionTimeout}, {"heartbeat.interval.ms", kgo.HeartbeatInterval}} {
		if !c.IsSet(k.key) {
			continue
		}
		ms, err := c.BoundedInt(k.key, 0)
		if err != nil {
			return nil, err
		}
		opts = append(opts, k.opt(time.Duration(ms)*time.Millisecond))
	}
	if id := strings.TrimSpace(c.String("group.instance.id")); id != "" {
		opts = append(opts, kgo.InstanceID(id))
	}
	return opts, nil
}

// repartitionTopic says topic is one of the topology's repartition
// topics.
func (r *runner) repartitionTopic(topic string) bool {
	for _, rp := range r.built.Repartitions {
		if rp.Topic == topic {
			return true
		}
	}
	return false
}

// singleInstanceReason says why the topology must run as one instance,
// or "" when it can be split across several.
func (r *runner) singleInstanceReason() string {
	if len(r.built.Boundaries) > 0 {
		bs := slices.Sorted(maps.Keys(r.built.Boundaries))
		return fmt.Sprintf("the topology re-keys in memory at %s; run one instance, or set %s=%s on every instance to re-key through repartition topics", strings.Join(bs, ", "), config.TopologyRekey, config.RekeyTopic)
	}
	// Without a re-key, a task's windows see only its own partitions'
	// records, its emit frontiers ride its own changelogs, and its floor
	// its own offsets' metadata (resumeFloor): any instance may run it.
	// Behind a repartition topic, a task's records come from every
	// upstream task, and its watermark would have to be carried from them.
	if r.built.EventTime && len(r.built.Repartitions) > 0 {
		if why := perSubReason(r.built, r.e.opts.eventTime != nil); why != "" {
			return "the topology re-keys through repartition topics and closes windows on event time, but its event time cannot be kept per sub-topology (" + why + "), so a second instance could close windows before their records arrive; run one instance"
		}
	}
	return ""
}

func (r *runner) onAssign(how string, m map[string][]int32, add bool) {
	if len(m) > 0 {
		r.e.log.Info("partitions "+how, "partitions", m)
	}
	r.assignMu.Lock()
	changed := false
	for t, ps := range m {
		for _, p := range ps {
			if add {
				if r.assigned[t] == nil {
					r.assigned[t] = map[int32]bool{}
				}
				if !r.assigned[t][p] {
					r.assigned[t][p] = true
					changed = true
				}
			} else if r.assigned[t][p] {
				delete(r.assigned[t], p)
				changed = true
			}
		}
	}
	// A partition the instance held was revoked or lost. Only those
	// count: a callback of a session already ended (recoverSession
	// counted its end and emptied the assignment) takes nothing the
	// generations since were given. Leaving the group at close revokes
	// everything after the final commit: that is the end, not a
	// revocation.
	if !add && changed && !r.closing.Load() {
		r.revokes.Add(1)
	}
	r.assignMu.Unlock()
	r.joining.Store(!add)
	switch {
	case add && !r.joined.Swap(true):
		// The session's first completed join, after the assignment is
		// recorded: a reset then starts the lanes on it and says RUNNING,
		// even when nothing is assigned.
		changed = true
	case how == "lost":
		// The session is gone; what held is reprocessed after the
		// rejoin, and until then the engine is not ready.
		r.joined.Store(false)
		changed = true
	}
	if changed && !r.closing.Load() {
		r.rebalanced.Store(true)
		if st := r.e.State(); st == Running {
			r.e.setState(Rebalancing)
		}
	}
}

func (r *runner) assignment() map[string][]int32 {
	r.assignMu.Lock()
	defer r.assignMu.Unlock()
	out := map[string][]int32{}
	for t, ps := range r.assigned {
		for p := range ps {
			out[t] = append(out[t], p)
		}
		slices.Sort(out[t])
	}
	return out
}

func (r *runner) close() {
	r.closing.Store(true)
	r.stopWarmUp()
	r.e.setAssignment(nil)
	if r.gen != nil {
		// Whatever still hangs is abandoned: the client closes next.
		r.stopGeneration(closedContext())
	}
	r.global.close()
	if r.sess != nil {
		r.sess.close()
	}
	if r.adm != nil {
		r.adm.Close()
	}
}

// loop is the dispatcher: it polls, dispatches oldest head first, cuts
// barriers, and resets when a rebalance or an abort asks for it.
func (r *runner) loop(ctx context.Context) error {
	r.e.setState(Rebalancing)
	if err := r.reset(ctx); err != nil {
		return err
	}
	for {
		if ctx.Err() != nil {
			return r.shutdown()
		}
		if err := r.gen.failure(); err != nil {
			return err
		}
		if err := r.global.failure(); err != nil {
			return err
		}
		if p := r.groupFailed.Load(); p != nil {
			return *p
		}
		if p := r.commitFailed.Load(); p != nil {
			if errors.Is(*p, errCommitUnknown) {
				if err := r.recoverSession(ctx, *p); err != nil {
					return err
				}
				continue
			}
			if !errors.Is(*p, errAborted) {
				r.e.log.Error("commit failed; stopping", "err", *p)
				return *p
			}
			r.e.log.Warn("epoch aborted; reprocessing from the committed offsets", "err", *p)
			r.e.addStats(func(s *Stats) { s.Aborted++ })
			if err := r.reset(ctx); err != nil {
				return err
			}
			continue
		}
		if r.rebalanced.Load() {
			r.keep = r.drainForKeep(ctx)
			if ctx.Err() != nil || r.commitFailed.Load() != nil || (r.gen != nil && r.gen.failure() != nil) {
				// The drain met a stop, or a commit or a lane failed:
				// the top of the loop acts on it (a commit whose
				// outcome is unknown needs a new client, not a reset).
				r.keep = nil
				continue
			}
			if err := r.reset(ctx); err != nil {
				switch {
				case ctx.Err() != nil:
					// Stopped during the reset: the top of the loop stops.
				case errors.Is(err, errCommitUnknown):
					// A commit that hung was abandoned: a new client.
					if err := r.recoverSession(ctx, err); err != nil {
						return err
					}
				default:
					return err
				}
			}
			continue
		}
		if !r.e.paused.Load() {
			if err := r.pollAndDispatch(ctx); err != nil {
				// A barrier cut within the poll fails as one cut here.
				if ctx.Err() != nil || errors.Is(err, context.Canceled) || r.genStopped() {
					continue
				}
				return err
			}
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		if err := r.maybeBarrier(false); err != nil {
			if errors.Is(err, context.Canceled) || r.genStopped() {
				continue
			}
			return err
		}
	}
}

// genStopped says the generation was cancelled because a lane or the
// committer failed: the top of the loop handles that failure.
func (r *runner) genStopped() bool {
	return r.gen.ctx.Err() != nil && (r.gen.failure() != nil || r.commitFailed.Load() != nil)
}

// recoverSession follows a commit whose outcome is unknown (errCommitUnknown):
// it stops the lanes, closes the client, opens a new one, whose fencing
// makes the broker finish or abort the transaction, and resets from what
// was committed. The old client cannot go on: its transaction may still be
// open on the broker, and the next epoch's records would join it. After
// maxUncertainCommits in a row it gives up.
func (r *runner) recoverSession(ctx context.Context, cause error) error {
	if c := r.e.Stats().Committed; c != r.committedAtRecovery {
		// Something committed since the last failure: a new streak.
		r.uncertain, r.committedAtRecovery = 0, c
	}
	if errors.Is(cause, kerr.ProducerFenced) || errors.Is(cause, kerr.InvalidProducerEpoch) {
		twin, afterTrouble, times := r.fence.judge(time.Now())
		if afterTrouble {
			r.e.log.Warn("fenced after a broker connection failed: the brokers restarted or the transaction coordinator moved, not another instance; reconnecting", "err", cause)
		}
		if twin {
			id, _ := kafka.TransactionalID(r.e.cfg)
			holder := r.holderOf(ctx)
			if holder == "" {
				holder = "no other member of the group has this instance's client id, so a producer outside the group, or an instance with another client.id"
			}
			r.e.log.Error("fenced again and again; another producer uses this transactional id", "transactional.id", id, "times", times, "within", fencedWindow, "holder", holder)
			return fmt.Errorf("engine: %w: fenced %d times within %s: another producer uses transactional id %s (%s); give each instance its own %s: %w",
				ErrFenced, times, fencedWindow, id, holder, kafka.InstanceID, cause)
		}
	}
	// The session ends: whatever it was assigned may be another's now.
	r.revokes.Add(1)
	r.uncertain++
	if r.uncertain > maxUncertainCommits {
		r.e.log.Error("commit failed too many times in a row; stopping", "attempts", r.uncertain-1, "err", cause)
		return fmt.Errorf("engine: %d commits in a row failed: %w", r.uncertain-1, cause)
	}
	wait := uncertainCommitBackoff.Delay(r.uncertain)
	r.e.log.Warn("commit failed; reconnecting and reprocessing from the committed offsets", "attempt", r.uncertain, "retry_in", wait, "err", cause)
	r.e.setState(Rebalancing)
	if r.gen != nil {
		r.stopGeneration(ctx)
		r.e.addStats(func(s *Stats) { s.Aborted++; s.Resets++ })
	}
	r.sess.close()
	r.joined.Store(false) // the next session joins anew
	r.assignMu.Lock()
	r.assigned = map[string]map[int32]bool{}
	r.assignMu.Unlock()
	r.e.setAssignment(nil)
	select {
	case <-ctx.Done():
		return nil // the loop's next turn stops
	case <-time.After(wait):
	}
	// The broker may still be coming back: a new session that cannot
	// reach it is retried like a reset.
	deadline := time.Now().Add(resetRetryFor)
	for attempt := 1; ; attempt++ {
		err := r.openSession(ctx)
		if err == nil {
			break
		}
		if r.sess != nil {
			r.sess.close()
		}
		if !transient(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		wait := reconnectBackoff.Delay(attempt)
		r.e.log.Warn("new Kafka client failed, the brokers may be briefly unreachable; retrying", "attempt", attempt, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil // the loop's next turn stops
		case <-time.After(wait):
		}
	}
	return r.reset(ctx)
}

func (r *runner) pollAndDispatch(ctx context.Context) error {
	if r.held != nil {
		// Polled as a pause began: dispatched now that it ended.
		fetches := r.held
		r.held = nil
		return r.dispatchMerged(fetches)
	}
	pctx, cancel := context.WithTimeout(ctx, r.pollWait(r.settleForces()))
	fetches := r.sess.poll(pctx)
	cancel()
	if r.rebalanced.Load() {
		// Records of a partition assigned a moment ago may be in this
		// poll; the reset rewinds to the committed offsets and fetches
		// them again.
		return nil
	}
	var fatal error
	fetches.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if errors.Is(err, kgo.ErrClientClosed) {
			fatal = err
			return
		}
		if conn.Fatal(err) && fatal == nil {
			// Retrying cannot grant an ACL: stop, naming what is
			// missing. An error of no topic is the group's.
			what := "group " + r.s.appID
			if t != "" {
				what = "topic " + t
			}
			fatal = fmt.Errorf("engine: %w", conn.Explain(err, "read", what))
			return
		}
		r.e.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
	})
	if fatal != nil {
		return fatal
	}
	r.drained = fetches.NumRecords() == 0
	if r.e.paused.Load() && !r.drained {
		// A pause that began during the poll: nothing is dispatched
		// after Pause returns, so these wait for Resume (or are
		// dropped by a reset, which fetches them again).
		r.held = fetches
		return nil
	}
	return r.dispatchMerged(fetches)
}

// atEnd says a fetched partition's records reach the end of what the
// partition holds: the last one is at most one offset short of the last
// stable offset (read_committed reads no further; the offset between may
// be a transaction's commit marker) or of the high watermark.
func atEnd(p kgo.FetchTopicPartition) bool {
	end := p.HighWatermark
	if p.LastStableOffset >= 0 && p.LastStableOffset < end {
		end = p.LastStableOffset
	}
	return end < 0 || p.Records[len(p.Records)-1].Offset+2 >= end
}

// dispatchMerged dispatches a poll's records: every partition in offset
// order, and across partitions the record with the oldest timestamp at
// the head first.
func (r *runner) dispatchMerged(fetches kgo.Fetches) error {
	var heads []*mergeHead
	caughtUp := true
	var unowned []string
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		r.noteHighWatermark(p.Topic, p.Partition, p.HighWatermark)
		wp := watermark.Partition{Topic: p.Topic, Partition: p.Partition}
		r.inputs.fetched(wp, p)
		if len(p.Records) == 0 {
			return
		}
		if !atEnd(p) {
			caughtUp = false
		}
		sub, ok := r.topicSub[p.Topic]
		if !ok {
			return
		}
		if !r.gen.owns(sub, p.Partition) {
			unowned = append(unowned, fmt.Sprintf("%s[%d]", p.Topic, p.Partition))
			return
		}
		h := newMergeHead(p.Topic, p.Partition, p.Records)
		h.sub, h.cut, h.count = sub, r.cutOffsets[p.Topic], r.inCount[p.Topic]
		h.repartition = r.repartitionTopic(p.Topic)
		if h.cut == nil {
			h.cut = map[int32]int64{}
			r.cutOffsets[p.Topic] = h.cut
		}
		if h.count == nil {
			if r.inCount == nil {
				r.inCount = map[string]*atomic.Int64{}
			}
			h.count = r.e.obs.in.get(p.Topic)
			r.inCount[p.Topic] = h.count
		}
		heads = append(heads, h)
	})
	if len(unowned) > 0 {
		// Assigned after the generation was built: its tasks are not
		// here. Nothing of the poll is dispatched; the reset builds them
		// and fetches again from the committed offsets.
		r.e.log.Info("records of partitions without a task; resetting to take them on", "partitions", unowned)
		r.rebalanced.Store(true)
		return nil
	}
	// A task that waits for another of its inputs keeps its heads
	// pending; the pending of earlier polls go first. The wait's bound is
	// on the machine's clock, not the engine's (which a test may hold
	// still): it keeps the engine going, it decides no result.
	now := time.Now().UnixMilli()
	heads, r.pending = r.readyHeads(r.withPending(heads), now)
	r.caughtUp = caughtUp && len(r.pending) == 0
	// The counters and the cut offsets say what was dispatched, also
	// when a dispatch fails part way; they are written before a barrier
	// is cut and once the poll is done, not once a record.
	all := slices.Clone(heads)
	note := func() {
		for _, h := range all {
			h.count.Add(h.n)
			if h.next > h.cut[h.partition] {
				h.cut[h.partition] = h.next
			}
			h.n = 0
		}
	}
	defer note()
	started := r.barrierNow()
	for i := 1; len(heads) > 0; i++ {
		if i%cutCheckEvery == 0 && r.barrierNow()-started >= r.s.minInterval.Milliseconds() && r.barrierDue() {
			// A poll can hold far more than one epoch's worth (a
			// backlog at start, slow lanes): once its dispatch has
			// taken the minimum interval, the barrier is cut between
			// its records, not after the last of them, so that an
			// epoch ends within its interval however long the poll
			// takes to dispatch (issue 37). A poll the lanes take
			// quickly is cut after, as before: cutting it within
			// cost a fast count a fifth of its rate.
			note()
			// The heads still to dispatch wait behind older records:
			// the barrier's watermark counts their preview.
			r.waiting = heads
			err := r.maybeBarrier(false)
			r.waiting = nil
			if err != nil {
				return err
			}
		}
		var h *mergeHead
		var rec *kgo.Record
		var ts int64
		heads, h, rec, ts = nextOldest(heads)
		if len(h.recs) == 0 && r.inputs != nil {
			// Its task may have to wait for the partition's next
			// fetch before it goes on with its other inputs.
			heads = r.ranOut(h, heads, now)
		}
		if h.repartition {
			if version, ok := markerHeader(rec); ok {
				// A marker: what the tasks writing the topic tell
				// of their event time, not a record to process.
				h.next = rec.Offset + 1
				var err error
				if r.sc != nil && r.sc.reading(h.topic) {
					err = r.sc.apply(r.tracker, rec, version, r.e.opts.wall())
				}
				rec.Recycle()
				if err != nil {
					return err
				}
				continue
			}
		}
		// Dispatched once in its lane's batch, even when handing the
		// batch over failed: the batch stays queued for the shutdown
		// (or goes with the generation), and the cut offsets must say
		// what the lanes will have processed.
		err := r.dispatchOne(rec, ts, h.sub)
		h.next = rec.Offset + 1
		h.n++
		// The lane has what it needs of rec (its key, value and headers
		// point into the fetch's bytes, not into rec's array).
		rec.Recycle()
		if err != nil {
			return err
		}
	}
	r.pacePending()
	return r.gen.flush()
}

// A mergeHead is one partition's records of a poll not yet dispatched,
// with what every record of it needs looked up once: its sub-topology,
// the topic's offsets to cut at and its records-in counter. ts is the
// first record's timestamp in milliseconds (what Kafka carries, so
// comparing it orders as the timestamps do), n the records dispatched and
// next the offset after the last of them.
type mergeHead struct {
	recs      []*kgo.Record
	ts        int64
	topic     string
	partition int32
	sub       int
	cut       map[int32]int64
	count     *atomic.Int64
	n         int64
	next      int64
	// repartition says the partition is a repartition topic's, whose
	// watermark markers are not dispatched.
	repartition bool
}

func newMergeHead(topic string, partition int32, recs []*kgo.Record) *mergeHead {
	return &mergeHead{recs: recs, ts: recs[0].Timestamp.UnixMilli(), topic: topic, partition: partition}
}

// nextOldest takes the next record to dispatch from heads (none empty):
// the first record of the head whose first record is oldest, ties going
// to the smaller topic name, then the smaller partition, so that a
// partition is never reordered and the order across partitions is one
// rule. It returns heads without the head it emptied, and the record's
// timestamp in milliseconds.
func nextOldest(heads []*mergeHead) ([]*mergeHead, *mergeHead, *kgo.Record, int64) {
	best := 0
	for i := 1; i < len(heads); i++ {
		a, b := heads[i], heads[best]
		if a.ts < b.ts || a.ts == b.ts && (a.topic < b.topic || a.topic == b.topic && a.partition < b.partition) {
			best = i
		}
	}
	h := heads[best]
	rec, ts := h.recs[0], h.ts
	h.recs = h.recs[1:]
	if len(h.recs) == 0 {
		heads = slices.Delete(heads, best, best+1)
	} else {
		h.ts = h.recs[0].Timestamp.UnixMilli()
	}
	return heads, h, rec, ts
}

// dispatchOne hands rec, whose timestamp is ts milliseconds, to its lane
// of sub-topology sub. The input is written where the lane will read it,
// in the lane's batch.
func (r *runner) dispatchOne(rec *kgo.Record, ts int64, sub int) error {
	n := len(r.gen.subs[sub].lanes)
	var idx int
	var hash int32
	if rec.Key == nil {
		// A null key has no lane of its own; spreading them keeps one
		// lane from taking every keyless record.
		idx = int(r.rr.Add(1) % uint32(n))
	} else {
		// Hashed once: the record's outputs under the same key bytes are
		// partitioned by it too (task.Input.KeyHash).
		hash = lane.Murmur2(rec.Key)
		idx = lane.For32(hash, n)
	}
	in, l := r.gen.slot(sub, idx)
	in.Topic, in.Partition, in.Offset, in.Key, in.Value, in.Timestamp = rec.Topic, rec.Partition, rec.Offset, rec.Key, rec.Value, ts
	in.KeyHash, in.KeyHashed = hash, rec.Key != nil
	for _, h := range rec.Headers {
		in.Headers = append(in.Headers, headerOf(h.Key, h.Value))
	}
	r.dispatched++
	return r.gen.sendFull(l)
}

// watermarkNow merges what the lanes observed into the tracker and
// returns the global watermark, task.Unknown before any.
func (r *runner) watermarkNow() int64 {
	now := r.e.opts.wall()
	for _, l := range r.gen.lanes {
		for p, ts := range l.PartTimes() {
			if ts > r.partTimes[p] || !hasKey(r.partTimes, p) {
				r.partTimes[p] = ts
				r.tracker.Observe(p, ts, now)
			}
		}
	}
	// A partition the dispatcher read records from is active, even when
	// none of them raised its event time (old timestamps).
	for t, ps := range r.cutOffsets {
		if r.tableTopics[t] {
			continue
		}
		for p, o := range ps {
			wp := watermark.Partition{Topic: t, Partition: p}
			if o != r.activeOffsets[wp] {
				if r.activeOffsets == nil {
					r.activeOffsets = map[watermark.Partition]int64{}
				}
				r.activeOffsets[wp] = o
				r.tracker.Active(wp, now)
			}
		}
	}
	previewed := r.tracker.Heads(r.waitingHeads(), now)
	w, moved := r.tracker.Advance(now)
	aligned := r.align(now)
	if moved && r.e.obs.onAdvance != nil {
		r.e.obs.onAdvance()
	}
	// A hold or a preview, or its end, is published at once, not at the
	// view's rate.
	r.publishView(aligned || previewed)
	if w == watermark.Unset || w < task.Unknown {
		w = task.Unknown
	}
	w = max(r.controlledWatermark(w), r.cutter.Stamp)
	r.gen.watermark.Store(w)
	return w
}

// recordTimeExtractor says x reads a record's own timestamp as its event
// time, as the three built-in extractors do for every timestamp that is
// not negative (what they do with a negative one, a preview does not
// need: such a record waits behind nothing).
func recordTimeExtractor(x topology.TimestampExtractor) bool {
	switch x {
	case topology.RecordTimestamp, topology.LogAndSkipOnInvalidTimestamp, topology.UsePartitionTimeOnInvalidTimestamp:
		return true
	}
	return false
}

// waitingHeads are the heads of the poll being dispatched that wait
// behind an older one, as the tracker previews them (Tracker.Heads): the
// oldest goes next and waits for nothing.
func (r *runner) waitingHeads() []watermark.Head {
	if len(r.waiting) < 2 {
		return nil
	}
	oldest := r.waiting[0].ts
	for _, h := range r.waiting[1:] {
		oldest = min(oldest, h.ts)
	}
	var heads []watermark.Head
	for _, h := range r.waiting {
		if h.ts > oldest && r.recordTime[h.topic] {
			heads = append(heads, watermark.Head{Partition: watermark.Partition{Topic: h.topic, Partition: h.partition}, EventTime: h.ts, Offset: h.recs[0].Offset})
		}
	}
	return heads
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// cutCheckEvery is how many records the dispatcher hands out between two
// looks at whether a barrier is due within a poll.
const cutCheckEvery = 64

// barrierDue says, cheaply, that maybeBarrier may cut now: no epoch in
// flight and the minimum interval passed. maybeBarrier decides.
func (r *runner) barrierDue() bool {
	r.cutter.Commit(r.committedEpoch.Load())
	return !r.cutter.InFlight() && r.sinceBarrier() >= r.s.minInterval
}

// interval is the current barrier cadence.
func (r *runner) interval() time.Duration {
	return r.s.nextInterval(time.Duration(r.commitTook.Load()))
}

// inFlight catches the cutter up with what the committer committed and
// says whether an epoch is still in flight.
func (r *runner) inFlight() bool {
	r.cutter.Commit(r.committedEpoch.Load())
	return r.cutter.InFlight()
}

// maybeBarrier cuts the next barrier when it is due: the previous
// transaction committed, the interval passed, and the idle rule says the
// epoch has work (barrier.Cutter). final forces the shutdown barrier.
func (r *runner) maybeBarrier(final bool) error {
	if r.inFlight() {
		return nil
	}
	forced := r.settleForces()
	// An input the engine has caught up with cuts the epoch at the
	// minimum interval: the full interval is for throughput, to spread a
	// commit's cost over more records, and an engine at the end of its
	// input has time to spare; waiting would only hold back what it
	// processed (at a steady half of its maximum rate, a p99 of about the
	// full interval end to end). Behind its input, it keeps the full
	// interval. So do final results of windows emitted on close
	// (barrier.Cutter.Hurry). Decision 0020.
	wait := r.interval()
	if r.drained || r.caughtUp || r.cutter.Hurry() {
		wait = r.s.minInterval
	}
	if !final && !forced && r.sinceBarrier() < wait {
		return nil
	}
	// What is queued for the lanes goes before the barrier: delivered
	// here, where a wait for room that a stop ends leaves nothing half
	// done (the batches stay queued), and not between the cut and its
	// markers, which must all go once the cutter has the barrier.
	if err := r.gen.flush(); err != nil {
		return err
	}
	w := r.watermarkNow()
	// The lanes' output count is taken and cleared in one step, before the
	// markers go out: what lanes count from here on counts towards the
	// next decision. (Clearing it after the cut lost the outputs counted
	// meanwhile, and the idle rule could then skip a barrier they needed.)
	outputs := r.gen.outputs.Swap(0)
	act := barrier.Activity{Records: r.dispatched, Outputs: outputs, Watermark: w, WallClockWork: r.gen.wallClock}
	var stamps []int64
	clocksDue := false
	if r.sc != nil {
		stamps = r.sc.stamps(r.tracker)
		clocksDue = r.sc.due(stamps)
	}
	if !r.cutter.Due(act, final) && !forced && !clocksDue {
		// Not due means nothing was counted: nothing to put back.
		return nil
	}
	bc := r.cutter.Cut(w, final)
	r.noteCut(bc, r.dispatched, outputs)
	c := epochCut{epoch: bc.Epoch, stamp: bc.Stamp, final: bc.Final, records: r.dispatched, offsets: cloneOffsets(r.cutOffsets)}
	if r.sc != nil {
		bc.Subs, c.subStamps = stamps, stamps
		c.markers = r.sc.cut(r.tracker, stamps)
		c.marks = r.sc.snapshot(c.offsets)
	}
	if err := r.gen.cut(bc); err != nil {
		return err
	}
	select {
	case r.cuts <- c:
	case <-r.gen.ctx.Done():
		return r.gen.ctx.Err()
	}
	r.dispatched = 0
	r.lastBarrierAt = r.barrierNow()
	return nil
}

func cloneOffsets(m map[string]map[int32]int64) map[string]map[int32]int64 {
	out := make(map[string]map[int32]int64, len(m))
	for t, ps := range m {
		out[t] = maps.Clone(ps)
	}
	return out
}

// watchStop ends the dispatcher's waits on gen's lanes when ctx (the
// caller's) ends: a dispatcher waiting for room in a lane whose report
// waits for a commit that hangs (a broker that stopped answering) would
// otherwise never see the stop. What it was handing over stays queued;
// the shutdown delivers it under its own deadline (shutdown).
func (r *runner) watchStop(ctx context.Context, gen *generation) {
	dctx, cancel := context.WithCancel(gen.ctx)
	stop := context.AfterFunc(ctx, cancel)
	gen.dispatch = dctx
	gen.unwatch = func() {
		stop()
		cancel()
	}
}

// shutdown cuts the final barrier, waits for its transaction and stops.
func (r *runner) shutdown() error {
	r.e.setState(PendingShutdown)
	if r.gen == nil {
		// Stopped between generations (recoverSession): nothing is in
		// flight.
		return nil
	}
	deadline := time.Now().Add(r.s.shutdown)
	// The final barrier's hand-overs wait for the lanes until the
	// deadline at most: past it nothing is waited for.
	dctx, cancel := context.WithDeadline(r.gen.ctx, deadline)
	defer cancel()
	r.gen.dispatch = dctx
	wait := func() error {
		for r.inFlight() {
			if err := r.shutdownWait(deadline); err != nil {
				return err
			}
		}
		return nil
	}
	err := wait()
	if err == nil {
		if err = r.maybeBarrier(true); errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("engine: the final barrier could not be handed to the lanes within %s (%s); the last epoch will be reprocessed on restart", r.s.shutdown, ShutdownTimeoutMs)
		} else if err != nil {
			err = fmt.Errorf("engine: final barrier: %w", err)
		} else {
			err = wait()
		}
	}
	if err != nil && !errors.Is(err, errStopNow) && r.abandonCommit != nil {
		// Past the deadline or failed: do not wait on a commit that
		// franz-go may retry for as long as the broker is gone. What did
		// not commit is reprocessed on the next start.
		r.abandonCommit()
	}
	// The final commit is done, or abandoned above: nothing is waited
	// for past the shutdown deadline.
	r.stopGeneration(context.Background())
	if errors.Is(err, errStopNow) {
		return nil
	}
	return err
}

func (r *runner) shutdownWait(deadline time.Time) error {
	if p := r.commitFailed.Load(); p != nil {
		if errors.Is(*p, errAborted) {
			// A rebalance took partitions while stopping: what did not
			// commit is reprocessed from the committed offsets by whoever
			// owns them now, so this is still a clean stop.
			r.e.log.Warn("final epoch aborted; it will be reprocessed from the committed offsets", "err", *p)
			return errStopNow
		}
		return fmt.Errorf("engine: final commit: %w", *p)
	}
	if err := r.gen.failure(); err != nil {
		return err
	}
	if time.Now().After(deadline) {
		return fmt.Errorf("engine: final barrier did not commit within %s (%s); the last epoch will be reprocessed on restart", r.s.shutdown, ShutdownTimeoutMs)
	}
	time.Sleep(5 * time.Millisecond)
	return nil
}

// stopGeneration stops the lanes and the committer. A commit in flight is
// waited for until stoatflow.shutdown.timeout-ms has passed or ctx ends
// (a stop), then abandoned: its context is cancelled, so that a broker
// that stopped answering cannot hold a reset or a stop forever. It reports
// whether a commit was abandoned, whose outcome is then unknown.
func (r *runner) stopGeneration(ctx context.Context) (abandoned bool) {
	r.gen.stop()
	if r.committer != nil {
		select {
		case <-r.committer:
		default:
			t := time.NewTimer(r.s.shutdown)
			select {
			case <-r.committer:
			case <-t.C:
				abandoned = true
			case <-ctx.Done():
				abandoned = true
			}
			t.Stop()
			if abandoned {
				r.e.log.Warn("a commit still hangs as the lanes stop; abandoning it, its outcome unknown", "waited_at_most", r.s.shutdown)
				if r.abandonCommit != nil {
					r.abandonCommit()
				}
				<-r.committer
			}
		}
		r.committer = nil
	}
	if r.abandonCommit != nil {
		r.abandonCommit() // the committer is gone; release its context
		r.abandonCommit = nil
	}
	r.gen = nil
	return abandoned
}

// reset drops the lanes and their state, rewinds to the committed offsets
// and rebuilds the lanes with state restored from the changelogs for the
// partitions assigned now.
func (r *runner) reset(ctx context.Context) error {
	deadline := time.Now().Add(resetRetryFor)
	for attempt := 1; ; attempt++ {
		err := r.resetOnce(ctx)
		if err == nil || !transient(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		wait := reconnectBackoff.Delay(attempt)
		r.e.log.Warn("reset failed, the brokers may be briefly unreachable; retrying", "attempt", attempt, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// resetRetryFor bounds how long a reset is retried through errors that a
// broker coming back would cure.
const resetRetryFor = 60 * time.Second

// missingTopicsFor is how long the start asks again for a source topic
// missing from the metadata.
const missingTopicsFor = 1750 * time.Millisecond

// The engine's retry delays (internal/backoff: doubling, with jitter, so
// that the instances of an application a broker restart failed together
// do not retry together).
var (
	// brokersBackoff paces the start's first look at the brokers, ten
	// tries (about 20-40 s in all).
	brokersBackoff = backoff.Policy{First: 500 * time.Millisecond, Max: 5 * time.Second}
	// missingTopicBackoff asks again for a source topic created a moment
	// ago, for missingTopicsFor; the sink's partition count, three times.
	missingTopicBackoff = backoff.Policy{First: 250 * time.Millisecond, Max: time.Second}
	// uncertainCommitBackoff is the pause before reconnecting after a
	// commit whose outcome is unknown.
	uncertainCommitBackoff = backoff.Policy{First: 100 * time.Millisecond, Max: 5 * time.Second}
	// reconnectBackoff paces a new client or a reset that met a broker
	// still coming back, for up to resetRetryFor.
	reconnectBackoff = backoff.Policy{First: 200 * time.Millisecond, Max: 5 * time.Second}
	// unstableOffsetsBackoff paces a fetch of committed offsets that met
	// a transaction still being completed (UNSTABLE_OFFSET_COMMIT).
	unstableOffsetsBackoff = backoff.Policy{First: 10 * time.Millisecond, Max: 500 * time.Millisecond}
	// settlingBackoff paces a request a settling group coordinator
	// refused, as kafka.WhileSettling does.
	settlingBackoff = backoff.Policy{First: 100 * time.Millisecond, Max: 2 * time.Second}
)

// transient says err is one a broker coming back, or a leader or
// coordinator settling, would cure: a refused or reset connection, a
// timeout of the network, or an error Kafka marks retriable. Fencing,
// authorization, missing topics and the engine's own refusals are not.
func transient(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.Is(err, kgo.ErrClientClosed), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &opErr):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	}
	return kerr.IsRetriable(err)
}

func (r *runner) resetOnce(ctx context.Context) error {
	r.e.setState(Rebalancing)
	// What the last generation left in memory goes to this one only, and
	// only if nothing was revoked since it committed (drainForKeep).
	keep := r.keep
	r.keep = nil
	// The standbys' warm-up holds the databases the next generation
	// opens.
	r.stopWarmUp()
	if r.gen != nil {
		abandoned := r.stopGeneration(ctx)
		r.e.addStats(func(s *Stats) { s.Resets++ })
		if abandoned {
			// The transaction may still be open on the broker: no
			// transaction may follow on this client (recoverSession).
			return fmt.Errorf("engine: %w: the commit in flight when the generation stopped was abandoned", errCommitUnknown)
		}
	}
	// The old generation's transaction is ended; make franz-go forget the
	// revocation it may still hold against the next one (see
	// session.settle).
	if err := r.sess.settle(ctx); err != nil {
		return fmt.Errorf("engine: settle the transactional session: %w", err)
	}
	r.commitFailed.Store(nil)
	r.rebalanced.Store(false)
	r.held = nil // the reset rewinds to the committed offsets
	// Before the assignment too: a revocation after it is one the next
	// generation's drain sees.
	r.genRevokes = r.revokes.Load()
	if keep != nil && keep.revokes != r.genRevokes {
		keep = nil
	}
	// Read before the assignment: onAssign records the assignment before
	// it says joined, so a joined read here goes with what it assigned.
	joined := r.joined.Load()
	assigned := r.assignment()
	if reason := r.singleInstanceReason(); reason != "" {
		for _, t := range r.sources {
			if n := len(assigned[t]); n > 0 && int32(n) < r.partitions[t] {
				return fmt.Errorf("engine: %w: this instance was assigned %d of %d partitions of %s, so another instance joined group %s; %s",
					ErrSplitBoundary, n, r.partitions[t], t, r.s.appID, reason)
			}
		}
	}
	committed, floors, err := r.committedOffsets(ctx, assigned)
	if err != nil {
		return err
	}
	resumed := noFloor
	subResumed := map[int]int64{}
	r.cutOffsets = map[string]map[int32]int64{}
	r.activeOffsets = nil
	r.partTimes = map[watermark.Partition]int64{}
	r.ptMu.Lock()
	r.knownPartTimes = map[watermark.Partition]int64{}
	r.ptMu.Unlock()
	r.releaseAlignment()
	r.dropPending()
	r.tracker = watermark.NewTracker(r.idleness())
	r.inputs = newTaskInputs(assigned, r.topicSub, r.maxTaskIdle())
	r.tableTopics = map[string]bool{}
	r.recordTime = map[string]bool{}
	perSub := perSubReason(r.built, r.e.opts.eventTime != nil) == ""
	repartition := map[string]bool{}
	for _, rp := range r.built.Repartitions {
		repartition[rp.Topic] = perSub
	}
	now := r.e.opts.wall()
	set := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range assigned {
		src, _ := r.built.SourceNodeFor(t)
		// A table's partitions take no part in the watermark
		// (topology.SourceSpec.Table).
		table := src != nil && src.Source != nil && src.Source.Table
		r.tableTopics[t] = table
		r.recordTime[t] = src != nil && src.Source != nil && recordTimeExtractor(src.Source.Extractor) && r.built.Watermark(src).Assigner() == nil
		for _, p := range ps {
			wp := watermark.Partition{Topic: t, Partition: p}
			switch {
			case repartition[t]:
				r.tracker.RegisterExternal(wp, now)
			case !table:
				r.tracker.Register(wp, r.built.Watermark(src), now)
			}
			c, ok := committed[t][p]
			if !table {
				// A partition without a floor (never committed, or
				// committed by an earlier build) holds its task's
				// floor at Unknown: its records may be far behind the
				// others', and no floor of theirs may judge them.
				f := task.Unknown
				if ok && c.floor != noFloor {
					f = c.floor
				}
				if resumed == noFloor || f < resumed {
					resumed = f
				}
				if s, known := r.topicSub[t]; known {
					if was, seen := subResumed[s]; !seen || f < was {
						subResumed[s] = f
					}
				}
			}
			if !ok {
				continue
			}
			if set[t] == nil {
				set[t] = map[int32]kgo.EpochOffset{}
				r.cutOffsets[t] = map[int32]int64{}
			}
			set[t][p] = kgo.EpochOffset{Epoch: -1, Offset: c.offset}
			r.cutOffsets[t][p] = c.offset
			r.inputs.startAt(wp, c.offset)
			if c.partitionTime >= 0 && !table && !repartition[t] {
				r.tracker.Seed(wp, c.partitionTime)
				r.partTimes[wp] = c.partitionTime
				r.ptMu.Lock()
				r.knownPartTimes[wp] = c.partitionTime
				r.ptMu.Unlock()
			}
		}
	}
	r.cl.SetOffsets(set)
	r.publishView(true)
	floor, err := r.resumeFloor(ctx, floors, resumed)
	if err != nil {
		return err
	}
	r.sc = nil
	var subFloors []int64
	if perSub {
		// Each sub-topology resumes from its own partitions' floors: a
		// downstream one must not start from the floor its upstream
		// reached (its records from other instances may be behind it).
		subFloors = make([]int64, len(r.built.Subtopologies))
		for s := range subFloors {
			subFloors[s] = floor
			if floors {
				f, ok := subResumed[s]
				if !ok {
					f = task.Unknown
				}
				subFloors[s] = f
			}
		}
		floor = slices.Min(append(subFloors, floor))
		r.sc = r.newSubClocks(assigned, subFloors)
		for t, ps := range committed {
			if !r.sc.reading(t) {
				continue
			}
			for p, c := range ps {
				r.sc.seed(r.tracker, t, p, c.proc, now)
			}
		}
	}
	// The frontier starts unknown so that the first barrier runs the
	// emission pass a crash may have lost (the emit frontiers keep it
	// from emitting anything twice).
	r.cutter = barrier.NewCutter(floor)
	r.cutter.Closes = closeSchedule(r.built)
	r.resetEventTime()
	restoreStart, restoredBefore := time.Now(), r.e.obs.restored.Load()
	r.e.obs.restoreBase.Store(restoredBefore)
	r.e.obs.restoreTarget.Store(0)
	r.e.obs.restoring.Store(true)
	r.e.log.Info("restoring state from the changelogs", "stores", len(r.built.Stores), "partitions", assigned)
	sinkParts := func(topic string) (int32, error) { return r.partitionCount(ctx, topic) }
	gen, err := newGeneration(ctx, r.e, r.built, r.s, r.changelogPartitions, taskPartitions(assigned), sinkParts, floor, subFloors, r.restorer(), r.global.stores(), r.localState(), keep)
	r.e.obs.restoring.Store(false)
	if err != nil {
		return err
	}
	r.e.log.Info("state restored", "records", r.e.obs.restored.Load()-restoredBefore, "took", time.Since(restoreStart).Round(time.Millisecond))
	r.gen = gen
	gen.revokes = r.genRevokes
	if p := r.e.opts.probe; p != nil && p.generation != nil {
		p.generation(gen)
	}
	r.cuts = make(chan epochCut, 4)
	r.committedEpoch.Store(0)
	r.dispatched = 0
	r.lastBarrierAt = r.barrierNow()
	r.committer = make(chan struct{})
	r.watchStop(ctx, gen)
	gen.start()
	cctx, ccancel := context.WithCancel(context.WithoutCancel(gen.ctx))
	r.abandonCommit = ccancel
	go r.commitLoop(cctx, gen, r.cuts, r.committer, floor)
	if r.rebalanced.Load() {
		// Assigned again while restoring: start over.
		return r.reset(ctx)
	}
	r.e.setAssignment(assigned)
	r.notePromoted(r.noteTasks(gen), r.e.obs.restored.Load()-restoredBefore)
	r.startWarmUp(ctx, len(assigned) > 0)
	if joined {
		r.e.setState(Running)
	}
	// Not joined yet: the lanes run on nothing and the state stays
	// REBALANCING until the join completes and asks for a reset.
	return nil
}

// resumeFloor is the floor a generation starts from. Each task committed
// its epochs' floor with its source offsets (kafka.FloorKey); the
// instance's tasks resume from the lowest of theirs (resumed), so that no
// task's floor passes what its own partitions have seen: a task that
// comes from an instance further ahead keeps the windows it emitted there
// through its emit frontiers, and one from an instance further behind is
// not judged by this instance's later floor. When no partition of the
// group carries a floor (floors false), the application was last run by
// an earlier build or seeded by migrate, both of which kept one floor for
// the whole application in the stamp record, and that is read instead.
// In a group with floors, a partition of this instance without one (its
// task never committed) counts as Unknown: the generation then starts
// from the partition times alone, since that task's records may lie far
// behind the floors of the others.
func (r *runner) resumeFloor(ctx context.Context, floors bool, resumed int64) (int64, error) {
	if !floors {
		return r.restoreStamp(ctx)
	}
	if resumed == noFloor {
		return task.Unknown, nil
	}
	return resumed, nil
}

// readOpts are the options of a client that reads a topic to its end:
// how to connect, and the engine's logger (a settled read warns there
// when an open transaction holds it back).
func (r *runner) readOpts() []kgo.Opt {
	return append(slices.Clone(r.s.dialOpts), kgo.WithLogger(kafka.Logger(r.e.log)))
}

// maxTaskIdle is max.task.idle.ms; -1 when it is not a number.
func (r *runner) maxTaskIdle() int64 {
	ms, err := r.e.cfg.Int(config.MaxTaskIdleMs, 0)
	if err != nil {
		return -1
	}
	return int64(ms)
}

func (r *runner) idleness() time.Duration {
	ms, err := r.e.cfg.Int(config.WatermarkIdlenessTimeoutMs, 0)
	if err != nil || ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// changelogPartitions is a sub-topology's partition count, its task
// count and its changelogs': its most partitioned source topic's, or for
// a sub-topology fed by a boundary only, the partition count the
// repartition topic would have, as Kafka Streams sizes it: the one
// declared (Repartitioned.withNumberOfPartitions), else the most
// partitioned source of the whole topology.
func (r *runner) changelogPartitions(st *topology.Subtopology) int32 {
	var n, declared int32
	for _, src := range st.Sources {
		if src.Boundary != nil {
			declared = max(declared, src.Boundary.Partitions)
			continue
		}
		for _, t := range src.Source.Topics {
			n = max(n, r.partitions[t])
		}
	}
	if n == 0 {
		n = declared
	}
	if n == 0 {
		for _, c := range r.partitions {
			n = max(n, c)
		}
	}
	return n
}

type committedOffset struct {
	offset        int64
	partitionTime int64
	// floor is the floor the partition's task committed its last epoch
	// at (kafka.FloorKey), or noFloor.
	floor int64
	// proc is the committed processor metadata.
	proc map[string]int64
}

// noFloor is the floor of a committed offset that carries none: committed
// by Kafka Streams, by migrate, by an earlier build, or before any event
// time was known.
const noFloor int64 = math.MinInt64

// stableOffsets fetches the group's committed offsets once no
// transactional commit of them is pending (KIP-447's require_stable).
// Apache Kafka makes a transaction's offsets visible only when its commit
// marker reaches the offsets topic, which is after EndTxn returns: an
// instance taking partitions over in a rebalance could otherwise read the
// offsets from before its predecessor's last epoch, while the changelogs
// already hold that epoch's state, and count the epoch twice. (The real
// broker tests found it; the embedded broker writes markers before it
// answers.) While a commit is pending, the broker answers
// UNSTABLE_OFFSET_COMMIT, and the fetch is retried.
func (r *runner) stableOffsets(ctx context.Context) (kadm.OffsetResponses, error) {
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 1; ; attempt++ {
		resp, err := r.adm.FetchOffsets(kadm.RequireStable(ctx), r.s.appID)
		if err == nil {
			// Other per-partition errors are the caller's to judge.
			if perr := resp.Error(); perr == nil || !errors.Is(perr, kerr.UnstableOffsetCommit) {
				return resp, nil
			}
			err = resp.Error()
		}
		if !errors.Is(err, kerr.UnstableOffsetCommit) || time.Now().After(deadline) {
			return nil, fmt.Errorf("engine: fetch committed offsets of group %s: %w", r.s.appID, err)
		}
		if err := unstableOffsetsBackoff.Wait(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// committedOffsets reads the group's committed offsets for the assigned
// partitions, and where there are none the start (or end, under
// auto.offset.reset=latest) of the partition.
//
// floors says whether any partition of the group, assigned here or not,
// was committed with a floor: then floors are what a task resumes from,
// and the application-wide stamp record is an earlier build's.
func (r *runner) committedOffsets(ctx context.Context, assigned map[string][]int32) (out map[string]map[int32]committedOffset, floors bool, err error) {
	out = map[string]map[int32]committedOffset{}
	if len(assigned) == 0 {
		return out, false, nil
	}
	resp, err := r.stableOffsets(ctx)
	if err != nil {
		return nil, false, err
	}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 && o.Metadata != "" {
			if md, err := kafka.DecodeTopicPartitionMetadata(o.Metadata); err == nil {
				if _, ok := md.Processor[kafka.FloorKey]; ok {
					floors = true
				}
			}
		}
	})
	var need []string
	for t, ps := range assigned {
		for _, p := range ps {
			o, ok := resp.Lookup(t, p)
			if !ok || o.Err != nil || o.At < 0 {
				need = append(need, t)
				continue
			}
			pt, floor := int64(-1), noFloor
			var proc map[string]int64
			if o.Metadata != "" {
				if md, err := kafka.DecodeTopicPartitionMetadata(o.Metadata); err == nil {
					pt, proc = md.PartitionTime, md.Processor
					if f, ok := md.Processor[kafka.FloorKey]; ok {
						floor = f
					}
				} else {
					r.e.log.Warn("ignoring offset metadata", "topic", t, "partition", p, "err", err)
				}
			}
			if out[t] == nil {
				out[t] = map[int32]committedOffset{}
			}
			out[t][p] = committedOffset{offset: o.At, partitionTime: pt, floor: floor, proc: proc}
		}
	}
	if len(need) == 0 {
		return out, floors, nil
	}
	var list kadm.ListedOffsets
	if strings.EqualFold(r.e.cfg.String(kafka.AutoOffsetReset), "latest") {
		list, err = r.adm.ListEndOffsets(ctx, need...)
	} else {
		list, err = r.adm.ListStartOffsets(ctx, need...)
	}
	if err != nil {
		return nil, false, fmt.Errorf("engine: list offsets of %s: %w", strings.Join(need, ", "), err)
	}
	for t, ps := range assigned {
		for _, p := range ps {
			if _, ok := out[t][p]; ok {
				continue
			}
			lo, ok := list.Lookup(t, p)
			if !ok || lo.Err != nil {
				return nil, false, fmt.Errorf("engine: list offsets of %s[%d]: %v", t, p, lo.Err)
			}
			if out[t] == nil {
				out[t] = map[int32]committedOffset{}
			}
			out[t][p] = committedOffset{offset: lo.Offset, partitionTime: -1, floor: noFloor}
		}
	}
	return out, floors, nil
}

// restorer returns how the generation restores: the changelog partitions
// of the tasks the instance runs, each record in full, whatever its key:
// a task's state is the state of the records of its partition, wherever
// the producer of the input put their keys.
func (r *runner) restorer() restoreSource {
	return func(ctx context.Context, sub *subRun, store string, from map[int32]int64, apply func(changelogRecord) error) (kafka.Positions, error) {
		if len(sub.tasks) == 0 {
			return nil, nil
		}
		topic := r.built.Stores[store].ChangelogTopic
		start := kafka.FromLogStart(sub.tasks...)
		for p, off := range from {
			if _, ok := start[p]; ok {
				start[p] = off
			}
		}
		// A task that kept the store in memory has its state
		// (keep.go): nothing of its partition is read.
		for p := range sub.kept[store] {
			delete(start, p)
		}
		if len(start) == 0 {
			return nil, nil
		}
		r.addRestoreTarget(ctx, topic)
		// One partition at a time: what the read fetches ahead is one
		// partition's, and the lanes' stores take each chunk as it
		// comes (generation.restoreStore).
		ends := kafka.Positions{}
		for _, p := range slices.Sorted(maps.Keys(start)) {
			end, err := r.restorePartition(ctx, topic, p, start[p], apply)
			if err != nil {
				return nil, err
			}
			maps.Copy(ends, end)
		}
		return ends, nil
	}
}

// taskPartitions is, for the partitions assigned, the partitions of the
// tasks of a sub-topology of the given partition count: every partition
// of its source topics the instance was assigned, and every partition
// when a boundary feeds it (the re-keyed records of a partition come from
// every input partition, so its tasks are the instance's only while it
// runs alone), unless it was assigned nothing.
func taskPartitions(assigned map[string][]int32) func(st *topology.Subtopology, partitions int32) []int32 {
	any := false
	for _, ps := range assigned {
		any = any || len(ps) > 0
	}
	return func(st *topology.Subtopology, partitions int32) []int32 {
		owned := map[int32]bool{}
		for _, src := range st.Sources {
			if src.Boundary != nil {
				if !any {
					// Assigned nothing: another instance runs the
					// application (engine/assign puts every task of
					// such a topology on one), this one at most keeps
					// standbys.
					continue
				}
				for p := range partitions {
					owned[p] = true
				}
				continue
			}
			for _, t := range src.Source.Topics {
				for _, p := range assigned[t] {
					if p < partitions {
						owned[p] = true
					}
				}
			}
		}
		return slices.Sorted(maps.Keys(owned))
	}
}

// restorePartition reads one changelog partition from offset to its end,
// handing apply each record.
func (r *runner) restorePartition(ctx context.Context, topic string, partition int32, offset int64, apply func(changelogRecord) error) (kafka.Positions, error) {
	// Settled: the instance this one takes partitions over from may
	// have committed its last epoch a moment ago, its offsets visible
	// before its commit markers reach every changelog partition.
	//
	// A fetch is decoded whole before its first record is handed on, so
	// its size (stoatflow.restore.fetch-max-bytes of compressed records)
	// bounds what the read holds.
	return kafka.ReadToEndSettledWithin(ctx, r.s.seeds, topic, kafka.Positions{partition: offset}, r.s.restoreFetchBytes, func(rec *kgo.Record) error {
		cr := changelogRecord{key: rec.Key, value: rec.Value, timestamp: rec.Timestamp.UnixMilli(), partition: rec.Partition, offset: rec.Offset}
		for _, h := range rec.Headers {
			if h.Key == lane.HashHeader && len(h.Value) == 4 {
				cr.hash = int32(uint32(h.Value[0])<<24 | uint32(h.Value[1])<<16 | uint32(h.Value[2])<<8 | uint32(h.Value[3]))
				cr.hashed = true
			}
		}
		r.e.obs.restored.Add(1)
		return apply(cr)
	}, r.readOpts()...)
}

// closeSchedule is the cutter's Closes for built: the earliest next close
// of the operators that emit on close and can tell when
// (processor.CloseScheduler), or nil when none can. It asks a processor
// of each windowed node made for the purpose: the answer depends on the
// window's definition only, which every instance shares.
func closeSchedule(built *topology.Built) func(after int64) (int64, bool) {
	var scheds []processor.CloseScheduler
	for _, st := range built.Subtopologies {
		for _, n := range st.Nodes {
			if n.Kind != topology.ProcessorNode || n.EventTime != "window" || n.Supplier == nil {
				continue
			}
			if cs, ok := processor.Unwrap(n.Supplier()).(processor.CloseScheduler); ok {
				scheds = append(scheds, cs)
			}
		}
	}
	if len(scheds) == 0 {
		return nil
	}
	return func(after int64) (int64, bool) {
		next, known := int64(math.MaxInt64), false
		for _, cs := range scheds {
			if c, ok := cs.NextClose(after); ok {
				next, known = min(next, c), true
			}
		}
		return next, known
	}
}

// ErrGroupProtocol is returned, wrapped, when the group coordinator
// refuses this instance because the group's members assign partitions by
// another protocol: an instance of an older stoatctl build
// (cooperative-sticky) or a Kafka Streams application with the same
// application.id. Retrying cannot mend it.
var ErrGroupProtocol = errors.New("the group's members use another partition assignment protocol")

// groupProtocolHook turns the group errors no retry mends into the
// engine's error, as soon as the group's management meets them: the
// coordinator's INCONSISTENT_GROUP_PROTOCOL, which franz-go would retry
// for ever, and a missing ACL (also injected into a poll, which a
// rebalance in flight may drop).
type groupProtocolHook struct{ r *runner }

var _ kgo.HookGroupManageError = groupProtocolHook{}

func (h groupProtocolHook) OnGroupManageError(err error) {
	if conn.Fatal(err) {
		e := fmt.Errorf("engine: %w", conn.Explain(err, "read", "group "+h.r.s.appID))
		h.r.groupFailed.CompareAndSwap(nil, &e)
		return
	}
	if !errors.Is(err, kerr.InconsistentGroupProtocol) {
		return
	}
	e := fmt.Errorf("engine: %w (group %s: the coordinator answered %v): this build assigns tasks with protocol %q; stop every instance of an older stoatctl build, or the Kafka Streams application, with this application.id first",
		ErrGroupProtocol, h.r.s.appID, err, assign.Protocol)
	h.r.groupFailed.CompareAndSwap(nil, &e)
}

// ErrNotCopartitioned is returned at start when the topics a join reads
// have different partition counts: the records of one key would meet in
// different tasks, so the join would miss them. Kafka Streams refuses
// such a topology at start too.
var ErrNotCopartitioned = errors.New("inputs are not co-partitioned")

// checkCopartitioned checks that the source topics of every co-partition
// group of built have one partition count, partitions giving each topic's.
func checkCopartitioned(built *topology.Built, partitions map[string]int32) error {
	for _, c := range built.Copartitions {
		var first string
		var n int32
		for _, src := range c.Sources {
			nd := built.Nodes[src]
			if nd == nil || nd.Source == nil || nd.Boundary != nil {
				continue
			}
			for _, t := range nd.Source.Topics {
				p, ok := partitions[t]
				if !ok {
					continue
				}
				if first == "" {
					first, n = t, p
					continue
				}
				if p != n {
					return fmt.Errorf("engine: %s: %w: topic %s has %d partitions, topic %s has %d; give them the same partition count (Kafka Streams requires it too)", c.Node, ErrNotCopartitioned, first, n, t, p)
				}
			}
		}
	}
	return nil
}

// closedContext is a context that is done already: waits given it do not
// wait.
func closedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// noteTasks records the tasks gen runs and logs what the reset moved:
// the tasks added, those removed, and how many stayed.
func (r *runner) noteTasks(gen *generation) (added []string) {
	var ids []string
	for _, sr := range gen.subs {
		if sr.stateless {
			continue
		}
		for _, p := range sr.tasks {
			ids = append(ids, fmt.Sprintf("%d_%d", sr.id, p))
		}
	}
	slices.Sort(ids)
	before := r.e.setTasks(ids)
	var removed []string
	for _, id := range ids {
		if _, found := slices.BinarySearch(before, id); !found {
			added = append(added, id)
		}
	}
	for _, id := range before {
		if _, found := slices.BinarySearch(ids, id); !found {
			removed = append(removed, id)
		}
	}
	if len(added) > 0 || len(removed) > 0 {
		r.e.log.Info("tasks moved", "added", added, "removed", removed, "kept", len(ids)-len(added), "running", len(ids))
	}
	return added
}
