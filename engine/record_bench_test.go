package engine

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
)

// BenchmarkRecord is the committer's conversion of a task's output to a
// Kafka record from its slab, as for a changelog record (the lane hash
// header) going to the default partitioner: one per output record.
func BenchmarkRecord(b *testing.B) {
	r := &runner{}
	r.sinkParts.Store(&map[string]int32{"counts-changelog": 4})
	o := task.Output{Topic: "counts-changelog", Partition: -1, Key: []byte("key-4711"), Value: []byte("12345678"), Timestamp: 1_700_000_000_000,
		Headers: processor.Headers{{Key: lane.HashHeader, Value: []byte{0, 0, 0, 1}}}}
	ctx := context.Background()
	var slab recordSlab
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.record(ctx, &o, &slab); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecordFromSlab: records made one after another from a slab, over
// several of its arrays and with header counts from none to more than a
// slab shares, each carry their own output's fields, and what franz-go
// does to one (fill in its offset, add a header) reaches no other.
func TestRecordFromSlab(t *testing.T) {
	r := &runner{}
	r.sinkParts.Store(&map[string]int32{"out": 4})
	ctx := context.Background()
	output := func(i int) task.Output {
		o := task.Output{Topic: "out", Partition: int32(i % 4), Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)), Timestamp: int64(i)}
		for h := range i % (slabHeaders/4 + 3) {
			o.Headers = append(o.Headers, processor.Header{Key: fmt.Sprint("h", h), Value: []byte(fmt.Sprint(i))})
		}
		return o
	}
	want := func(i int) *kgo.Record {
		o := output(i)
		rec := &kgo.Record{Topic: o.Topic, Partition: o.Partition, Key: o.Key, Value: o.Value, Timestamp: time.UnixMilli(o.Timestamp)}
		for _, h := range o.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		return rec
	}
	var slab recordSlab
	n := 3*slabRecords + 7
	recs := make([]*kgo.Record, n)
	for i := range recs {
		o := output(i)
		rec, err := r.record(ctx, &o, &slab)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
	}
	for i, rec := range recs {
		// What franz-go may do to a record it produces.
		rec.Offset, rec.ProducerID, rec.LeaderEpoch = 42, 7, 3
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: "added", Value: []byte("by the client")})
		if i > 0 {
			if got := recs[i-1]; !reflect.DeepEqual(got.Headers, append(want(i-1).Headers, kgo.RecordHeader{Key: "added", Value: []byte("by the client")})) {
				t.Fatalf("record %d after record %d was changed: headers %+v", i-1, i, got.Headers)
			}
		}
	}
	for i, rec := range recs {
		w := want(i)
		w.Offset, w.ProducerID, w.LeaderEpoch = 42, 7, 3
		w.Headers = append(w.Headers, kgo.RecordHeader{Key: "added", Value: []byte("by the client")})
		if !reflect.DeepEqual(rec, w) {
			t.Fatalf("record %d from the slab:\n got %+v\nwant %+v", i, rec, w)
		}
	}
}

// TestRecordPartitionsByTopic: the slab remembers the partition count of
// the last topic a keyed record without a partition went to; records to
// topics of different counts, in runs and interleaved, each land in a
// partition of their own topic, picked by the key's hash over its count.
func TestRecordPartitionsByTopic(t *testing.T) {
	r := &runner{}
	counts := map[string]int32{"wide": 64, "narrow": 1, "mid": 3}
	r.sinkParts.Store(&counts)
	ctx := context.Background()
	var slab recordSlab
	topics := []string{"wide", "wide", "narrow", "wide", "mid", "mid", "narrow", "narrow", "wide"}
	for round := range 50 {
		for i, topic := range topics {
			key := []byte(fmt.Sprintf("key-%d-%d", round, i))
			o := task.Output{Topic: topic, Partition: -1, Key: key}
			rec, err := r.record(ctx, &o, &slab)
			if err != nil {
				t.Fatal(err)
			}
			if want := int32(lane.For(key, int(counts[topic]))); rec.Partition != want {
				t.Fatalf("round %d, record %d to %s: partition %d, want %d (of %d)", round, i, topic, rec.Partition, want, counts[topic])
			}
		}
	}
}
