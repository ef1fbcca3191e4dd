//go:build cgo

package rocks

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// sessionCatchUp does a session count's store work per record, as one
// lane of BenchmarkCatchUp's session kind does from a backlog (four
// lanes): keys cycle over 2500, event time advances a millisecond a
// record, the gap is 30 s (so every key's session grows for good, one
// merge per record), and the epoch commits and expires every 8000
// records, about what a lane processes in a barrier interval there.
type sessionCatchUp struct {
	st   state.SessionStore[string, int64]
	d    *DB // nil in memory
	keys []string
	i    int64
}

const sessionCatchUpGap = 30_000

func newSessionCatchUp(b *testing.B, supplier state.BytesSupplier, d *DB) *sessionCatchUp {
	b.Helper()
	// As a session count that emits on update builds it (decision 0050).
	st, err := state.SessionStoreBuilder("sessions", serde.String(), serde.Int64(), sessionCatchUpGap*time.Millisecond, supplier).
		WithLoggingDisabled().WithoutTimeIndex().Build()
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Init(plainContext{}); err != nil {
		b.Fatal(err)
	}
	s := &sessionCatchUp{st: st.(state.SessionStore[string, int64]), d: d, keys: make([]string, 2500)}
	for i := range s.keys {
		s.keys[i] = fmt.Sprintf("key-%d", i)
	}
	return s
}

// run processes n records and returns how long they took.
func (s *sessionCatchUp) run(b *testing.B, n int) time.Duration {
	start := time.Now()
	for range n {
		ts := s.i
		k := s.keys[s.i%int64(len(s.keys))]
		s.i++
		it, err := s.st.FindSessions(k, ts-sessionCatchUpGap, ts+sessionCatchUpGap)
		if err != nil {
			b.Fatal(err)
		}
		w, count := window.Window{Start: ts, End: ts}, int64(1)
		var merged []window.Window
		for it.Next() {
			m := it.Key().Window
			merged = append(merged, m)
			w.Start, w.End = min(w.Start, m.Start), max(w.End, m.End)
			count += it.Value()
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
		it.Close()
		for _, m := range merged {
			if err := s.st.Remove(window.Windowed[string]{Key: k, Window: m}); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.st.Put(window.Windowed[string]{Key: k, Window: w}, count); err != nil {
			b.Fatal(err)
		}
		if s.i%8000 == 0 {
			if err := s.st.Expire(ts); err != nil {
				b.Fatal(err)
			}
			if s.d != nil {
				e := s.d.Epoch()
				s.d.Seal(e)
				if err := s.d.Commit(e, Checkpoint{Lanes: 1}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return time.Since(start)
}

// BenchmarkSessionCatchUp measures a session count's store work per
// record on RocksDB against the in-memory store in the same run
// (x-memory is the ratio of their times), after a fill of 200 k records:
// each iteration is 10 k records on each.
func BenchmarkSessionCatchUp(b *testing.B) {
	mem := newSessionCatchUp(b, state.InMemory(), nil)
	d := must(Open(filepath.Join(b.TempDir(), "lane0")))
	defer d.Close()
	rk := newSessionCatchUp(b, d.Supplier(), d)
	mem.run(b, 200_000)
	rk.run(b, 200_000)
	const n = 10_000
	var memTook, rocksTook time.Duration
	iters := 0
	for b.Loop() {
		memTook += mem.run(b, n)
		rocksTook += rk.run(b, n)
		iters++
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(iters*n) }
	b.ReportMetric(per(rocksTook), "rocks-ns/record")
	b.ReportMetric(per(memTook), "memory-ns/record")
	b.ReportMetric(float64(rocksTook)/float64(memTook), "x-memory")
}
