package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Local state: the lanes' RocksDB databases when default.dsl.store is
// rocksDB. A lane's database holds its shards of the stores of the tasks
// it runs, each task's stores under the task's prefix
// (rocks.TaskSupplier), and a checkpoint: the tasks it holds and, for
// each, the offset of the task's changelog partition it is complete up
// to (docs/decisions/0024). The epochs not committed yet are layers over
// it (engine/state/rocks). The generation opens the databases, keeps the
// tasks it runs again whose checkpoint it can build on, wipes the others,
// restores each task from its checkpoint on (or from the log start), and
// closes the databases when it ends, which drops what did not commit: an
// aborted epoch costs no restore, and a task an instance keeps across a
// rebalance restores only what was written to its changelog since. The
// committer commits each lane's layers after the epoch's transaction.

// stateDirOf reads default.dsl.store and state.dir: the directory of the
// application's lane databases ("" in a binary without RocksDB), and
// whether the stores of default.dsl.store go there.
func stateDirOf(c config.Config, appID string) (dir string, rocksDefault bool, err error) {
	v := strings.TrimSpace(c.String(config.DefaultDSLStore))
	switch {
	case v == "" || v == config.StoreInMemory || v == "in-memory":
	case v != config.StoreRocksDB && v != "rocksdb":
		return "", false, fmt.Errorf("config %s: %q is not one of %s, %s", config.DefaultDSLStore, v, config.StoreRocksDB, config.StoreInMemory)
	case !rocks.Available():
		return "", false, fmt.Errorf("config %s=%s: %w", config.DefaultDSLStore, v, rocks.ErrUnavailable)
	default:
		rocksDefault = true
	}
	if !rocks.Available() {
		return "", false, nil
	}
	dir = strings.TrimSpace(c.String(config.StateDir))
	if dir == "" {
		dir = config.DefaultStateDir()
	}
	return filepath.Join(dir, appID), rocksDefault, nil
}

// ErrForeignState is returned when a lane's state directory holds another
// application's state: the engine refuses to start rather than wipe it.
var ErrForeignState = errors.New("state directory of another application")

// laneState is one lane's database and what its checkpoints record.
type laneState struct {
	db *rocks.DB
	// defaults says the stores of default.dsl.store are in db, not only
	// those built with state.RocksDB.
	defaults bool
	// topics are the changelog topics of the stores in db.
	topics map[string]bool
	app    string
	lanes  int
	// tasks are the partitions of the lane's tasks, owned names them.
	tasks []int32
	owned []string
	// from is where the restore of each task kept from the checkpoint
	// starts, per changelog topic and task partition; a task missing
	// starts at the log start.
	from map[string]map[int32]int64
}

// checkpoint is the lane's checkpoint at offsets: those of its tasks'
// changelog partitions.
func (ls *laneState) checkpoint(offsets map[string]map[int32]int64) rocks.Checkpoint {
	own := make(map[string]map[int32]int64, len(ls.topics))
	for t := range ls.topics {
		for _, p := range ls.tasks {
			if off, ok := offsets[t][p]; ok {
				if own[t] == nil {
					own[t] = map[int32]int64{}
				}
				own[t][p] = off
			}
		}
	}
	return rocks.Checkpoint{Application: ls.app, Lanes: ls.lanes, Owned: ls.owned, Offsets: own}
}

// changelogPositions tracks, per changelog partition, the offset after the
// last record this instance produced to it, seeded by restores: what a
// checkpoint written after a commit says the database is complete up to.
type changelogPositions struct {
	mu sync.Mutex
	m  map[string]map[int32]int64
}

func (p *changelogPositions) advance(topic string, partition int32, next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]map[int32]int64{}
	}
	if p.m[topic] == nil {
		p.m[topic] = map[int32]int64{}
	}
	if next > p.m[topic][partition] {
		p.m[topic][partition] = next
	}
}

func (p *changelogPositions) snapshot() map[string]map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]map[int32]int64, len(p.m))
	for t, ps := range p.m {
		out[t] = maps.Clone(ps)
	}
	return out
}

