package tui

import (
	"fmt"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/stoatflow/stoatctl/inspect"
)

// BenchmarkFrame1000 renders a frame of 1,000 partitions (ten topics of a
// hundred, one stalled, the sparklines full) at 80×24, where a screenful
// shows, and at 200×1010, where every row does. The budget is 20 ms a
// frame: go test ./tui -run '^$' -bench Frame1000.
func BenchmarkFrame1000(b *testing.B) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 1010}} {
		b.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(b *testing.B) {
			m := thousand(b, size.w, size.h)
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

func thousand(tb testing.TB, w, h int) Model {
	clock := &fixedClock{t: t0}
	m := New(Config{Source: noSource{tb}, Clock: clock, Endpoint: "http://127.0.0.1:8080", Interval: time.Second, Options: testOptions})
	m = update(m, tea.WindowSizeMsg{Width: w, Height: h})
	stuck := ms(t0.Add(-time.Hour))
	for i := range 80 {
		now := t0.Add(time.Duration(i) * time.Second)
		parts := make(map[string]inspect.PartitionWatermark, 1000)
		for p := range 1000 {
			parts[fmt.Sprintf("topic-%d:%d", p/100, p%100)] = live(now, time.Duration(p)*time.Millisecond)
		}
		parts["topic-3:7"] = pw(stuck, stuck+int64(i), 300_000)
		clock.t = now
		m = update(m, pollMsg{gen: m.gen, sample: Sample{At: now, Info: running, Watermarks: doc(parts)}})
	}
	return m
}

// TestFrame1000Budget holds the benchmark's budget in the test run: the
// median of a few renders of every row of 1,000 partitions stays under
// 20 ms (with room for a loaded machine: the check is 5× that).
func TestFrame1000Budget(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 1,000 partitions; skipped with -short")
	}
	if raceDetector {
		t.Skip("timing budget not checked under -race (rendering is several times slower there); go test ./tui -run TestFrame1000Budget checks it")
	}
	m := thousand(t, 200, 1010)
	var times []time.Duration
	for range 5 {
		start := time.Now()
		_ = m.View()
		times = append(times, time.Since(start))
	}
	med := median(times)
	t.Logf("a frame of 1,000 partitions (200x1010) renders in %v (median of 5)", med)
	if med > 100*time.Millisecond {
		t.Errorf("a frame of 1,000 partitions takes %v, the budget is 20 ms", med)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
