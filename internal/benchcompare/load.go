package benchcompare

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/benchbase"
)

// Input is the shape of the prepared input.
type Input struct {
	Records, Keys, ValueBytes int
	Partitions                int32
}

// load creates topo's input and output topics under t and fills the input:
// record i has key "key-<i mod Keys>", benchbase.Value(i) as its value and
// event time base + i ms, so that a one-minute window holds 60 000 records
// and every run sees the same windows. The join's input is split in two
// halves with the same keys and times, left and right, so that each left
// record meets exactly one right record within the join window (a key
// comes back only after Keys ms, beyond the window for 10 k keys).
func load(ctx context.Context, seeds []string, topo string, t Topics, in Input, base time.Time) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ProducerLinger(20*time.Millisecond), kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return fmt.Errorf("load %s: new client: %w", t.Prefix, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics := append(t.Inputs(topo), t.Out())
	res, err := adm.CreateTopics(ctx, in.Partitions, -1, map[string]*string{"retention.ms": ptr("-1")}, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("load %s: create topics %v: %w", t.Prefix, topics, err)
	}
	var mu sync.Mutex
	var first error
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = fmt.Errorf("load: produce to %s: %w", r.Topic, err)
			}
		}
	}
	ms := base.UnixMilli()
	send := func(topic string, i, at int) {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(i%in.Keys)),
			Value: benchbase.Value(i, in.ValueBytes), Timestamp: time.UnixMilli(ms + int64(at))}, promise)
	}
	if topo == TopoJoin {
		for j := range in.Records / 2 {
			send(t.Left(), j, j)
			send(t.Right(), j, j)
		}
	} else {
		for i := range in.Records {
			send(t.In(), i, i)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("load %s: flush: %w", t.Prefix, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

// inputRecords is how many records topo's input holds.
func inputRecords(topo string, in Input) int {
	if topo == TopoJoin {
		return in.Records / 2 * 2
	}
	return in.Records
}

func ptr(s string) *string { return &s }