// localState is what a generation needs to open and check the lane
// databases, and the positions its committer tracks.
type localState struct {
	app string
	dir string
	// defaults says the stores of default.dsl.store go to the databases.
	defaults bool
	adm      *kadm.Client
	log      *slog.Logger
	pos      *changelogPositions
	// changelogs is the set of the topology's changelog topics.
	changelogs map[string]bool
	// standbyDir holds the lane databases in which an instance that runs
	// tasks keeps its standbys (standby.go); a task this generation runs
	// that its own databases cannot bring up to date is copied from
	// there when the copy can be. Empty for a standby's own warm-up.
	standbyDir string
}

// standbySubdir is the directory, under an application's state
// directory, of the databases an instance that runs tasks keeps its
// standbys in: its lanes' own are open while it runs.
const standbySubdir = "standby"

// open opens the databases of a sub-topology's lanes and decides, for each
// task, where its restore starts: the database's checkpoint, when it was
// written for this lane count, held the task, and the task's changelog
// partitions still hold everything after it; otherwise the task's part of
// the database is wiped and rebuilt from the log start. The part of a
// task the instance no longer runs is wiped. A corrupt checkpoint is an
// error naming the database: nothing is wiped.
func (s *localState) open(ctx context.Context, g *generation, sr *subRun) error {
	st := g.built.Subtopologies[sr.id]
	// The stores the lane databases hold: those built with state.RocksDB,
	// and under default.dsl.store=rocksDB those built with state.Default.
	var topics []string
	inDB := map[string]bool{}
	need := false
	for _, name := range st.Stores {
		info := g.built.Stores[name]
		b := info.Builder.Backend()
		if b != state.RocksDBBackendName && (!s.defaults || b != state.DefaultBackendName) {
			continue
		}
		need = true
		if t := info.ChangelogTopic; t != "" {
			topics = append(topics, t)
			inDB[t] = true
		}
	}
	if !need || len(sr.tasks) == 0 {
		// Nothing assigned (the first generation, before the group has
		// answered): the lanes process nothing, and their databases are
		// left as they are for the generation that will.
		return nil
	}
	starts, ends, err := s.bounds(ctx, topics)
	if err != nil {
		return err
	}
	owned := make([]string, len(sr.tasks))
	for i, p := range sr.tasks {
		owned[i] = taskID(sr.id, p)
	}
	// The databases open side by side: a new one syncs its first files,
	// which is most of what a start that restores little waits for. Each
	// one opened is the lane's before any error returns, so that the
	// generation closes it.
	dirs := make([]string, len(sr.lanes))
	dbs := make([]*rocks.DB, len(sr.lanes))
	errs := make([]error, len(sr.lanes))
	var wg sync.WaitGroup
	for i, l := range sr.lanes {
		dirs[i] = filepath.Join(s.dir, fmt.Sprintf("%d_%d", sr.id, l.idx))
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = rocks.Open(dirs[i])
		}()
	}
	wg.Wait()
	for i, l := range sr.lanes {
		if dbs[i] != nil {
			l.local = &laneState{db: dbs[i], defaults: s.defaults, topics: inDB, app: s.app, lanes: len(sr.lanes), tasks: sr.tasks, owned: owned}
		}
	}
	for i, l := range sr.lanes {
		if errs[i] != nil {
			return fmt.Errorf("sub-topology %d lane %d: %w", sr.id, l.idx, errs[i])
		}
	}
	adopted := map[string]int{}
	began := time.Now()
	for i, l := range sr.lanes {
		if err := s.keep(l.local, dirs[i], sr, topics, starts, ends, adopted); err != nil {
			return fmt.Errorf("sub-topology %d lane %d: %w", sr.id, l.idx, err)
		}
	}
	if len(adopted) > 0 {
		n := 0
		for _, e := range adopted {
			n += e
		}
		s.log.Info("standby copies taken: their tasks restore only what was written after them", "tasks", slices.Sorted(maps.Keys(adopted)), "entries", n, "took", time.Since(began).Round(time.Millisecond))
	}
	return nil
}

