package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/internal/backoff"
)

// LogStart as a start offset in ReadToEnd's from is the partition's log
// start offset: its oldest record still kept. It is the value Kafka's
// ListOffsets takes for "earliest".
const LogStart int64 = -2

// Positions maps partitions of one topic to offsets in them.
type Positions map[int32]int64

// FromLogStart is from for ReadToEnd reading every partition given from
// its log start.
func FromLogStart(partitions ...int32) Positions {
	from := make(Positions, len(partitions))
	for _, p := range partitions {
		from[p] = LogStart
	}
	return from
}

var (
	// ErrUnknownTopic is returned, wrapped, when a topic to read does not
	// exist.
	ErrUnknownTopic = errors.New("topic does not exist")
	// ErrUnknownPartition is returned, wrapped, when a partition to read
	// is not one of its topic's.
	ErrUnknownPartition = errors.New("partition does not exist")
)

// Fetch sizes of ReadToEnd: kgo's defaults for a whole response, and a
// larger slice per partition than kgo's 1 MiB, because a restore reads
// few partitions, each as fast as it can.
const (
	readMaxBytes          = 50 << 20
	readMaxPartitionBytes = 8 << 20
	// readMaxWait bounds how long a broker holds a fetch that finds
	// nothing to return. A read below the end always has something,
	// unless the log has a hole up to its end (see ReadToEnd); this is
	// then what it costs to find out.
	readMaxWait = 250 * time.Millisecond
)

// ReadToEnd reads topic's partitions, each from its offset in from (or
// LogStart) up to its end as it stood when the read began, and hands every
// committed data record to fn, in offset order within a partition. It
// returns the offset each partition was read up to: its end, the offset
// the next read would start from.
//
// This is how a state store is restored from its changelog, and a changelog
// written under exactly-once needs care on two counts:
//
//   - Records are read READ COMMITTED: a record of an aborted transaction
//     never reaches fn.
//   - The end is the partition's last stable offset (LSO) when the read
//     begins: the first offset of its oldest open transaction, or the
//     high watermark when none is open. Records at or past it, produced
//     while the read goes on, are not read. The offsets just below the end
//     often hold no record fn could see: commit and abort markers (control
//     records, one offset each), records of aborted transactions, or
//     nothing at all where compaction removed records. So the reader does
//     not wait for a record at end-1; it tracks the position the fetched
//     batches carry it to, markers, aborted and emptied batches included,
//     and stops when the position reaches the end. A fetch that returns no
//     batch at all below a last stable offset at or past the end shows that
//     only a hole remains, and ends the read too.
//
// A partition already at its end returns at once. With nothing in from,
// ReadToEnd returns without contacting the cluster.
//
// ReadToEnd makes its own client from seeds and opts; opts are for
// connecting (TLS, SASL, client id), not for consuming. It fails with an
// error wrapping ErrUnknownTopic or ErrUnknownPartition when what it is to
// read does not exist, wrapping kerr.OffsetOutOfRange when a start offset
// is past the end or before the log start (the records between were
// deleted, and a store restored from there would miss them), with the
// error of fn, wrapped with the record's topic, partition and offset, and
// with ctx.Err() when ctx is done. Errors a broker may recover from, such as
// a leader moving, are retried until ctx is done.
func ReadToEnd(ctx context.Context, seeds []string, topic string, from Positions, fn func(*kgo.Record) error, opts ...kgo.Opt) (Positions, error) {
	return readTo(ctx, seeds, topic, from, fn, false, opts)
}

// ReadToEndSettled is ReadToEnd with another end: the high watermark when
// the read begins, instead of the last stable offset. Every transaction
// that wrote below it, open or committing at that moment, is waited for
// to end, and what it committed is read. It is how a store taken over
// from another instance is restored: the instance that gave the partition
// up may have committed its last transaction a moment ago, and Apache
// Kafka writes the commit markers of one transaction to its partitions
// one by one, so the group's offsets can already show that transaction
// while a changelog partition's last stable offset still stops before it.
// Restoring only up to that offset would then lose the transaction's
// state changes, though its input is never read again (the real broker
// tests found it: counts 21..30 written twice, each key ten short). A
// transaction open at the start that is never ended holds the read until
// the broker aborts it after its transaction timeout, or until ctx is
// done.
func ReadToEndSettled(ctx context.Context, seeds []string, topic string, from Positions, fn func(*kgo.Record) error, opts ...kgo.Opt) (Positions, error) {
	return readTo(ctx, seeds, topic, from, fn, true, opts)
}

