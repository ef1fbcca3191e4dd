package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SetRepairStage sets the hook the repair calls at each of its steps.
func SetRepairStage(fn func(stage string)) { repairStage = fn }

// IntentFile is the commit-intent log's name in a data directory.
const IntentFile = intentFile

// CommitTxnOffset adds one offset of group to the open transaction of
// cl (transactional id txid), as a Kafka Streams producer or ours does.
func CommitTxnOffset(ctx context.Context, cl *kgo.Client, txid, group, topic string, topicID [16]byte, partition int32, offset int64, metadata string) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	o := groupOffset{Group: group, Topic: topic, Partition: partition, Offset: offset, LeaderEpoch: -1, Metadata: &metadata}
	return commitTxnOffsets(ctx, cl, txid, pid, epoch, map[string][]groupOffset{group: {o}}, map[string][16]byte{topic: topicID})
}
