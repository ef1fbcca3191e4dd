package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/epochs"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/lanes"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func headerOf(k string, v []byte) processor.Header { return processor.Header{Key: k, Value: v} }

// committer turns epochs into transactions, in order. Records of the
// epoch whose transaction is open are produced as the lanes hand them
// over, so producing overlaps processing; records of later epochs wait
// until their transaction opens.
type committer struct {
	r   *runner
	g   *generation
	ctx context.Context
	// open says a transaction is begun for the epoch being produced.
	open bool
	// stamp is the last watermark stamp written; sent counts the records
	// produced since the last commit.
	stamp int64
	sent  int

	errMu      sync.Mutex
	produceErr error

	// promised is c.promise as a func value, made once: a method value
	// handed to franz-go escapes, and would cost an allocation per
	// record where it is written.
	promised func(*kgo.Record, error)

	// slab is where the records handed to franz-go come from.
	slab recordSlab
}

func (c *committer) promise(rec *kgo.Record, err error) {
	if err == nil {
		c.g.produced(rec.Topic, rec.Partition, rec.Offset)
		return
	}
	{
		c.errMu.Lock()
		if c.produceErr == nil {
			// An ACL the principal lacks says so by name (conn.Explain).
			c.produceErr = fmt.Errorf("produce to %s[%d]: %w", rec.Topic, rec.Partition, conn.Explain(err, "write", "topic "+rec.Topic))
		}
		c.errMu.Unlock()
	}
}

func (c *committer) takeErr() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	err := c.produceErr
	c.produceErr = nil
	return err
}

// begin opens the epoch's transaction under exactly-once.
func (c *committer) begin() {
	if c.open || !c.r.sess.transactional() {
		return
	}
	if err := c.r.sess.begin(); err != nil {
		c.promise(&kgo.Record{}, fmt.Errorf("begin transaction: %w", err))
		return
	}
	c.open = true
}

func (c *committer) send(outs []task.Output) {
	if len(outs) == 0 {
		return
	}
	c.begin()
	produce := c.r.sess.produce
	c.sent += len(outs)
	var outTopic string
	var outN int64
	flushOut := func() {
		if outN > 0 {
			c.r.e.obs.out.get(outTopic).Add(outN)
		}
	}
	for i := range outs {
		// By pointer: an output is about 200 bytes, copied per record
		// otherwise.
		o := &outs[i]
		rec, err := c.r.record(c.ctx, o, &c.slab)
		if err == nil && o.Store == "" {
			err = c.r.checkSize(c.ctx, o, rec)
		}
		if err != nil {
			// tooLarge is declared only on this path: errors.As takes its
			// address, which moves it to the heap, once per output
			// record if it were declared for every record.
			var tooLarge *RecordTooLargeError
			switch isTooLarge := errors.As(err, &tooLarge); {
			case isTooLarge && c.r.s.production == handlerDeadLetter:
				// The input behind it goes to the dead-letter topic instead,
				// in this epoch's transaction; a replay writes the same one.
				rec, err = c.deadLetter(tooLarge)
				if err != nil {
					c.promise(&kgo.Record{Topic: o.Topic, Partition: o.Partition}, err)
					continue
				}
				produce(c.ctx, rec, c.promised)
				continue
			case isTooLarge && c.r.s.production == config.HandlerContinue:
				// The check depends on the record alone, so a replay of the
				// epoch skips the same records: each is skipped once in
				// what commits.
				// Counted as a drop, and warned of by the monitor at most once
				// every ten seconds with the other drops (a topic whose
				// records are all too large logged a WARN per record); each
				// one's coordinates are at DEBUG.
				if m := c.r.e.metrics; m != nil {
					m.Counter(metrics.DroppedRecords, "reason", ReasonProduction).Add(1)
				}
				c.r.e.log.Debug("sink record too large; skipped (default.production.exception.handler=continue)",
					"topic", tooLarge.Topic, "partition", tooLarge.Partition, "bytes", tooLarge.Size, "limit", tooLarge.Limit, "input", tooLarge.Origin.String())
				continue
			}
			c.promise(&kgo.Record{Topic: o.Topic, Partition: o.Partition}, err)
			continue
		}
		if o.Store == "" {
			// Outputs come in runs to one topic: the counter is looked
			// up once a run, not once a record.
			if o.Topic != outTopic {
				flushOut()
				outTopic, outN = o.Topic, 0
			}
			outN++
		}
		produce(c.ctx, rec, c.promised)
	}
	flushOut()
}

