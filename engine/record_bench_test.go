package engine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

// TestRecordFromPool: a record made from a pooled one that franz-go had
// filled in (offset, producer, attributes, context, more headers) carries
// the output's fields and nothing of its last use.
func TestRecordFromPool(t *testing.T) {
	r := &runner{}
	r.sinkParts.Store(&map[string]int32{"out": 4})
	ctx := context.Background()
	first := task.Output{Topic: "out", Partition: 2, Key: []byte("a"), Value: []byte("1"), Timestamp: 1,
		Headers: processor.Headers{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: []byte("y")}}}
	next := task.Output{Topic: "out", Partition: 3, Key: []byte("b"), Value: []byte("2"), Timestamp: 2_000,
		Headers: processor.Headers{{Key: "h3", Value: []byte("z")}}}
	for range 100 { // the pool may hand out another record; most rounds reuse one
		rec, err := r.record(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		rec.Offset, rec.ProducerID, rec.ProducerEpoch, rec.LeaderEpoch = 42, 7, 1, 3
		rec.Attrs = kgo.RecordAttrs{}
		rec.Context = context.WithValue(ctx, franzContextKey{}, 1)
		release(rec)
		got, err := r.record(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		want := &kgo.Record{Topic: "out", Partition: 3, Key: []byte("b"), Value: []byte("2"), Timestamp: time.UnixMilli(2_000),
			Headers: []kgo.RecordHeader{{Key: "h3", Value: []byte("z")}}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record from the pool:\n got %+v\nwant %+v", got, want)
		}
		release(got)
	}
}

// franzContextKey stands for what a producer's caller might put in a
// record's context.
type franzContextKey struct{}
