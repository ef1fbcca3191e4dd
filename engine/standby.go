package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatctl/engine/assign"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Standby tasks (num.standby.replicas): the group's leader names, for
// each task, other instances that keep a warm copy of its state
// (engine/assign). An instance that runs no task keeps the standbys it is
// given in its lanes' RocksDB databases: every stoatflow.standby.interval-ms
// it restores them from their checkpoint to the end of their changelog
// partitions, through the restore a generation runs (a generation that
// only restores, warmOnly: its lanes never run, its processors are not
// initialised), and closes the databases again, their checkpoint naming
// the standby tasks and where each is complete up to. When the instance
// is given the task to run, its generation finds the task in the
// checkpoint and restores only what was written since (localState.keep).
//
// An instance that runs tasks keeps its standbys the same way in
// databases of their own, under <state dir>/standby: its lanes own their
// databases while they run. When it is given one of those tasks to run,
// its generation copies the task's stores from there into the lane's
// database (rocks.DB.AdoptTask, in key order, no changelog read) and
// restores what was written after the copy's checkpoint, so a take-over
// costs a local copy and a tail, not the changelog from its start
// (decision 0047).

// warmUp is the running loop that keeps the standbys up to date.
type warmUp struct {
	cancel context.CancelFunc
	done   chan struct{}
	// busy says the instance runs tasks: the standbys go to the
	// databases under standbySubdir.
	busy bool
}

// onStandbys is the balancer's report of the standby tasks an assignment
// gave this instance.
func (r *runner) onStandbys(ts, warmups []assign.Task) {
	r.standbys.Store(&ts)
	r.warmups.Store(&warmups)
	r.probed.Store(false)
	r.assignedAt.Store(time.Now().UnixNano())
	r.e.setStandbys(taskIDs(ts), taskIDs(warmups))
}

// taskIDs are the ids of ts, sorted.
func taskIDs(ts []assign.Task) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.String()
	}
	slices.Sort(ids)
	return ids
}

// keptStandbys are the standby tasks of the last assignment.
func (r *runner) keptStandbys() []assign.Task {
	if p := r.standbys.Load(); p != nil {
		return *p
	}
	return nil
}

// standbysUnkept says why this instance cannot keep standbys ("" when it
// can): a store whose state is not in the lanes' databases would be
// restored in full at every warm-up, in memory, for nothing.
func (r *runner) standbysUnkept() string {
	if r.s.stateDir == "" {
		return "this binary has no RocksDB"
	}
	for name, info := range r.built.Stores {
		if info.Global || info.ChangelogTopic == "" {
			continue
		}
		b := info.Builder.Backend()
		if b != state.RocksDBBackendName && (!r.s.rocksDefault || b != state.DefaultBackendName) {
			return "store " + name + " is kept in memory (set default.dsl.store=rocksDB)"
		}
	}
	return ""
}

