package lanes

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/barrier"
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

// step does one piece of barrier work. fwdFloor pins what the work
// forwards across a boundary to the floor it runs under, so that a result
// is not late downstream by the frontier that emitted it.
func (l *Lane) step(s barrier.Step, b *barrier.Barrier) error {
	var err error
	switch s.Kind {
	case barrier.Listen:
		err = l.forwardingAt(s.Floor, func() error { return l.task.Barrier(s.Floor) })
	case barrier.Flush:
		err = l.forwardingAt(s.Floor, func() error {
			if err := l.task.AdvanceWatermark(s.Frontier, s.Floor); err != nil {
				return fmt.Errorf("lane %d: watermark %d: %w", l.cfg.Global, s.Frontier, err)
			}
			return nil
		})
	case barrier.Commit:
		err = l.task.Commit()
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
		if l.task.HasTimers() {
			_, err = l.task.FireEventTimers(s.Due, s.Floor)
		}
	case barrier.ProcessingTimers:
		if l.task.HasTimers() {
			_, err = l.task.FireProcessingTimers(l.env.Wall(), s.Floor)
		}
	case barrier.PunctuateStreamTime:
		err = l.forwardingAt(s.Floor, func() error { _, err := l.task.PunctuateStreamTime(s.Floor); return err })
	case barrier.PunctuateWallClock:
		err = l.forwardingAt(s.Floor, func() error { _, err := l.task.PunctuateWallClock(s.Floor); return err })
	}
	if err != nil {
		return err
	}
	return l.sendErr
}

// forwardingAt runs fn with what it forwards pinned to floor.
func (l *Lane) forwardingAt(floor int64, fn func() error) error {
	l.fwdFloor = floor
	defer func() { l.fwdFloor = noPin }()
	return fn()
}
