package tui

import (
	"context"
	"errors"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/backoff"
)

// Config is what the watch view needs.
type Config struct {
	Source   Source
	Clock    Clock
	Endpoint string
	// Interval between polls; MinInterval..MaxInterval.
	Interval time.Duration
	Options  Options
}

// Poll intervals the +/- keys move between, and the longest back-off.
const (
	MinInterval = 250 * time.Millisecond
	MaxInterval = time.Minute
	MaxBackoff  = 30 * time.Second
)

// Sort orders of the rows.
const (
	SortLag  = "lag"
	SortSkew = "skew"
	SortName = "name"
)

var sortOrder = []string{SortLag, SortSkew, SortName}

// Model is the bubbletea model of `stoatctl watch watermarks`.
type Model struct {
	cfg     Config
	tracker *Tracker
	verdict *Verdict

	width, height int
	sortBy        string
	filter        string
	input         textinput.Model
	filtering     bool
	paused        bool
	raw           bool
	showHelp      bool
	offset        int

	interval time.Duration
	failures int
	// gen numbers the poll loop: a tick of an older loop (before a pause,
	// or an interval change) is dropped, so only one loop runs.
	gen      int
	nextPoll time.Time

	keys keyMap
	help help.Model
	st   styles
}

// New returns the model; it polls as soon as the program starts.
func New(cfg Config) Model {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	cfg.Interval = min(max(cfg.Interval, MinInterval), MaxInterval)
	in := textinput.New()
	in.Prompt = "filter topics: "
	in.Placeholder = "part of a topic name"
	in.CharLimit = 200
	return Model{
		cfg: cfg, tracker: NewTracker(cfg.Options),
		width: 80, height: 24, sortBy: SortLag, interval: cfg.Interval,
		input: in, keys: newKeyMap(), help: help.New(), st: newStyles(),
	}
}

// Messages of the poll loop.
type (
	pollMsg struct {
		gen    int
		sample Sample
	}
	tickMsg   struct{ gen int }
	redrawMsg struct{}
)

// Init starts the poll loop and the redraw ticker.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.poll(m.gen), redraw())
}

func (m Model) poll(gen int) tea.Cmd {
	src, clock, timeout := m.cfg.Source, m.cfg.Clock, max(m.interval, 5*time.Second)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		s := src.Poll(ctx)
		s.At = clock.Now()
		return pollMsg{gen: gen, sample: s}
	}
}

// redraw ticks once a second so that ages on screen move between polls.
func redraw() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return redrawMsg{} })
}