// ReadToEndSettledWithin is ReadToEndSettled fetching at most
// partitionBytes of each partition at once (8 MiB otherwise; a batch
// larger than that still comes whole, as Kafka sends it). A fetch is
// decoded whole before fn sees its first record, so this bounds what a
// read holds: a restore that must not hold much asks for less.
func ReadToEndSettledWithin(ctx context.Context, seeds []string, topic string, from Positions, partitionBytes int, fn func(*kgo.Record) error, opts ...kgo.Opt) (Positions, error) {
	return readWithin(ctx, seeds, topic, from, fn, true, int32(min(max(partitionBytes, 1), readMaxBytes)), opts)
}

func readTo(ctx context.Context, seeds []string, topic string, from Positions, fn func(*kgo.Record) error, settled bool, opts []kgo.Opt) (Positions, error) {
	return readWithin(ctx, seeds, topic, from, fn, settled, readMaxPartitionBytes, opts)
}

func readWithin(ctx context.Context, seeds []string, topic string, from Positions, fn func(*kgo.Record) error, settled bool, partitionBytes int32, opts []kgo.Opt) (Positions, error) {
	if len(from) == 0 {
		return Positions{}, nil
	}
	for _, p := range slices.Sorted(maps.Keys(from)) {
		if o := from[p]; o < 0 && o != LogStart {
			return nil, fmt.Errorf("read %s[%d] to end: start offset %d is neither an offset nor LogStart", topic, p, o)
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("read %s to end: new client: %w", topic, err)
	}
	defer cl.Close()

	r := &reader{cl: cl, adm: kadm.NewClient(cl), topic: topic, fn: fn, settled: settled, decompressor: kgo.DefaultDecompressor(), partitionBytes: partitionBytes}
	if l, ok := cl.OptValue(kgo.WithLogger).(kgo.Logger); ok && l != nil {
		r.log = l
	}
	pos, err := r.run(ctx, from)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return pos, err
}

// reader is one ReadToEnd.
type reader struct {
	cl           *kgo.Client
	adm          *kadm.Client
	topic        string
	topicID      [16]byte
	fn           func(*kgo.Record) error
	decompressor kgo.Decompressor
	// settled reads to the high watermark, not the last stable offset
	// (ReadToEndSettled).
	settled bool
	// log is the client's logger (kgo.WithLogger among the options), for
	// the warning of a settled read that waits on a transaction.
	log kgo.Logger
	// partitionBytes is the most a fetch asks of one partition.
	partitionBytes int32
}

// stallAfter is how long a settled read may wait on an open transaction
// before it says, once per stallAfter, which transactions it waits for.
// A variable for the tests.
var stallAfter = 15 * time.Second

// cursor is where the read of one partition is.
type cursor struct {
	partition int32
	pos, end  int64
	// leader and epoch are the partition's leader as last learnt from
	// metadata; leader is -1 when there is none.
	leader, epoch int32
	// lso is the last stable offset the last fetch answered, -1 before.
	lso int64
}

func (r *reader) run(ctx context.Context, from Positions) (Positions, error) {
	cursors, err := r.start(ctx, from)
	if err != nil {
		return nil, err
	}
	out := make(Positions, len(cursors))
	open := make([]*cursor, 0, len(cursors))
	for _, c := range cursors {
		if c.pos >= c.end {
			out[c.partition] = c.end
			continue
		}
		open = append(open, c)
	}

	wait := retries{}
	moved, reported := time.Now(), time.Time{}
	for len(open) > 0 {
		before := positions(open)
		refresh := slices.ContainsFunc(open, func(c *cursor) bool { return c.leader < 0 })
		for _, cs := range byLeader(open) {
			stale, err := r.fetch(ctx, cs)
			if err != nil {
				return nil, err
			}
			refresh = refresh || stale
		}
		still := open[:0]
		for _, c := range open {
			if c.pos >= c.end {
				out[c.partition] = c.end
				continue
			}
			still = append(still, c)
		}
		open = still
		if !slices.Equal(before, positions(open)) || len(before) != len(open) {
			moved = time.Now()
		} else if r.settled && time.Since(moved) > stallAfter && time.Since(reported) > stallAfter {
			reported = time.Now()
			r.reportStall(ctx, open, time.Since(moved))
		}
		if !refresh {
			wait.reset()
			continue
		}
		if err := wait.sleep(ctx); err != nil {
			return nil, err
		}
		if err := r.locate(ctx, open); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func positions(cs []*cursor) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.pos
	}
	return out
}

// reportStall logs what a settled read has been waiting on for waited:
// per partition its position, the last stable offset and the end, and
// the open transactions that hold the last stable offset back (their
// producers, transactional ids and states, from DescribeProducers and
// ListTransactions), which an operator can abort with
// kafka-transactions.sh if they hang.
func (r *reader) reportStall(ctx context.Context, open []*cursor, waited time.Duration) {
	if r.log == nil || r.log.Level() < kgo.LogLevelWarn {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ps := make([]int32, len(open))
	for i, c := range open {
		ps[i] = c.partition
	}
	var held []string
	var pids []int64
	set := kadm.TopicsSet{}
	set.Add(r.topic, ps...)
	described, err := r.adm.DescribeProducers(ctx, set)
	if err == nil {
		described.EachPartition(func(p kadm.DescribedProducersPartition) {
			for _, d := range p.ActiveProducers.Sorted() {
				if d.CurrentTxnStartOffset >= 0 {
					held = append(held, fmt.Sprintf("%d: producer %d epoch %d from offset %d", p.Partition, d.ProducerID, d.ProducerEpoch, d.CurrentTxnStartOffset))
					pids = append(pids, d.ProducerID)
				}
			}
		})
	}
	var txns []string
	finished := map[int64]string{} // producer id -> transactional id, for coordinators with nothing open
	if len(pids) > 0 {
		if listed, err := r.adm.ListTransactions(ctx, pids, nil); err == nil {
			for _, l := range listed.Sorted() {
				txns = append(txns, fmt.Sprintf("%s (producer %d) %s", l.TxnID, l.ProducerID, l.State))
				switch l.State {
				case "CompleteCommit", "CompleteAbort", "Empty":
					finished[l.ProducerID] = l.TxnID
				}
			}
		}
	}
	var where []string
	for _, c := range open {
		where = append(where, fmt.Sprintf("%d at %d, stable to %d, end %d", c.partition, c.pos, c.lso, c.end))
	}
	// A partition that still holds a transaction its coordinator has
	// finished lost the marker (seen on Apache Kafka after a SIGKILL:
	// the coordinator said CompleteCommit, the changelog had no commit
	// marker); nothing will ever end it, so say how to.
	if len(finished) > 0 {
		described.EachPartition(func(p kadm.DescribedProducersPartition) {
			for _, d := range p.ActiveProducers.Sorted() {
				if id, ok := finished[d.ProducerID]; ok && d.CurrentTxnStartOffset >= 0 {
					r.log.Log(kgo.LogLevelError, "hanging transaction: its coordinator finished it, but the partition has no marker for it, so the read cannot end; "+
						"inspect with kafka-transactions.sh find-hanging, and end it with kafka-transactions.sh abort (an abort drops its records from this partition)",
						"topic", r.topic, "partition", p.Partition, "producer_id", d.ProducerID, "producer_epoch", d.ProducerEpoch,
						"transactional_id", id, "start_offset", d.CurrentTxnStartOffset,
						"abort", fmt.Sprintf("kafka-transactions.sh --bootstrap-server BROKER abort --topic %s --partition %d --start-offset %d", r.topic, p.Partition, d.CurrentTxnStartOffset))
				}
			}
		})
	}
	r.log.Log(kgo.LogLevelWarn, "restoration waits for open transactions to end", "topic", r.topic, "waited", waited.Round(time.Second),
		"partitions", strings.Join(where, "; "), "open_transactions", strings.Join(held, "; "), "transactional_ids", strings.Join(txns, "; "), "describe_err", err)
}

// start looks the topic up and returns a cursor for every partition of
// from, sorted by partition, with its start, its end and its leader.
func (r *reader) start(ctx context.Context, from Positions) ([]*cursor, error) {
	cursors := make([]*cursor, 0, len(from))
	fromStart := false
	for _, p := range slices.Sorted(maps.Keys(from)) {
		cursors = append(cursors, &cursor{partition: p, pos: from[p], lso: -1})
		fromStart = fromStart || from[p] == LogStart
	}
	if err := r.locate(ctx, cursors); err != nil {
		return nil, err
	}

	// The committed (read_committed) end offset is the LSO; the plain
	// end offset would be the high watermark, which an open transaction's
	// records can hold past until the transaction ends. A settled read
	// waits for that on purpose.
	list := r.adm.ListCommittedOffsets
	if r.settled {
		list = r.adm.ListEndOffsets
	}
	ends, err := list(ctx, r.topic)
	if err != nil {
		return nil, fmt.Errorf("read %s to end: list end offsets: %w", r.topic, err)
	}
	var starts kadm.ListedOffsets
	if fromStart {
		if starts, err = r.adm.ListStartOffsets(ctx, r.topic); err != nil {
			return nil, fmt.Errorf("read %s to end: list start offsets: %w", r.topic, err)
		}
	}
	for _, c := range cursors {
		if c.end, err = listed(ends, r.topic, c.partition, "end"); err != nil {
			return nil, err
		}
		if c.pos == LogStart {
			if c.pos, err = listed(starts, r.topic, c.partition, "start"); err != nil {
				return nil, err
			}
		}
		if c.pos > c.end {
			return nil, fmt.Errorf("read %s[%d] to end: start offset %d is past the end, %d: %w", r.topic, c.partition, c.pos, c.end, kerr.OffsetOutOfRange)
		}
	}
	return cursors, nil
}

func listed(l kadm.ListedOffsets, topic string, p int32, what string) (int64, error) {
	o, ok := l.Lookup(topic, p)
	switch {
	case !ok:
		return 0, fmt.Errorf("read %s[%d] to end: list %s offset: no answer for the partition", topic, p, what)
	case o.Err != nil:
		return 0, fmt.Errorf("read %s[%d] to end: list %s offset: %w", topic, p, what, o.Err)
	}
	return o.Offset, nil
}

// locate learns the topic's id and the leaders of cursors from the cluster.
func (r *reader) locate(ctx context.Context, cursors []*cursor) error {
	md, err := r.adm.Metadata(ctx, r.topic)
	if err != nil {
		return fmt.Errorf("read %s to end: metadata: %w", r.topic, err)
	}
	td, ok := md.Topics[r.topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("read %s to end: %w", r.topic, ErrUnknownTopic)
	case td.Err != nil && !kerr.IsRetriable(td.Err):
		return fmt.Errorf("read %s to end: metadata: %w", r.topic, td.Err)
	}
	r.topicID = td.ID
	for _, c := range cursors {
		pd, ok := td.Partitions[c.partition]
		switch {
		case !ok && td.Err == nil:
			return fmt.Errorf("read %s[%d] to end: the topic has %d partitions: %w", r.topic, c.partition, len(td.Partitions), ErrUnknownPartition)
		case !ok || pd.Err != nil && kerr.IsRetriable(pd.Err):
			c.leader = -1
		case pd.Err != nil:
			return fmt.Errorf("read %s[%d] to end: metadata: %w", r.topic, c.partition, pd.Err)
		default:
			c.leader, c.epoch = pd.Leader, pd.LeaderEpoch
		}
	}
	return nil
}

// byLeader groups cursors by the broker to fetch them from, in the order
// of their leaders; cursors with no known leader are left out.
func byLeader(cursors []*cursor) [][]*cursor {
	m := map[int32][]*cursor{}
	for _, c := range cursors {
		if c.leader >= 0 {
			m[c.leader] = append(m[c.leader], c)
		}
	}
	out := make([][]*cursor, 0, len(m))
	for _, l := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[l])
	}
	return out
}

