package engine

import (
	"context"
	"time"

	"github.com/stoatflow/stoatctl/engine/state"
)

// shardKey names one lane's shard of one task: the sub-topology, the
// task's partition and the lane.
type shardKey struct {
	sub       int
	partition int32
	lane      int
}

// keptMemory is what a generation hands the next one of the in-memory
// stores of its tasks, once a rebalance that revoked nothing has
// committed everything it processed (drainForKeep): each shard's
// state.Retained, whose stores then hold committed state and nothing
// else. Decision 0049.
type keptMemory struct {
	shards map[shardKey]*state.Retained
	// tasks is each sub-topology's task count and lanes the lanes of
	// each: a shard is the same keys only while both are.
	tasks []int32
	lanes int
	// revokes is runner.revokes when the drain committed: a revocation
	// or loss since (of any partition) voids the keep, as the session
	// may since have been told to stop working on it.
	revokes int64
}

// shard is the kept Retained of (sub, partition, lane), or nil when the
// shard was not kept or the sub-topology's tasks or lanes differ now.
func (k *keptMemory) shard(sub int, tasks int32, lanes int, partition int32, lane int) *state.Retained {
	if k == nil || lanes != k.lanes || sub >= len(k.tasks) || k.tasks[sub] != tasks {
		return nil
	}
	return k.shards[shardKey{sub, partition, lane}]
}

// memoryShards collects the generation's in-memory shards for the next
// generation, or returns nil when it has none.
func (g *generation) memoryShards() *keptMemory {
	k := &keptMemory{shards: map[shardKey]*state.Retained{}}
	for _, sr := range g.subs {
		k.tasks = append(k.tasks, sr.changelogPartitions)
		for _, l := range sr.lanes {
			k.lanes = len(sr.lanes)
			for p, r := range l.memory {
				k.shards[shardKey{sr.id, p, l.idx}] = r
			}
		}
	}
	if len(k.shards) == 0 {
		return nil
	}
	return k
}

// drainForKeep is the first step of a rebalance that revoked nothing
// from this instance (it kept every task and may have been given more):
// it commits what the generation processed, the epochs in flight and a
// final barrier cut now, as Kafka Streams commits its tasks before a
// rebalance goes on, and returns the generation's in-memory shards once
// all of it committed. Their stores then hold committed state only, so
// the next generation's tasks of the same partitions start from them and
// restore nothing. It returns nil, and the next generation restores as
// before, when the generation keeps nothing in memory, a partition was
// revoked or lost since the generation began (franz-go aborts the
// transaction in flight then), or the commits fail or take longer than
// stoatflow.shutdown.timeout-ms.
func (r *runner) drainForKeep(ctx context.Context) *keptMemory {
	g := r.gen
	if g == nil || g.warmOnly || r.closing.Load() || !r.joined.Load() || r.revokes.Load() != g.revokes {
		return nil
	}
	kept := g.memoryShards()
	if kept == nil {
		return nil
	}
	deadline := time.Now().Add(r.s.shutdown)
	// settled waits until no epoch is in flight: false if one failed or
	// aborted, the generation failed, a partition was revoked, or the
	// deadline or a stop came first.
	settled := func() bool {
		for r.inFlight() {
			if r.commitFailed.Load() != nil || g.failure() != nil || r.revokes.Load() != g.revokes ||
				ctx.Err() != nil || time.Now().After(deadline) {
				return false
			}
			time.Sleep(2 * time.Millisecond)
		}
		return r.commitFailed.Load() == nil && g.failure() == nil
	}
	if !settled() {
		return nil
	}
	// A final barrier: the lanes run no clock work after it, and the
	// dispatcher hands them nothing more, so what it commits is all the
	// stores hold.
	dctx, cancel := context.WithDeadline(g.dispatch, deadline)
	defer cancel()
	was := g.dispatch
	g.dispatch = dctx
	err := r.maybeBarrier(true)
	g.dispatch = was
	if err != nil || !settled() || r.revokes.Load() != g.revokes {
		return nil
	}
	kept.revokes = g.revokes
	r.e.log.Debug("rebalance: every epoch committed; the tasks that stay keep their in-memory state", "shards", len(kept.shards))
	return kept
}
