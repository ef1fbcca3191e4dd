package tui

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/inspect"
)

// Sample is one poll of the REST API: what each document said and when the
// poll was taken. Only /watermarks is needed; /info and /metrics fill in the
// state, event-time tracking and drop rates where they answered.
type Sample struct {
	At         time.Time
	Watermarks *inspect.Watermarks
	Info       *inspect.Info
	Metrics    *Metrics
	// Err is why /watermarks gave no document: an error wrapping
	// inspect.ErrUnreachable, an *inspect.APIError, or another failure.
	Err error
}

// Options are the thresholds of the verdicts.
type Options struct {
	// StallAfter is how long a watermark must stay put, across polls, to be
	// stalled. Zero means across every poll of the observation (at least
	// two): what `--once --samples N` judges.
	StallAfter time.Duration
	// SkewThreshold is the skew to the global watermark past which the
	// partition pinning it is alerted on; zero turns the alert off.
	SkewThreshold time.Duration
	// History is how many lag points each partition keeps for its
	// sparkline; zero means DefaultHistory.
	History int
}

// DefaultHistory is how many polls a sparkline keeps: four minutes at the
// default interval of a second.
const DefaultHistory = 240

// Verdict is the reading of the latest sample against those before it.
type Verdict struct {
	At       time.Time `json:"-" yaml:"-"`
	AtMs     int64     `json:"polledAtMs" yaml:"polledAtMs"`
	Endpoint string    `json:"endpoint,omitempty" yaml:"endpoint,omitempty"`
	// Reachable is false when the last poll got no answer; the partitions
	// are then those of the last answer, LastAnswer ago.
	Reachable  bool      `json:"reachable" yaml:"reachable"`
	LastAnswer time.Time `json:"-" yaml:"-"`
	// Error is why the last poll gave no /watermarks document; ErrorCode is
	// the API's stable code when it answered with one.
	Error     string `json:"error,omitempty" yaml:"error,omitempty"`
	ErrorCode string `json:"errorCode,omitempty" yaml:"errorCode,omitempty"`

	ApplicationID string `json:"applicationId,omitempty" yaml:"applicationId,omitempty"`
	State         string `json:"state,omitempty" yaml:"state,omitempty"`
	TrackingOff   bool   `json:"eventTimeTrackingOff,omitempty" yaml:"eventTimeTrackingOff,omitempty"`
	// Samples is how many polls answered; ObservedMs the time between the
	// first answer and this one, over which stalls are judged.
	Samples    int   `json:"samples" yaml:"samples"`
	ObservedMs int64 `json:"observedMs" yaml:"observedMs"`

	// GlobalMs is null in JSON and YAML before the first watermark.
	GlobalMs  inspect.Millis `json:"globalMs" yaml:"globalMs"`
	GlobalIso string         `json:"globalIso" yaml:"globalIso"`
	// GlobalLagMs is the wall clock minus the global watermark, nil before
	// the first watermark.
	GlobalLagMs      *int64 `json:"globalLagMs" yaml:"globalLagMs"`
	Pinning          string `json:"pinning,omitempty" yaml:"pinning,omitempty"`
	AlignmentBinding string `json:"alignmentBinding,omitempty" yaml:"alignmentBinding,omitempty"`

	Idle    int `json:"idle" yaml:"idle"`
	Stalled int `json:"stalled" yaml:"stalled"`
	Preview int `json:"preview" yaml:"preview"`
	// Standbys are the standby tasks /info lists, warm-ups included, and
	// Warmups those of them that are warm-ups; StandbyLagMaxRecords is
	// the largest lag /info gives them, nil when none is measured.
	Standbys             int    `json:"standbys,omitempty" yaml:"standbys,omitempty"`
	Warmups              int    `json:"warmups,omitempty" yaml:"warmups,omitempty"`
	StandbyLagMaxRecords *int64 `json:"standbyLagMaxRecords,omitempty" yaml:"standbyLagMaxRecords,omitempty"`
	// DropsPerSecond is the rate of stoatflow_dropped_records_total by
	// reason between the last two answers of /metrics; nil before two.
	DropsPerSecond map[string]float64 `json:"dropsPerSecond,omitempty" yaml:"dropsPerSecond,omitempty"`

	Partitions []PartitionVerdict `json:"partitions" yaml:"partitions"`
	Alerts     []Alert            `json:"alerts" yaml:"alerts"`
}

