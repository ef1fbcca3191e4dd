package tui

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

type styles struct {
	title, header, dim, pin, alert, warn, ok, badgeAlert, badgeWarn, badgeDim lipgloss.Style
}

// newStyles are the frame's styles. Colours are dropped by the renderer
// when NO_COLOR is set or the terminal has none (bubbletea downsamples to
// the detected profile); what an alert means is always in its text too.
func newStyles() styles {
	red, yellow, green, grey := lipgloss.Color("1"), lipgloss.Color("3"), lipgloss.Color("2"), lipgloss.Color("8")
	return styles{
		title:      lipgloss.NewStyle().Bold(true),
		header:     lipgloss.NewStyle().Bold(true).Underline(true),
		dim:        lipgloss.NewStyle().Foreground(grey),
		pin:        lipgloss.NewStyle().Bold(true),
		alert:      lipgloss.NewStyle().Foreground(red).Bold(true),
		warn:       lipgloss.NewStyle().Foreground(yellow),
		ok:         lipgloss.NewStyle().Foreground(green),
		badgeAlert: lipgloss.NewStyle().Foreground(red).Bold(true).Reverse(true),
		badgeWarn:  lipgloss.NewStyle().Foreground(yellow).Reverse(true),
		badgeDim:   lipgloss.NewStyle().Foreground(grey),
	}
}

// Render is the frame as text with ANSI styles, for the model's size and
// clock. It is all View does; tests call it directly.
func (m Model) Render() string {
	w, h := max(m.width, 20), max(m.height, 6)
	var top []string
	top = append(top, m.headerLines(w)...)
	top = append(top, m.alertLines(w, alertRoom(h))...)
	footer := m.footer(w)
	room := h - len(top) - 1 // the footer
	var body []string
	switch {
	case m.showHelp:
		body = m.helpLines(w)
	case m.verdict == nil:
		body = []string{m.st.dim.Render("waiting for the first answer from " + m.cfg.Endpoint)}
	default:
		body = m.table(w, room)
	}
	if len(body) > room {
		body = body[:max(room, 0)]
	}
	lines := append(top, body...)
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	lines = append(lines, footer)
	return strings.Join(lines, "\n")
}

func (m Model) headerLines(w int) []string {
	v := m.verdict
	now := m.cfg.Clock.Now()
	title := m.st.title.Render(m.cfg.Endpoint)
	if v == nil {
		return []string{fit(title, w)}
	}
	if v.ApplicationID != "" {
		title += "  " + v.ApplicationID
	}
	if v.State != "" {
		st := m.st.ok
		if v.State != "RUNNING" {
			st = m.st.warn
		}
		title += "  " + st.Render(v.State)
	}
	age := "polled " + Duration(now.Sub(v.LastAnswer).Milliseconds()) + " ago"
	if !v.Reachable {
		age = m.st.alert.Render("last answer " + Duration(now.Sub(v.LastAnswer).Milliseconds()) + " ago")
	}
	every := "every " + m.interval.String()
	switch {
	case m.paused:
		every = m.st.badgeWarn.Render(" PAUSED ")
	case m.failures > 0:
		every = fmt.Sprintf("retry in %s", Duration(max(m.nextPoll.Sub(now).Milliseconds(), 0)))
	}
	title += "  " + age + " · " + every

	global := "global " + m.globalTime(v)
	if v.GlobalLagMs != nil {
		global += " lag " + Duration(*v.GlobalLagMs)
	}
	if v.Pinning != "" {
		global += "  pinned by " + m.st.pin.Render("▶ "+v.Pinning)
	}
	counts := fmt.Sprintf("%d partitions: %d idle, %d stalled, %d preview", len(v.Partitions), v.Idle, v.Stalled, v.Preview)
	if v.Stalled > 0 {
		counts = fmt.Sprintf("%d partitions: %d idle, %s, %d preview", len(v.Partitions), v.Idle, m.st.alert.Render(fmt.Sprintf("%d stalled", v.Stalled)), v.Preview)
	}
	drops := "drops/s: n/a (no /metrics)"
	if v.DropsPerSecond != nil {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(v.DropsPerSecond)) {
			if d := v.DropsPerSecond[r]; d > 0 {
				s := r + " " + Rate(d)
				if strings.HasPrefix(r, "late_") {
					s = m.st.alert.Render(s)
				}
				parts = append(parts, s)
			}
		}
		drops = "drops/s: none"
		if len(parts) > 0 {
			drops = "drops/s: " + strings.Join(parts, ", ")
		}
	}
	lines := []string{fit(title, w), fit(global, w), fit(counts+"  "+drops, w)}
	if v.Standbys > 0 {
		lines = append(lines, fit(standbyLine(v), w))
	}
	return lines
}

