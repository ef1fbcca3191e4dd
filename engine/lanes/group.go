package lanes

import (
	"sync/atomic"

	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// Group is the lanes of one sub-topology, and the groups they feed
// through in-memory boundaries.
type Group struct {
	lanes []*Lane
	// partitions is the partition count of the sub-topology's
	// changelogs, which changelog writes outside a record hash over.
	partitions int32
	// downstream are the groups this one feeds; slots maps an upstream
	// lane's global index to its producer slot at this group's lanes.
	downstream []*Group
	slots      map[int]int
}

// NewGroup returns an empty group whose changelogs have partitions
// partitions.
func NewGroup(partitions int32) *Group {
	return &Group{partitions: partitions, slots: map[int]int{}}
}

// Feed makes every lane of g a producer of every lane of to, once however
// many boundaries join them; a group does not feed itself. Call it before
// Open.
func (g *Group) Feed(to *Group) {
	if g == to {
		return
	}
	for _, d := range g.downstream {
		if d == to {
			return
		}
	}
	g.downstream = append(g.downstream, to)
	for _, l := range g.lanes {
		to.slots[l.cfg.Global] = 1 + len(to.slots)
	}
}

// producers is how many markers a lane of the group waits for per epoch:
// the dispatcher's and one per upstream lane.
func (g *Group) producers() int { return 1 + len(g.slots) }

// Open readies the group's lanes for their producers, each with queue
// records' credit (stoatflow.lane.queue-size).
func (g *Group) Open(queue int) {
	for _, l := range g.lanes {
		l.open(g.producers(), queue)
	}
}

// Report is a lane's finished epoch: what it wrote, and the largest event
// time it processed per source partition.
type Report struct {
	Epoch int64
	// Lane is the lane's global index.
	Lane int
	Outs []task.Output
	// Final is the lane's last report of the epoch: it crossed the
	// barrier, and PartTimes is set. Earlier reports hand over records
	// as they pile up, so that producing overlaps processing.
	Final     bool
	PartTimes map[watermark.Partition]int64
	// Credit is what the report took of the committer's budget of held
	// records (Sink.Held), given back once they are produced; 0 for a
	// report of the epoch being produced.
	Credit int64
}

// Sink is where the lanes of a generation hand the committer their
// reports.
type Sink struct {
	Reports chan Report
	// Held is the committer's budget of records it holds for an epoch
	// whose transaction is not open yet (stoatflow.commit.held-records);
	// Committed is the last epoch it committed, which tells a lane
	// whether its report needs that budget.
	Held      *Credit
	Committed atomic.Int64
}
