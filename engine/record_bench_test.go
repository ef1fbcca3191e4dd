package engine

import (
	"context"
	"testing"

	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
)

// BenchmarkRecord is the committer's conversion of a task's output to a
// Kafka record and back to the pool, as for a changelog record (the lane
// hash header) going to the default partitioner: one per output record.
func BenchmarkRecord(b *testing.B) {
	r := &runner{}
	r.sinkParts.Store(&map[string]int32{"counts-changelog": 4})
	o := task.Output{Topic: "counts-changelog", Partition: -1, Key: []byte("key-4711"), Value: []byte("12345678"), Timestamp: 1_700_000_000_000,
		Headers: processor.Headers{{Key: lane.HashHeader, Value: []byte{0, 0, 0, 1}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rec, err := r.record(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		release(rec)
	}
}
