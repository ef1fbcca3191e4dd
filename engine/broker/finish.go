package broker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/internal/kgotxn"
)

// repairTxIDPrefix starts the transactional id under which the broker
// commits the records and offsets of commits a kill cut short. Each repair
// takes an id of its own (the prefix and the time), so a new producer id:
// a read_committed reader skips every batch of a producer id from an
// aborted entry to that producer id's abort marker, so a copy written
// under the producer id of an earlier repair whose copy was never
// committed would be hidden along with that copy.
const repairTxIDPrefix = "__stoatctl-broker-repair-"

// repairStage, when set (by tests), is called at each step of the
// repair transaction that a kill could interrupt: "copied" once the
// copies and the reproducing entries are written, "committed" once the
// repair transaction is committed.
var repairStage func(stage string)

// commitPlan is one cut-short commit to finish: its intent, and the
// entries kfake's reload aborted although the commit had been asked for.
type commitPlan struct {
	intent intentEntry
	open   []*danglingAbort
}

// finishCommits completes every commit intent of the log that is not done.
// kfake may have written the commit markers of some of its partitions; the
// others it reloaded as aborted, and the offsets may not have reached
// their groups. The records of those partitions cannot be un-aborted in
// place, so they are copied, with their keys, values, headers and
// timestamps, into one repair transaction that also commits the intent's
// offsets a group has not reached. The records end up at new offsets at
// the end of their partitions, after whatever other producers committed
// concurrently; a partition's records from the one producer keep their
// order. The original entries get their abort markers afterwards, with the
// others recoverTxns writes.
//
// The log makes this safe to cut short too: before the repair transaction
// commits, the log says which intents it finishes (opReproducing). A later
// start that finds the repair's own commit intent leaves those intents
// alone (the repair's commit is itself finished, if need be, as any
// other); one that finds none copies the records again, and the first
// copy, never committed, is aborted like any open transaction.
func finishCommits(ctx context.Context, cl *kgo.Client, md kadm.Metadata, scans []*partScan, intents *intentLog, newTxnClient func(...kgo.Opt) (*kgo.Client, error), logger *slog.Logger) error {
	st := intents.pendingState()
	var plans []commitPlan
	for _, pid := range slices.Sorted(maps.Keys(st.pending)) {
		c := st.pending[pid]
		if by, ok := st.reproducing[pid]; ok && st.committed[by] {
			intents.done(pid) // the repair that copied its records committed
			continue
		}
		ref := producerRef{c.PID, c.Epoch}
		var kinds markerKinds
		plan := commitPlan{intent: c}
		for _, ps := range scans {
			m := ps.markers[ref]
			kinds.commit, kinds.abort = kinds.commit || m.commit, kinds.abort || m.abort
			for i := range ps.dangling {
				if d := &ps.dangling[i]; d.pid == c.PID && d.epoch == c.Epoch {
					plan.open = append(plan.open, d)
				}
			}
		}
		if len(plan.open) == 0 && kinds.abort && !kinds.commit {
			// kfake ended it with abort markers: the commit was refused
			// (a timed-out or fenced transaction).
			intents.done(pid)
			continue
		}
		plans = append(plans, plan)
	}
	if len(plans) == 0 {
		return nil
	}

	names := map[string]string{} // topic id (hex) -> name
	for name, td := range md.Topics {
		names[hex.EncodeToString(td.ID[:])] = name
	}
	ids := map[string][16]byte{}
	for name, td := range md.Topics {
		ids[name] = td.ID
	}
	offsets, err := offsetsBehind(ctx, kadm.NewClient(cl), plans, names)
	if err != nil {
		return err
	}
	var copies int
	for _, p := range plans {
		copies += len(p.open)
	}
	if copies == 0 && len(offsets) == 0 {
		// Every partition has its commit marker and every group its
		// offsets: the commit had finished.
		for _, p := range plans {
			intents.done(p.intent.PID)
		}
		return nil
	}

	txid := repairTxIDPrefix + strconv.FormatInt(time.Now().UnixNano(), 10)
	tc, err := newTxnClient(kgo.TransactionalID(txid), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return fmt.Errorf("finish cut-short commits: %w", err)
	}
	defer tc.Close()
	if err := tc.BeginTransaction(); err != nil {
		return fmt.Errorf("finish cut-short commits: begin: %w", err)
	}
	var copied int
	written := map[string]int32{}
	for _, p := range plans {
		for _, d := range p.open {
			ps := scanOf(scans, d)
			recs, err := openRecords(ctx, cl, ps, d)
			if err != nil {
				return fmt.Errorf("finish the commit of producer id %d: %s[%d]: %w", d.pid, d.topic, d.partition, err)
			}
			if err := tc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return fmt.Errorf("finish the commit of producer id %d: copy to %s[%d]: %w", d.pid, d.topic, d.partition, err)
			}
			copied += len(recs)
			if len(recs) > 0 {
				written[d.topic] = d.partition
			}
			d.reproduced = true
		}
	}
	// The offsets go in by a request of our own, which franz-go does not
	// count: without this wait it could abort the copies silently.
	if err := kgotxn.AwaitProduceMetadata(ctx, tc, written); err != nil {
		return fmt.Errorf("finish cut-short commits: %w", err)
	}
	pid, epoch, err := tc.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("finish cut-short commits: %w", err)
	}
	if err := commitTxnOffsets(ctx, tc, txid, pid, epoch, offsets, ids); err != nil {
		return fmt.Errorf("finish cut-short commits: %w", err)
	}
	by := producerRef{pid, epoch}
	for _, p := range plans {
		if err := intents.appendReproducing(p.intent, by); err != nil {
			return fmt.Errorf("finish cut-short commits: %w", err)
		}
	}
	if repairStage != nil {
		repairStage("copied")
	}
	if err := endRepair(ctx, tc, txid, pid, epoch, copied); err != nil {
		return fmt.Errorf("finish cut-short commits: commit: %w", err)
	}
	if repairStage != nil {
		repairStage("committed")
	}
	intents.done(pid)
	for _, p := range plans {
		intents.done(p.intent.PID)
		logger.Warn("finished a commit cut short by an unclean stop", "component", "broker",
			"producer_id", p.intent.PID, "epoch", p.intent.Epoch, "transactional_id", p.intent.TxID,
			"partitions_copied", len(p.open), "records_copied", copied, "offsets_committed", len(offsets))
	}
	return nil
}

