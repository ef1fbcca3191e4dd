package tui

import (
	"context"
	"errors"
	"time"

	"github.com/stoatflow/stoatctl/inspect"
)

// Clock is where the model reads the time, so that tests fix it.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Source polls an engine once. Poll leaves Sample.At to the caller, which
// stamps it from its Clock.
type Source interface {
	Poll(ctx context.Context) Sample
}

// HTTPSource polls a running engine's REST API through inspect's client.
type HTTPSource struct{ Client *inspect.Client }

// Poll fetches /watermarks, then /info and /metrics. Only /watermarks is
// needed: the other two are left nil when they fail, and when /watermarks
// finds the engine unreachable they are not tried.
func (h HTTPSource) Poll(ctx context.Context) Sample {
	var s Sample
	w, err := h.Client.Watermarks(ctx)
	if err == nil {
		s.Watermarks = &w
	} else {
		s.Err = err
		if errors.Is(err, inspect.ErrUnreachable) {
			return s
		}
	}
	if info, err := h.Client.Info(ctx); err == nil {
		s.Info = &info
	}
	if text, err := h.Client.Metrics(ctx); err == nil {
		// A line it cannot read leaves that family out; the rest count.
		s.Metrics, _ = ParseMetrics(text)
	}
	return s
}

// Observe polls src n times, interval apart, through one tracker, and
// returns the verdict of the last poll: `--once --samples N`. It stops
// early, with the verdict so far, when ctx ends.
func Observe(ctx context.Context, src Source, clock Clock, opts Options, n int, interval time.Duration) Verdict {
	tr := NewTracker(opts)
	var v Verdict
	for i := range max(n, 1) {
		if i > 0 {
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return v
			case <-t.C:
			}
		}
		s := src.Poll(ctx)
		s.At = clock.Now()
		v = tr.Observe(s)
	}
	return v
}
