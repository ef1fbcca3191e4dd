package metrics

import (
	"sync"
	"sync/atomic"
	"time"
)

// SampleEvery is how often the record path times a record: one in
// SampleEvery, and the first of every batch a lane receives
// (task.Task.SampleNext), so that a quiet input is timed record by record
// and a busy one pays for its clock reads on about 2% of its records.
// Kafka Streams times every record at debug level; the per-record cost of
// two clock reads (about 40 ns each here) is what the engine's throughput
// budget does not have (docs/decisions/0037).
const SampleEvery = 64

// Window is the span the minimum and maximum of a Timing cover: Kafka
// Streams' metrics.sample.window.ms. A reader sees the extremes of the
// current window and the one before it, so between 30 s and 60 s of
// samples; none once nothing was timed for a whole window.
const Window = 30 * time.Second

// Timing accumulates sampled durations: their count and sum (an average
// over any span is the difference of two reads) and their minimum and
// maximum over the last windows. One goroutine writes it at a time; the
// scrape reads it concurrently, so it takes a mutex, on sampled events only.
type Timing struct {
	mu    sync.Mutex
	count int64
	sum   time.Duration
	// cur and prev are the extremes of the window in progress and of the
	// one before it.
	cur, prev window
}

type window struct {
	// n is the window's number (Unix time / Window); 0 for no window.
	n        int64
	min, max time.Duration
}

func (w *window) add(d time.Duration) {
	w.min, w.max = min(w.min, d), max(w.max, d)
}

// Observe records d, sampled at now.
func (t *Timing) Observe(d time.Duration, now time.Time) {
	n := now.UnixNano()/int64(Window) + 1
	t.mu.Lock()
	t.count++
	t.sum += d
	switch {
	case n == t.cur.n:
		t.cur.add(d)
	case n > t.cur.n:
		t.prev, t.cur = t.cur, window{n: n, min: d, max: d}
	default:
		// A clock that stepped back: the sample still counts in the sum,
		// and in the window in progress.
		t.cur.add(d)
	}
	t.mu.Unlock()
}

// TimingSnapshot is a read of one Timing or a sum of several. Extremes
// says Min and Max hold something: a sample within the last two windows.
type TimingSnapshot struct {
	Count    int64
	Sum      time.Duration
	Min, Max time.Duration
	Extremes bool
}

// Snapshot reads t at now.
func (t *Timing) Snapshot(now time.Time) TimingSnapshot {
	n := now.UnixNano()/int64(Window) + 1
	t.mu.Lock()
	defer t.mu.Unlock()
	s := TimingSnapshot{Count: t.count, Sum: t.sum}
	for _, w := range []window{t.cur, t.prev} {
		if w.n != 0 && w.n >= n-1 {
			s.merge(w.min, w.max)
		}
	}
	return s
}

func (s *TimingSnapshot) merge(lo, hi time.Duration) {
	if !s.Extremes {
		s.Min, s.Max, s.Extremes = lo, hi, true
		return
	}
	s.Min, s.Max = min(s.Min, lo), max(s.Max, hi)
}

// Add sums o into s: counts and sums add, extremes widen.
func (s *TimingSnapshot) Add(o TimingSnapshot) {
	s.Count += o.Count
	s.Sum += o.Sum
	if o.Extremes {
		s.merge(o.Min, o.Max)
	}
}

// Meter is an event count with sampled timings: every event is counted,
// the sampled ones are timed too.
type Meter struct {
	Events atomic.Int64
	Timing Timing
}

// MeterSnapshot is a read of one Meter or a sum of several.
type MeterSnapshot struct {
	Events int64
	TimingSnapshot
}

// Snapshot reads m at now.
func (m *Meter) Snapshot(now time.Time) MeterSnapshot {
	return MeterSnapshot{Events: m.Events.Load(), TimingSnapshot: m.Timing.Snapshot(now)}
}

// Add sums o into s.
func (s *MeterSnapshot) Add(o MeterSnapshot) {
	s.Events += o.Events
	s.TimingSnapshot.Add(o.TimingSnapshot)
}
