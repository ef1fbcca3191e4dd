package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/task"
)

// ErrNotRunning is returned by EventTime.Settle when the engine it waits
// on stops, or was never started with the control.
var ErrNotRunning = errors.New("engine is not running")

// EventTime drives a running engine's event time from outside, the way a
// fixture's steps drive the test driver's: a Go test or `stoatctl replay
// --engine` holds one, passes it with WithEventTime, and moves time step
// by step.
//
// Under an EventTime the engine's watermark is the test driver's: the
// largest event time dispatched from any source partition, or the largest
// Advance, whichever is later. The sources' watermark strategies (the
// out-of-orderness bound, the minimum over partitions, idleness) are not
// applied, so the watermark does not depend on how keys spread over
// partitions or lanes. Everything under it stays the live engine's:
// barriers stamp the watermark, lanes judge lateness against the stamp of
// the last barrier they crossed and emit final results up to the frontier,
// and what is written commits in the barrier's transaction.
//
// Settle makes a step's effects deterministic: it waits until the records
// a caller produced were dispatched and everything the watermark made due
// was emitted and committed, cutting barriers as fast as commits allow
// while it waits. A caller that settles after every step sees the same
// floors at every step whatever the lane count or the barrier interval.
type EventTime struct {
	mu       sync.Mutex
	manual   int64
	stamp    int64
	attached bool
	waiters  []*settleWait
	// cuts are the barriers cut since the last reset, oldest first, at
	// most a few: the quiet rule looks at the last three.
	cuts []cutNote
}

// cutNote is what the dispatcher knew of a barrier when it cut it.
type cutNote struct {
	epoch, stamp     int64
	records, outputs int64
	quiet            bool
}

type settleWait struct {
	ends map[string]map[int32]int64
	// reached is the epoch of the first barrier cut after every end was
	// dispatched (the records are in it or an earlier one), 0 before.
	reached int64
	// quiet counts the quiet barriers in a row cut after reached.
	quiet int
	done  chan error
}

// quietBarriers is how many barriers in a row must carry no record, write
// nothing and keep the stamp before a settle ends. An epoch's outputs are
// written between the barrier before it and the barrier after it, so one
// quiet barrier proves nothing about the work the lanes do after crossing
// it: three in a row prove that the epoch between the first two wrote
// nothing while the watermark stood still, so nothing more can come.
const quietBarriers = 3

// NewEventTime returns a control with no watermark of its own yet.
func NewEventTime() *EventTime {
	return &EventTime{manual: task.Unknown, stamp: task.Unknown}
}

// WithEventTime puts the engine's watermark under et (see EventTime). One
// engine at a time may hold a control.
func WithEventTime(et *EventTime) Option { return func(o *options) { o.eventTime = et } }

// WithBarrierClock sets the clock the barrier cadence is measured on, in
// epoch milliseconds (default: the system clock): a barrier is due once
// the configured interval has passed on it since the last one. With a
// manual clock that stands still, barriers are cut only when it moves, when
// an EventTime settles, and at shutdown. Commit durations (the adaptive
// interval) and network deadlines stay on real time.
func WithBarrierClock(now func() int64) Option { return func(o *options) { o.barrierClock = now } }

// Advance raises the watermark to ts, as a record stamped ts would in the
// test driver; a time at or behind it does nothing. It returns at once:
// the next barrier stamps it, and Settle waits for what it makes due
// (final results, event-time timers, stream-time punctuators).
func (et *EventTime) Advance(ts int64) {
	et.mu.Lock()
	et.manual = max(et.manual, ts)
	et.mu.Unlock()
}

// Watermark is the watermark the engine stamped on its last barrier, -1
// before any.
func (et *EventTime) Watermark() int64 {
	et.mu.Lock()
	defer et.mu.Unlock()
	return et.stamp
}

// Settle waits until the engine has dispatched every source record before
// the offsets in ends (topic, partition, the offset after the last record
// produced), and has run and committed everything those records and the
// watermark made due: barriers are cut until quietBarriers in a row carry
// no record, write nothing and keep the stamp. It returns ctx's error, or
// ErrNotRunning when the engine stops first. An end on a global table's
// topic is reached once the global runner has read the topic to it and
// updated the global stores, so a record produced after the settle
// returns is looked up in a table that holds every update before it. A
// reset (a rebalance, an aborted epoch, a restart) rewinds the wait: the
// records are dispatched again from the committed offsets. Work that
// writes at every barrier keeps a settle from ending: a wall-clock
// punctuator on a wall clock that moves by itself (give the engine a
// manual one with WithWallClock), or records that keep coming from
// another producer.
func (et *EventTime) Settle(ctx context.Context, ends map[string]map[int32]int64) error {
	w := &settleWait{ends: ends, done: make(chan error, 1)}
	et.mu.Lock()
	if !et.attached {
		et.mu.Unlock()
		return fmt.Errorf("settle: %w", ErrNotRunning)
	}
	et.waiters = append(et.waiters, w)
	et.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		et.mu.Lock()
		for i, x := range et.waiters {
			if x == w {
				et.waiters = append(et.waiters[:i], et.waiters[i+1:]...)
				break
			}
		}
		et.mu.Unlock()
		return ctx.Err()
	}
}

