package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNextOldest: the dispatcher's merge of a poll's partitions keeps each
// partition in offset order and across partitions takes the oldest first,
// ties to the smaller topic, then the smaller partition; randomised
// polls (the seed is printed) are checked against sorting the records by
// that rule, which a merge of offset-ordered partitions with
// non-decreasing timestamps must give.
func TestNextOldest(t *testing.T) {
	t.Run("ties", func(t *testing.T) {
		mk := func(topic string, p int32, stamps ...int64) *mergeHead {
			var recs []*kgo.Record
			for i, ts := range stamps {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Offset: int64(i), Timestamp: time.UnixMilli(ts)})
			}
			return newMergeHead(topic, p, recs)
		}
		heads := []*mergeHead{mk("b", 0, 5, 7), mk("a", 1, 5, 6), mk("a", 0, 5, 9), mk("b", 1, 4)}
		var got []string
		for len(heads) > 0 {
			var rec *kgo.Record
			var ts int64
			heads, _, rec, ts = nextOldest(heads)
			if ts != rec.Timestamp.UnixMilli() {
				t.Fatalf("%s%d@%d: timestamp %d, want %d", rec.Topic, rec.Partition, rec.Offset, ts, rec.Timestamp.UnixMilli())
			}
			got = append(got, fmt.Sprintf("%s%d@%d", rec.Topic, rec.Partition, rec.Offset))
		}
		want := []string{"b1@0", "a0@0", "a1@0", "b0@0", "a1@1", "b0@1", "a0@1"}
		if !slices.Equal(got, want) {
			t.Errorf("order %v, want %v", got, want)
		}
	})
	t.Run("random", func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 0))
		for range 200 {
			var heads []*mergeHead
			var all []*kgo.Record
			for _, topic := range []string{"x", "y"} {
				for p := range int32(rng.IntN(4) + 1) {
					n := rng.IntN(6)
					if n == 0 {
						continue
					}
					ts := int64(rng.IntN(5))
					var recs []*kgo.Record
					for o := range n {
						ts += int64(rng.IntN(3))
						recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Offset: int64(o), Timestamp: time.UnixMilli(ts)})
					}
					all = append(all, recs...)
					heads = append(heads, newMergeHead(topic, p, recs))
				}
			}
			var got []*kgo.Record
			for len(heads) > 0 {
				var rec *kgo.Record
				var ts int64
				heads, _, rec, ts = nextOldest(heads)
				if ts != rec.Timestamp.UnixMilli() {
					t.Fatalf("%s%d@%d: timestamp %d, want %d", rec.Topic, rec.Partition, rec.Offset, ts, rec.Timestamp.UnixMilli())
				}
				got = append(got, rec)
			}
			slices.SortStableFunc(all, func(a, b *kgo.Record) int {
				if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
					return c
				}
				if a.Topic != b.Topic {
					if a.Topic < b.Topic {
						return -1
					}
					return 1
				}
				return int(a.Partition - b.Partition)
			})
			if !slices.Equal(got, all) {
				t.Fatalf("seed %d: merge order differs from the rule's order", seed)
			}
		}
	})
}