// deadLetter makes the dead-letter record for an oversized output, logs
// it and counts the drop. A dead letter too large itself (the input was)
// goes without the input's key and value.
func (c *committer) deadLetter(tooLarge *RecordTooLargeError) (*kgo.Record, error) {
	dl, err := c.r.deadLetter(c.ctx, tooLarge)
	if err != nil {
		return nil, err
	}
	rec, err := c.r.record(c.ctx, &dl, &c.slab)
	if err != nil {
		return nil, fmt.Errorf("dead letter for %s: %w", tooLarge.Origin, err)
	}
	if err := c.r.checkSize(c.ctx, &dl, rec); err != nil {
		dl.Key, dl.Value = nil, nil
		dl.Headers = dl.Headers.Add("__streams.errors.note", []byte("the input record is too large for the dead-letter topic too; only its coordinates are here"))
		if rec, err = c.r.record(c.ctx, &dl, &c.slab); err != nil {
			return nil, fmt.Errorf("dead letter for %s: %w", tooLarge.Origin, err)
		}
	}
	c.r.e.log.Warn("sink record too large; its input sent to the dead-letter topic (default.production.exception.handler=dead-letter)",
		"topic", tooLarge.Topic, "partition", tooLarge.Partition, "bytes", tooLarge.Size, "limit", tooLarge.Limit,
		"input", tooLarge.Origin.String(), "dead_letter_topic", dl.Topic)
	return rec, nil
}

// RecordTooLargeError is a sink record larger than its topic or the
// producer accepts. default.production.exception.handler decides: fail
// stops the engine with it, continue skips the record.
type RecordTooLargeError struct {
	Topic     string
	Partition int32
	// Size is the record's key, value and headers in bytes, with room
	// for its framing; Limit what the topic and producer take.
	Size, Limit int
	// Origin is the input record whose processing wrote it.
	Origin task.Origin
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("a record of %d bytes for %s[%d] is over the %d bytes it can take (the topic's max.message.bytes, or the producer's batch size); it was written while processing %s; %s=continue skips such records, dead-letter sends their input to the dead-letter topic",
		e.Size, e.Topic, e.Partition, e.Limit, e.Origin, config.ProductionHandler)
}

// Record framing: the batch header and a record's own varints and
// attributes, generously. A record within the limit by less than this is
// refused too, rather than left for the broker to refuse.
const (
	recordOverhead = 256
	// brokerMessageMax is Kafka's default message.max.bytes, for a
	// topic whose max.message.bytes cannot be read.
	brokerMessageMax = 1_048_588
)

// checkSize refuses a sink record larger than its topic takes, before it
// is produced: a broker's MESSAGE_TOO_LARGE would abort the epoch, and the
// replay would meet it again.
func (r *runner) checkSize(ctx context.Context, o *task.Output, rec *kgo.Record) error {
	size := len(rec.Key) + len(rec.Value) + recordOverhead
	for _, h := range rec.Headers {
		size += len(h.Key) + len(h.Value)
	}
	if size <= 64<<10 {
		// Far below any limit Kafka allows by default: no lookup.
		return nil
	}
	limit := r.sinkLimit(ctx, rec.Topic)
	if size <= limit {
		return nil
	}
	return &RecordTooLargeError{Topic: rec.Topic, Partition: rec.Partition, Size: size, Limit: limit, Origin: o.Origin}
}

