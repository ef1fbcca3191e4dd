package dsl_test

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// TestSuppressKeySuffix: the buffer store tells how many bytes of its keys
// follow the lane key, as the suppressed table's key serde writes them.
func TestSuppressKeySuffix(t *testing.T) {
	str := serde.String()
	grouped := func(b *dsl.Builder) dsl.KGroupedStream[string, string] {
		return dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
	}
	limit := dsl.UntilTimeLimit(time.Minute, dsl.Unbounded())
	for _, tc := range []struct {
		name  string
		build func(b *dsl.Builder)
		n     int
		known bool
	}{
		{name: "time window", n: 8, known: true, build: func(b *dsl.Builder) {
			dsl.CountWindowed(grouped(b).WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Minute, time.Second))).
				Suppress(dsl.UntilWindowCloses(dsl.Unbounded())).ToStream().To("out")
		}},
		{name: "session", n: 16, known: true, build: func(b *dsl.Builder) {
			dsl.CountSession(grouped(b).WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(time.Minute, time.Second))).
				Suppress(dsl.UntilWindowCloses(dsl.Unbounded())).ToStream().To("out")
		}},
		{name: "not windowed", n: 0, known: true, build: func(b *dsl.Builder) {
			grouped(b).Count().Suppress(limit).ToStream().To("out")
		}},
		{name: "windowed, derived by a table operation", known: false, build: func(b *dsl.Builder) {
			dsl.CountWindowed(grouped(b).WindowedBy(window.TimeWindowsOfSizeAndGrace(time.Minute, time.Second))).
				Filter(func(window.Windowed[string], int64) bool { return true }).Suppress(limit).ToStream().To("out")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := dsl.NewBuilder()
			tc.build(b)
			built, err := b.Topology().Build(config.New(map[string]string{config.ApplicationID: "app"}))
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for name, info := range built.Stores {
				sb, ok := info.Builder.(dsl.SuppressBuffer)
				if !ok {
					continue
				}
				found++
				if n, known := sb.SuppressKeySuffix(); known != tc.known || (known && n != tc.n) {
					t.Errorf("store %s: suffix %d, %v; want %d, %v", name, n, known, tc.n, tc.known)
				}
			}
			if found != 1 {
				t.Fatalf("%d suppress buffers, want 1", found)
			}
		})
	}
}