// keep decides what of a lane's database the generation keeps: the whole
// database is wiped when its checkpoint was written for another lane
// count or store layout (or there is none); otherwise each task the lane
// runs that the checkpoint holds and its changelog can bring up to date
// is kept, restored from the checkpoint's offsets on, and every other
// task the checkpoint names is wiped.
//
// A task it runs that its checkpoint cannot bring up to date is copied
// from the lane's standby database when that holds a copy it can build on
// (standbyCopy); adopted counts the entries copied per task.
func (s *localState) keep(ls *laneState, dir string, sr *subRun, topics []string, starts, ends map[string]kadm.ListedOffsets, adopted map[string]int) error {
	cp, ok, err := ls.db.Checkpoint()
	if err != nil {
		return err
	}
	if ok && cp.Application != s.app {
		// Never wiped: it is someone else's state.
		return fmt.Errorf("the state in %s is application %q's, not %q's: %w", dir, cp.Application, s.app, ErrForeignState)
	}
	reason := ""
	switch {
	case !ok:
		reason = "no checkpoint"
	case cp.Layout != rocks.Layout:
		reason = fmt.Sprintf("written in store layout %d, this build's is %d", cp.Layout, rocks.Layout)
	case cp.Lanes != len(sr.lanes):
		reason = fmt.Sprintf("written for %d lanes, running %d", cp.Lanes, len(sr.lanes))
	}
	if reason != "" {
		if ok {
			s.log.Warn("local state cannot be brought up to date from its checkpoint; rebuilding it from the changelogs", "dir", dir, "reason", reason)
		}
		return ls.db.Wipe()
	}
	held := map[string]bool{}
	for _, id := range cp.Owned {
		held[id] = true
	}
	sb := &standbyCopy{s: s, path: filepath.Join(s.standbyDir, filepath.Base(dir)), lanes: len(sr.lanes)}
	defer sb.close()
	runs := map[int32]bool{}
	var rebuilt []string
	for _, p := range sr.tasks {
		runs[p] = true
		id := taskID(sr.id, p)
		why := ""
		if !held[id] {
			why = "not in the checkpoint"
		} else {
			why = checkpointBehind(cp, topics, starts, ends, p)
		}
		if why == "" {
			ls.startFrom(cp, topics, p)
			continue
		}
		// A task restored from the log start starts empty, whatever an
		// earlier restore cut short left.
		if err := ls.db.WipeTask(p); err != nil {
			return err
		}
		if n, ok := sb.adopt(ls, id, p, topics, starts, ends); ok {
			adopted[id] += n
			continue
		}
		if held[id] {
			rebuilt = append(rebuilt, id+": "+why)
		}
	}
	for _, id := range cp.Owned {
		if p, ok := taskPartition(id, sr.id); ok && !runs[p] {
			// Another instance runs it now; what this one held of it
			// would be out of date when it comes back.
			if err := ls.db.WipeTask(p); err != nil {
				return err
			}
		}
	}
	if len(rebuilt) > 0 {
		s.log.Warn("tasks' local state cannot be brought up to date from the checkpoint; rebuilding them from the changelogs", "dir", dir, "tasks", rebuilt)
	}
	s.log.Debug("local state kept", "dir", dir, "checkpoint_owned", cp.Owned, "checkpoint_offsets", cp.Offsets, "runs", sr.tasks, "from", ls.from)
	return nil
}

// standbyCopy is the database of a lane's standby copies, opened when a
// task the lane runs is not kept from the lane's own checkpoint.
type standbyCopy struct {
	s      *localState
	path   string
	lanes  int
	opened bool
	db     *rocks.DB
	cp     rocks.Checkpoint
	held   map[string]bool
}

// adopt copies the task of partition p (id) from the standby database into
// the lane's, and sets where its restore starts from the standby's
// checkpoint; false when there is no copy to build on. A copy that cannot
// be read is passed over with a warning: the task is restored from its
// changelogs as without one.
func (c *standbyCopy) adopt(ls *laneState, id string, p int32, topics []string, starts, ends map[string]kadm.ListedOffsets) (int, bool) {
	if !c.open() || !c.held[id] {
		return 0, false
	}
	if why := checkpointBehind(c.cp, topics, starts, ends, p); why != "" {
		c.s.log.Info("standby copy not taken: its checkpoint cannot be built on", "task", id, "dir", c.path, "reason", why)
		return 0, false
	}
	n, err := ls.db.AdoptTask(c.db, p)
	if err != nil {
		// What was copied is wiped: the restore from the log start
		// begins empty.
		c.s.log.Warn("standby copy not taken; restoring the task from its changelogs", "task", id, "dir", c.path, "err", err)
		if werr := ls.db.WipeTask(p); werr != nil {
			c.s.log.Warn("wipe a standby copy taken in part", "task", id, "err", werr)
		}
		return 0, false
	}
	ls.startFrom(c.cp, topics, p)
	return n, true
}

