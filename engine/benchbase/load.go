package benchbase

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DistinctKeys is how many distinct keys Load spreads its records over.
const DistinctKeys = 10_000

// Load creates topic with partitions partitions on the cluster at seeds and
// produces n records to it: the i-th has key "key-<i mod DistinctKeys>"
// and a value of valueSize bytes (at least the length of its prefix) made
// by Value. Records go to partitions by key, as a keyed producer would
// send them. A topic that already exists is an error: loading twice would
// double what a run reads.
func Load(ctx context.Context, seeds []string, topic string, partitions int32, n, valueSize int) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		// A load is pure throughput: fill batches rather than send
		// them the moment they have a record.
		kgo.ProducerLinger(20*time.Millisecond),
		kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	if err != nil {
		return fmt.Errorf("load %s: new client: %w", topic, err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		return fmt.Errorf("load %s: create topic with %d partitions: %w", topic, partitions, err)
	}

	var (
		mu       sync.Mutex
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = fmt.Errorf("load %s: produce record %s: %w", topic, r.Key, err)
		}
	}
	for i := range n {
		key := "key-" + strconv.Itoa(i%DistinctKeys)
		cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: Value(i, valueSize)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("load %s: flush: %w", topic, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}

// Value is the value Load gives its i-th record: "value-" and i in nine
// digits, padded to size bytes with lower-case letters that depend on i
// only; never shorter than the prefix. The letters are pseudo-random
// because real values do not compress to nothing, as a run of one letter
// would.
func Value(i, size int) []byte {
	v := fmt.Appendf(make([]byte, 0, max(size, 16)), "value-%09d", i)
	// A 64-bit xorshift seeded by i: cheap, and the same on every call.
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for len(v) < size {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v = append(v, 'a'+byte(x%26))
	}
	return v
}
