package engine_test

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestChangelogCoalesced: within an epoch a lane logs only each store
// key's last write, so a count over 20 keys writes far fewer changelog
// records than it counts input records, and a restart restores the counts
// from them exactly. With stoatflow.changelog.coalesce-bytes=0 every
// write is logged, one changelog record per input record, and so with
// Kafka Streams' statestore.cache.max.bytes=0 unless our key says
// otherwise.
func TestChangelogCoalesced(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		every bool
	}{
		{name: "coalesced"},
		{name: "every write", extra: []string{engine.ChangelogCoalesceBytes, "0"}, every: true},
		{name: "kafka streams cache off", extra: []string{"statestore.cache.max.bytes", "0"}, every: true},
		{name: "our key wins", extra: []string{"statestore.cache.max.bytes", "0", engine.ChangelogCoalesceBytes, "1048576"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kafkatest.Parallel(t)
			addr := startKafka(t, map[string]int32{"in": 2, "out": 2})
			var in []kv
			for i := range 600 {
				in = append(in, kv{Key: "k" + strconv.Itoa(i%20), Value: "x"})
			}
			produce(t, addr, "in", in[:300])
			extra := append([]string{"num.stream.threads", "2", engine.BarrierIntervalMs, "1000", engine.BarrierMinIntervalMs, "500"}, tc.extra...)
			_, stop := runEngine(t, counts(), cfg(addr, "coalesce", extra...))
			if got := readCommitted(t, addr, "out", 300, 30*time.Second); len(got) != 300 {
				t.Fatalf("first run: %d updates downstream, want every one of 300", len(got))
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			// The whole changelog (two partitions, as the input), once
			// every transaction that wrote to it has ended.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var logged []kv
			if _, err := kafka.ReadToEndSettled(ctx, []string{addr}, "coalesce-counts-changelog", kafka.FromLogStart(0, 1), func(r *kgo.Record) error {
				logged = append(logged, kv{Key: string(r.Key), Value: string(r.Value)})
				// Routed as every changelog write, held back or not: the
				// partition of its key, and the hash of the key that
				// picked the lane (here the same bytes) for restoration.
				if want := int32(lane.For(r.Key, 2)); r.Partition != want {
					t.Errorf("changelog %s in partition %d, want %d", r.Key, r.Partition, want)
				}
				var hashes int
				for _, h := range r.Headers {
					if h.Key == lane.HashHeader {
						hashes++
						if len(h.Value) != 4 || binary.BigEndian.Uint32(h.Value) != uint32(lane.Murmur2(r.Key)) {
							t.Errorf("changelog %s: lane hash %x, want %x", r.Key, h.Value, uint32(lane.Murmur2(r.Key)))
						}
					}
				}
				if hashes != 1 {
					t.Errorf("changelog %s: %d lane hash headers, want 1", r.Key, hashes)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d changelog records for 300 input records over 20 keys", len(logged))
			if tc.every && len(logged) != 300 {
				t.Fatalf("%d changelog records, want one per input record, 300", len(logged))
			}
			if !tc.every && (len(logged) < 20 || len(logged) >= 300) {
				t.Fatalf("%d changelog records, want at least one per key (20) and fewer than the 300 writes", len(logged))
			}
			last := map[string]int64{}
			for _, r := range logged {
				if len(r.Value) != 8 {
					t.Fatalf("changelog value %q of %s: want 8 bytes", r.Value, r.Key)
				}
				last[r.Key] = int64(binary.BigEndian.Uint64([]byte(r.Value)))
			}
			for k, n := range last {
				if n != 15 {
					t.Fatalf("changelog ends with %s=%d, want 15 (last: %v)", k, n, last)
				}
			}
			if len(last) != 20 {
				t.Fatalf("changelog has %d keys, want 20", len(last))
			}
			// A second run restores from the changelog and counts on.
			produce(t, addr, "in", in[300:])
			_, stop = runEngine(t, counts(), cfg(addr, "coalesce", extra...))
			got := readCommitted(t, addr, "out", 600, 30*time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			checkCounts(t, got, 20, 30)
		})
	}
}