// sinkLimit is the largest record a sink topic takes: its
// max.message.bytes, capped by the producer's batch size; looked up once.
func (r *runner) sinkLimit(ctx context.Context, topic string) int {
	r.ptMu.Lock()
	limit, ok := r.sinkLimits[topic]
	r.ptMu.Unlock()
	if ok {
		return limit
	}
	limit = brokerMessageMax
	if rcs, err := r.adm.DescribeTopicConfigs(ctx, topic); err == nil {
		if rc, err := rcs.On(topic, nil); err == nil && rc.Err == nil {
			for _, c := range rc.Configs {
				if c.Key == "max.message.bytes" && c.Value != nil {
					if n, err := strconv.Atoi(*c.Value); err == nil && n > 0 {
						limit = n
					}
				}
			}
		}
	}
	limit = min(limit, r.s.maxRequest)
	r.ptMu.Lock()
	r.sinkLimits[topic] = limit
	r.ptMu.Unlock()
	return limit
}

// fatalProduceError says a produce error would recur on every replay of
// the epoch.
func fatalProduceError(err error) bool {
	var tooLarge *RecordTooLargeError
	// An authorization failure recurs too: retrying cannot grant the ACL.
	return errors.As(err, &tooLarge) || errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) || conn.Fatal(err)
}

// commitLoop commits epochs in order, each once its cut is known and every
// lane finished it. It runs until the generation stops.
func (r *runner) commitLoop(ctx context.Context, g *generation, cuts <-chan epochCut, done chan<- struct{}, stamp int64) {
	defer close(done)
	// A commit is not cut short by the generation's end: a reset waits
	// for it, and a transaction left open would refuse the next Begin.
	// Only a shutdown past its deadline cancels ctx (runner.abandonCommit).
	c := &committer{r: r, g: g, ctx: ctx, stamp: stamp}
	c.promised = c.promise
	b := epochs.New[[]task.Output, epochCut, watermark.Partition](len(g.lanes), 1)
	for {
		select {
		case <-g.ctx.Done():
			if c.open {
				// Abandon the open transaction; the next incarnation of
				// the transactional id, or the timeout, aborts it.
				if _, err := r.sess.end(c.ctx, kgo.TryAbort); err != nil {
					r.e.log.Warn("abort the open transaction at stop", "err", err)
				}
			}
			return
		case cut := <-cuts:
			if err := b.Cut(cut.epoch, cut); err != nil {
				r.failCommit(g, err)
				return
			}
		case rep := <-g.sink.Reports:
			outs, now, give, err := b.Report(epochs.Report[[]task.Output, watermark.Partition]{
				Epoch: rep.Epoch, Lane: rep.Lane, Outs: rep.Outs, Empty: len(rep.Outs) == 0,
				Credit: rep.Credit, Final: rep.Final, PartTimes: rep.PartTimes})
			if err != nil {
				r.failCommit(g, err)
				return
			}
			if now {
				c.send(outs)
				lanes.RecycleOuts(outs)
				g.sink.Held.Give(give)
			}
		}
		for {
			ep, ok := b.Ready()
			if !ok {
				break
			}
			next := ep.N
			p := &ep.Cut
			start := time.Now()
			if err := r.commit(c, p, ep.PartTimes); err != nil {
				r.commitFailed.Store(&err)
				// Wake whoever waits on the lanes or on this loop: the
				// dispatcher may be blocked handing a lane records, the
				// lanes handing this loop reports.
				g.cancel()
				return
			}
			if err := r.commitLocal(g, next); err != nil {
				r.commitFailed.Store(&err)
				g.cancel()
				return
			}
			took := time.Since(start)
			r.commitTook.Store(int64(took))
			r.e.committed(p.records, took)
			r.e.log.Debug("epoch committed", "epoch", next, "records", p.records, "stamp", p.stamp, "commit", took)
			r.ptMu.Lock()
			for k, v := range ep.PartTimes {
				if old, ok := r.knownPartTimes[k]; !ok || v > old {
					r.knownPartTimes[k] = v
				}
			}
			r.ptMu.Unlock()
			// Lanes hand the next epoch's records over without credit
			// from here on: it is the one being produced. Before the
			// dispatcher learns of the commit, so that no lane takes
			// credit for the epoch the dispatcher's next barrier closes.
			g.sink.Committed.Store(next)
			r.committedEpoch.Store(next)
			r.purge.committed(p.offsets)
			r.e.addStats(func(s *Stats) {
				s.Committed++
				s.Records += p.records
				s.Watermark = p.stamp
			})
			// The next epoch's transaction may open: what was held for
			// it is produced now.
			release, give := b.Committed()
			for _, outs := range release {
				c.send(outs)
				lanes.RecycleOuts(outs)
			}
			g.sink.Held.Give(give)
		}
	}
}