// startWarmUp starts keeping the standbys, in the lanes' databases when
// the instance runs no task (busy false), else in databases of their
// own. stopWarmUp must be called before a generation opens the
// databases.
func (r *runner) startWarmUp(ctx context.Context, busy bool) {
	if r.warm != nil {
		return
	}
	if why := r.standbysUnkept(); why != "" {
		if r.s.standbys > 0 && r.warnedStandbys.CompareAndSwap(false, true) {
			r.e.log.Warn("num.standby.replicas is set but this instance keeps no standby: a task taken over is restored in full", "num.standby.replicas", r.s.standbys, "reason", why)
		}
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &warmUp{cancel: cancel, done: make(chan struct{}), busy: busy}
	r.warm = w
	go func() {
		defer close(w.done)
		r.warmLoop(wctx, busy)
	}()
}

// stopWarmUp stops keeping the standbys and waits until the databases are
// closed. A warm-up cut short leaves records past its checkpoint, which
// the next restore from that checkpoint writes again, to the same result.
func (r *runner) stopWarmUp() {
	if r.warm == nil {
		return
	}
	r.warm.cancel()
	<-r.warm.done
	r.warm = nil
	// Nothing measures the standbys' lag until a warm-up runs again: an
	// old figure would read as a standby that stopped falling behind.
	// The next warm-up measures after its restore, as a first one does:
	// a generation may have written the databases since.
	r.e.setStandbyLag(nil)
	r.warmedPos.Store(nil)
}

func (r *runner) warmLoop(ctx context.Context, busy bool) {
	t := time.NewTicker(r.s.standbyEvery)
	defer t.Stop()
	for {
		if ts := r.keptStandbys(); len(ts) > 0 {
			r.warmOnce(ctx, ts, busy)
			r.probe(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// warmOnce brings the standby tasks ts up to date with their changelogs.
func (r *runner) warmOnce(ctx context.Context, ts []assign.Task, busy bool) {
	began := time.Now()
	before := r.e.obs.restored.Load()
	// The lag is measured as the warm-up begins, against where the last
	// one left the changelogs: how far the copy fell behind over the
	// interval, the tail a take-over just then would have restored. The
	// first warm-up of a run has no such positions and measures after it
	// restored.
	prevPos := r.warmedPos.Load()
	if prevPos != nil {
		r.measureLag(ctx, ts, *prevPos)
	}
	s := r.s
	s.warmOnly = true
	// The standbys as the partitions they would be assigned, so that
	// their tasks are what an assignment of them would run (a
	// sub-topology behind an in-memory re-key included).
	as := map[string][]int32{}
	for topic, sub := range r.topicSub {
		for _, t := range ts {
			if t.Subtopology == sub {
				as[topic] = append(as[topic], t.Partition)
			}
		}
	}
	for topic := range as {
		slices.Sort(as[topic])
	}
	tasks := taskPartitions(as)
	sinkParts := func(topic string) (int32, error) { return r.partitionCount(ctx, topic) }
	local := r.localState()
	if busy {
		local.dir, local.standbyDir = local.standbyDir, ""
	}
	gen, err := newGeneration(ctx, r.e, r.built, s, r.changelogPartitions, tasks, sinkParts, task.Unknown, nil, r.restorer(), r.global.stores(), local, nil)
	if err != nil {
		if ctx.Err() == nil {
			r.e.log.Warn("standby tasks not brought up to date; trying again", "tasks", ts, "err", err, "in", r.s.standbyEvery)
		}
		return
	}
	// The tasks with state it kept, as a generation names its tasks (a
	// standby of a task ahead of an in-memory re-key keeps the tasks
	// behind it), and what each is complete up to, for the
	// subscription's offsets (a warm-up's lag).
	var ids []string
	pos := gen.local.pos.snapshot()
	offsets := map[assign.Task]int64{}
	for _, sr := range gen.subs {
		if sr.stateless {
			continue
		}
		for _, p := range sr.tasks {
			ids = append(ids, taskID(sr.id, p))
			var sum int64
			for _, topic := range r.changelogsOf(sr.id) {
				sum += pos[topic][p]
			}
			offsets[assign.Task{Subtopology: sr.id, Partition: p}] = sum
		}
	}
	r.warmedOffsets.Store(&offsets)
	r.warmedPos.Store(&pos)
	gen.close()
	if prevPos == nil {
		r.measureLag(ctx, ts, pos)
	}
	prev := r.warmed.Swap(&ids)
	n := r.e.obs.restored.Load() - before
	level := slog.LevelDebug
	if prev == nil || !slices.Equal(*prev, ids) {
		// Once per set of standbys: from now on a take-over of them
		// restores only a tail.
		level = slog.LevelInfo
	}
	r.e.log.Log(ctx, level, "standby tasks warm", "tasks", ids, "records", n, "took", time.Since(began).Round(time.Millisecond))
}

// notePromoted logs the tasks a reset added that the last warm-up kept as
// standbys, with the changelog records the reset restored: the tail a
// warm standby had left.
func (r *runner) notePromoted(added []string, restored int64) {
	p := r.warmed.Load()
	if p == nil || len(added) == 0 {
		return
	}
	var promoted []string
	for _, id := range added {
		if slices.Contains(*p, id) {
			promoted = append(promoted, id)
		}
	}
	if len(promoted) > 0 {
		r.e.log.Info("standby tasks promoted: restored only what their last warm-up had not applied", "tasks", promoted, "restored", restored)
	}
}

// changelogsOf are the changelog topics of sub-topology sub's stores.
func (r *runner) changelogsOf(sub int) []string {
	var out []string
	for _, name := range r.built.Subtopologies[sub].Stores {
		if t := r.built.Stores[name].ChangelogTopic; t != "" {
			out = append(out, t)
		}
	}
	return out
}

// warmOffsets are, for the subscription, what the last warm-up left each
// task it kept complete up to (assign.Member.Offsets).
func (r *runner) warmOffsets() map[assign.Task]int64 {
	if p := r.warmedOffsets.Load(); p != nil {
		return *p
	}
	return nil
}

// taskEnds are, for the group's leader, the end offsets of every stateful
// task's changelog partitions, summed per task (assign.Group.Ends).
func (r *runner) taskEnds() (map[assign.Task]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := r.changelogEnds(ctx)
	if err != nil {
		return nil, err
	}
	out := map[assign.Task]int64{}
	for _, st := range r.built.Subtopologies {
		for _, topic := range r.changelogsOf(st.ID) {
			for p, end := range ends[topic] {
				out[assign.Task{Subtopology: st.ID, Partition: p}] += end
			}
		}
	}
	return out, nil
}

// changelogEnds lists the end offsets of every changelog partition of the
// topology's stores, in one ListEndOffsets.
func (r *runner) changelogEnds(ctx context.Context) (map[string]map[int32]int64, error) {
	var topics []string
	for _, st := range r.built.Subtopologies {
		topics = append(topics, r.changelogsOf(st.ID)...)
	}
	out := map[string]map[int32]int64{}
	if len(topics) == 0 {
		return out, nil
	}
	ends, err := r.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list the end offsets of the changelogs %v: %w", topics, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("list the end offsets of the changelogs %v: %w", topics, err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, nil
}

// measureLag sets the standby tasks' lag (Engine.StandbyTasks): the
// records between what a warm-up left each changelog partition complete
// up to (pos) and the partition's end now (transaction markers count).
// It runs once per warm-up with one ListEndOffsets, off the record path
// (warmOnce says when). A task's lag sums its changelog
// partitions; a standby task ahead of an in-memory re-key has no store
// of its own and counts the tasks behind it, those of its partition.
// When the listing fails the lag is not known, and the series are absent
// until the next warm-up.
func (r *runner) measureLag(ctx context.Context, ts []assign.Task, pos map[string]map[int32]int64) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := r.changelogEnds(lctx)
	if err != nil {
		if ctx.Err() == nil {
			r.e.log.Warn("standby lag not measured", "err", err)
		}
		r.e.setStandbyLag(nil)
		return
	}
	lag := map[string]int64{}
	for _, t := range ts {
		subs := []int{t.Subtopology}
		if len(r.changelogsOf(t.Subtopology)) == 0 {
			subs = r.behindRekey(t.Subtopology)
		}
		known := false
		var n int64
		for _, sub := range subs {
			for _, topic := range r.changelogsOf(sub) {
				// A partition the warm-up did not restore (a standby
				// new since) is not known yet, rather than behind by
				// its whole changelog: its checkpoint may hold most.
				end, ok := ends[topic][t.Partition]
				at, restored := pos[topic][t.Partition]
				if !ok || !restored {
					continue
				}
				known = true
				n += max(end-at, 0)
			}
		}
		if known {
			lag[t.String()] = n
		}
	}
	r.e.setStandbyLag(lag)
}

// probe asks the group for a rebalance, so that the leader can move the
// warm-ups of the last assignment here (KIP-441), once they are caught
// up: the last warm-up restored them all, and right after it they lag
// the changelogs' ends by at most acceptable.recovery.lag (listed once,
// as the leader will list them a moment later). A warm-up that is still
// behind then (an active that writes faster than it keeps up with) asks
// every probing.rebalance.interval.ms instead. It asks once per
// assignment, and not twice within two warm-up intervals: a leader that
// finds it behind after all answers with the same assignment.
func (r *runner) probe(ctx context.Context) {
	w := r.warmups.Load()
	if w == nil || len(*w) == 0 || r.probed.Load() || time.Since(r.probedAt) < 2*r.s.standbyEvery {
		return
	}
	warmed := r.warmed.Load()
	caught := warmed != nil
	for _, t := range *w {
		caught = caught && slices.Contains(*warmed, t.String())
	}
	var lag int64 = -1
	if caught {
		lag = r.warmupLag(ctx, *w)
		caught = lag >= 0 && lag <= int64(r.s.recoveryLag)
	}
	due := time.Since(time.Unix(0, r.assignedAt.Load())) > r.s.probeEvery
	if !caught && !due {
		return
	}
	cl := r.client.Load()
	if cl == nil {
		return
	}
	r.probed.Store(true)
	r.probedAt = time.Now()
	r.e.log.Info("warm-up tasks caught up with their changelogs; asking the group to rebalance so that they move here", "tasks", *w, "caught_up", caught, "lag", lag)
	cl.ForceRebalance()
}

// warmupLag is the largest lag of the warm-ups ws behind their changelogs'
// ends now, from what the last warm-up left them complete up to; -1 when
// the ends cannot be listed or a warm-up has no position yet.
func (r *runner) warmupLag(ctx context.Context, ws []assign.Task) int64 {
	offs := r.warmOffsets()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := r.changelogEnds(lctx)
	if err != nil {
		return -1
	}
	var most int64
	for _, t := range ws {
		at, ok := offs[t]
		if !ok {
			return -1
		}
		var end int64
		for _, topic := range r.changelogsOf(t.Subtopology) {
			end += ends[topic][t.Partition]
		}
		most = max(most, end-at)
	}
	return most
}

// standbyState is what the runner keeps for standbys.
type standbyState struct {
	standbys       atomic.Pointer[[]assign.Task]
	warm           *warmUp
	warnedStandbys atomic.Bool
	// warmups are the standbys of the last assignment that warm a task
	// up to move here; probed says probe asked for the rebalance since,
	// assignedAt when (unix ns) the assignment came.
	warmups    atomic.Pointer[[]assign.Task]
	probed     atomic.Bool
	assignedAt atomic.Int64
	// probedAt is when probe last asked (the warm loop's own).
	probedAt time.Time
	// warmedOffsets are the last warm-up's positions per task, and
	// warmedPos per changelog partition (nil before the first warm-up
	// since the databases were last someone else's).
	warmedOffsets atomic.Pointer[map[assign.Task]int64]
	warmedPos     atomic.Pointer[map[string]map[int32]int64]
	// client is the session's client, for probe.
	client atomic.Pointer[kgo.Client]
	// warmed are the ids of the tasks the last warm-up brought up to
	// date.
	warmed atomic.Pointer[[]string]
}

// behindRekey are the sub-topologies an in-memory re-key feeds, whose
// tasks a standby of sub keeps with it (warmOnce). Such a topology runs
// whole on one instance and its standbys whole on another, so every
// re-keyed sub-topology counts, not only those sub feeds.
func (r *runner) behindRekey(sub int) []int {
	var out []int
	for _, st := range r.built.Subtopologies {
		if st.ID == sub {
			continue
		}
		for _, src := range st.Sources {
			if src.Boundary != nil {
				out = append(out, st.ID)
				break
			}
		}
	}
	return out
}