func scanOf(scans []*partScan, d *danglingAbort) *partScan {
	for _, ps := range scans {
		if ps.topic == d.topic && ps.partition == d.partition {
			return ps
		}
	}
	return nil
}

// openRecords reads, read_uncommitted, the records of d's producer id and
// epoch from d's first offset to the end of the partition, as records to
// produce again.
func openRecords(ctx context.Context, cl *kgo.Client, ps *partScan, d *danglingAbort) ([]*kgo.Record, error) {
	var out []*kgo.Record
	dec := kgo.DefaultDecompressor()
	for off := d.first; off < ps.hw; {
		part, err := fetchAt(ctx, cl, ps.id, ps.topic, ps.partition, ps.leader, off, 0)
		if err != nil {
			return nil, err
		}
		next, err := eachBatch(part.RecordBatches, func(*kmsg.RecordBatch) error { return nil })
		if err != nil {
			return nil, err
		}
		if next <= off {
			return nil, fmt.Errorf("offset %d: a fetch returned no whole record batch (high watermark %d)", off, ps.hw)
		}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: off, IsolationLevel: kgo.ReadUncommitted(), Topic: ps.topic, Partition: ps.partition}, part, dec, nil)
		if fp.Err != nil {
			return nil, fmt.Errorf("offset %d: %w", off, fp.Err)
		}
		for _, r := range fp.Records {
			if r.ProducerID != d.pid || r.ProducerEpoch != d.epoch {
				continue
			}
			out = append(out, &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
		}
		off = next
	}
	return out, nil
}

// offsetsBehind returns, per group, the intents' offsets that their groups
// have not reached: the ones kfake did not apply before the kill. An
// offset a group is at or past stays as it is.
func offsetsBehind(ctx context.Context, adm *kadm.Client, plans []commitPlan, names map[string]string) (map[string][]groupOffset, error) {
	want := map[string][]groupOffset{}
	for _, p := range plans {
		for _, o := range p.intent.Offsets {
			if o.Topic == "" {
				o.Topic = names[o.TopicID]
				if o.Topic == "" {
					continue // the topic is gone
				}
			}
			o.TopicID = ""
			want[o.Group] = setOffset(want[o.Group], o)
		}
	}
	out := map[string][]groupOffset{}
	for _, g := range slices.Sorted(maps.Keys(want)) {
		have, err := adm.FetchOffsets(ctx, g)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return nil, fmt.Errorf("offsets of group %s: %w", g, err)
		}
		for _, o := range want[g] {
			if cur, ok := have.Lookup(o.Topic, o.Partition); ok && cur.Err == nil && cur.At >= o.Offset {
				continue
			}
			out[g] = append(out[g], o)
		}
	}
	for g, list := range out {
		if len(list) == 0 {
			delete(out, g)
		}
	}
	return out, nil
}

// commitTxnOffsets adds each group's offsets to the open transaction of
// txid's producer id at epoch.
// endRepair commits the repair's transaction. franz-go's EndTransaction
// ends only a transaction it saw records go into: one that only added
// offsets, by requests of our own, it would leave open (returning nil)
// until the broker aborts it after its timeout, and the offsets would be
// lost. So that one is ended by an EndTxn request of our own.
func endRepair(ctx context.Context, tc *kgo.Client, txid string, pid int64, epoch int16, copied int) error {
	if copied > 0 {
		return tc.EndTransaction(ctx, kgo.TryCommit)
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txid, pid, epoch, true
	resp, err := req.RequestWith(ctx, tc)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func commitTxnOffsets(ctx context.Context, tc *kgo.Client, txid string, pid int64, epoch int16, offsets map[string][]groupOffset, ids map[string][16]byte) error {
	for _, g := range slices.Sorted(maps.Keys(offsets)) {
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txid, pid, epoch, g
		addResp, err := add.RequestWith(ctx, tc)
		if err == nil {
			err = kerr.ErrorForCode(addResp.ErrorCode)
		}
		if err != nil {
			return fmt.Errorf("add offsets of group %s: %w", g, err)
		}
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txid, g, pid, epoch
		req.Generation, req.MemberID = -1, ""
		byTopic := map[string][]groupOffset{}
		for _, o := range offsets[g] {
			byTopic[o.Topic] = append(byTopic[o.Topic], o)
		}
		for _, t := range slices.Sorted(maps.Keys(byTopic)) {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = t, ids[t] // by name up to v5, by id from v6
			for _, o := range byTopic[t] {
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Partition, o.Offset, o.LeaderEpoch, o.Metadata
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, tc)
		if err != nil {
			return fmt.Errorf("commit offsets of group %s: %w", g, err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("commit offset of group %s for %s[%d]: %w", g, t.Topic, p.Partition, err)
				}
			}
		}
	}
	return nil
}
