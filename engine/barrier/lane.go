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
	// Commit flushes the stores into the epoch.
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
	// EventTimers fires the event-time timers due at Floor, judged
	// against Floor.
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
}

// Lane is one lane's side of the protocol: its epoch, floor and frontier.
type Lane struct {
	// Epoch is the epoch the lane processes now.
	Epoch int64
	// Floor is the stamp of the last barrier crossed: W(N).
	Floor int64
	// Flushed is the frontier of the last emission pass.
	Flushed int64
}

// NewLane returns a lane in epoch 1 whose floor is floor (the stamp a
// restart resumes from, or Unknown).
func NewLane(floor int64) *Lane {
	return &Lane{Epoch: 1, Floor: floor, Flushed: Unknown}
}

// Cross moves the lane past b and returns the work to do, in order. The
// work is the one order of the protocol: the test driver runs the same
// steps (through the same Task methods) at its barriers.
//
// Inside the epoch b closes: the listeners (judged against the previous
// stamp), on the final barrier an emission pass up to b's own stamp, the
// stores' commit, the report and the marker downstream. Then the lane
// enters the next epoch with b's stamp as its floor, and runs there: the
// emission pass up to the frontier (the previous stamp), timers
// against the new floor, punctuators against the frontier. A pass whose
// frontier did not move is left out.
func (l *Lane) Cross(b Barrier) []Step {
	prev := l.Floor
	steps := []Step{{Kind: Listen, Floor: prev}}
	if b.Final {
		steps = l.flush(steps, b.Stamp)
	}
	steps = append(steps, Step{Kind: Commit}, Step{Kind: Report, Epoch: b.Epoch}, Step{Kind: Forward, Epoch: b.Epoch})
	l.Floor = max(l.Floor, b.Stamp)
	l.Epoch = b.Epoch + 1
	steps = append(steps, Step{Kind: Enter, Epoch: l.Epoch, Floor: l.Floor})
	if b.Final {
		return steps
	}
	steps = l.flush(steps, prev)
	return append(steps,
		Step{Kind: EventTimers, Floor: l.Floor},
		Step{Kind: ProcessingTimers, Floor: l.Floor},
		Step{Kind: PunctuateStreamTime, Floor: prev},
		Step{Kind: PunctuateWallClock, Floor: prev},
	)
}

func (l *Lane) flush(steps []Step, frontier int64) []Step {
	if frontier <= l.Flushed {
		return steps
	}
	floor := l.Flushed
	l.Flushed = frontier
	return append(steps, Step{Kind: Flush, Frontier: frontier, Floor: floor})
}
