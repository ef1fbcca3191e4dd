package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// subClocks keeps event time per sub-topology for a topology whose
// sub-topologies meet only through repartition topics (decision 0042).
//
// Each sub-topology's barrier stamp is the minimum over its own input
// partitions, not over the instance's: an upstream task's floor does not
// wait for the tasks downstream of it, and a downstream task's watermark
// comes from the upstream tasks that write to it, wherever they run. At
// the end of every epoch, each instance writes to every partition of
// every repartition topic its tasks write a marker (watermark.Mark per
// upstream task it runs), inside the epoch's transaction, after the
// epoch's records: the emission frontier its lanes had reached when the
// epoch began, so that every final result for a window closing at or
// before it lies before the marker. A reader takes, per partition, the
// lowest mark over the upstream tasks not idle (watermark.Tracker's
// external partitions) and commits the marks it holds with the
// partition's offset, so that a restart or a new owner resumes them.
type subClocks struct {
	// topicSub is the runner's: a source topic's sub-topology.
	topicSub map[string]int
	// history holds each sub-topology's stamp at the last three cuts,
	// [0] the last. A lane crossing cut j emits up to cut j-1's stamp
	// in epoch j+1, so epoch j's transaction holds every result up to
	// cut j-2's: that is what epoch j's markers say.
	history [3][]int64
	// writes are the repartition topics each upstream sub-topology
	// writes, with the tasks of it this instance runs.
	writes []*repWriter
	// reads are the repartition topics read here, by topic.
	reads map[string]*repReader
	// written is the marker value each topic was last given in this
	// generation; an unchanged one is not written again.
	written map[string]string
}

// repWriter is a repartition topic some sub-topology writes.
type repWriter struct {
	topic      string
	sub        int
	partitions int32
	// tasks are the partitions of the upstream tasks run here, and
	// inputs the event-time source partitions of each.
	tasks  []int32
	inputs map[int32][]watermark.Partition
}

// repReader is what has been read of one repartition topic's markers.
type repReader struct {
	// up is the writing sub-topology, and tasks its task count.
	up    int
	tasks int32
	// marks holds, per partition of the topic read here, the mark of
	// each upstream task.
	marks map[int32][]upMark
}

type upMark struct {
	w          int64
	idle, seen bool
}

// Processor metadata keys of a repartition partition's committed offset:
// upstream task p's mark, and whether it was idle.
func upKey(p int32) string     { return kafka.OwnKeyPrefix + "up/" + strconv.Itoa(int(p)) }
func upIdleKey(p int32) string { return upKey(p) + "/idle" }

