package engine

import (
	"time"

	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file keeps a task's inputs in timestamp order, as Kafka Streams'
// task does. A task of a sub-topology that reads several topics (a join's
// two sides, a stream and its table, merged streams) reads one partition
// of each. The dispatcher merges what a poll fetched by the oldest head
// (nextOldest), but a poll holds what the fetches brought, not what is on
// the broker: when one input's fetched records run out before the
// other's, the other's newer records would go first, and in a catch-up
// an input whose fetches cover more event time runs ahead by minutes
// (its records fill a join's store until the slower side reaches them; a
// stream record meets the table's later value). Kafka Streams' rule
// (PartitionGroup, max.task.idle.ms at its default 0): a task processes
// only while every one of its partitions has records buffered or is
// known to have none waiting on the broker.
//
// Here a task whose input partition has nothing left in the poll while
// its last fetch ended short of the partition's end (or no fetch told
// anything yet) waits: its remaining records stay pending, with the
// dispatcher, and go with a later poll's, merged by timestamp again. A
// wait is bounded (taskInputWait), so that a partition the fetches never
// bring (an aborted transaction at its end reads as nothing; franz-go
// returns no fetch made only of empty partitions) delays its task and
// never stops it. A partition paused by watermark alignment is not
// waited for. A partition whose pending records pass maxPendingRecords
// has its fetch paused until they are dispatched, which bounds what the
// dispatcher holds. Pending records were never dispatched: a reset drops
// them, and the committed offsets, which follow what was dispatched,
// fetch them again.

// taskInputWait bounds how long a task waits for one input partition
// with nothing fetched, from the first time it waits for it.
const taskInputWait = time.Second

// maxPendingRecords is how many records of one partition the dispatcher
// holds for a waiting task before it pauses the partition's fetch; a
// variable for tests that pause at once.
var maxPendingRecords = 4096

// inputLag is what the last fetch of a partition told of the records
// waiting on the broker beyond it.
type inputLag uint8

const (
	lagUnknown inputLag = iota // no fetch told yet
	lagSome                    // the last fetch ended short of the end
	lagNone                    // the last fetch reached the end, or brought nothing
)

// inputState is the dispatcher's view of one input partition of a task
// that reads several.
type inputState struct {
	lag inputLag
	// waitedSince is the wall-clock time (epoch ms) a task first waited
	// for the partition since it last had records or reached its end; 0
	// when none waits.
	waitedSince int64
	// paused says the dispatcher paused its fetch (too many pending).
	paused bool
	// next is the offset after the last record fetched, or the offset
	// the reset started from; -1 when neither is known.
	next int64
}

// taskInputs is the dispatcher's state of the tasks that read several
// topics: by sub-topology, the topics read; by partition, its state.
type taskInputs struct {
	topics map[int][]string
	parts  map[watermark.Partition]*inputState
	// idle is max.task.idle.ms: how long a task waits for a partition at
	// its end (0: not at all), and at least how long for one with
	// records waiting.
	idle int64
}

// newTaskInputs lists the sub-topologies with two or more assigned
// topics; nil when there are none, or when idle (max.task.idle.ms) is
// negative: then no task waits.
func newTaskInputs(assigned map[string][]int32, topicSub map[string]int, idle int64) *taskInputs {
	if idle < 0 {
		return nil
	}
	topics := map[int][]string{}
	for t := range assigned {
		if sub, ok := topicSub[t]; ok {
			topics[sub] = append(topics[sub], t)
		}
	}
	ti := &taskInputs{topics: map[int][]string{}, parts: map[watermark.Partition]*inputState{}, idle: idle}
	for sub, ts := range topics {
		if len(ts) < 2 {
			continue
		}
		ti.topics[sub] = ts
		for _, t := range ts {
			for _, p := range assigned[t] {
				ti.parts[watermark.Partition{Topic: t, Partition: p}] = &inputState{next: -1}
			}
		}
	}
	if len(ti.topics) == 0 {
		return nil
	}
	return ti
}

// multi says sub-topology sub reads several topics.
func (ti *taskInputs) multi(sub int) bool {
	if ti == nil {
		return false
	}
	_, ok := ti.topics[sub]
	return ok
}

// startAt records the offset a reset starts partition p's fetches from.
func (ti *taskInputs) startAt(p watermark.Partition, offset int64) {
	if ti == nil {
		return
	}
	if st := ti.parts[p]; st != nil {
		st.next = offset
	}
}

// fetched records what a poll's fetch of partition p told: fp's records,
// and its end (the high watermark, or the last stable offset below it).
// A fetch that brought nothing tells of records waiting only when the
// partition's end is past the offset the dispatcher knows it reached (a
// response the broker filled up to its size limit lists the partitions
// it had no room for without records); an error tells nothing.
func (ti *taskInputs) fetched(p watermark.Partition, fp kgo.FetchTopicPartition) {
	if ti == nil || fp.Err != nil {
		return
	}
	st := ti.parts[p]
	if st == nil {
		return
	}
	if n := len(fp.Records); n > 0 {
		// The wait's clock restarts with records only: a partition
		// listed again and again without any is still waited for
		// once.
		st.waitedSince = 0
		st.next = fp.Records[n-1].Offset + 1
		st.lag = lagSome
		if atEnd(fp) {
			st.lag = lagNone
		}
		return
	}
	end := fp.HighWatermark
	if fp.LastStableOffset >= 0 && fp.LastStableOffset < end {
		end = fp.LastStableOffset
	}
	// One offset of slack: a transaction's commit marker.
	st.lag = lagNone
	if st.next >= 0 && end > st.next+1 {
		st.lag = lagSome
	}
}

// ready says whether task (sub, partition) may dispatch at wall-clock
// now: no input partition of it without a head in has must be waited
// for.
func (ti *taskInputs) ready(sub int, partition int32, has func(watermark.Partition) bool, held func(watermark.Partition) bool, now int64) bool {
	ok := true
	for _, t := range ti.topics[sub] {
		p := watermark.Partition{Topic: t, Partition: partition}
		if !has(p) && ti.mustWait(p, held, now) {
			ok = false
		}
	}
	return ok
}

// mustWait says whether a task waits, at wall-clock now, for input
// partition p, which has no record fetched. It waits while records are
// known to wait for p on the broker, for taskInputWait or idle, the
// longer; for a partition at its end, for idle. It does not wait for a
// partition no fetch has told of yet: franz-go returns no fetch made
// only of partitions with nothing new, so a partition empty when the
// task started may never be told of until it has records. Nor for a
// partition watermark alignment holds back. A first wait starts the
// clock, which restarts when p's records come.
func (ti *taskInputs) mustWait(p watermark.Partition, held func(watermark.Partition) bool, now int64) bool {
	st := ti.parts[p]
	if st == nil || held(p) || st.lag == lagUnknown && ti.idle <= 0 {
		return false
	}
	bound := max(taskInputWait.Milliseconds(), ti.idle)
	if st.lag == lagNone {
		if ti.idle <= 0 {
			return false
		}
		bound = ti.idle
	}
	if st.waitedSince == 0 {
		st.waitedSince = now
	}
	return now-st.waitedSince < bound
}

// readyHeads splits heads into those whose task may dispatch and those
// that wait (their task's inputs), at wall-clock now.
func (r *runner) readyHeads(heads []*mergeHead, now int64) (ready, waiting []*mergeHead) {
	ti := r.inputs
	if ti == nil {
		return heads, nil
	}
	have := map[watermark.Partition]bool{}
	for _, h := range heads {
		if len(h.recs) > 0 {
			have[watermark.Partition{Topic: h.topic, Partition: h.partition}] = true
		}
	}
	has := func(p watermark.Partition) bool { return have[p] }
	type task struct {
		sub int
		p   int32
	}
	decided := map[task]bool{}
	for _, h := range heads {
		if !ti.multi(h.sub) {
			ready = append(ready, h)
			continue
		}
		k := task{h.sub, h.partition}
		ok, seen := decided[k]
		if !seen {
			ok = ti.ready(h.sub, h.partition, has, r.alignmentHeld, now)
			decided[k] = ok
		}
		if ok {
			ready = append(ready, h)
		} else {
			waiting = append(waiting, h)
		}
	}
	return ready, waiting
}

// ranOut is called when head h, of a task that reads several topics, has
// no record left in the poll: if its partition has records waiting on
// the broker, the task waits for them, and its other heads leave heads
// for pending. It returns heads without them.
func (r *runner) ranOut(h *mergeHead, heads []*mergeHead, now int64) []*mergeHead {
	ti := r.inputs
	if !ti.multi(h.sub) {
		return heads
	}
	for _, o := range heads {
		if o.topic == h.topic && o.partition == h.partition {
			return heads // another fetch of the partition in the poll
		}
	}
	if !ti.mustWait(watermark.Partition{Topic: h.topic, Partition: h.partition}, r.alignmentHeld, now) {
		return heads
	}
	kept := heads[:0]
	for _, o := range heads {
		if o.sub == h.sub && o.partition == h.partition {
			r.pending = append(r.pending, o)
			continue
		}
		kept = append(kept, o)
	}
	return kept
}

// alignmentHeld says watermark alignment pauses p's fetch.
func (r *runner) alignmentHeld(p watermark.Partition) bool {
	return r.tracker != nil && r.tracker.HeldBack(p)
}

// withPending puts the pending heads in front of a poll's: a partition's
// pending records go before its newly fetched ones, in one head.
func (r *runner) withPending(heads []*mergeHead) []*mergeHead {
	if len(r.pending) == 0 {
		return heads
	}
	byPart := map[watermark.Partition]*mergeHead{}
	out := make([]*mergeHead, 0, len(r.pending)+len(heads))
	for _, h := range r.pending {
		byPart[watermark.Partition{Topic: h.topic, Partition: h.partition}] = h
		out = append(out, h)
	}
	r.pending = nil
	for _, h := range heads {
		if p, ok := byPart[watermark.Partition{Topic: h.topic, Partition: h.partition}]; ok {
			p.recs = append(p.recs, h.recs...)
			continue
		}
		out = append(out, h)
	}
	return out
}

// pacePending pauses the fetch of partitions with more pending records
// than maxPendingRecords and resumes those with none pending.
func (r *runner) pacePending() {
	ti := r.inputs
	if ti == nil || r.cl == nil {
		return
	}
	count := map[watermark.Partition]int{}
	for _, h := range r.pending {
		count[watermark.Partition{Topic: h.topic, Partition: h.partition}] += len(h.recs)
	}
	var pause, resume []watermark.Partition
	for p, st := range ti.parts {
		switch n := count[p]; {
		case n > maxPendingRecords && !st.paused:
			st.paused = true
			pause = append(pause, p)
		case n == 0 && st.paused:
			st.paused = false
			resume = append(resume, p)
		}
	}
	if len(pause) > 0 {
		r.cl.PauseFetchPartitions(byTopic(pause))
	}
	if len(resume) > 0 {
		r.cl.ResumeFetchPartitions(byTopic(resume))
	}
}

// dropPending forgets the pending records and resumes the fetches paused
// for them: before a reset, which fetches from the committed offsets
// again (a pause outlives a rebalance on the client).
func (r *runner) dropPending() {
	r.pending = nil
	if r.inputs == nil || r.cl == nil {
		return
	}
	var resume []watermark.Partition
	for p, st := range r.inputs.parts {
		if st.paused {
			st.paused = false
			resume = append(resume, p)
		}
	}
	if len(resume) > 0 {
		r.cl.ResumeFetchPartitions(byTopic(resume))
	}
}
