package engine_test

import (
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
)

// TestChangelogCoalesced: within an epoch a lane logs only each store
// key's last write, so a count over 20 keys writes far fewer changelog
// records than it counts input records, and a restart restores the counts
// from them exactly. With stoatflow.changelog.coalesce-bytes=0 every
// write is logged, one changelog record per input record.
func TestChangelogCoalesced(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes string
	}{{"coalesced", ""}, {"every write", "0"}} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startKafka(t, map[string]int32{"in": 2, "out": 2})
			var in []kv
			for i := range 600 {
				in = append(in, kv{Key: "k" + strconv.Itoa(i%20), Value: "x"})
			}
			produce(t, addr, "in", in[:300])
			extra := []string{"num.stream.threads", "2", engine.BarrierIntervalMs, "1000", engine.BarrierMinIntervalMs, "500"}
			if tc.bytes != "" {
				extra = append(extra, engine.ChangelogCoalesceBytes, tc.bytes)
			}
			_, stop := runEngine(t, counts(), cfg(addr, "coalesce", extra...))
			if got := readCommitted(t, addr, "out", 300, 30*time.Second); len(got) != 300 {
				t.Fatalf("first run: %d updates downstream, want every one of 300", len(got))
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			logged := readCommitted(t, addr, "coalesce-counts-changelog", 1<<30, 3*time.Second)
			t.Logf("%d changelog records for 300 input records over 20 keys", len(logged))
			if tc.bytes == "0" && len(logged) != 300 {
				t.Fatalf("%d changelog records, want one per input record, 300", len(logged))
			}
			if tc.bytes == "" && (len(logged) < 20 || len(logged) >= 300) {
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
