//go:build cgo

package engine

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestKeepAfterARestoreCutShort: a generation that wipes a task its
// lane's checkpoint held (it runs it no more) and stops before its
// restore ends writes no checkpoint of its own. The next generation that
// runs the task must not find it in the old checkpoint and keep it from
// the old offsets over nothing: it restores it from the log start. (On
// Apache Kafka, TestStandbyFailoverUnderKills/counts-split counted a key
// on from zero after a standby's warm-up, stopped by a reset, had wiped
// a task its checkpoint still named.)
func TestKeepAfterARestoreCutShort(t *testing.T) {
	const topic = "app-counts-changelog"
	dir := filepath.Join(t.TempDir(), "0_0")
	s := &localState{app: "app", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// Both partitions of the changelog run from offset 0 to 10.
	bounds := func(off int64) map[string]kadm.ListedOffsets {
		l := kadm.ListedOffsets{topic: {}}
		for _, p := range []int32{1, 3} {
			l[topic][p] = kadm.ListedOffset{Topic: topic, Partition: p, Offset: off}
		}
		return map[string]kadm.ListedOffsets{topic: l}
	}
	starts, ends := bounds(0), bounds(10)
	open := func(tasks ...int32) (*laneState, *rocks.DB) {
		t.Helper()
		db, err := rocks.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		ls := &laneState{db: db, topics: map[string]bool{topic: true}, app: "app", lanes: 1, tasks: tasks}
		for _, p := range tasks {
			ls.owned = append(ls.owned, taskID(0, p))
		}
		sr := &subRun{id: 0, lanes: make([]*laneRun, 1), tasks: tasks}
		if err := s.keep(ls, dir, sr, []string{topic}, starts, ends, map[string]int{}); err != nil {
			t.Fatal(err)
		}
		return ls, db
	}

	// A lane that ran tasks 1 and 3, complete up to offset 5 of each.
	db, err := rocks.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{1, 3} {
		if err := db.TaskSupplier(p).Get("counts").Put([]byte("k"), []byte("5")); err != nil {
			t.Fatal(err)
		}
	}
	db.Seal(1)
	if err := db.Commit(1, rocks.Checkpoint{Application: "app", Lanes: 1, Owned: []string{"0_1", "0_3"},
		Offsets: map[string]map[int32]int64{topic: {1: 5, 3: 5}}}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// A generation that runs task 1 only: task 3 is wiped, and the
	// generation stops before its restore ends.
	ls, db := open(1)
	if off, ok := ls.from[topic][1]; !ok || off != 5 {
		t.Fatalf("task 1 kept from %d (%v), want its checkpoint's 5", off, ok)
	}
	db.Close()

	// The next one runs task 3 again: its state is gone, so it must
	// restore from the log start.
	ls, db = open(3)
	defer db.Close()
	if off, ok := ls.from[topic][3]; ok {
		t.Fatalf("task 3, wiped by a generation cut short, kept from offset %d of a checkpoint that still named it", off)
	}
}