// failCommit stops the generation on a failure of the committer's own
// bookkeeping (a lane or the dispatcher handed over what it could not):
// the engine stops with it rather than commit what it cannot account for.
func (r *runner) failCommit(g *generation, err error) {
	err = fmt.Errorf("engine: committer: %w", err)
	r.commitFailed.Store(&err)
	g.cancel()
}

// commit ends an epoch: its watermark stamp and source offsets join the
// records already produced, in one transaction under exactly-once, or
// flushed before the offsets are committed under at-least-once.
func (r *runner) commit(c *committer, cut *epochCut, partTimes map[watermark.Partition]int64) error {
	ctx := c.ctx
	r.ptMu.Lock()
	for k, v := range r.knownPartTimes {
		if cur, ok := partTimes[k]; !ok || v > cur {
			partTimes[k] = v
		}
	}
	r.ptMu.Unlock()
	offsets, err := r.offsetsWithMetadata(cut, partTimes)
	if err != nil {
		return err
	}
	newStamp := cut.stamp != c.stamp || cut.final
	if c.sent == 0 && !newStamp && cut.records == 0 && len(cut.markers) == 0 {
		// An epoch cut only to tick wall-clock work, which wrote
		// nothing: there is nothing to commit.
		return nil
	}
	c.sent = 0
	c.begin()
	if newStamp {
		r.sess.produce(ctx, r.stampRecord(cut.stamp, cut.final), c.promised)
		c.stamp = cut.stamp
	}
	// After every record of the epoch, before the next epoch's: what the
	// markers say holds for everything before them (subClocks).
	for _, m := range cut.markers {
		r.sess.produce(ctx, m, c.promised)
	}

	if r.sess.transactional() {
		hook := kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
			ids := map[string][16]byte{}
			for _, t := range req.Topics {
				ids[t.Topic] = t.TopicID
			}
			req.Topics = req.Topics[:0]
			for _, t := range slices.Sorted(maps.Keys(offsets)) {
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic, rt.TopicID = t, ids[t]
				for _, part := range slices.Sorted(maps.Keys(offsets[t])) {
					o := offsets[t][part]
					rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch = part, o.offset, -1
					md := o.metadata
					rp.Metadata = &md
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			return nil
		})
		// Flush before deciding: a produce that failed must abort.
		if err := r.cl.Flush(ctx); err != nil {
			c.promise(&kgo.Record{}, err)
		}
		if !cut.final {
			r.awaitJoined(ctx)
		}
		produceErr := c.takeErr()
		try := kgo.TryCommit
		if produceErr != nil {
			try = kgo.TryAbort
		}
		// An epoch of a generation that lost a partition never commits.
		// The group may have handed it to another instance, which reads
		// its offsets and state as of the last commit and processes from
		// there; committing the epoch now would count its records a
		// second time. franz-go aborts a transaction that a revocation
		// overlaps, but forgets the revocation once any End returns: one
		// that lands between the previous commit and this one would be
		// lost (found on Apache Kafka by TestRebalanceExactlyOnce).
		// onAssign counts every revocation and loss before the group may
		// move on, so this check covers what franz-go's does not, and
		// franz-go's covers a revocation that arrives after it. A
		// rebalance that only gave the instance more partitions takes
		// nothing from it (the cooperative protocol revokes a partition
		// from its owner, and tells it, before any other member is given
		// it): the epoch commits, and the stores it wrote may be kept
		// (keep.go).
		end := epochs.End{Rebalanced: r.revokes.Load() != c.g.revokes, ProduceFailed: produceErr != nil,
			ProduceFatal: produceErr != nil && fatalProduceError(produceErr)}
		if !end.Try() {
			try = kgo.TryAbort
		}
		committed, err := r.sess.end(hook, try)
		c.open = false
		got := epochs.Ended{Committed: committed, Failed: err != nil,
			FailedFatal: err != nil && fatalTxnError(err), AbortedUnstored: errors.Is(err, errAbortedUnstored)}
		if err == nil && !committed {
			// franz-go reports an abort also when its EndTxn failed in a
			// way it answers by "retrying as abort" without sending
			// another request: the transaction may still be open on the
			// broker, and the next epoch's records would join it.
			if open, derr := r.txnOpen(ctx); derr != nil || open {
				got.StillOpen = true
				err = fmt.Errorf("after the abort the broker reports the transaction still open (describe error: %v)", derr)
			}
		}
		switch outcome, why := epochs.Decide(end, got); outcome {
		case epochs.Committed:
			return nil
		case epochs.Fatal:
			if produceErr != nil && err == nil {
				// Replaying the epoch would fail the same way, forever.
				return fmt.Errorf("epoch %d: %s: %w", cut.epoch, why, produceErr)
			}
			return fmt.Errorf("end transaction for epoch %d: %s: %w", cut.epoch, why, err)
		case epochs.Unknown:
			return fmt.Errorf("end transaction for epoch %d: %w: %s: %w", cut.epoch, errCommitUnknown, why, err)
		default:
			cause := err
			if cause == nil {
				cause = produceErr
			}
			if cause == nil {
				return fmt.Errorf("epoch %d: %w: %s", cut.epoch, errAborted, why)
			}
			return fmt.Errorf("epoch %d: %w: %s: %w", cut.epoch, errAborted, why, cause)
		}
	}

	if err := r.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush epoch %d: %w", cut.epoch, err)
	}
	if err := c.takeErr(); err != nil {
		return fmt.Errorf("epoch %d: %w", cut.epoch, err)
	}
	if len(offsets) == 0 {
		return nil
	}
	toCommit := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range offsets {
		toCommit[t] = map[int32]kgo.EpochOffset{}
		for part, o := range ps {
			toCommit[t][part] = kgo.EpochOffset{Epoch: -1, Offset: o.offset}
		}
	}
	hook := kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			t := &req.Topics[i]
			for j := range t.Partitions {
				if o, ok := offsets[t.Topic][t.Partitions[j].Partition]; ok {
					md := o.metadata
					t.Partitions[j].Metadata = &md
				}
			}
		}
		return nil
	})
	var commitErr error
	r.cl.CommitOffsetsSync(hook, toCommit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && commitErr == nil {
					commitErr = fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err)
				}
			}
		}
	})
	if commitErr != nil {
		// The records are out but the offsets are not: at-least-once
		// reprocesses the epoch, which is what it promises.
		return fmt.Errorf("commit offsets of epoch %d: %w: %w", cut.epoch, errAborted, commitErr)
	}
	return nil
}

