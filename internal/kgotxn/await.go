package kgotxn

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Why a transaction must wait for its client's metadata.
//
// franz-go (v1.22.3) decides at EndTransaction whether the transaction
// holds anything: it looks for a partition marked as written in this
// transaction among the partitions the client has stored for its topics.
// Finding none, and no offsets added, it aborts instead of committing
// (it takes the writes to have failed) and returns nil, as if the commit
// had succeeded.
//
// The first record to a topic the client does not know yet is held until
// the client's metadata names the topic's partitions; the metadata
// update then hands the record to its partition and only afterwards
// stores the partitions where EndTransaction looks. The record can be
// produced, acknowledged and flushed in between, and an EndTransaction
// that runs in that window finds the topic without partitions: a
// transaction that wrote only to new topics, with no offsets, is then
// aborted while the caller is told it committed. The migrate tests lost a
// seeded emit frontier this way about once in a hundred runs under load
// (their client log showed "produced" and then "no produce succeeded in
// this transaction ... issuing an abort"); the engine is exposed in an
// epoch that reads nothing and writes to a topic for the first time,
// such as final window results emitted after its input went idle.
//
// AwaitProduceMetadata closes the window: called after the flush and
// before EndTransaction, it waits until the client has stored the
// partitions of every topic written.

// metadataWait bounds AwaitProduceMetadata. The store it waits for
// follows the produce within the same function call of franz-go's
// metadata update, so only a descheduled goroutine delays it; a topic
// still missing after this long is not coming.
const metadataWait = 10 * time.Second

// AwaitProduceMetadata waits until cl has stored, for producing, the
// partitions of each topic of written (a topic and one partition of it
// the transaction wrote to), so that EndTransaction sees the writes. It
// returns an error naming the topics if that takes longer than ten
// seconds or ctx ends first; the caller must then abort, not commit.
func AwaitProduceMetadata(ctx context.Context, cl *kgo.Client, written map[string]int32) error {
	var missing []string
	pause := 50 * time.Microsecond
	deadline := time.Now().Add(metadataWait)
	for {
		missing = missing[:0]
		for _, t := range slices.Sorted(maps.Keys(written)) {
			if leader, _, _ := cl.PartitionLeader(t, written[t]); leader < 0 {
				missing = append(missing, t)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the client has not stored the partitions of %v %s after writing to them; the transaction would be aborted silently", missing, metadataWait)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the client to store the partitions of %v: %w", missing, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 10*time.Millisecond)
	}
}
