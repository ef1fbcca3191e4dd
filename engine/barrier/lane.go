package barrier

// Unknown is the floor and frontier of a lane that has crossed no barrier
// yet, and the stamp of a barrier cut before any event time was seen:
// nothing is late against it, nothing is final. It is task.Unknown, -1:
// event times are never negative.
const Unknown int64 = -1

// Barrier is barrier Epoch, cut with the watermark Stamp. Final is the
// shutdown barrier.
type Barrier struct {
	Epoch int64
	Stamp int64
	Final bool
	// Subs, when set, are the stamps of each sub-topology (by id), for a
	// runtime that keeps event time per sub-topology; each lane crosses
	// its own sub-topology's as Stamp.
	Subs []int64
}

// StepKind is one piece of work at a barrier.
type StepKind uint8

// The work of crossing a barrier, in the order Lane.Cross lists it.
const (
	// Listen runs the barrier listeners (suppress until a barrier), judged
	// against Floor, the stamp of the previous barrier.
	Listen StepKind = iota
	// Flush is an emission pass: final results of windows closed up to
	// Frontier, forwarded records judged against Floor (the frontier the
	// previous pass emitted up to, so that a result is never late by the
	// frontier that emitted it).
	Flush
	// Commit flushes the stores into the epoch; what that writes is
	// judged against Floor, the previous stamp, like the listeners'.
	Commit
	// Report hands the epoch's outputs to the committer: the lane is done
	// with epoch Epoch.
	Report
	// Forward sends the marker to the downstream lanes, after everything
	// the epoch forwarded.
	Forward
	// Enter moves the lane into epoch Epoch with floor Floor: from here on
	// its records are judged against the new floor and belong to the new
	// epoch.
	Enter
	// EventTimers fires the event-time timers due at Due, judged against
	// Floor. (At a barrier Due is Floor; at a solo lane's Advance it is
	// the watermark, ahead of the floor between barriers.)
	EventTimers
	// ProcessingTimers fires the processing-time timers due at the wall
	// clock, judged against Floor.
	ProcessingTimers
	// PunctuateStreamTime runs the stream-time punctuators, what they
	// forward judged against Floor.
	PunctuateStreamTime
	// PunctuateWallClock runs the wall-clock punctuators, likewise.
	PunctuateWallClock
)

var stepNames = [...]string{"listen", "flush", "commit", "report", "forward", "enter", "event-timers", "processing-timers",
	"punctuate-stream-time", "punctuate-wall-clock"}

func (k StepKind) String() string { return stepNames[k] }

// Step is one piece of work with the times it runs under.
type Step struct {
	Kind StepKind
	// Frontier is what Flush emits up to.
	Frontier int64
	// Floor is what the work, and what it forwards, is judged against.
	Floor int64
	// Epoch is the epoch Report and Forward close, or the one Enter opens.
	Epoch int64
	// Due is the event time EventTimers fires the timers up to: the new
	// floor at a barrier, the watermark when a solo lane's clock moves.
	Due int64
}

// Lane is one lane's side of the protocol: its epoch, floor and frontier.
//
// A lane is stamped (NewLane) or solo (NewSoloLane). A stamped lane, one
// of the live engine's, learns the watermark and the wall clock only from
// the barriers it crosses, so all its clock work runs at barriers, and its
// emission frontier trails its floor by one stamp: other lanes may not
// have crossed yet. A solo lane is the only lane, and its caller tells it
// every move of the clock as it happens (the test driver: one lane, a
// manual clock): nothing can still be on its way below the watermark, so
// its frontier is the watermark itself, its clock work runs when the clock
// moves (Advance, Tick), and its barriers only close epochs. Both take
// their work from one order (clockWork), and the same floor and frontier
// rules.
type Lane struct {
	// Epoch is the epoch the lane processes now.
	Epoch int64
	// Floor is the stamp of the last barrier crossed: W(N).
	Floor int64
	// Flushed is the frontier of the last emission pass.
	Flushed int64
	// Solo says the lane is the only one and is told every clock move.
	Solo bool
}

// NewLane returns a stamped lane in epoch 1 whose floor is floor (the
// stamp a restart resumes from, or Unknown).
func NewLane(floor int64) *Lane {
	return &Lane{Epoch: 1, Floor: floor, Flushed: Unknown}
}