// PartitionVerdict is one input partition's row.
type PartitionVerdict struct {
	Partition string `json:"partition" yaml:"partition"`
	Topic     string `json:"topic" yaml:"topic"`
	Number    int32  `json:"number" yaml:"number"`

	// WatermarkMs is null in JSON and YAML before the first.
	WatermarkMs inspect.Millis `json:"watermarkMs" yaml:"watermarkMs"`
	// LagMs is the wall clock minus the watermark, nil before the first.
	LagMs *int64 `json:"lagMs" yaml:"lagMs"`
	// SinceAdvanceMs is how long the watermark has not moved, as seen
	// across polls; when AdvanceSeen is false it never moved while watched,
	// so the real figure is at least this.
	SinceAdvanceMs int64 `json:"sinceAdvanceMs" yaml:"sinceAdvanceMs"`
	AdvanceSeen    bool  `json:"advanceSeen" yaml:"advanceSeen"`
	Stalled        bool  `json:"stalled" yaml:"stalled"`

	Idle bool `json:"idle" yaml:"idle"`
	// IdleForMs is how long it has been idle, as seen across polls; when
	// IdleStartSeen is false it was idle at the first poll, so the real
	// figure is at least this.
	IdleForMs         int64 `json:"idleForMs,omitempty" yaml:"idleForMs,omitempty"`
	IdleStartSeen     bool  `json:"idleStartSeen,omitempty" yaml:"idleStartSeen,omitempty"`
	IdlenessTimeoutMs int64 `json:"idlenessTimeoutMs" yaml:"idlenessTimeoutMs"`
	// Live is true when its last event time changed within the stall
	// threshold (records arrive); QuietForMs is how long it has not.
	Live       bool  `json:"live" yaml:"live"`
	QuietForMs int64 `json:"quietForMs" yaml:"quietForMs"`

	// SkewMs is the watermark (or preview) minus the global watermark; 0
	// before the first global watermark.
	SkewMs             int64          `json:"skewMs" yaml:"skewMs"`
	PreviewWatermarkMs *int64         `json:"previewWatermarkMs,omitempty" yaml:"previewWatermarkMs,omitempty"`
	HeadHeldSinceMs    *int64         `json:"headHeldSinceMs,omitempty" yaml:"headHeldSinceMs,omitempty"`
	AlignmentGroup     string         `json:"alignmentGroup,omitempty" yaml:"alignmentGroup,omitempty"`
	AlignmentHeld      bool           `json:"alignmentHeld" yaml:"alignmentHeld"`
	LastEventTimeMs    inspect.Millis `json:"lastEventTimeMs" yaml:"lastEventTimeMs"`
	// AheadMs is how far its last event time or preview watermark is ahead
	// of the wall clock; 0 when not ahead.
	AheadMs int64 `json:"aheadMs,omitempty" yaml:"aheadMs,omitempty"`

	// Writers is true for a repartition topic's partition, whose
	// watermark the tasks writing the topic tell; WaitingFor are those
	// that have not told yet, HeldBy those whose mark is the watermark.
	Writers    bool     `json:"writers,omitempty" yaml:"writers,omitempty"`
	WaitingFor []string `json:"waitingFor,omitempty" yaml:"waitingFor,omitempty"`
	HeldBy     []string `json:"heldBy,omitempty" yaml:"heldBy,omitempty"`

	Pinning bool `json:"pinning" yaml:"pinning"`
	// Branch is the runbook branch that explains why this partition holds
	// the watermark: set where there is something to explain (a stall, a
	// skew alert, a head stamped in the future).
	Branch Branch `json:"branch,omitempty" yaml:"branch,omitempty"`
	// LagHistory is the lag at each of the last polls, oldest first,
	// NoLag where there was no watermark.
	LagHistory []int64 `json:"-" yaml:"-"`
}

// Alert codes: stable, for scripts.
const (
	AlertStalled     = "stalled"
	AlertAllIdle     = "all_idle"
	AlertSkew        = "skew"
	AlertLateDrops   = "late_drops"
	AlertFuture      = "future_stamped"
	AlertTrackingOff = "tracking_off"
	AlertUnreachable = "unreachable"
	AlertError       = "error"
)

// Alert is a condition that needs a person: what holds, the partition it
// concerns, the runbook branch that applies and the fix it gives.
type Alert struct {
	Code      string `json:"code" yaml:"code"`
	Partition string `json:"partition,omitempty" yaml:"partition,omitempty"`
	Branch    Branch `json:"branch,omitempty" yaml:"branch,omitempty"`
	Message   string `json:"message" yaml:"message"`
	Fix       string `json:"fix,omitempty" yaml:"fix,omitempty"`
}