// fetch fetches cursors once from their leader, all of which they share,
// hands the records below each end to fn and moves the cursors. It reports
// stale when a cursor could not move for a reason metadata may cure: its
// leader moved or is unknown, or the broker could not be reached.
func (r *reader) fetch(ctx context.Context, cursors []*cursor) (stale bool, err error) {
	if len(cursors) == 0 {
		return false, nil
	}
	leader := cursors[0].leader
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(readMaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = readMaxBytes
	req.IsolationLevel = 1 // read_committed
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: every request is complete
	rt := kmsg.NewFetchRequestTopic()
	// Versions up to 12 name the topic, later ones give its id; the
	// encoding writes the one its version has.
	rt.Topic = r.topic
	rt.TopicID = r.topicID
	byPartition := make(map[int32]*cursor, len(cursors))
	for _, c := range cursors {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = c.partition
		rp.CurrentLeaderEpoch = c.epoch
		rp.FetchOffset = c.pos
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = r.partitionBytes
		rt.Partitions = append(rt.Partitions, rp)
		byPartition[c.partition] = c
	}
	req.Topics = append(req.Topics, rt)

	kresp, err := r.cl.Broker(int(leader)).RetriableRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// The broker may be gone for good, its partitions led elsewhere.
		return true, nil
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return false, fmt.Errorf("read %s to end: fetch from broker %d: %w", r.topic, leader, err)
	}

	var parts []*kmsg.FetchResponseTopicPartition
	batches := false
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if byPartition[rp.Partition] == nil {
				continue
			}
			parts = append(parts, rp)
			batches = batches || len(rp.RecordBatches) > 0
		}
	}
	for _, rp := range parts {
		c := byPartition[rp.Partition]
		moved, err := r.consume(c, rp, batches)
		if err != nil {
			return false, err
		}
		stale = stale || !moved
	}
	if len(parts) < len(cursors) {
		// A broker that leaves partitions out of its answer no longer
		// serves them, or never did.
		stale = true
	}
	return stale, nil
}