// perSubReason says why the topology cannot keep event time per
// sub-topology, "" when it can: it must close windows on event time and
// re-key through repartition topics, with no in-memory boundary, no
// event time driven from outside (which is one clock by design), and no
// sink into a topic the topology reads other than a repartition topic
// (a topic that is not a repartition topic carries no markers, and a
// downstream sub-topology reading it would not wait for its writers).
func perSubReason(b *topology.Built, drivenTime bool) string {
	if !b.EventTime || len(b.Repartitions) == 0 {
		return "no repartition topic carries event time"
	}
	if len(b.Boundaries) > 0 {
		return "the topology re-keys in memory"
	}
	if drivenTime {
		return "event time is driven from outside"
	}
	rep := map[string]bool{}
	for _, rp := range b.Repartitions {
		rep[rp.Topic] = true
		// A reader tells its writers' marks apart by task partition
		// only, so every writer must be a task of one sub-topology.
		for _, s := range rp.SinkNodes[1:] {
			if up, other := b.Nodes[rp.SinkNodes[0]].Subtopology, b.Nodes[s].Subtopology; other != up {
				return fmt.Sprintf("repartition topic %s is written by sub-topologies %d and %d (a foreign-key join's answers and the left table's copy)", rp.Topic, up, other)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.Nodes)) {
		n := b.Nodes[name]
		if n.Kind != topology.SinkNode || n.Sink == nil || rep[n.Sink.Topic] {
			continue
		}
		if n.Sink.Chooser != nil {
			return fmt.Sprintf("sink %s chooses its topic per record, and may write a topic the topology reads", name)
		}
		if _, read := b.SourceTopics[n.Sink.Topic]; read {
			return fmt.Sprintf("sink %s writes topic %s, which the topology also reads, and only repartition topics carry event time between sub-topologies", name, n.Sink.Topic)
		}
	}
	return ""
}

// newSubClocks sets up the clocks of a generation that runs assigned,
// each sub-topology starting from its floor in floors.
func (r *runner) newSubClocks(assigned map[string][]int32, floors []int64) *subClocks {
	sc := &subClocks{topicSub: r.topicSub, reads: map[string]*repReader{}, written: map[string]string{}}
	// Before the first cut only the floors are stamps; nothing is
	// emitted in this generation yet, so the first epoch's markers say
	// Unknown (readers keep the highest mark they were told).
	sc.history[0] = slices.Clone(floors)
	for _, i := range []int{1, 2} {
		sc.history[i] = make([]int64, len(floors))
		for s := range floors {
			sc.history[i][s] = task.Unknown
		}
	}
	for _, rp := range r.built.Repartitions {
		up := r.built.Nodes[rp.SinkNodes[0]].Subtopology
		tasks := r.changelogPartitions(r.built.Subtopologies[up])
		rd := &repReader{up: up, tasks: tasks, marks: map[int32][]upMark{}}
		for _, p := range assigned[rp.Topic] {
			rd.partition(p) // told nothing yet, for the view
		}
		sc.reads[rp.Topic] = rd
		w := &repWriter{topic: rp.Topic, sub: up, partitions: r.partitions[rp.Topic], inputs: map[int32][]watermark.Partition{}}
		// A task's inputs are its event-time partitions; one with none
		// (a table's task) moves no event time and is told idle.
		for t, ps := range assigned {
			if s, ok := r.topicSub[t]; !ok || s != up {
				continue
			}
			for _, p := range ps {
				if _, ok := w.inputs[p]; !ok {
					w.tasks = append(w.tasks, p)
					w.inputs[p] = nil
				}
				if !r.tableTopics[t] {
					w.inputs[p] = append(w.inputs[p], watermark.Partition{Topic: t, Partition: p})
				}
			}
		}
		slices.Sort(w.tasks)
		if len(w.tasks) > 0 {
			sc.writes = append(sc.writes, w)
		}
	}
	return sc
}

// reading says whether topic is a repartition topic whose markers set its
// partitions' watermarks.
func (sc *subClocks) reading(topic string) bool {
	_, ok := sc.reads[topic]
	return ok
}

// seed resumes the marks a repartition partition's committed offset
// carries.
func (sc *subClocks) seed(tr *watermark.Tracker, topic string, p int32, proc map[string]int64, now int64) {
	rd := sc.reads[topic]
	marks := rd.partition(p)
	for up := range rd.tasks {
		if w, ok := proc[upKey(up)]; ok {
			marks[up] = upMark{w: w, idle: proc[upIdleKey(up)] == 1, seen: true}
		}
	}
	rd.tell(tr, topic, p, now)
}

func (rd *repReader) partition(p int32) []upMark {
	m := rd.marks[p]
	if m == nil {
		m = make([]upMark, rd.tasks)
		for i := range m {
			m[i].w = watermark.Unset
		}
		rd.marks[p] = m
	}
	return m
}

// tell sets the tracker's watermark of partition p of topic: the lowest
// mark of the upstream tasks not idle, Unset while one has told nothing,
// and idle when all are.
func (rd *repReader) tell(tr *watermark.Tracker, topic string, p int32, now int64) {
	w, any := watermark.Unset, false
	for _, m := range rd.partition(p) {
		if !m.seen {
			tr.SetExternal(watermark.Partition{Topic: topic, Partition: p}, watermark.Unset, false, now)
			return
		}
		if m.idle {
			continue
		}
		if !any || m.w < w {
			w, any = m.w, true
		}
	}
	tr.SetExternal(watermark.Partition{Topic: topic, Partition: p}, w, !any, now)
}

// apply reads a marker record of a repartition topic.
func (sc *subClocks) apply(tr *watermark.Tracker, rec *kgo.Record, version []byte, now int64) error {
	marks, err := watermark.DecodeMarker(version, rec.Value)
	if err != nil {
		return fmt.Errorf("engine: watermark marker at %s[%d] offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	}
	rd := sc.reads[rec.Topic]
	held := rd.partition(rec.Partition)
	for _, m := range marks {
		if m.Task >= rd.tasks {
			return fmt.Errorf("engine: watermark marker at %s[%d] offset %d: upstream task %d, but the sub-topology writing the topic has %d tasks; were its input topics' partitions added while it ran?",
				rec.Topic, rec.Partition, rec.Offset, m.Task, rd.tasks)
		}
		u := &held[m.Task]
		u.w, u.idle, u.seen = max(u.w, m.Watermark), m.Idle, true
	}
	rd.tell(tr, rec.Topic, rec.Partition, now)
	return nil
}

// markerHeader returns the value of rec's marker header, and whether it
// has one.
func markerHeader(rec *kgo.Record) ([]byte, bool) {
	for _, h := range rec.Headers {
		if h.Key == watermark.MarkerHeader {
			return h.Value, true
		}
	}
	return nil, false
}

// stamps are the sub-topologies' stamps now: each the lowest watermark of
// its input partitions that are not idle, never below its last stamp.
func (sc *subClocks) stamps(tr *watermark.Tracker) []int64 {
	out := slices.Clone(sc.history[0])
	for s := range out {
		w, ok := tr.Minimum(func(p watermark.Partition) bool {
			sub, known := sc.topicSub[p.Topic]
			return known && sub == s
		})
		if ok && w != watermark.Unset && w > out[s] {
			out[s] = w
		}
	}
	return out
}

// due says a barrier is needed for the clocks alone: a stamp moved since
// the last cut, or the last cuts' stamps have not all become frontiers
// and markers yet.
func (sc *subClocks) due(stamps []int64) bool {
	h := sc.history
	return !slices.Equal(stamps, h[0]) || !slices.Equal(h[0], h[1]) || !slices.Equal(h[1], h[2])
}

// cut records a cut's stamps and returns the markers its epoch carries.
func (sc *subClocks) cut(tr *watermark.Tracker, stamps []int64) []*kgo.Record {
	sc.history[2], sc.history[1], sc.history[0] = sc.history[1], sc.history[0], stamps
	var out []*kgo.Record
	for _, w := range sc.writes {
		emitted := sc.history[2][w.sub]
		marks := make([]watermark.Mark, 0, len(w.tasks))
		for _, p := range w.tasks {
			idle := true
			for _, in := range w.inputs[p] {
				idle = idle && tr.Idle(in)
			}
			marks = append(marks, watermark.Mark{Task: p, Watermark: max(emitted, task.Unknown), Idle: idle})
		}
		v := watermark.EncodeMarks(marks)
		if sc.written[w.topic] == string(v) {
			continue
		}
		sc.written[w.topic] = string(v)
		for q := range w.partitions {
			out = append(out, &kgo.Record{Topic: w.topic, Partition: q, Value: v,
				Headers: []kgo.RecordHeader{{Key: watermark.MarkerHeader, Value: watermark.MarkerVersion}}})
		}
	}
	return out
}

// snapshot is the processor metadata of each repartition partition in
// offsets, the cut's: the marks read of it up to the cut, which the
// partition's offset commits.
func (sc *subClocks) snapshot(offsets map[string]map[int32]int64) map[watermark.Partition]map[string]int64 {
	var out map[watermark.Partition]map[string]int64
	for t, ps := range offsets {
		if !sc.reading(t) {
			continue
		}
		for p := range ps {
			if m := sc.committed(t, p); len(m) > 0 {
				if out == nil {
					out = map[watermark.Partition]map[string]int64{}
				}
				out[watermark.Partition{Topic: t, Partition: p}] = m
			}
		}
	}
	return out
}

// committed is the processor metadata a repartition partition commits:
// the marks read of it so far.
func (sc *subClocks) committed(topic string, p int32) map[string]int64 {
	rd, ok := sc.reads[topic]
	if !ok {
		return nil
	}
	marks, ok := rd.marks[p]
	if !ok {
		return nil
	}
	out := map[string]int64{}
	for up, m := range marks {
		if !m.seen {
			continue
		}
		out[upKey(int32(up))] = m.w
		if m.idle {
			out[upIdleKey(int32(up))] = 1
		}
	}
	return out
}

// writers is what each repartition partition read here was told, for the
// watermark view.
func (sc *subClocks) writers() map[watermark.Partition]RepartitionWriters {
	out := map[watermark.Partition]RepartitionWriters{}
	for topic, rd := range sc.reads {
		for p, marks := range rd.marks {
			var w RepartitionWriters
			lowest, any := watermark.Unset, false
			for _, m := range marks {
				if m.seen && !m.idle && (!any || m.w < lowest) {
					lowest, any = m.w, true
				}
			}
			for up, m := range marks {
				id := taskID(rd.up, int32(up))
				w.Tasks = append(w.Tasks, id)
				switch {
				case !m.seen:
					w.NotTold = append(w.NotTold, id)
				case m.idle:
					w.Idle = append(w.Idle, id)
				case any && m.w == lowest:
					w.Holding = append(w.Holding, id)
				}
			}
			out[watermark.Partition{Topic: topic, Partition: p}] = w
		}
	}
	return out
}