// Tracker reads successive samples. It is not safe for concurrent use; the
// bubbletea model and `--once` each own one.
type Tracker struct {
	opts    Options
	samples int
	first   time.Time
	parts   map[string]*track
	// last is the verdict of the last answer, shown again while the
	// endpoint does not answer.
	last *Verdict
	// metrics and metricsAt are the last /metrics answer, for rates.
	metrics   *Metrics
	metricsAt time.Time
	drops     map[string]float64
}

type track struct {
	firstSeen   time.Time
	wm          int64
	lastAdvance time.Time
	advanced    bool

	// lastEvent is the partition's activity mark: the server's
	// lastRecordMs where it sends one, else its newest event time; a
	// change means records arrived.
	lastEvent       int64
	lastEventChange time.Time
	eventChanged    bool

	idle      bool
	idleSince time.Time
	idleSeen  bool

	lag []int64
}

// NewTracker returns a tracker with opts.
func NewTracker(opts Options) *Tracker {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	return &Tracker{opts: opts, parts: map[string]*track{}}
}

// Observe reads s against the samples before it.
func (t *Tracker) Observe(s Sample) Verdict {
	if s.Watermarks == nil {
		return t.failed(s)
	}
	at := s.At
	now := at.UnixMilli()
	t.samples++
	if t.samples == 1 {
		t.first = at
	}
	w := s.Watermarks
	v := Verdict{
		At: at, AtMs: now, Reachable: true, LastAnswer: at,
		Samples: t.samples, ObservedMs: at.Sub(t.first).Milliseconds(),
		GlobalMs: inspect.Millis(w.GlobalMs), GlobalIso: w.GlobalIso, GlobalLagMs: lag(now, w.GlobalMs),
	}
	if v.GlobalIso == "" {
		v.GlobalIso = inspect.Iso(w.GlobalMs)
	}
	if w.AlignmentBinding != nil {
		v.AlignmentBinding = *w.AlignmentBinding
	}
	t.readInfo(&v, s)
	t.readMetrics(&v, s)

	seen := make(map[string]bool, len(w.Partitions))
	for name, pw := range w.Partitions {
		seen[name] = true
		v.Partitions = append(v.Partitions, t.partition(at, name, pw, w.GlobalMs))
	}
	for name := range t.parts {
		if !seen[name] {
			delete(t.parts, name) // revoked: a new owner starts afresh
		}
	}
	slices.SortFunc(v.Partitions, func(a, b PartitionVerdict) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Number, b.Number), cmp.Compare(a.Partition, b.Partition))
	})

	pin := pinning(v.Partitions, w.GlobalMs)
	for i := range v.Partitions {
		p := &v.Partitions[i]
		switch {
		case p.Idle:
			v.Idle++
		case p.PreviewWatermarkMs != nil:
			v.Preview++
		}
		if p.Stalled {
			v.Stalled++
		}
		if i == pin {
			p.Pinning = true
			v.Pinning = p.Partition
		}
		if p.Stalled || p.AheadMs >= FutureAhead.Milliseconds() {
			p.Branch = classify(&v, p)
		}
	}
	v.Alerts = t.alerts(&v, pin)
	t.last = &v
	return v
}

// failed is the verdict of a poll without a /watermarks document: the
// partitions of the last answer, and the reason.
func (t *Tracker) failed(s Sample) Verdict {
	v := Verdict{At: s.At, AtMs: s.At.UnixMilli(), GlobalMs: inspect.Millis(inspect.MinWatermark), GlobalIso: inspect.NotAvailable}
	if t.last != nil {
		v = *t.last
		v.At, v.AtMs = s.At, s.At.UnixMilli()
		v.Alerts = nil
	}
	err := s.Err
	if err == nil {
		err = errors.New("no /watermarks document")
	}
	v.Error = err.Error()
	var api *inspect.APIError
	switch {
	case errors.Is(err, inspect.ErrUnreachable):
		v.Reachable = false
		since := ""
		if t.last != nil {
			since = fmt.Sprintf("; last answer %s ago", Duration(s.At.Sub(t.last.LastAnswer).Milliseconds()))
		}
		v.Alerts = []Alert{{Code: AlertUnreachable, Message: "the endpoint does not answer" + since,
			Fix: "check that the engine runs and serves its REST API there (stoatctl run --http ADDR), and that --url names it"}}
		return v
	case errors.As(err, &api):
		v.Reachable = true
		v.LastAnswer = s.At
		v.ErrorCode = api.Body.Code
		t.readInfo(&v, s)
		t.readMetrics(&v, s)
		if api.Body.Code == codeNoEventTime {
			v.TrackingOff = true
		}
		if api.Status == 503 {
			// Not initialised, or no partition yet: not an alert unless the
			// reason is a topology without event time.
			v.Partitions = nil
			v.Alerts = nil
			if v.TrackingOff {
				v.Alerts = append(v.Alerts, trackingOff())
			}
			return v
		}
	}
	v.Alerts = append(v.Alerts, Alert{Code: AlertError, Message: v.Error, Fix: "read the message: a token (--token), the URL, or the engine's log"})
	return v
}

