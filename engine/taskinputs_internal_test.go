package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTaskInputsWait walks what a task's input partition tells the
// dispatcher through its fetches, and when the task waits for it.
func TestTaskInputsWait(t *testing.T) {
	in := watermark.Partition{Topic: "in", Partition: 0}
	side := watermark.Partition{Topic: "side", Partition: 0}
	ti := newTaskInputs(map[string][]int32{"in": {0}, "side": {0}, "alone": {0}}, map[string]int{"in": 0, "side": 0, "alone": 1}, 0)
	if !ti.multi(0) || ti.multi(1) {
		t.Fatal("sub-topology 0 reads two topics, 1 one")
	}
	ti.startAt(side, 100)
	recs := func(from, n int64) []*kgo.Record {
		var out []*kgo.Record
		for o := from; o < from+n; o++ {
			out = append(out, &kgo.Record{Offset: o})
		}
		return out
	}
	notHeld := func(watermark.Partition) bool { return false }
	const wait = int64(taskInputWait / 1e6)
	for _, step := range []struct {
		name  string
		fetch *kgo.FetchTopicPartition
		now   int64
		held  bool
		want  bool // the task waits for side
	}{
		{name: "no fetch told anything: no wait (it may never tell)", now: 1000, want: false},
		{name: "records short of the end: wait, the clock starts", now: 1000, want: true,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 500, LastStableOffset: 500, Records: recs(100, 20)}}},
		{name: "still within the bound", now: 1000 + wait - 1, want: true},
		{name: "the bound passed: go on", now: 1000 + wait, want: false},
		{name: "records short of the end: wait again, a new clock", now: 5000, want: true,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 500, LastStableOffset: 500, Records: recs(120, 30)}}},
		{name: "listed without records, end past them: still waiting, same clock", now: 5000 + wait - 1, want: true,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 500, LastStableOffset: 500}}},
		{name: "an error tells nothing", now: 5000 + wait - 1, want: true,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: -1, Err: errors.New("leader moved")}}},
		{name: "held back by alignment: not waited for", now: 5000 + wait - 1, held: true, want: false},
		{name: "records up to the end: nothing waits", now: 6000, want: false,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 500, LastStableOffset: 500, Records: recs(150, 349)}}},
		{name: "the end one past them is a commit marker: nothing waits", now: 6000, want: false,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 500, LastStableOffset: 500}}},
		{name: "the last stable offset, not the high watermark, is the end", now: 6000, want: false,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 900, LastStableOffset: 500}}},
		{name: "new records on the broker, listed without room for them: wait", now: 7000, want: true,
			fetch: &kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 700, LastStableOffset: 700}}},
	} {
		if step.fetch != nil {
			ti.fetched(side, *step.fetch)
		}
		held := notHeld
		if step.held {
			held = func(p watermark.Partition) bool { return p == side }
		}
		if got := ti.mustWait(side, held, step.now); got != step.want {
			t.Fatalf("%s: waits %v, want %v", step.name, got, step.want)
		}
		has := func(p watermark.Partition) bool { return p == in }
		if got := ti.ready(0, 0, has, held, step.now); got == step.want {
			t.Fatalf("%s: task ready %v with in fetched, want %v", step.name, got, !step.want)
		}
	}
	if ti.mustWait(watermark.Partition{Topic: "alone", Partition: 0}, notHeld, 0) {
		t.Fatal("a partition of a task that reads one topic is never waited for")
	}
}