// txnOpen asks the transaction coordinator whether this instance's
// transaction is still open (Ongoing) after the client ended it.
func (r *runner) txnOpen(ctx context.Context) (bool, error) {
	id, err := kafka.TransactionalID(r.e.cfg)
	if err != nil {
		return false, err
	}
	d, err := r.adm.DescribeTransactions(ctx, id)
	if err != nil {
		return false, err
	}
	t, ok := d[id]
	switch {
	case !ok:
		return false, fmt.Errorf("transactional id %s not described", id)
	case t.Err != nil:
		return false, t.Err
	}
	return t.State == "Ongoing", nil
}

// fatalTxnError says no new session can cure err: the cluster refuses
// this instance. Fencing is not among them: a broker that aborted the
// transaction itself (a timeout, or the embedded broker's recovery after
// a kill) bumps the producer epoch too, and a new session cures that. An
// instance fenced again and again is another story (recoverSession).
func fatalTxnError(err error) bool {
	for _, e := range []error{kerr.TransactionalIDAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.UnsupportedVersion, kerr.UnsupportedForMessageFormat,
		kgo.ErrClientClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

type offsetMeta struct {
	offset   int64
	metadata string
}

// offsetsWithMetadata encodes each partition's partition time in Kafka
// Streams' TopicPartitionMetadata, which the next start seeds the
// watermark from, and the epoch's floor (the barrier's stamp, when event
// time is known) under kafka.FloorKey, which the next owner of the
// partition's task resumes its floor from.
func (r *runner) offsetsWithMetadata(cut *epochCut, partTimes map[watermark.Partition]int64) (map[string]map[int32]offsetMeta, error) {
	out := map[string]map[int32]offsetMeta{}
	for t, ps := range cut.offsets {
		out[t] = map[int32]offsetMeta{}
		stamp := cut.stamp
		if sub, ok := r.topicSub[t]; ok && cut.subStamps != nil {
			stamp = cut.subStamps[sub]
		}
		for p, off := range ps {
			wp := watermark.Partition{Topic: t, Partition: p}
			var proc map[string]int64
			if m := cut.marks[wp]; len(m) > 0 {
				proc = maps.Clone(m)
			}
			if stamp >= 0 {
				if proc == nil {
					proc = map[string]int64{}
				}
				proc[kafka.FloorKey] = stamp
			}
			pt, ok := partTimes[wp]
			if !ok {
				pt, ok = r.committedPartTime(wp)
			}
			if !ok {
				pt = kafka.UnknownPartitionTime
			}
			md, err := kafka.TopicPartitionMetadata{PartitionTime: pt, Processor: proc}.Encode()
			if err != nil {
				return nil, fmt.Errorf("offset metadata of %s[%d]: %w", t, p, err)
			}
			out[t][p] = offsetMeta{offset: off, metadata: md}
		}
	}
	return out, nil
}

// committedPartTime is a partition's time as last known to the
// dispatcher; a partition that had no record in an epoch keeps it.
func (r *runner) committedPartTime(p watermark.Partition) (int64, bool) {
	r.ptMu.Lock()
	defer r.ptMu.Unlock()
	v, ok := r.knownPartTimes[p]
	return v, ok
}

// record converts an output to a Kafka record with its partition chosen:
// the task's when it chose one, else Kafka's default for the key. The
// record comes from s.
func (r *runner) record(ctx context.Context, o *task.Output, s *recordSlab) (*kgo.Record, error) {
	rec := s.next(len(o.Headers))
	rec.Topic, rec.Key, rec.Value = o.Topic, o.Key, o.Value
	rec.Timestamp = time.UnixMilli(o.Timestamp)
	rec.Partition = o.Partition
	for _, h := range o.Headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	if o.Partition < 0 {
		n := s.parts
		if n == 0 || o.Topic != s.partsTopic {
			var err error
			if n, err = r.partitionCount(ctx, o.Topic); err != nil {
				return nil, err
			}
			s.partsTopic, s.parts = o.Topic, n
		}
		switch {
		case o.Key == nil:
			rec.Partition = int32(r.rr.Add(1) % uint32(n))
		case o.KeyHashed:
			rec.Partition = int32(lane.For32(o.KeyHash, int(n)))
		default:
			rec.Partition = int32(lane.For(o.Key, int(n)))
		}
	}
	return rec, nil
}

// partitionCount is a sink topic's partition count, looked up once.
func (r *runner) partitionCount(ctx context.Context, topic string) (int32, error) {
	if m := r.sinkParts.Load(); m != nil {
		if n, ok := (*m)[topic]; ok {
			return n, nil
		}
	}
	var details map[string]int32
	for attempt := 0; ; attempt++ {
		td, err := r.adm.ListTopics(ctx, topic)
		if err == nil {
			if d, ok := td[topic]; ok && d.Err == nil && len(d.Partitions) > 0 {
				details = map[string]int32{topic: int32(len(d.Partitions))}
				break
			}
			err = errors.New("no such topic")
			if d, ok := td[topic]; ok && d.Err != nil {
				err = d.Err
			}
		}
		if attempt >= 2 {
			if r.s.createTopic {
				// A sink topic that does not exist yet is created with one
				// partition, as a broker with auto-creation would.
				if _, cerr := r.adm.CreateTopic(ctx, 1, -1, nil, topic); cerr == nil {
					details = map[string]int32{topic: 1}
					break
				}
			}
			return 0, fmt.Errorf("sink topic %s: %w", topic, err)
		}
		// A topic created a moment ago may not be in the metadata yet.
		if err := missingTopicBackoff.Wait(ctx, attempt+1); err != nil {
			return 0, fmt.Errorf("sink topic %s: %w", topic, err)
		}
	}
	r.ptMu.Lock()
	next := map[string]int32{topic: details[topic]}
	if m := r.sinkParts.Load(); m != nil {
		maps.Copy(next, *m)
		next[topic] = details[topic]
	}
	r.sinkParts.Store(&next)
	r.ptMu.Unlock()
	return details[topic], nil
}

// stampRecord records a barrier's watermark stamp; the next start seeds
// every lane's floor from the last committed one.
func (r *runner) stampRecord(stamp int64, final bool) *kgo.Record {
	v := binary.BigEndian.AppendUint64(nil, uint64(stamp))
	if final {
		v = append(v, 1)
	} else {
		v = append(v, 0)
	}
	return &kgo.Record{Topic: r.stampTopic, Partition: 0, Key: []byte(r.s.appID), Value: v}
}

// restoreStamp reads the last committed barrier stamp, task.Unknown when
// there is none.
func (r *runner) restoreStamp(ctx context.Context) (int64, error) {
	stamp := task.Unknown
	_, err := kafka.ReadToEnd(ctx, r.s.seeds, r.stampTopic, kafka.FromLogStart(0), func(rec *kgo.Record) error {
		if string(rec.Key) == r.s.appID && len(rec.Value) >= 8 {
			stamp = int64(binary.BigEndian.Uint64(rec.Value))
		}
		return nil
	}, r.s.dialOpts...)
	if err != nil {
		return 0, fmt.Errorf("engine: restore watermark stamp from %s: %w", r.stampTopic, err)
	}
	return stamp, nil
}

// awaitJoined holds an epoch's commit while the group rebalances, until
// the join completes, so that an instance that keeps its partitions
// commits the epoch in flight instead of aborting it. franz-go builds the
// transaction's offset commit with the group generation current when End
// is called and then holds it until the join and sync are done, so a
// commit that meets a rebalance goes out with the old generation, is
// refused (ILLEGAL_GENERATION), and the epoch is aborted and reprocessed:
// a stall of a reset on an instance whose tasks did not move (issue 40's
// BenchmarkRebalanceStall). Waiting here costs nothing franz-go would not
// have waited anyway. A rebalance that changes this instance's partitions
// still aborts the epoch (r.rebalanced, and franz-go's own revocation
// check). The final barrier's commit does not wait: the dispatcher no
// longer polls then, and franz-go reports a completed join only through
// a poll. Nor does one past maxJoinWait, which then aborts as before.
func (r *runner) awaitJoined(ctx context.Context) {
	deadline := time.Now().Add(maxJoinWait)
	for r.joining.Load() && !r.rebalanced.Load() && !r.closing.Load() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// maxJoinWait bounds awaitJoined: a join that waits for a member that
// died waits out its session timeout, which is worth waiting for, but not
// for ever.
const maxJoinWait = time.Minute