// codeNoEventTime is the error code of GET /watermarks for a topology
// without event time (inspect.CodeNoEventTime once issue 12 is merged).
const codeNoEventTime = "no_event_time"

func (t *Tracker) readInfo(v *Verdict, s Sample) {
	if s.Info != nil {
		v.ApplicationID = s.Info.ApplicationID
		v.State = s.Info.State
		if !s.Info.EventTimeTracking {
			v.TrackingOff = true
		}
		v.Standbys = len(s.Info.StandbyTasks)
		for _, sb := range s.Info.Standbys {
			if sb.Warmup {
				v.Warmups++
			}
			if sb.LagRecords != nil && (v.StandbyLagMaxRecords == nil || *sb.LagRecords > *v.StandbyLagMaxRecords) {
				lag := *sb.LagRecords
				v.StandbyLagMaxRecords = &lag
			}
		}
	}
}

func (t *Tracker) readMetrics(v *Verdict, s Sample) {
	m := s.Metrics
	if m == nil {
		v.DropsPerSecond = t.drops
		return
	}
	if v.State == "" && m.ClientState != nil {
		v.State = ClientStateName(*m.ClientState)
	}
	if m.EventTimeTracking != nil && *m.EventTimeTracking == 0 {
		v.TrackingOff = true
	}
	if t.metrics != nil && s.At.After(t.metricsAt) {
		secs := s.At.Sub(t.metricsAt).Seconds()
		t.drops = map[string]float64{}
		for reason, n := range m.Dropped {
			d := n - t.metrics.Dropped[reason]
			if d < 0 { // the counter restarted with the engine
				d = n
			}
			t.drops[reason] = d / secs
		}
	}
	t.metrics, t.metricsAt = m, s.At
	v.DropsPerSecond = t.drops
}