// NewSoloLane returns a solo lane in epoch 1 whose floor is floor.
func NewSoloLane(floor int64) *Lane {
	l := NewLane(floor)
	l.Solo = true
	return l
}

// Cross moves the lane past b and returns the work to do, in order. The
// work is the one order of the protocol: the live lanes and the test
// driver both run these steps (through the same Task methods).
//
// Inside the epoch b closes: the listeners (judged against the previous
// stamp), on the final barrier an emission pass up to b's own stamp, the
// stores' commit, the report and the marker downstream. Then the lane
// enters the next epoch with b's stamp as its floor. A stamped lane runs
// its clock work there (clockWork, with the previous stamp as the
// frontier); a solo lane has run it as the clock moved, and nothing
// follows. A pass whose frontier did not move is left out.
func (l *Lane) Cross(b Barrier) []Step {
	prev := l.Floor
	// Room for the most a crossing does, one allocation: the test
	// driver crosses a barrier after every pipe.
	steps := make([]Step, 1, maxCrossSteps)
	steps[0] = Step{Kind: Listen, Floor: prev}
	if b.Final {
		steps = l.flush(steps, b.Stamp)
	}
	steps = append(steps, Step{Kind: Commit, Floor: prev}, Step{Kind: Report, Epoch: b.Epoch}, Step{Kind: Forward, Epoch: b.Epoch})
	l.Floor = max(l.Floor, b.Stamp)
	l.Epoch = b.Epoch + 1
	steps = append(steps, Step{Kind: Enter, Epoch: l.Epoch, Floor: l.Floor})
	if b.Final || l.Solo {
		return steps
	}
	return l.clockWork(steps, prev, l.Floor, eventClock|wallClock)
}

// Advance is the work a solo lane owes when its watermark is w after a
// record or a move of event time: the emission pass up to w (if w moved
// past the last pass), the event-time timers due at w (a record may have
// armed one at or before w even when w did not move), the stream-time
// punctuators. A stamped lane owes nothing: its clock work waits for a
// barrier.
func (l *Lane) Advance(w int64) []Step {
	if !l.Solo {
		return nil
	}
	return l.clockWork(make([]Step, 0, 3), max(w, l.Flushed), w, eventClock)
}

// Tick is the work a solo lane owes when its wall clock moved: the
// processing-time timers and the wall-clock punctuators. A stamped lane
// owes nothing: its clock work waits for a barrier.
func (l *Lane) Tick() []Step {
	if !l.Solo {
		return nil
	}
	return l.clockWork(make([]Step, 0, 2), l.Flushed, Unknown, wallClock)
}

// maxCrossSteps is the most steps Cross returns: listen, commit,
// report, forward and enter, then the clock work of both clocks (flush,
// two kinds of timers, two kinds of punctuators). A final barrier's flush
// comes instead of the clock work.
const maxCrossSteps = 10

// clocks says which clocks moved.
type clocks uint8

const (
	eventClock clocks = 1 << iota
	wallClock
)

// clockWork appends the work that moving the clocks makes due, in the one
// order of the protocol: the emission pass up to frontier (judged against
// the previous frontier), the event-time timers due at due and the
// processing-time timers (judged against the floor), then the
// stream-time and the wall-clock punctuators (judged against frontier:
// what they forward into a window the pass just emitted is late). No
// event-time timer is due before any event time is known.
func (l *Lane) clockWork(steps []Step, frontier, due int64, moved clocks) []Step {
	if moved&eventClock != 0 {
		steps = l.flush(steps, frontier)
		if due != Unknown {
			steps = append(steps, Step{Kind: EventTimers, Due: due, Floor: l.Floor})
		}
	}
	if moved&wallClock != 0 {
		steps = append(steps, Step{Kind: ProcessingTimers, Floor: l.Floor})
	}
	if moved&eventClock != 0 {
		steps = append(steps, Step{Kind: PunctuateStreamTime, Floor: frontier})
	}
	if moved&wallClock != 0 {
		steps = append(steps, Step{Kind: PunctuateWallClock, Floor: frontier})
	}
	return steps
}

func (l *Lane) flush(steps []Step, frontier int64) []Step {
	if frontier <= l.Flushed {
		return steps
	}
	floor := l.Flushed
	l.Flushed = frontier
	return append(steps, Step{Kind: Flush, Frontier: frontier, Floor: floor})
}