// consume hands the records of one partition's fetch response to fn and
// moves its cursor. anyBatches is whether the response held a batch for
// any partition. It reports whether the cursor could be fetched at all;
// false asks for new metadata.
func (r *reader) consume(c *cursor, rp *kmsg.FetchResponseTopicPartition, anyBatches bool) (bool, error) {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		return false, fmt.Errorf("read %s[%d] to end: fetch offset %d is out of range, the log starting at %d: %w", r.topic, c.partition, c.pos, rp.LogStartOffset, err)
	case kerr.IsRetriable(err) || errors.Is(err, kerr.UnknownTopicID):
		return false, nil
	default:
		return false, fmt.Errorf("read %s[%d] to end: fetch at offset %d: %w", r.topic, c.partition, c.pos, err)
	}

	c.lso = rp.LastStableOffset
	if len(rp.RecordBatches) == 0 {
		// No batch while other partitions got some may just be the
		// response's size limit. With none anywhere, nothing lies
		// between the position and the last stable offset: if that
		// offset is at or past the end, so is the read.
		if !anyBatches && rp.LastStableOffset >= c.end {
			c.pos = c.end
		}
		return true, nil
	}

	// ProcessFetchPartition drops aborted records (the response lists
	// the aborted transactions it overlaps) and control records, and
	// returns the offset after the last batch it read, markers, aborted
	// and emptied batches included: the position the records alone
	// would not tell.
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:         c.pos,
		IsolationLevel: kgo.ReadCommitted(),
		Topic:          r.topic,
		Partition:      c.partition,
	}, rp, r.decompressor, nil)
	for _, rec := range fp.Records {
		if rec.Offset >= c.end {
			break
		}
		if err := r.fn(rec); err != nil {
			return false, fmt.Errorf("read %s[%d] to end: record at offset %d: %w", r.topic, c.partition, rec.Offset, err)
		}
	}
	if fp.Err != nil {
		return false, fmt.Errorf("read %s[%d] to end: fetch at offset %d: %w", r.topic, c.partition, c.pos, fp.Err)
	}
	if next <= c.pos {
		return false, fmt.Errorf("read %s[%d] to end: the broker answered a fetch at offset %d with batches that all end before it", r.topic, c.partition, c.pos)
	}
	c.pos = next
	return true, nil
}

// retries paces retries after errors a broker may recover from, through
// internal/backoff; progress starts the count again.
type retries struct{ attempt int }

// readBackoff is the delay between a read's retries.
var readBackoff = backoff.Policy{First: 50 * time.Millisecond, Max: time.Second}

func (b *retries) reset() { b.attempt = 0 }

func (b *retries) sleep(ctx context.Context) error {
	b.attempt++
	return readBackoff.Wait(ctx, b.attempt)
}