// standbyLine says how many standby tasks the instance keeps and the
// largest lag among them, for an instance that has any.
func standbyLine(v *Verdict) string {
	s := fmt.Sprintf("%d standby tasks", v.Standbys)
	if v.Standbys == 1 {
		s = "1 standby task"
	}
	if v.Warmups > 0 {
		s += fmt.Sprintf(" (%d warming up)", v.Warmups)
	}
	if v.StandbyLagMaxRecords == nil {
		return s + ", lag not measured"
	}
	return s + fmt.Sprintf(", largest lag %d changelog records", *v.StandbyLagMaxRecords)
}

func (m Model) globalTime(v *Verdict) string {
	if m.raw {
		return Time(int64(v.GlobalMs), m.cfg.Clock.Now(), true)
	}
	return v.GlobalIso
}

// alertLines are the alerts, each a badged message and the fix, wrapped
// to w, in at most limit lines: when they do not all fit, the first alert
// keeps its fix and the others get one line each. A fix already shown for
// the same partition and branch is not repeated.
func (m Model) alertLines(w, limit int) []string {
	if m.verdict == nil || len(m.verdict.Alerts) == 0 {
		return nil
	}
	as := m.verdict.Alerts
	full := func(a Alert, withFix bool) []string {
		badge := m.st.badgeAlert.Render(" " + strings.ToUpper(strings.ReplaceAll(a.Code, "_", " ")) + " ")
		lines := wrap(badge+" "+a.Message, w, "  ")
		if withFix && a.Fix != "" {
			f := "→ "
			if a.Branch != NoBranch {
				f += a.Branch.Title() + ": "
			}
			for _, l := range wrap(f+a.Fix, w, "  ") {
				lines = append(lines, m.st.warn.Render(l))
			}
		}
		return lines
	}
	var out []string
	shown := map[string]bool{}
	for _, a := range as {
		k := a.Partition + "|" + string(a.Branch)
		out = append(out, full(a, !shown[k])...)
		shown[k] = true
	}
	if len(out) <= limit {
		return out
	}
	out = full(as[0], true)
	for i, a := range as[1:] {
		if len(out)+1 >= limit && i < len(as)-2 {
			out = append(out, fit(m.st.alert.Render(fmt.Sprintf("… %d more alerts (a taller terminal shows them)", len(as)-1-i)), w))
			break
		}
		badge := m.st.badgeAlert.Render(" " + strings.ToUpper(strings.ReplaceAll(a.Code, "_", " ")) + " ")
		out = append(out, fit(badge+" "+a.Message, w))
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// wrap word-wraps styled s to w cells, indenting the lines after the
// first.
func wrap(s string, w int, indent string) []string {
	lines := strings.Split(ansi.Wrap(s, max(w-len(indent), 10), ""), "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = indent + lines[i]
	}
	return lines
}

// rows are the partitions shown, filtered and sorted. The filter matches
// the name, topic:partition, so "orders" and "orders:3" both work.
func (m Model) rows() []*PartitionVerdict {
	if m.verdict == nil {
		return nil
	}
	f := strings.ToLower(m.activeFilter())
	rows := make([]*PartitionVerdict, 0, len(m.verdict.Partitions))
	for i := range m.verdict.Partitions {
		p := &m.verdict.Partitions[i]
		if f == "" || strings.Contains(strings.ToLower(p.Partition), f) {
			rows = append(rows, p)
		}
	}
	// Each order ends on the name, so it is total and needs no stable sort.
	byName := func(a, b *PartitionVerdict) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Number, b.Number), cmp.Compare(a.Partition, b.Partition))
	}
	switch m.sortBy {
	case SortLag:
		slices.SortFunc(rows, func(a, b *PartitionVerdict) int {
			return cmp.Or(cmp.Compare(lagKey(b.LagMs), lagKey(a.LagMs)), byName(a, b))
		})
	case SortSkew:
		slices.SortFunc(rows, func(a, b *PartitionVerdict) int { return cmp.Or(cmp.Compare(b.SkewMs, a.SkewMs), byName(a, b)) })
	default:
		slices.SortFunc(rows, byName)
	}
	return rows
}

