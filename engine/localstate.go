package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Local state: the lanes' RocksDB databases when default.dsl.store is
// rocksDB. A lane's database holds the committed state of its stores and a
// checkpoint of the changelog offsets it is complete up to; the epochs not
// committed yet are layers over it (engine/state/rocks). The generation
// opens the databases, restores each from its checkpoint on, and closes
// them when it ends, which drops what did not commit: an aborted epoch
// costs no restore. The committer commits each lane's layers after the
// epoch's transaction.

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
		dir = "/tmp/stoatflow"
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
	owned  []string
	// from is where the lane's restore starts, per changelog topic and
	// partition; a partition missing starts at the log start.
	from map[string]map[int32]int64
}

func (ls *laneState) checkpoint(offsets map[string]map[int32]int64) rocks.Checkpoint {
	return rocks.Checkpoint{Application: ls.app, Lanes: ls.lanes, Owned: ls.owned, Offsets: offsets}
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
	// owned names the source partitions whose keys a sub-topology's
	// lanes hold now, "*" for a sub-topology fed by a boundary.
	owned func(st *topology.Subtopology) []string
}

// open opens the databases of a sub-topology's lanes and decides where
// each restores from: its checkpoint, when it is one this assignment can
// build on and the changelogs still hold everything after it; otherwise
// the database is wiped and rebuilt from the log start. A corrupt
// checkpoint is an error naming the database: nothing is wiped.
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
	if !need {
		return nil
	}
	starts, ends, err := s.bounds(ctx, topics)
	if err != nil {
		return err
	}
	owned := s.owned(st)
	if len(owned) == 0 {
		// Nothing assigned (the first generation, before the group has
		// answered): the lanes process nothing, and their databases are
		// left as they are for the generation that will.
		return nil
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
			l.local = &laneState{db: dbs[i], defaults: s.defaults, topics: inDB, app: s.app, lanes: len(sr.lanes), owned: owned}
		}
	}
	for i, l := range sr.lanes {
		if errs[i] != nil {
			return fmt.Errorf("sub-topology %d lane %d: %w", sr.id, l.idx, errs[i])
		}
	}
	for i, l := range sr.lanes {
		dir, db, ls := dirs[i], dbs[i], l.local
		cp, ok, err := db.Checkpoint()
		if err != nil {
			return fmt.Errorf("sub-topology %d lane %d: %w", sr.id, l.idx, err)
		}
		if ok && cp.Application != s.app {
			// Never wiped: it is someone else's state.
			return fmt.Errorf("sub-topology %d lane %d: the state in %s is application %q's, not %q's: %w", sr.id, l.idx, dir, cp.Application, s.app, ErrForeignState)
		}
		reason := ""
		switch {
		case !ok:
			reason = "no checkpoint"
		case cp.Layout != rocks.Layout:
			reason = fmt.Sprintf("written in store layout %d, this build's is %d", cp.Layout, rocks.Layout)
		case cp.Lanes != len(sr.lanes):
			reason = fmt.Sprintf("written for %d lanes, running %d", cp.Lanes, len(sr.lanes))
		case !slices.Equal(cp.Owned, owned):
			reason = "written for another assignment of the source partitions"
		default:
			reason = checkpointBehind(cp, topics, starts, ends)
		}
		if reason != "" {
			if ok {
				s.log.Warn("local state cannot be brought up to date from its checkpoint; rebuilding it from the changelogs", "dir", dir, "reason", reason)
			}
			if err := db.Wipe(); err != nil {
				return err
			}
			continue
		}
		ls.from = cp.Offsets
	}
	return nil
}

// checkpointBehind says why a checkpoint cannot be built on, "" when it
// can: every offset it records must lie within its changelog partition,
// since one past the end means the topic was wiped or truncated, and one
// before its start means records were lost.
func checkpointBehind(cp rocks.Checkpoint, topics []string, starts, ends map[string]kadm.ListedOffsets) string {
	for _, t := range topics {
		ps, ok := cp.Offsets[t]
		if !ok {
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(ps)) {
			off := ps[p]
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
// sub-topology: per partition, the earliest of its lanes' starts; nil
// reads every partition from its log start.
func restoreFrom(sr *subRun, topic string) map[int32]int64 {
	var from map[int32]int64
	for _, l := range sr.lanes {
		if l.local == nil || l.local.from == nil || !l.local.topics[topic] {
			return nil
		}
		for p, off := range l.local.from[topic] {
			if from == nil {
				from = map[int32]int64{}
			}
			if cur, ok := from[p]; !ok || off < cur {
				from[p] = off
			}
		}
	}
	if from == nil {
		from = map[int32]int64{}
	}
	return from
}

// has says the lane's database already holds the changelog record at
// offset of partition.
func (ls *laneState) has(topic string, partition int32, offset int64) bool {
	if ls == nil || ls.from == nil || !ls.topics[topic] {
		return false
	}
	return offset < ls.from[topic][partition]
}

// ownedBy lists the assigned source partitions of st as "topic/partition",
// sorted, or "*" when a boundary feeds it (its lanes hold keys of every
// partition).
func ownedBy(st *topology.Subtopology, assigned map[string][]int32) []string {
	var out []string
	for _, src := range st.Sources {
		if src.Boundary != nil {
			return []string{"*"}
		}
		for _, t := range src.Source.Topics {
			for _, p := range assigned[t] {
				out = append(out, t+"/"+strconv.Itoa(int(p)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// commitLocal commits the epoch's layers of every lane database with a
// checkpoint of the changelog positions now. A lane that fails keeps its
// layers for the next commit; a restart restores from its last
// checkpoint, so nothing is lost.
func (r *runner) commitLocal(g *generation, epoch int64) {
	if g.local == nil {
		return
	}
	offsets := g.local.pos.snapshot()
	for _, l := range g.lanes {
		if l.local == nil {
			continue
		}
		if err := l.local.db.Commit(epoch, l.local.checkpoint(offsets)); err != nil {
			r.e.log.Error("commit local state; the next start restores from its last checkpoint", "epoch", epoch, "err", err)
		}
	}
}

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

// localState is how the generation for assigned keeps its stores: nil in
// memory, else in lane databases under the state directory.
func (r *runner) localState(assigned map[string][]int32) *localState {
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
		owned: func(st *topology.Subtopology) []string { return ownedBy(st, assigned) }}
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