// delay is the wait before the next poll: the interval, doubled for each
// failed poll in a row, up to MaxBackoff (or the interval, if longer).
// It is internal/backoff's schedule without the jitter: one screen's polls
// make no herd to spread, and the view counts the wait down ("retry in").
func (m Model) delay() time.Duration {
	return backoff.Policy{First: m.interval, Max: max(MaxBackoff, m.interval)}.Ceiling(m.failures + 1)
}

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.input.SetWidth(max(msg.Width-len(m.input.Prompt)-2, 10))
		m.clampOffset()
		return m, nil
	case pollMsg:
		return m.observe(msg)
	case tickMsg:
		if msg.gen != m.gen || m.paused {
			return m, nil
		}
		return m, m.poll(m.gen)
	case redrawMsg:
		return m, redraw()
	case tea.KeyPressMsg:
		if m.filtering {
			return m.filterKey(msg)
		}
		return m.key(msg)
	}
	if m.filtering {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m Model) observe(msg pollMsg) (tea.Model, tea.Cmd) {
	v := m.tracker.Observe(msg.sample)
	v.Endpoint = m.cfg.Endpoint
	m.verdict = &v
	var api *inspect.APIError
	if msg.sample.Err != nil && !errors.As(msg.sample.Err, &api) {
		m.failures++
	} else {
		m.failures = 0
	}
	m.clampOffset()
	if msg.gen != m.gen || m.paused {
		return m, nil
	}
	d := m.delay()
	m.nextPoll = msg.sample.At.Add(d)
	gen := m.gen
	return m, tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// restart begins a new poll loop at once, leaving the old one to die.
func (m Model) restart() (tea.Model, tea.Cmd) {
	m.gen++
	return m, m.poll(m.gen)
}

func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m, tea.Quit
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
	case m.showHelp && key.Matches(msg, k.Escape):
		m.showHelp = false
	case key.Matches(msg, k.Sort):
		for i, s := range sortOrder {
			if s == m.sortBy {
				m.sortBy = sortOrder[(i+1)%len(sortOrder)]
				break
			}
		}
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.input.SetValue(m.filter)
		m.input.CursorEnd()
		return m, m.input.Focus()
	case key.Matches(msg, k.Escape):
		m.filter = ""
		m.clampOffset()
	case key.Matches(msg, k.Pause):
		m.paused = !m.paused
		if !m.paused {
			return m.restart()
		}
		m.gen++
	case key.Matches(msg, k.Faster):
		m.interval = max(m.interval/2, MinInterval)
		if !m.paused {
			return m.restart()
		}
	case key.Matches(msg, k.Slower):
		m.interval = min(m.interval*2, MaxInterval)
		if !m.paused {
			return m.restart()
		}
	case key.Matches(msg, k.Raw):
		m.raw = !m.raw
	case key.Matches(msg, k.Up):
		m.offset--
	case key.Matches(msg, k.Down):
		m.offset++
	case key.Matches(msg, k.PageUp):
		m.offset -= m.tableRows()
	case key.Matches(msg, k.PageDown):
		m.offset += m.tableRows()
	case key.Matches(msg, k.Top):
		m.offset = 0
	}
	m.clampOffset()
	return m, nil
}

func (m Model) filterKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "enter":
		m.filtering = false
		m.filter = m.input.Value()
		m.input.Blur()
		m.offset = 0
		return m, nil
	case "esc":
		m.filtering = false
		m.input.Blur()
		return m, nil
	case "ctrl+c":
		return m, tea.Quit
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	// Filter as the user types; enter keeps it, esc goes back.
	m.offset = 0
	return m, cmd
}

// activeFilter is the topic filter in force: the one being typed, or the
// one kept.
func (m Model) activeFilter() string {
	if m.filtering {
		return m.input.Value()
	}
	return m.filter
}

func (m *Model) clampOffset() {
	n := len(m.rows())
	m.offset = min(m.offset, n-m.tableRows())
	m.offset = max(m.offset, 0)
}

// View draws the frame on the alternate screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "stoatctl watch watermarks"
	return v
}

type keyMap struct {
	Sort, Filter, Escape, Pause, Faster, Slower, Raw, Help, Quit key.Binding
	Up, Down, PageUp, PageDown, Top                              key.Binding
}

func newKeyMap() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return keyMap{
		Sort:     b([]string{"s"}, "s", "sort"),
		Filter:   b([]string{"/", "f"}, "/", "filter"),
		Escape:   b([]string{"esc"}, "esc", "clear filter"),
		Pause:    b([]string{"p", "space"}, "p", "pause"),
		Faster:   b([]string{"+", "="}, "+", "faster"),
		Slower:   b([]string{"-", "_"}, "-", "slower"),
		Raw:      b([]string{"r"}, "r", "raw times"),
		Help:     b([]string{"?"}, "?", "help"),
		Quit:     b([]string{"q", "ctrl+c"}, "q", "quit"),
		Up:       b([]string{"up", "k"}, "↑/k", "scroll up"),
		Down:     b([]string{"down", "j"}, "↓/j", "scroll down"),
		PageUp:   b([]string{"pgup"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown"}, "pgdn", "page down"),
		Top:      b([]string{"home", "g"}, "g", "top"),
	}
}

// ShortHelp is the footer's key list.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.Sort, k.Filter, k.Pause, k.Faster, k.Slower, k.Raw}
}

// FullHelp is the ? screen's key list.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Sort, k.Filter, k.Escape, k.Raw},
		{k.Pause, k.Faster, k.Slower, k.Quit},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top},
	}
}
