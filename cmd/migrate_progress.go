package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/migrate"
)

// progressEvery is how often migrate writes a progress line when stderr
// is not a terminal: a log gets a line every few seconds, not one per
// transaction.
const progressEvery = 10 * time.Second

// progressBarWidth is the bar's width in cells.
const progressBarWidth = 24

// progressMeter renders migrate's progress over the whole run on stderr:
// on a terminal one line with a bar, the rate and the time left, rewritten
// in place; elsewhere a plain line every progressEvery and one at the end.
// The rate is the records copied since the meter started over the time
// since then, so the time left (ETA) is what is left at that rate.
//
// A small renderer rather than a progress library: the ETA reads an
// injected clock here, so a test can pin it, and the line is plain text
// that a log keeps readable.
type progressMeter struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	start time.Time
	// last is when the last plain line was written.
	last time.Time
	// ended is set once the line at 100% is written.
	ended bool
}

func newProgressMeter(w io.Writer, tty bool, now func() time.Time) *progressMeter {
	t := now()
	return &progressMeter{w: w, tty: tty, now: now, start: t, last: t}
}

// report is migrate.Options.Progress.
func (m *progressMeter) report(p migrate.Progress) {
	now := m.now()
	if p.Copied == 0 {
		// The copy starts (the plan took its time before): the rate
		// counts from here.
		m.start, m.last = now, now
		if m.tty {
			fmt.Fprintf(m.w, "\r%s\x1b[K", m.line(p, now, true))
		}
		return
	}
	finished := p.Copied >= p.ToCopy
	if m.ended {
		return
	}
	m.ended = finished
	if m.tty {
		// \x1b[K clears what a longer earlier line left.
		fmt.Fprintf(m.w, "\r%s\x1b[K", m.line(p, now, true))
		if finished {
			fmt.Fprintln(m.w)
		}
		return
	}
	if finished || now.Sub(m.last) >= progressEvery {
		fmt.Fprintf(m.w, "%s\n", m.line(p, now, false))
		m.last = now
	}
}

// line is one progress line at now.
func (m *progressMeter) line(p migrate.Progress, now time.Time, bar bool) string {
	frac := 1.0
	if p.ToCopy > 0 {
		frac = min(float64(p.Copied)/float64(p.ToCopy), 1)
	}
	var b strings.Builder
	b.WriteString("migrate: ")
	if bar {
		full := int(frac * progressBarWidth)
		fmt.Fprintf(&b, "[%s%s] ", strings.Repeat("█", full), strings.Repeat("░", progressBarWidth-full))
	}
	fmt.Fprintf(&b, "%3d%% %d/%d records", int(frac*100), p.Copied, p.ToCopy)
	elapsed := now.Sub(m.start)
	if elapsed <= 0 || p.Copied == 0 {
		b.WriteString(", ETA unknown")
		return b.String()
	}
	rate := float64(p.Copied) / elapsed.Seconds()
	left := time.Duration(float64(p.ToCopy-p.Copied) / rate * float64(time.Second))
	fmt.Fprintf(&b, ", %.0f records/s", rate)
	if p.Copied >= p.ToCopy {
		fmt.Fprintf(&b, ", done in %s", elapsed.Round(time.Second))
	} else {
		fmt.Fprintf(&b, ", ETA %s", left.Round(time.Second))
	}
	fmt.Fprintf(&b, " (%s[%d] %d/%d)", p.Topic, p.Partition, p.Done, p.Total)
	return b.String()
}