// startFrom makes the restore of the task of partition p start, in each
// of topics, where cp says the lane's copy of it is complete up to.
func (ls *laneState) startFrom(cp rocks.Checkpoint, topics []string, p int32) {
	for _, t := range topics {
		if off, ok := cp.Offsets[t][p]; ok {
			if ls.from == nil {
				ls.from = map[string]map[int32]int64{}
			}
			if ls.from[t] == nil {
				ls.from[t] = map[int32]int64{}
			}
			ls.from[t][p] = off
		}
	}
}

// open opens the standby database once, if there is one this lane can
// build on: written by this application, in this layout, for this lane
// count.
func (c *standbyCopy) open() bool {
	if c.opened {
		return c.db != nil
	}
	c.opened = true
	if c.s.standbyDir == "" {
		return false
	}
	if _, err := os.Stat(c.path); err != nil {
		return false
	}
	db, err := rocks.Open(c.path)
	if err != nil {
		c.s.log.Warn("standby copies not readable; tasks taken over restore from their changelogs", "dir", c.path, "err", err)
		return false
	}
	cp, ok, err := db.Checkpoint()
	if err != nil || !ok || cp.Application != c.s.app || cp.Layout != rocks.Layout || cp.Lanes != c.lanes {
		if err != nil {
			c.s.log.Warn("standby copies not readable; tasks taken over restore from their changelogs", "dir", c.path, "err", err)
		}
		_ = db.Close()
		return false
	}
	c.db, c.cp, c.held = db, cp, map[string]bool{}
	for _, id := range cp.Owned {
		c.held[id] = true
	}
	return true
}

func (c *standbyCopy) close() {
	if c.db != nil {
		if err := c.db.Close(); err != nil {
			c.s.log.Warn("close standby copies", "dir", c.path, "err", err)
		}
		c.db = nil
	}
}

// taskID names the task of partition p of sub-topology sub as Kafka
// Streams does: "<sub-topology>_<partition>".
func taskID(sub int, p int32) string { return fmt.Sprintf("%d_%d", sub, p) }

// taskPartition is the partition of a task id of sub-topology sub.
func taskPartition(id string, sub int) (int32, bool) {
	rest, ok := strings.CutPrefix(id, strconv.Itoa(sub)+"_")
	if !ok {
		return 0, false
	}
	p, err := strconv.ParseInt(rest, 10, 32)
	return int32(p), err == nil && p >= 0
}

// checkpointBehind says why a checkpoint cannot be built on for the task
// of partition p, "" when it can: every offset it records for p must lie
// within its changelog partition, since one past the end means the topic
// was wiped or truncated, and one before its start means records were
// lost.
func checkpointBehind(cp rocks.Checkpoint, topics []string, starts, ends map[string]kadm.ListedOffsets, p int32) string {
	for _, t := range topics {
		ps, ok := cp.Offsets[t]
		if !ok {
			continue
		}
		if off, ok := ps[p]; ok {
			end, eok := ends[t].Lookup(t, p)
			start, sok := starts[t].Lookup(t, p)
			switch {
			case !eok || end.Err != nil || !sok || start.Err != nil:
				return fmt.Sprintf("changelog partition %s[%d] is gone", t, p)
			case off > end.Offset:
				return fmt.Sprintf("checkpoint at %s[%d] offset %d is past the changelog's end %d (the topic was wiped or truncated)", t, p, off, end.Offset)
			case off < start.Offset:
				return fmt.Sprintf("checkpoint at %s[%d] offset %d is before the changelog's start %d", t, p, off, start.Offset)
			}
		}
	}
	return ""
}

