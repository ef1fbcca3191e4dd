package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// discardContext is a logging context that keeps nothing, so that a
// benchmark measures the store and not the record keeping.
type discardContext struct{ ts int64 }

func (*discardContext) ApplicationID() string                                   { return "app" }
func (*discardContext) ChangelogTopic(store string) string                      { return "app-" + store + "-changelog" }
func (c *discardContext) RecordTimestamp() int64                                { return c.ts }
func (*discardContext) LogChange(string, []byte, []byte, int64, []Header) error { return nil }

// BenchmarkTimestampedWindowUpdate is a tumbling count's read-modify-write
// through the timestamped window store, logged, with the built-in String
// key serde: per record a Fetch of the key's current window and a Put of
// the new count. 10 000 keys come round in order, one-minute windows, a
// record a millisecond, so most updates find their window.
func BenchmarkTimestampedWindowUpdate(b *testing.B) {
	const keys = 10_000
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("key-%05d", i)
	}
	st, err := TimestampedWindowStoreBuilder("win", serde.String(), serde.Int64(), 24*time.Hour, time.Minute, false, InMemory()).Build()
	if err != nil {
		b.Fatal(err)
	}
	s := st.(TimestampedWindowStore[string, int64])
	ctx := &discardContext{}
	if err := s.Init(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ts := int64(i)
		ctx.ts = ts
		k := names[i%keys]
		start := ts - ts%60_000
		cur, found, err := s.Fetch(k, start)
		if err != nil {
			b.Fatal(err)
		}
		n := int64(1)
		if found {
			n += cur.Value
			ts = max(ts, cur.Timestamp)
		}
		if err := s.Put(k, ValueAndTimestamp[int64]{Value: n, Timestamp: ts}, start); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
