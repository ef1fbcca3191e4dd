package cmd

import (
	"bytes"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/migrate"
)

// TestProgressMeter drives the meter with a manual clock: on a terminal
// every report rewrites one line with the bar, the rate and the ETA, and
// the last ends it; elsewhere a line every progressEvery and one at the
// end. The rate counts from the copy's start, not from the meter's (the
// plan before it took 30 s here).
func TestProgressMeter(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	type step struct {
		at time.Duration
		p  migrate.Progress
	}
	// 10 M records over two partitions at 500 000 records/s.
	steps := []step{
		{0, migrate.Progress{ToCopy: 10_000_000}},
		{2 * time.Second, migrate.Progress{Topic: "ks-counts-changelog", Partition: 0, Done: 1_000_000, Total: 5_000_000, Copied: 1_000_000, ToCopy: 10_000_000}},
		{4 * time.Second, migrate.Progress{Topic: "ks-counts-changelog", Partition: 0, Done: 2_000_000, Total: 5_000_000, Copied: 2_000_000, ToCopy: 10_000_000}},
		{12 * time.Second, migrate.Progress{Topic: "ks-counts-changelog", Partition: 0, Done: 5_000_000, Total: 5_000_000, Copied: 6_000_000, ToCopy: 10_000_000}},
		{20 * time.Second, migrate.Progress{Topic: "ks-counts-changelog", Partition: 1, Done: 5_000_000, Total: 5_000_000, Copied: 10_000_000, ToCopy: 10_000_000}},
	}
	tests := []struct {
		name string
		tty  bool
		want string
	}{
		{"terminal", true,
			"\rmigrate: [░░░░░░░░░░░░░░░░░░░░░░░░]   0% 0/10000000 records, ETA unknown\x1b[K" +
				"\rmigrate: [██░░░░░░░░░░░░░░░░░░░░░░]  10% 1000000/10000000 records, 500000 records/s, ETA 18s (ks-counts-changelog[0] 1000000/5000000)\x1b[K" +
				"\rmigrate: [████░░░░░░░░░░░░░░░░░░░░]  20% 2000000/10000000 records, 500000 records/s, ETA 16s (ks-counts-changelog[0] 2000000/5000000)\x1b[K" +
				"\rmigrate: [██████████████░░░░░░░░░░]  60% 6000000/10000000 records, 500000 records/s, ETA 8s (ks-counts-changelog[0] 5000000/5000000)\x1b[K" +
				"\rmigrate: [████████████████████████] 100% 10000000/10000000 records, 500000 records/s, done in 20s (ks-counts-changelog[1] 5000000/5000000)\x1b[K\n"},
		{"log", false,
			"migrate:  60% 6000000/10000000 records, 500000 records/s, ETA 8s (ks-counts-changelog[0] 5000000/5000000)\n" +
				"migrate: 100% 10000000/10000000 records, 500000 records/s, done in 20s (ks-counts-changelog[1] 5000000/5000000)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			var out bytes.Buffer
			now = t0.Add(-30 * time.Second)
			m := newProgressMeter(&out, tc.tty, func() time.Time { return now })
			for _, st := range steps {
				now = t0.Add(st.at)
				m.report(st.p)
			}
			if out.String() != tc.want {
				t.Errorf("meter wrote\n%q\nwant\n%q", out.String(), tc.want)
			}
		})
	}
}

// TestProgressMeterBeforeAnyTime: a report at the copy's start instant
// has no rate yet and says so rather than dividing by zero; the end is
// written once even when reported twice.
func TestProgressMeterBeforeAnyTime(t *testing.T) {
	now := time.Unix(0, 0)
	var out bytes.Buffer
	m := newProgressMeter(&out, false, func() time.Time { return now })
	m.report(migrate.Progress{ToCopy: 10})
	m.report(migrate.Progress{Topic: "t", Copied: 10, ToCopy: 10})
	m.report(migrate.Progress{Topic: "t", Copied: 10, ToCopy: 10})
	if want := "migrate: 100% 10/10 records, ETA unknown\n"; out.String() != want {
		t.Errorf("meter wrote %q, want %q", out.String(), want)
	}
}
