package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/stoatflow/stoatctl/internal/golden"
)

// fixedClock is the model's clock in tests: it reads what the test set.
type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// noSource fails the test if the model polls on its own: frame tests feed
// the polls themselves.
type noSource struct{ t testing.TB }

func (s noSource) Poll(context.Context) Sample {
	s.t.Error("the model polled outside the test's control")
	return Sample{}
}

// play feeds a scenario's polls to a model of size w×h and returns it with
// its clock set 400 ms after the last poll.
func play(t testing.TB, name string, w, h int, keys ...string) Model {
	t.Helper()
	clock := &fixedClock{t: t0}
	m := New(Config{Source: noSource{t}, Clock: clock, Endpoint: "http://127.0.0.1:8080", Interval: 5 * time.Second, Options: testOptions})
	m = update(m, tea.WindowSizeMsg{Width: w, Height: h})
	for _, s := range scenarios[name].samples() {
		clock.t = s.At
		m = update(m, pollMsg{gen: m.gen, sample: s})
	}
	clock.t = clock.t.Add(400 * time.Millisecond)
	for _, k := range keys {
		m = update(m, keyPress(k))
	}
	return m
}

func update(m Model, msg tea.Msg) Model {
	next, _ := m.Update(msg)
	return next.(Model)
}

func keyPress(k string) tea.KeyPressMsg {
	switch k {
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// plain is a frame without its styles and trailing blanks: what a golden
// file holds.
func plain(frame string) string {
	lines := strings.Split(ansi.Strip(frame), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestFrames renders each scenario at a fixed clock and size and compares
// the screen with testdata/frames (go test ./tui -update rewrites them).
func TestFrames(t *testing.T) {
	tests := []struct {
		name, scenario string
		w, h           int
		keys           []string
	}{
		{"normal", "normal", 80, 24, nil},
		{"idle", "idle", 80, 24, nil},
		{"stalled", "stalled", 80, 24, nil},
		{"future", "future", 80, 24, nil},
		{"alignment", "alignment", 80, 24, nil},
		{"unreachable", "unreachable", 80, 24, nil},
		{"narrow", "stalled", 50, 20, nil},
		{"wide", "stalled", 140, 24, nil},
		{"raw-sorted-by-name", "stalled", 100, 24, []string{"r", "s", "s"}},
		{"filtered", "stalled", 80, 24, []string{"/", "o", "r", "d", "e", "r", "s", ":", "3", "enter"}},
		{"all-idle", "all-idle", 80, 24, nil},
		{"restoring", "restoring", 80, 24, nil},
		{"standby", "standby", 80, 24, nil},
		{"no-event-time", "no-event-time", 80, 24, nil},
		{"help", "normal", 80, 24, []string{"?"}},
		{"paused", "normal", 80, 24, []string{"p"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := play(t, tc.scenario, tc.w, tc.h, tc.keys...)
			frame := m.Render()
			for i, l := range strings.Split(frame, "\n") {
				if n := ansi.StringWidth(l); n > tc.w {
					t.Errorf("line %d is %d cells wide, more than the terminal's %d: %q", i+1, n, tc.w, ansi.Strip(l))
				}
			}
			if n := strings.Count(frame, "\n") + 1; n != tc.h {
				t.Errorf("the frame has %d lines, the terminal %d", n, tc.h)
			}
			golden.Check(t, "./tui", "testdata/frames/"+tc.name+".golden", plain(frame))
		})
	}
}