// TestMaxTaskIdle: max.task.idle.ms -1 makes no task wait; above 0 a
// task waits that long for a partition at its end too, and at least that
// long for one with records waiting.
func TestMaxTaskIdle(t *testing.T) {
	assigned := map[string][]int32{"in": {0}, "side": {0}}
	subs := map[string]int{"in": 0, "side": 0}
	if ti := newTaskInputs(assigned, subs, -1); ti != nil {
		t.Fatal("max.task.idle.ms -1: a task never waits, so nothing is tracked")
	}
	side := watermark.Partition{Topic: "side", Partition: 0}
	notHeld := func(watermark.Partition) bool { return false }
	ti := newTaskInputs(assigned, subs, 3000)
	ti.startAt(side, 10)
	ti.fetched(side, kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 10, LastStableOffset: 10}})
	if !ti.mustWait(side, notHeld, 100) || !ti.mustWait(side, notHeld, 3099) || ti.mustWait(side, notHeld, 3100) {
		t.Fatal("a partition at its end is waited for max.task.idle.ms, from the first wait")
	}
	ti.fetched(side, kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 50, LastStableOffset: 50, Records: []*kgo.Record{{Offset: 10}}}})
	if !ti.mustWait(side, notHeld, 5000) || !ti.mustWait(side, notHeld, 7999) || ti.mustWait(side, notHeld, 8000) {
		t.Fatal("a partition with records waiting is waited for the longer of 1 s and max.task.idle.ms")
	}
}

// TestPendingHeads: a task's heads leave the merge for pending when one
// of its partitions runs out with records waiting, not when another
// fetch of that partition is still in the poll, nor for a task that
// reads one topic; pending heads take the next poll's records of their
// partition behind their own.
func TestPendingHeads(t *testing.T) {
	mk := func(topic string, sub int, p int32, offsets ...int64) *mergeHead {
		var recs []*kgo.Record
		for _, o := range offsets {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Offset: o, Timestamp: time.UnixMilli(o)})
		}
		h := &mergeHead{recs: recs, topic: topic, partition: p, sub: sub}
		if len(recs) > 0 {
			h.ts = recs[0].Timestamp.UnixMilli()
		}
		return h
	}
	r := &runner{inputs: newTaskInputs(map[string][]int32{"in": {0, 1}, "side": {0, 1}, "alone": {0}},
		map[string]int{"in": 0, "side": 0, "alone": 1}, 0)}
	side0 := watermark.Partition{Topic: "side", Partition: 0}
	r.inputs.fetched(side0, kgo.FetchTopicPartition{FetchPartition: kgo.FetchPartition{HighWatermark: 100, LastStableOffset: 100,
		Records: []*kgo.Record{{Offset: 5}}}})
	in0, in1, side1, alone := mk("in", 0, 0, 7, 8), mk("in", 0, 1, 7), mk("side", 0, 1, 9), mk("alone", 1, 0, 9)
	emptied := mk("side", 0, 0)
	heads := []*mergeHead{in0, in1, side1, alone}
	if got := r.ranOut(emptied, append([]*mergeHead{mk("side", 0, 0, 6)}, heads...), 1000); len(got) != 5 || len(r.pending) != 0 {
		t.Fatalf("another fetch of side[0] is in the poll: %d heads left, %d pending", len(got), len(r.pending))
	}
	got := r.ranOut(emptied, heads, 1000)
	if len(got) != 3 || len(r.pending) != 1 || r.pending[0] != in0 {
		t.Fatalf("side[0] ran out with records waiting: in[0] waits, in[1], side[1] and alone go on; got %d heads, pending %v", len(got), r.pending)
	}
	if got := r.ranOut(mk("alone", 1, 0), got, 1000); len(got) != 3 {
		t.Fatal("a task that reads one topic never waits")
	}
	merged := r.withPending([]*mergeHead{mk("in", 0, 0, 9), mk("side", 0, 0, 10)})
	if len(merged) != 2 || merged[0] != in0 || len(in0.recs) != 3 || in0.recs[2].Offset != 9 || len(r.pending) != 0 {
		t.Fatalf("the pending in[0] takes the poll's in[0] records behind its own: %d heads, in[0] %d records", len(merged), len(in0.recs))
	}
	ready, waiting := r.readyHeads([]*mergeHead{in0, alone}, 1000)
	if len(ready) != 1 || ready[0] != alone || len(waiting) != 1 || waiting[0] != in0 {
		t.Fatalf("in[0] still waits for side[0] within the bound: ready %d, waiting %d", len(ready), len(waiting))
	}
	if ready, _ := r.readyHeads([]*mergeHead{in0, alone}, 1000+taskInputWait.Milliseconds()); len(ready) != 2 {
		t.Fatal("past the bound in[0] goes on")
	}
}