// alertRoom is how many lines the alerts may take of a terminal h high.
func alertRoom(h int) int { return max(h/2-2, 2) }

// tableRows is how many partition rows fit under the header and alerts.
func (m Model) tableRows() int {
	alerts := 0
	if m.verdict != nil {
		alerts = len(m.alertLines(max(m.width, 20), alertRoom(max(m.height, 6))))
	}
	return max(max(m.height, 6)-3-alerts-1-2, 1) // header, alerts, footer, table head and more-line
}

type column struct {
	title string
	width int
	// drop orders the columns left out when the terminal is narrow:
	// highest first; 0 is never left out.
	drop  int
	right bool
	cell  func(p *PartitionVerdict) string
	idx   int // in the list columns returned, before layout dropped any
}

func (m Model) columns(rows []*PartitionVerdict) []column {
	now := m.cfg.Clock.Now()
	// Widths here are the least; table widens a column to its cells.
	nameW, timeW := len("PARTITION"), 8
	anyPreview, anyAlign := false, false
	for _, p := range rows {
		anyPreview = anyPreview || p.PreviewWatermarkMs != nil
		anyAlign = anyAlign || p.AlignmentGroup != ""
	}
	cols := []column{
		{title: "PARTITION", width: nameW, cell: func(p *PartitionVerdict) string { return p.Partition }},
		{title: "WATERMARK", width: 9, cell: func(p *PartitionVerdict) string { return Time(int64(p.WatermarkMs), now, m.raw) }},
		{title: "LAG", width: 6, right: true, cell: func(p *PartitionVerdict) string { return lagCell(p.LagMs) }},
		{title: "MOVED", width: 7, right: true, drop: 1, cell: func(p *PartitionVerdict) string {
			s := Duration(p.SinceAdvanceMs)
			if !p.AdvanceSeen && p.SinceAdvanceMs > 0 {
				s += "+"
			}
			return s
		}},
		{title: "IDLE", width: 6, right: true, drop: 1, cell: func(p *PartitionVerdict) string {
			if !p.Idle {
				return "-"
			}
			if !p.IdleStartSeen {
				return Duration(p.IdleForMs) + "+"
			}
			return Duration(p.IdleForMs)
		}},
		{title: "TIMEOUT", width: 7, right: true, drop: 4, cell: func(p *PartitionVerdict) string {
			if p.IdlenessTimeoutMs <= 0 {
				return "off"
			}
			return Duration(p.IdlenessTimeoutMs)
		}},
		{title: "SKEW", width: 7, right: true, drop: 2, cell: func(p *PartitionVerdict) string { return skewCell(p.SkewMs) }},
	}
	if anyPreview {
		cols = append(cols, column{title: "PREVIEW", width: timeW, drop: 3, cell: func(p *PartitionVerdict) string {
			if p.PreviewWatermarkMs == nil {
				return "-"
			}
			return Time(*p.PreviewWatermarkMs, now, m.raw)
		}})
	}
	if anyAlign {
		cols = append(cols, column{title: "ALIGN", width: 12, drop: 3, cell: func(p *PartitionVerdict) string {
			switch {
			case p.AlignmentGroup == "":
				return "-"
			case p.AlignmentHeld:
				return p.AlignmentGroup + " held"
			}
			return p.AlignmentGroup
		}})
	}
	cols = append(cols,
		column{title: "LAST EVENT", width: 10, drop: 5, cell: func(p *PartitionVerdict) string { return Time(int64(p.LastEventTimeMs), now, m.raw) }},
		column{title: "STATUS", width: 7, cell: status},
	)
	return cols
}