// The runner's hooks. Each is a no-op without a control, and each runs on
// the dispatcher's goroutine, which owns the cutter and the offsets.

// attachEventTime marks the control in use for this run; detach wakes the
// waiters when the run ends.
func (r *runner) attachEventTime() (detach func(), err error) {
	et := r.e.opts.eventTime
	if et == nil {
		return func() {}, nil
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	if et.attached {
		return nil, errors.New("engine: the EventTime control is held by another running engine")
	}
	et.attached = true
	return func() {
		et.mu.Lock()
		defer et.mu.Unlock()
		et.attached = false
		for _, w := range et.waiters {
			w.done <- fmt.Errorf("settle: %w", ErrNotRunning)
		}
		et.waiters, et.cuts = nil, nil
	}, nil
}

// controlledWatermark is the watermark under the control: the largest
// event time any source partition reached (the tracker's inputs, not its
// minimum) or the largest Advance. Without a control it is w.
func (r *runner) controlledWatermark(w int64) int64 {
	et := r.e.opts.eventTime
	if et == nil {
		return w
	}
	st := int64(task.Unknown)
	for _, ts := range r.partTimes {
		st = max(st, ts)
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	return max(st, et.manual, task.Unknown)
}

// settleForces says a settle is waiting on barriers: its records are
// dispatched, so the next barrier is cut as soon as the previous one
// committed, whatever the interval and the idle rule say.
func (r *runner) settleForces() bool {
	et := r.e.opts.eventTime
	if et == nil {
		return false
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	for _, w := range et.waiters {
		if w.reached > 0 || r.dispatchedTo(w.ends) {
			return true
		}
	}
	return false
}

// dispatchedTo says every end was dispatched. An end on a global topic
// is reached once the global runner applied it to the global stores: the
// dispatcher never reads those topics, and a record the next step pipes
// must meet the table as the test driver's does, with every update the
// steps before it wrote.
func (r *runner) dispatchedTo(ends map[string]map[int32]int64) bool {
	for t, ps := range ends {
		for p, end := range ps {
			if end <= 0 {
				continue
			}
			if reached, global := r.global.appliedTo(t, p, end); global {
				if !reached {
					return false
				}
				continue
			}
			if r.cutOffsets[t][p] < end {
				return false
			}
		}
	}
	return true
}

// noteCut records barrier b, cut after records were dispatched and outputs
// written since the previous one, and ends the settles it makes quiet.
func (r *runner) noteCut(b barrier.Barrier, records, outputs int64) {
	et := r.e.opts.eventTime
	if et == nil {
		return
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	prev := int64(task.Unknown)
	known := len(et.cuts) > 0
	if known {
		prev = et.cuts[len(et.cuts)-1].stamp
	}
	quiet := known && records == 0 && outputs == 0 && b.Stamp == prev
	et.cuts = append(et.cuts, cutNote{epoch: b.Epoch, stamp: b.Stamp, records: records, outputs: outputs, quiet: quiet})
	if len(et.cuts) > quietBarriers+1 {
		et.cuts = et.cuts[1:]
	}
	et.stamp = b.Stamp
	kept := et.waiters[:0]
	for _, w := range et.waiters {
		switch {
		case w.reached == 0:
			if r.dispatchedTo(w.ends) {
				w.reached = b.Epoch
			}
		case quiet:
			w.quiet++
		default:
			w.quiet = 0
		}
		if w.quiet >= quietBarriers {
			w.done <- nil
			continue
		}
		kept = append(kept, w)
	}
	et.waiters = kept
}

// resetEventTime forgets the cuts of the generation a reset ended: the
// waiters start over once their records are dispatched again.
func (r *runner) resetEventTime() {
	et := r.e.opts.eventTime
	if et == nil {
		return
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	et.cuts = nil
	for _, w := range et.waiters {
		w.reached, w.quiet = 0, 0
	}
}

// barrierNow is the barrier clock (WithBarrierClock, else the system
// clock) in epoch milliseconds.
func (r *runner) barrierNow() int64 {
	if c := r.e.opts.barrierClock; c != nil {
		return c()
	}
	return time.Now().UnixMilli()
}

// sinceBarrier is how long ago, on the barrier clock, the last barrier
// was cut.
func (r *runner) sinceBarrier() time.Duration {
	return time.Duration(r.barrierNow()-r.lastBarrierAt) * time.Millisecond
}

// pollWait bounds one poll: short while a settle waits on barriers, so
// that a forced barrier is not held back by an empty poll.
func (r *runner) pollWait(forced bool) time.Duration {
	if forced {
		return 2 * time.Millisecond
	}
	return 25 * time.Millisecond
}
