package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/watermark"
)

// TestMarksOfARepartitionPartition: a partition read from a repartition
// topic takes the lowest mark of the tasks writing it, holds until every
// one has told, leaves idle ones out, never goes back, resumes from what
// its offset committed, and refuses a marker it cannot read.
func TestMarksOfARepartitionPartition(t *testing.T) {
	const topic = "app-x-repartition"
	part := watermark.Partition{Topic: topic, Partition: 1}
	marker := func(offset int64, marks ...watermark.Mark) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: 1, Offset: offset, Value: watermark.EncodeMarks(marks)}
	}
	newClocks := func() (*subClocks, *watermark.Tracker) {
		tr := watermark.NewTracker(time.Minute)
		tr.RegisterExternal(part, 0)
		sc := &subClocks{reads: map[string]*repReader{topic: {up: 0, tasks: 3, marks: map[int32][]upMark{}}}}
		return sc, tr
	}
	wm := func(tr *watermark.Tracker) int64 {
		w, ok := tr.Minimum(func(p watermark.Partition) bool { return p == part })
		if !ok {
			return -999 // idle
		}
		return w
	}
	sc, tr := newClocks()
	steps := []struct {
		marks []watermark.Mark
		want  int64
	}{
		{[]watermark.Mark{{Task: 0, Watermark: 5_000}, {Task: 1, Watermark: 7_000}}, watermark.Unset}, // task 2 has not told
		{[]watermark.Mark{{Task: 2, Watermark: 6_000}}, 5_000},
		{[]watermark.Mark{{Task: 0, Watermark: 9_000}}, 6_000},
		{[]watermark.Mark{{Task: 2, Watermark: 4_000}}, 6_000}, // a task's mark never goes back (another instance's, behind)
		{[]watermark.Mark{{Task: 2, Watermark: 6_500, Idle: true}}, 7_000},
		{[]watermark.Mark{{Task: 0, Watermark: 9_000, Idle: true}, {Task: 1, Watermark: 8_000, Idle: true}}, -999},
		{[]watermark.Mark{{Task: 1, Watermark: 10_000}}, 10_000},
	}
	for i, s := range steps {
		if err := sc.apply(tr, marker(int64(i), s.marks...), watermark.MarkerVersion, int64(i)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		tr.Advance(int64(i))
		if got := wm(tr); got != s.want {
			t.Fatalf("step %d (%v): watermark %d, want %d", i, s.marks, got, s.want)
		}
	}
	// What the partition's offset commits is what a new reader resumes.
	committed := sc.committed(topic, 1)
	again, tr2 := newClocks()
	again.seed(tr2, topic, 1, committed, 0)
	tr2.Advance(0)
	if got := wm(tr2); got != 10_000 {
		t.Fatalf("resumed from %v: watermark %d, want 10000", committed, got)
	}
	for _, bad := range []*kgo.Record{
		marker(90, watermark.Mark{Task: 3, Watermark: 1}), // the writer has three tasks
		{Topic: topic, Partition: 1, Offset: 91, Value: []byte{1, 2}},
	} {
		err := sc.apply(tr, bad, watermark.MarkerVersion, 0)
		if err == nil {
			t.Fatalf("marker at offset %d accepted", bad.Offset)
		}
		if bad.Offset == 91 && !errors.Is(err, watermark.ErrBadMarker) {
			t.Errorf("offset 91: %v, want ErrBadMarker", err)
		}
		t.Logf("refused: %v", err)
	}
}