// skewCell is a skew with its sign, 0 under a second.
func skewCell(ms int64) string {
	switch {
	case ms > -1000 && ms < 1000:
		return "0"
	case ms < 0:
		return Duration(ms)
	}
	return "+" + Duration(ms)
}

func lagCell(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return Duration(*ms)
}

// status is the row's badge: the worst thing about it.
func status(p *PartitionVerdict) string {
	switch {
	case p.Stalled:
		return "STALLED"
	case p.AheadMs >= FutureAhead.Milliseconds():
		return "FUTURE"
	case p.PreviewWatermarkMs != nil:
		return "PREVIEW"
	case p.AlignmentHeld:
		return "HELD"
	case p.Idle:
		return "IDLE"
	}
	return "ok"
}

const sparkMin = 6

// sparkDrop is where the sparkline stands among the columns: those with a
// higher drop go first to make room for it, those at or below stay and the
// sparkline goes.
const sparkDrop = 3

// layout picks the columns that fit w, with the room left for the
// sparkline (0 when it does not fit).
func layout(cols []column, w int) ([]column, int) {
	width := func(cs []column) int {
		n := 2 // the pin mark
		for _, c := range cs {
			n += c.width + 1
		}
		return n
	}
	worst := func(cs []column) int {
		i := -1
		for j, c := range cs {
			if c.drop > 0 && (i < 0 || c.drop >= cs[i].drop) {
				i = j
			}
		}
		return i
	}
	for {
		if spark := w - width(cols) - 1; spark >= sparkMin {
			return cols, min(spark, 60)
		}
		i := worst(cols)
		if i < 0 || cols[i].drop <= sparkDrop {
			break
		}
		cols = slices.Delete(slices.Clone(cols), i, i+1)
	}
	for width(cols) > w {
		i := worst(cols)
		if i < 0 {
			break
		}
		cols = slices.Delete(slices.Clone(cols), i, i+1)
	}
	return cols, 0
}

func lagKey(l *int64) int64 {
	if l == nil {
		return math.MinInt64
	}
	return *l
}

func (m Model) table(w, room int) []string {
	rows := m.rows()
	if len(rows) == 0 {
		msg := "no partition registered yet"
		if v := m.verdict; v.Error != "" && v.Reachable {
			msg = "the engine answers " + v.Error
		}
		if f := m.activeFilter(); f != "" {
			msg = fmt.Sprintf("no topic matches %q (esc clears the filter)", f)
		}
		out := []string{""}
		for _, l := range wrap(msg, w, "  ") {
			out = append(out, m.st.dim.Render(l))
		}
		return out
	}
	n := max(room-3, 1)
	start := min(m.offset, max(len(rows)-n, 0))
	end := min(start+n, len(rows))
	visible := rows[start:end]

	// Cells of the rows shown; a column is as wide as its widest cell.
	cols := m.columns(rows)
	cells := make([][]string, len(visible))
	for r := range visible {
		cells[r] = make([]string, len(cols))
	}
	for i := range cols {
		cols[i].idx = i
		for r := range visible {
			cell := cols[i].cell(visible[r])
			cells[r][i] = cell
			cols[i].width = max(cols[i].width, min(width(cell), maxCell))
		}
	}
	cols, spark := layout(cols, w)

	var b strings.Builder
	b.WriteString("  ")
	for _, c := range cols {
		b.WriteString(pad(c.title, c.width, c.right))
		b.WriteByte(' ')
	}
	if spark > 0 {
		title := "LAG TREND"
		if spark < len(title) {
			title = "TREND"
		}
		b.WriteString(pad(title, spark, false))
	}
	out := []string{"", m.st.header.Render(strings.TrimRight(b.String(), " "))}
	for r := range visible {
		p := visible[r]
		b.Reset()
		if p.Pinning {
			b.WriteString("▶ ")
		} else {
			b.WriteString("  ")
		}
		for _, c := range cols {
			cell := cells[r][c.idx]
			if c.title == "STATUS" {
				b.WriteString(m.badge(cell))
			} else {
				b.WriteString(pad(cell, c.width, c.right))
			}
			b.WriteByte(' ')
		}
		if spark > 0 {
			b.WriteString(sparkline(p.LagHistory, spark))
		}
		line := strings.TrimRight(b.String(), " ")
		switch {
		case p.Stalled:
			line = m.st.alert.Render(line)
		case p.Idle:
			line = m.st.dim.Render(line)
		case p.Pinning:
			line = m.st.pin.Render(line)
		}
		out = append(out, line)
	}
	if more := len(rows) - end; more > 0 || start > 0 {
		out = append(out, m.st.dim.Render(fmt.Sprintf("  rows %d-%d of %d, sorted by %s (↑/↓ scroll)", start+1, end, len(rows), m.sortBy)))
	}
	return out
}

