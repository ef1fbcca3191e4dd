package tui

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/stoatflow/stoatctl/inspect"
)

// scriptedSource answers polls from a list, the last one repeating.
type scriptedSource struct {
	samples []Sample
	n       int
}

func (s *scriptedSource) Poll(context.Context) Sample {
	i := min(s.n, len(s.samples)-1)
	s.n++
	return s.samples[i]
}

// TestPollLoop runs the model's commands by hand: the first poll, the
// back-off after failures, pause and the interval keys, quit.
func TestPollLoop(t *testing.T) {
	unreachable := Sample{Err: fmt.Errorf("x: %w", inspect.ErrUnreachable)}
	ok := normal(0, t0)
	src := &scriptedSource{samples: []Sample{unreachable, unreachable, unreachable, ok}}
	clock := &fixedClock{t: t0}
	m := New(Config{Source: src, Clock: clock, Endpoint: "e", Interval: time.Second, Options: testOptions})
	if m.Init() == nil {
		t.Fatal("Init returned no command")
	}
	msg := m.poll(m.gen)()
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, time.Second} {
		m = update(m, msg)
		if got := m.nextPoll.Sub(clock.t); got != want {
			t.Errorf("poll %d: next in %v, want %v", i+1, got, want)
		}
		msg = m.poll(m.gen)()
	}
	if m.verdict == nil || !m.verdict.Reachable {
		t.Fatalf("verdict after the engine answered: %+v", m.verdict)
	}

	// Pausing drops the pending tick; resuming polls at once, on a new loop.
	gen := m.gen
	m = update(m, keyPress("p"))
	if !m.paused || m.gen == gen {
		t.Errorf("after p: paused %v gen %d (was %d)", m.paused, m.gen, gen)
	}
	if _, cmd := m.Update(tickMsg{gen: gen}); cmd != nil {
		t.Error("a tick of the old loop polled while paused")
	}
	next, cmd := m.Update(keyPress("p"))
	m = next.(Model)
	if m.paused || cmd == nil {
		t.Errorf("after p again: paused %v, poll %v", m.paused, cmd != nil)
	}

	for _, tc := range []struct {
		key  string
		want time.Duration
	}{{"+", 500 * time.Millisecond}, {"+", MinInterval}, {"+", MinInterval}, {"-", 500 * time.Millisecond}} {
		m = update(m, keyPress(tc.key))
		if m.interval != tc.want {
			t.Errorf("after %s: interval %v, want %v", tc.key, m.interval, tc.want)
		}
	}

	if _, cmd := m.Update(keyPress("q")); cmd == nil || cmd() != tea.Quit() {
		t.Error("q does not quit")
	}
}

func TestKeys(t *testing.T) {
	m := play(t, "stalled", 80, 24)
	if m.sortBy != SortLag {
		t.Fatalf("default sort %q", m.sortBy)
	}
	for _, want := range []string{SortSkew, SortName, SortLag} {
		m = update(m, keyPress("s"))
		if m.sortBy != want {
			t.Errorf("after s: sort %q, want %q", m.sortBy, want)
		}
	}
	m = play(t, "normal", 80, 24, "/", "p", "a", "y")
	if rows := m.rows(); len(rows) != 1 || rows[0].Partition != "payments:0" {
		t.Errorf("filtering while typing: %d rows", len(rows))
	}
	m = update(m, keyPress("esc"))
	if m.filtering || len(m.rows()) != 4 {
		t.Errorf("esc while typing: filtering %v, %d rows", m.filtering, len(m.rows()))
	}
	m = update(m, keyPress("r"))
	if !strings.Contains(plain(m.Render()), fmt.Sprint(m.verdict.GlobalMs)) {
		t.Error("r does not show the raw global watermark")
	}
	// A resize is taken and the frame fits it.
	m = update(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	if lines := strings.Count(m.Render(), "\n") + 1; lines != 40 {
		t.Errorf("after a resize to 120x40 the frame has %d lines", lines)
	}
	// A frame before any answer says what it waits for.
	m = New(Config{Source: noSource{t}, Clock: &fixedClock{t: t0}, Endpoint: "http://x"})
	if !strings.Contains(m.Render(), "waiting for the first answer from http://x") {
		t.Error("the first frame does not say what it waits for")
	}
	if v := m.View(); !v.AltScreen {
		t.Error("the view is not on the alternate screen")
	}
}

// TestNoColor: under NO_COLOR the profile bubbletea detects drops every
// colour from the frame, and the alerts still read as alerts.
func TestNoColor(t *testing.T) {
	frame := play(t, "stalled", 80, 24).Render()
	if !strings.Contains(frame, "\x1b[") {
		t.Fatal("the frame has no styles at all: nothing to drop")
	}
	profile := colorprofile.Env([]string{"TERM=xterm-256color", "NO_COLOR=1"})
	if profile > colorprofile.Ascii {
		t.Fatalf("NO_COLOR gives profile %v", profile)
	}
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: profile}
	if _, err := w.WriteString(frame); err != nil {
		t.Fatal(err)
	}
	for _, sgr := range []string{"[31", "[33", "[32", "[90", ";31", ";33", "38;", "48;"} {
		if strings.Contains(buf.String(), sgr) {
			t.Errorf("the NO_COLOR frame still has colour %q", sgr)
		}
	}
	if !strings.Contains(buf.String(), "STALLED") {
		t.Error("the NO_COLOR frame lost the STALLED badge")
	}
}
