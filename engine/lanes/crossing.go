package lanes

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/task"
)

// cross does the work of crossing b, in the protocol's order
// (barrier.Lane.Cross): the listeners, on the final barrier every window
// up to b's stamp, the commit, the report and the marker downstream inside
// the epoch b closes; then, in the next epoch, the emission pass up to the
// frontier, timers and punctuators.
func (l *Lane) cross(b *barrier.Barrier) error {
	if p := l.env.Probe; p != nil {
		p(l.cfg.Sub, l.cfg.Index, true)
	}
	for _, s := range l.proto.Cross(*b) {
		if err := l.step(s, b); err != nil {
			return err
		}
	}
	return nil
}

// step does one piece of barrier work, in each of the lane's tasks in
// partition order. fwdFloor pins what the work forwards across a boundary
// to the floor it runs under, so that a result is not late downstream by
// the frontier that emitted it.
func (l *Lane) step(s barrier.Step, b *barrier.Barrier) error {
	var err error
	switch s.Kind {
	case barrier.Listen:
		err = l.forwardingAt(s.Floor, func() error { return l.eachTask(func(t *task.Task) error { return t.Barrier(s.Floor) }) })
	case barrier.Flush:
		err = l.forwardingAt(s.Floor, func() error {
			return l.eachTask(func(t *task.Task) error {
				if err := t.AdvanceWatermark(s.Frontier, s.Floor); err != nil {
					return fmt.Errorf("lane %d: task %s: watermark %d: %w", l.cfg.Global, t.ID(), s.Frontier, err)
				}
				return nil
			})
		})
	case barrier.Commit:
		err = l.eachTask(func(t *task.Task) error { return t.Commit() })
		if err == nil {
			// After the stores' flush, which may log changes too.
			err = l.flushChangelog()
		}
		if err == nil && l.cfg.OnCommit != nil {
			// The epoch's writes are complete; what follows is the next
			// epoch's, a layer of its own.
			l.cfg.OnCommit(b.Epoch)
		}
	case barrier.Report:
		r := Report{Epoch: s.Epoch, Lane: l.cfg.Global, Outs: l.outs, Final: true, PartTimes: l.PartTimes()}
		l.outs = newOuts()
		err = l.report(r)
	case barrier.Forward:
		err = l.sendMarker(b)
	case barrier.Enter:
		l.epoch, l.floor = s.Epoch, s.Floor
	case barrier.EventTimers:
		err = l.eachTask(func(t *task.Task) error {
			if !t.HasTimers() {
				return nil
			}
			_, err := t.FireEventTimers(s.Due, s.Floor)
			return err
		})
	case barrier.ProcessingTimers:
		err = l.eachTask(func(t *task.Task) error {
			if !t.HasTimers() {
				return nil
			}
			_, err := t.FireProcessingTimers(l.env.Wall(), s.Floor)
			return err
		})
	case barrier.PunctuateStreamTime:
		err = l.forwardingAt(s.Floor, func() error {
			return l.eachTask(func(t *task.Task) error { _, err := t.PunctuateStreamTime(s.Floor); return err })
		})
	case barrier.PunctuateWallClock:
		err = l.forwardingAt(s.Floor, func() error {
			return l.eachTask(func(t *task.Task) error { _, err := t.PunctuateWallClock(s.Floor); return err })
		})
	}
	if err != nil {
		return err
	}
	return l.sendErr
}

// eachTask runs fn in each of the lane's tasks, in partition order, each
// the lane's task at work while it runs (what it writes is routed as
// that task's), stopping at the first failure.
func (l *Lane) eachTask(fn func(t *task.Task) error) error {
	for _, t := range l.all {
		l.task = t
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

// forwardingAt runs fn with what it forwards pinned to floor.
func (l *Lane) forwardingAt(floor int64, fn func() error) error {
	l.fwdFloor = floor
	defer func() { l.fwdFloor = noPin }()
	return fn()
}
