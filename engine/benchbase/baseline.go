package benchbase

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

// CommitInterval is how often the baseline commits: under EOS it ends a
// transaction, under ALOS it flushes and commits offsets. Longer intervals
// amortise the commit over more records, at the price of latency and of
// more work redone after a crash.
const CommitInterval = 500 * time.Millisecond

// Result is what a Baseline run measured.
type Result struct {
	// Records is how many records were consumed, transformed, produced
	// and committed.
	Records int
	// Startup is from the call to the group assigning the input's
	// partitions: connecting and joining the group.
	Startup time.Duration
	// Elapsed is from the assignment to the last commit: fetching,
	// transforming, producing and committing.
	Elapsed time.Duration
	// RecordsPerSec is Records over Elapsed.
	RecordsPerSec float64
}

// Baseline runs the bare franz-go consume-transform-produce loop as group
// on the cluster at seeds: it reads topic in from the start, upper-cases
// each value and writes it with its key to topic out, committing every
// CommitInterval, and returns once n records were committed. Under
// exactlyOnce the output and the offsets are committed in transactions,
// with transactional id group, and only committed input is read; otherwise
// the output is flushed before the offsets are committed, so a crash
// could duplicate records but never lose them.
//
// The output topic must exist. Baseline blocks until ctx is done if the
// input never holds n records. extra is laid over the loop's client
// options (a later option of a kind replaces an earlier one): a
// comparison against an engine configured otherwise, e.g. with
// compression.type=snappy, gives the loop the same codec.
func Baseline(ctx context.Context, seeds []string, in, out, group string, exactlyOnce bool, n int, extra ...kgo.Opt) (Result, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.DefaultProduceTopic(out),
		// As the engine's clients: a produce retried after
		// CONCURRENT_TRANSACTIONS (a transaction begun while the last
		// one's markers are still being written) waits for a metadata
		// refresh, at most every 5 s by franz-go's default, which would
		// make the ceiling a stall now and then on Apache Kafka.
		kgo.MetadataMinAge(kafka.DefaultRetryBackoff),
		// As the engine's producer: uncompressed batches, Kafka
		// Streams' compression.type default (franz-go's own is snappy),
		// so that the ratio compares the same bytes on the wire.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	opts = append(opts, extra...)
	l := &loop{start: time.Now(), n: n}
	opts = append(opts, kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.assigned.IsZero() {
			l.assigned = time.Now()
		}
	}))
	var err error
	if exactlyOnce {
		err = l.transactional(ctx, append(opts,
			kgo.TransactionalID(group),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		))
	} else {
		err = l.plain(ctx, opts)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, fmt.Errorf("baseline %s -> %s as group %s: %w", in, out, group, err)
	}
	return l.result(), nil
}

// loop is the state one Baseline run shares between its two variants.
type loop struct {
	n                  int
	start, last        time.Time
	committed, pending int

	// mu guards what the client's goroutines write: the time of the
	// first assignment and the first produce failure.
	mu         sync.Mutex
	assigned   time.Time
	produceErr error
}

// transactional is the EOS loop: one transaction per commit interval,
// holding the output and the input offsets.
func (l *loop) transactional(ctx context.Context, opts []kgo.Opt) error {
	s, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return fmt.Errorf("new transact session: %w", err)
	}
	defer s.Close()
	var began time.Time
	inTxn := false
	for l.committed < l.n {
		fs := s.PollFetches(ctx)
		if err := l.fetchErr(ctx, fs); err != nil {
			return err
		}
		if fs.NumRecords() > 0 && !inTxn {
			if err := s.Begin(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
			inTxn, began = true, time.Now()
		}
		l.forward(ctx, fs, s.Produce)
		if !inTxn || (time.Since(began) < CommitInterval && l.committed+l.pending < l.n) {
			continue
		}
		// End flushes the output and commits the polled offsets with
		// it; it aborts when the group rebalanced meanwhile, and the
		// aborted records are polled again from the committed offsets.
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil {
			return fmt.Errorf("end transaction: %w", err)
		}
		if err := l.takeProduceErr(); err != nil {
			return err
		}
		inTxn = false
		l.settle(committed)
	}
	return nil
}

// plain is the ALOS loop: flush the output, then commit the offsets of what
// it came from.
func (l *loop) plain(ctx context.Context, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	defer cl.Close()
	lastCommit := time.Now()
	for l.committed < l.n {
		fs := cl.PollFetches(ctx)
		if err := l.fetchErr(ctx, fs); err != nil {
			return err
		}
		l.forward(ctx, fs, cl.Produce)
		if l.pending == 0 || (time.Since(lastCommit) < CommitInterval && l.committed+l.pending < l.n) {
			continue
		}
		if err := cl.Flush(ctx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		if err := l.takeProduceErr(); err != nil {
			return err
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		lastCommit = time.Now()
		l.settle(true)
	}
	return nil
}

func (l *loop) fetchErr(ctx context.Context, fs kgo.Fetches) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var err error
	fs.EachError(func(topic string, p int32, e error) {
		if err == nil {
			err = fmt.Errorf("fetch %s[%d]: %w", topic, p, e)
		}
	})
	return err
}

// forward produces the transformed records of fs through produce.
func (l *loop) forward(ctx context.Context, fs kgo.Fetches, produce func(context.Context, *kgo.Record, func(*kgo.Record, error))) {
	n := 0
	fs.EachRecord(func(r *kgo.Record) {
		produce(ctx, &kgo.Record{Key: r.Key, Value: bytes.ToUpper(r.Value)}, l.promise)
		n++
	})
	l.pending += n
}

func (l *loop) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.produceErr == nil {
		l.produceErr = fmt.Errorf("produce to %s, key %q: %w", r.Topic, r.Key, err)
	}
}

// takeProduceErr is the first produce failure; it is meaningful only
// after a flush, once every promise has run.
func (l *loop) takeProduceErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.produceErr
}

// settle accounts for the pending records after a commit that succeeded
// or not.
func (l *loop) settle(committed bool) {
	if committed {
		l.committed += l.pending
		l.last = time.Now()
	}
	l.pending = 0
}

func (l *loop) result() Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Result{Records: l.committed}
	if l.assigned.IsZero() || l.last.IsZero() {
		return r
	}
	r.Startup = l.assigned.Sub(l.start)
	r.Elapsed = l.last.Sub(l.assigned)
	if r.Elapsed > 0 {
		r.RecordsPerSec = float64(r.Records) / r.Elapsed.Seconds()
	}
	return r
}
