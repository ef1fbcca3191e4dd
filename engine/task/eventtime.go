package task

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// AdvanceWatermark hands frontier to every processor that listens for it
// (processor.WatermarkListener), in topological order, so that an
// upstream operator's final results reach a downstream one before the
// downstream one closes its own windows. floor is the late-drop floor for
// the records the listeners forward: the previous frontier, so that a
// result emitted at this frontier is not judged late by the frontier that
// emitted it.
func (t *Task) AdvanceWatermark(frontier, floor int64) error {
	if !t.hasWatermarkListeners {
		return nil
	}
	return t.eachListener(floor, frontier, func(l any) (bool, error) {
		w, ok := l.(processor.WatermarkListener)
		if !ok {
			return false, nil
		}
		return true, w.OnWatermark(frontier)
	})
}

// Barrier tells every processor that acts at commit barriers
// (processor.BarrierListener) that one has arrived, inside the epoch it
// closes. floor is the barrier's stamp.
func (t *Task) Barrier(floor int64) error {
	if !t.hasBarrierListeners {
		return nil
	}
	return t.eachListener(floor, t.time.StreamTime(), func(l any) (bool, error) {
		b, ok := l.(processor.BarrierListener)
		if !ok {
			return false, nil
		}
		return true, b.OnBarrier()
	})
}

func (t *Task) eachListener(floor, ts int64, call func(any) (bool, error)) error {
	prev, prevFloor := t.rc, t.floor
	t.rc = recordContext{timestamp: ts}
	t.floor = floor
	defer func() { t.rc, t.floor = prev, prevFloor }()
	for _, n := range t.sub.Nodes {
		nd := t.nodes[n.Name]
		if n.Kind != topology.ProcessorNode || nd.proc == nil {
			continue
		}
		t.failed = nil
		called := false
		err := t.invoke(nd, func() (err error) {
			called, err = call(processor.Unwrap(nd.proc))
			return err
		})
		if err != nil {
			// A panic is a call that happened.
			called = true
		}
		if !called {
			continue
		}
		if err != nil {
			t.handleProcessingError(nd, fmt.Errorf("at event time %d: %w", ts, err))
		}
		if err := t.takeFailure(); err != nil {
			return err
		}
	}
	return nil
}
