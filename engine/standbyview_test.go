package engine

import (
	"slices"
	"testing"

	"github.com/stoatflow/stoatctl/engine/assign"
)

// TestStandbyTasksJoinsAssignmentAndLag: StandbyTasks lists the standby
// tasks of the last assignment, sorted, marks the warm-ups, and gives a
// lag only to those the last warm-up measured; a lag of a task no longer
// a standby is not shown, and no lag at all once the warm-up stopped.
func TestStandbyTasksJoinsAssignmentAndLag(t *testing.T) {
	e := &Engine{}
	e.setStandbys(taskIDs([]assign.Task{{Subtopology: 0, Partition: 3}, {Subtopology: 0, Partition: 1}, {Subtopology: 1, Partition: 0}}),
		taskIDs([]assign.Task{{Subtopology: 0, Partition: 3}}))
	e.setStandbyLag(map[string]int64{"0_1": 0, "0_3": 17, "0_9": 5})
	want := []StandbyTask{{ID: "0_1", LagKnown: true}, {ID: "0_3", Warmup: true, Lag: 17, LagKnown: true}, {ID: "1_0"}}
	if got := e.StandbyTasks(); !slices.Equal(got, want) {
		t.Errorf("StandbyTasks = %+v, want %+v", got, want)
	}
	e.setStandbyLag(nil)
	want = []StandbyTask{{ID: "0_1"}, {ID: "0_3", Warmup: true}, {ID: "1_0"}}
	if got := e.StandbyTasks(); !slices.Equal(got, want) {
		t.Errorf("after the warm-up stopped: StandbyTasks = %+v, want %+v", got, want)
	}
	e.setStandbys(nil, nil)
	if got := e.StandbyTasks(); len(got) != 0 {
		t.Errorf("with no standby: StandbyTasks = %+v", got)
	}
}