// maxCell is the widest a column grows to fit its cells.
const maxCell = 28

func (m Model) badge(s string) string {
	cell := pad(s, 7, false)
	switch s {
	case "STALLED", "FUTURE":
		return m.st.badgeAlert.Render(cell)
	case "PREVIEW", "HELD":
		return m.st.badgeWarn.Render(cell)
	case "IDLE":
		return m.st.badgeDim.Render(cell)
	}
	return cell
}

func (m Model) footer(w int) string {
	if m.filtering {
		return fit(m.input.View(), w)
	}
	var state []string
	state = append(state, "sort "+m.sortBy)
	if m.filter != "" {
		state = append(state, fmt.Sprintf("topic ~ %q", m.filter))
	}
	if m.raw {
		state = append(state, "raw times")
	}
	left := m.st.dim.Render(strings.Join(state, " · ") + "  ")
	return fit(left+m.help.ShortHelpView(m.keys.ShortHelp()), w)
}

func (m Model) helpLines(w int) []string {
	lines := []string{"", m.st.header.Render("keys")}
	lines = append(lines, strings.Split(m.help.FullHelpView(m.keys.FullHelp()), "\n")...)
	lines = append(lines, "", m.st.header.Render("columns"),
		"  ▶ pins the global watermark · LAG wall clock minus watermark · MOVED time",
		"  since the watermark last moved, seen across polls (+: at least) · SKEW",
		"  ahead of the global watermark · TIMEOUT the idleness timeout in force",
		"", m.st.header.Render("the six runbook branches of a stall"))
	for _, b := range []Branch{BranchIdle, BranchOldTimes, BranchAlignment, BranchFuture, BranchTracking, BranchUpstream} {
		lines = append(lines, "  "+b.Title())
	}
	for i, l := range lines {
		lines[i] = fit(l, w)
	}
	return lines
}

// sparkline draws the last w lag points, scaled between their lowest and
// highest; flat when they differ by less than a second.
func sparkline(hist []int64, w int) string {
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	if len(hist) > w {
		hist = hist[len(hist)-w:]
	}
	var lo, hi int64
	first := true
	for _, v := range hist {
		if v == NoLag {
			continue
		}
		if first {
			lo, hi, first = v, v, false
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	var b strings.Builder
	for _, v := range hist {
		switch {
		case v == NoLag:
			b.WriteByte(' ')
		case hi-lo < 1000:
			b.WriteRune(levels[0])
		default:
			b.WriteRune(levels[int((v-lo)*int64(len(levels)-1)/(hi-lo))])
		}
	}
	return b.String()
}

// pad pads or clips plain s to w cells.
func pad(s string, w int, right bool) string {
	n := width(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	if right {
		return strings.Repeat(" ", w-n) + s
	}
	return s + strings.Repeat(" ", w-n)
}

// width is the cells s takes: its length when it is ASCII (most cells),
// else what ansi measures.
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == 0x1b {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// fit clips a styled line to w cells.
func fit(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}