func (t *Tracker) partition(at time.Time, name string, pw inspect.PartitionWatermark, global int64) PartitionVerdict {
	now := at.UnixMilli()
	tr := t.parts[name]
	if tr == nil {
		first := pw.LastEventTimeMs
		if pw.LastRecordMs != nil {
			first = *pw.LastRecordMs
		}
		tr = &track{firstSeen: at, wm: pw.WatermarkMs, lastAdvance: at, lastEvent: first, lastEventChange: at, idle: pw.Idle, idleSince: at}
		t.parts[name] = tr
	}
	if pw.WatermarkMs != tr.wm {
		tr.wm, tr.lastAdvance, tr.advanced = pw.WatermarkMs, at, true
	}
	// A server that says when the watermark last moved (lastAdvanceMs)
	// and since when the partition is idle (idleSinceMs) is believed over
	// the polls: one look then tells a stall's length.
	if when, ok := serverTime(pw.LastAdvanceMs, at); ok {
		tr.lastAdvance, tr.advanced = when, true
	}
	// sinceAdvanceMs is the same figure by the engine's own clock, and
	// also covers a partition whose watermark never moved there (one that
	// never had a record: waiting since it was registered), for which no
	// lastAdvanceMs comes. Believed over both, so the reader's clock does
	// not matter and one poll judges a stall.
	if pw.SinceAdvanceMs != nil {
		tr.lastAdvance, tr.advanced = at.Add(-time.Duration(max(*pw.SinceAdvanceMs, 0))*time.Millisecond), true
	}
	// Records arriving: the server's lastRecordMs moving where it sends
	// one (late records move it too), else the newest event time moving.
	activity := pw.LastEventTimeMs
	if pw.LastRecordMs != nil {
		activity = *pw.LastRecordMs
	}
	if activity != tr.lastEvent {
		tr.lastEvent, tr.lastEventChange, tr.eventChanged = activity, at, true
	}
	// lastRecordMs is itself the time records last arrived: believed over
	// the polls, as lastAdvanceMs is, so one look tells a live partition
	// from a quiet one.
	if when, ok := serverTime(pw.LastRecordMs, at); ok {
		tr.lastEventChange, tr.eventChanged = when, true
	}
	if pw.Idle != tr.idle {
		tr.idle, tr.idleSince, tr.idleSeen = pw.Idle, at, true
	}
	if when, ok := serverTime(pw.IdleSinceMs, at); ok && pw.Idle {
		tr.idleSince, tr.idleSeen = when, true
	}
	eff := pw.WatermarkMs
	if pw.PreviewWatermarkMs != nil {
		eff = *pw.PreviewWatermarkMs
	}
	// The lag is the partition's own watermark's: a preview counts toward
	// the global one, but the partition itself is held where it is.
	l := lag(now, pw.WatermarkMs)
	h := NoLag
	if l != nil {
		h = *l
	}
	tr.lag = append(tr.lag, h)
	if len(tr.lag) > t.opts.History {
		tr.lag = tr.lag[len(tr.lag)-t.opts.History:]
	}

	topic, num := splitPartition(name)
	p := PartitionVerdict{
		Partition: name, Topic: topic, Number: num,
		WatermarkMs: inspect.Millis(pw.WatermarkMs), LagMs: l,
		SinceAdvanceMs: at.Sub(tr.lastAdvance).Milliseconds(), AdvanceSeen: tr.advanced,
		Idle: pw.Idle, IdlenessTimeoutMs: pw.IdlenessTimeoutMs,
		QuietForMs:         at.Sub(tr.lastEventChange).Milliseconds(),
		PreviewWatermarkMs: pw.PreviewWatermarkMs, HeadHeldSinceMs: pw.HeadHeldSinceMs,
		AlignmentHeld: pw.AlignmentHeld, LastEventTimeMs: inspect.Millis(pw.LastEventTimeMs),
		LagHistory: slices.Clone(tr.lag),
	}
	if pw.Idle {
		p.IdleForMs = at.Sub(tr.idleSince).Milliseconds()
		p.IdleStartSeen = tr.idleSeen
	}
	if pw.AlignmentGroup != nil {
		p.AlignmentGroup = *pw.AlignmentGroup
	}
	if w := pw.Writers; w != nil {
		p.Writers, p.WaitingFor, p.HeldBy = true, slices.Clone(w.NotTold), slices.Clone(w.Holding)
	}
	if global != inspect.MinWatermark && eff != inspect.MinWatermark {
		p.SkewMs = eff - global
	}
	ahead := max(pw.LastEventTimeMs, eff)
	if ahead != inspect.MinWatermark && ahead > now {
		p.AheadMs = ahead - now
	}
	if t.opts.StallAfter == 0 {
		// Under --once, live means records arrived within the samples.
		p.Live = tr.eventChanged && tr.lastEventChange.After(tr.firstSeen)
		p.Stalled = !pw.Idle && pw.PreviewWatermarkMs == nil && t.samples >= 2 && !tr.lastAdvance.After(tr.firstSeen) && at.After(tr.firstSeen)
	} else {
		p.Live = tr.eventChanged && at.Sub(tr.lastEventChange) < t.opts.StallAfter
		p.Stalled = !pw.Idle && pw.PreviewWatermarkMs == nil && at.Sub(tr.lastAdvance) >= t.opts.StallAfter
	}
	return p
}

// serverTime is a wall-clock time the server sent, as a time no later
// than at (the poll's own time), so that a server clock ahead of ours
// cannot make a duration negative; false when the server sent none.
func serverTime(ms *int64, at time.Time) (time.Time, bool) {
	if ms == nil {
		return time.Time{}, false
	}
	if when := time.UnixMilli(*ms); when.Before(at) {
		return when, true
	}
	return at, true
}

// pinning is the index of the partition that pins global: the non-idle one
// whose watermark, or preview watermark, equals it; failing an exact match
// (the server rounds, or a poll fell between two updates), the non-idle one
// with the lowest. -1 when every partition is idle.
func pinning(ps []PartitionVerdict, global int64) int {
	best := -1
	var bestWM int64
	for i, p := range ps {
		if p.Idle {
			continue
		}
		eff := int64(p.WatermarkMs)
		if p.PreviewWatermarkMs != nil {
			eff = *p.PreviewWatermarkMs
		}
		if eff == global {
			return i
		}
		if best < 0 || eff < bestWM {
			best, bestWM = i, eff
		}
	}
	return best
}

