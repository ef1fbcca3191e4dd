package barrier

import "testing"

// TestCrossFitsItsRoom: no crossing returns more steps than Cross makes
// room for, so it allocates once.
func TestCrossFitsItsRoom(t *testing.T) {
	for _, final := range []bool{false, true} {
		l := NewLane(Unknown)
		for epoch := int64(1); epoch <= 3; epoch++ {
			steps := l.Cross(Barrier{Epoch: epoch, Stamp: epoch * 100, Final: final && epoch == 3})
			if len(steps) > maxCrossSteps || cap(steps) != maxCrossSteps {
				t.Fatalf("final %v, epoch %d: %d steps, capacity %d, want at most %d in one allocation", final, epoch, len(steps), cap(steps), maxCrossSteps)
			}
		}
	}
}
