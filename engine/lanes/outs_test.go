package lanes

import (
	"testing"

	"github.com/stoatflow/stoatctl/engine/task"
)

// TestRecycleOuts: a recycled chunk holds no output, so the pool keeps no
// key or value alive, and a chunk of another size is left to the
// collector rather than pooled.
func TestRecycleOuts(t *testing.T) {
	outs := newOuts()
	if len(outs) != 0 || cap(outs) != reportChunk {
		t.Fatalf("new chunk %d/%d, want 0/%d", len(outs), cap(outs), reportChunk)
	}
	outs = append(outs, task.Output{Topic: "t", Key: []byte("k"), Value: []byte("v")})
	RecycleOuts(outs)
	if full := outs[:1]; full[0].Key != nil || full[0].Value != nil || full[0].Topic != "" {
		t.Errorf("a recycled chunk still holds %+v", full[0])
	}
	RecycleOuts(make([]task.Output, 3, 7)) // not pooled; must not panic
	if again := newOuts(); len(again) != 0 || cap(again) != reportChunk {
		t.Errorf("chunk from the pool %d/%d", len(again), cap(again))
	}
}