func (t *Tracker) alerts(v *Verdict, pin int) []Alert {
	var as []Alert
	running := v.State == "" || v.State == "RUNNING"
	if v.TrackingOff {
		as = append(as, trackingOff())
	}
	if pin >= 0 {
		p := &v.Partitions[pin]
		if p.Stalled && running {
			as = append(as, Alert{Code: AlertStalled, Partition: p.Partition, Branch: p.Branch,
				Message: fmt.Sprintf("the watermark has not moved for %s while %s; %s pins it", since(p), stateWord(v.State), p.Partition),
				Fix:     fix(v, p, p.Branch)})
		}
		if th := t.opts.SkewThreshold; th > 0 && running {
			// The partition furthest ahead, leaving out the ones stamped in
			// the future: their own alert says so.
			var ahead *PartitionVerdict
			for i := range v.Partitions {
				q := &v.Partitions[i]
				if !q.Idle && q.AheadMs < FutureAhead.Milliseconds() && (ahead == nil || q.SkewMs > ahead.SkewMs) {
					ahead = q
				}
			}
			if ahead != nil && ahead.SkewMs > th.Milliseconds() {
				if p.Branch == NoBranch {
					p.Branch = classify(v, p)
				}
				as = append(as, Alert{Code: AlertSkew, Partition: p.Partition, Branch: p.Branch,
					Message: fmt.Sprintf("%s pins the watermark %s behind %s (skew threshold %s)", p.Partition, Duration(ahead.SkewMs), ahead.Partition, Duration(th.Milliseconds())),
					Fix:     fix(v, p, p.Branch)})
			}
		}
	}
	if len(v.Partitions) > 0 && v.Idle == len(v.Partitions) && running {
		as = append(as, Alert{Code: AlertAllIdle,
			Message: fmt.Sprintf("every input partition (%d) is idle: the watermark waits for the next record", len(v.Partitions)),
			Fix:     "no input had a record within its idleness timeout: check that the producers are writing to the input topics"})
	}
	for i := range v.Partitions {
		p := &v.Partitions[i]
		if p.AheadMs >= FutureAhead.Milliseconds() {
			as = append(as, Alert{Code: AlertFuture, Partition: p.Partition, Branch: BranchFuture,
				Message: fmt.Sprintf("%s has a record stamped %s ahead of the wall clock", p.Partition, Duration(p.AheadMs)),
				Fix:     fix(v, p, BranchFuture)})
		}
	}
	if late := v.DropsPerSecond["late_window"] + v.DropsPerSecond["late_session"]; late > 0 {
		as = append(as, Alert{Code: AlertLateDrops,
			Message: fmt.Sprintf("%s records/s dropped as late (late_window %s, late_session %s)", Rate(late), Rate(v.DropsPerSecond["late_window"]), Rate(v.DropsPerSecond["late_session"])),
			Fix:     "records arrive after their window closed: size stoatflow.watermark.max-out-of-orderness-ms (or the window's grace) to the disorder the input has; the debug-level late.records.total measures it"})
	}
	return as
}

func trackingOff() Alert {
	return Alert{Code: AlertTrackingOff, Branch: BranchTracking,
		Message: "event-time tracking is off (stoatflow_topology_event_time_tracking 0): no watermark will move",
		Fix:     fix(&Verdict{}, &PartitionVerdict{}, BranchTracking)}
}

func since(p *PartitionVerdict) string {
	s := Duration(p.SinceAdvanceMs)
	if !p.AdvanceSeen {
		s = "at least " + s
	}
	return s
}

func stateWord(s string) string {
	if s == "" {
		return "the state is unknown"
	}
	return s
}

// NoLag marks a poll without a watermark in LagHistory.
const NoLag int64 = math.MinInt64

func lag(now, wm int64) *int64 {
	if wm == inspect.MinWatermark {
		return nil
	}
	l := now - wm
	return &l
}

// splitPartition splits "topic:partition" at its last colon; a name
// without a partition number is all topic, number -1.
func splitPartition(name string) (string, int32) {
	i := strings.LastIndexByte(name, ':')
	if i < 0 {
		return name, -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil {
		return name, -1
	}
	return name[:i], int32(n)
}
