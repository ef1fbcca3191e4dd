package watermark

import (
	"fmt"
	"testing"
)

// TestRecent: what was put is found until recentSize later puts have
// replaced it, oldest first; other topics and partitions are not
// confused with it.
func TestRecent(t *testing.T) {
	var r Recent[int]
	if r.Get("a", 0) != nil {
		t.Fatal("empty cache found an entry")
	}
	vals := make([]int, 2*recentSize)
	for i := range vals {
		vals[i] = i
	}
	for i := range recentSize {
		r.Put(fmt.Sprint("t", i%2), int32(i), &vals[i])
	}
	for i := range recentSize {
		if got := r.Get(fmt.Sprint("t", i%2), int32(i)); got != &vals[i] {
			t.Errorf("entry %d: %v, want %d", i, got, i)
		}
		if got := r.Get(fmt.Sprint("t", (i+1)%2), int32(i)); got != nil {
			t.Errorf("entry %d under the other topic: %d, want none", i, *got)
		}
	}
	// One more replaces the oldest only.
	r.Put("t0", 100, &vals[recentSize])
	if r.Get("t0", 0) != nil {
		t.Error("the oldest entry survived a put into a full cache")
	}
	for i := 1; i < recentSize; i++ {
		if r.Get(fmt.Sprint("t", i%2), int32(i)) != &vals[i] {
			t.Errorf("entry %d lost to a put that should replace the oldest", i)
		}
	}
	if r.Get("t0", 100) != &vals[recentSize] {
		t.Error("the new entry is not found")
	}
}