func (s *localState) bounds(ctx context.Context, topics []string) (starts, ends map[string]kadm.ListedOffsets, err error) {
	starts, ends = map[string]kadm.ListedOffsets{}, map[string]kadm.ListedOffsets{}
	for _, t := range topics {
		if starts[t], err = s.adm.ListStartOffsets(ctx, t); err != nil {
			return nil, nil, fmt.Errorf("engine: list start offsets of changelog %s: %w", t, err)
		}
		if ends[t], err = s.adm.ListEndOffsets(ctx, t); err != nil {
			return nil, nil, fmt.Errorf("engine: list end offsets of changelog %s: %w", t, err)
		}
	}
	return starts, ends, nil
}

// restoreFrom is where a store's changelog is read from for a
// sub-topology, per partition of its tasks: the earliest start of the
// task in its lanes' databases; a partition missing (a lane's database
// does not have the task from a checkpoint, or the stores are in memory)
// is read from its log start.
func restoreFrom(sr *subRun, topic string) map[int32]int64 {
	from := map[int32]int64{}
	for _, p := range sr.tasks {
		start, ok := int64(-1), true
		for _, l := range sr.lanes {
			var off int64
			if l.local != nil && l.local.topics[topic] {
				off, ok = l.local.from[topic][p]
			} else {
				ok = false
			}
			if !ok {
				break
			}
			if start < 0 || off < start {
				start = off
			}
		}
		if ok {
			from[p] = start
		}
	}
	return from
}

// has says the lane's database already holds the changelog record at
// offset of partition.
func (ls *laneState) has(topic string, partition int32, offset int64) bool {
	if ls == nil || ls.from == nil || !ls.topics[topic] {
		return false
	}
	off, ok := ls.from[topic][partition]
	return ok && offset < off
}

// commitLocal commits the epoch's layers of every lane database with a
// checkpoint of the changelog positions now, once the epoch's transaction
// committed. A database that fails stops the engine: its layers would
// grow with every epoch that cannot be written; the next start restores
// what its checkpoint lacks from the changelogs, so nothing is lost.
func (r *runner) commitLocal(g *generation, epoch int64) error {
	if g.local == nil {
		return nil
	}
	offsets := g.local.pos.snapshot()
	var errs []error
	for _, l := range g.lanes {
		if l.local == nil {
			continue
		}
		if err := l.local.db.Commit(epoch, l.local.checkpoint(offsets)); err != nil {
			errs = append(errs, fmt.Errorf("sub-topology %d lane %d: %w", l.sub.id, l.idx, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("engine: %w: epoch %d is committed in Kafka, but not in the local state (the next start restores it from the changelogs): %w", ErrLocalCommit, epoch, err)
	}
	return nil
}

// ErrLocalCommit is returned when the RocksDB state could not take an
// epoch that committed in Kafka (a full disk, an I/O error): the engine
// stops rather than hold ever more uncommitted layers.
var ErrLocalCommit = errors.New("local state commit failed")

// closeLocal closes the lane databases, which drops what did not commit.
func (g *generation) closeLocal() {
	for _, l := range g.lanes {
		if l.local != nil {
			if err := l.local.db.Close(); err != nil {
				g.e.log.Warn("close local state", "dir", l.local.db.Path(), "err", err)
			}
		}
	}
}

// localState is how a generation keeps its stores: nil in memory, else
// in lane databases under the state directory.
func (r *runner) localState() *localState {
	if r.s.stateDir == "" {
		return nil
	}
	if !r.s.rocksDefault {
		// Only stores built with state.RocksDB go to the databases.
		found := false
		for _, info := range r.built.Stores {
			found = found || info.Builder.Backend() == state.RocksDBBackendName
		}
		if !found {
			return nil
		}
	}
	ls := &localState{app: r.s.appID, dir: r.s.stateDir, defaults: r.s.rocksDefault, adm: r.adm, log: r.e.log, pos: &changelogPositions{}, changelogs: map[string]bool{},
		standbyDir: filepath.Join(r.s.stateDir, standbySubdir)}
	for _, info := range r.built.Stores {
		if info.ChangelogTopic != "" {
			ls.changelogs[info.ChangelogTopic] = true
		}
	}
	return ls
}

// produced notes a changelog record the broker took, for the checkpoints.
func (g *generation) produced(topic string, partition int32, offset int64) {
	if g.local != nil && g.local.changelogs[topic] {
		g.local.pos.advance(topic, partition, offset+1)
	}
}
