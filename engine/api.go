package engine

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/prom"
	"github.com/stoatflow/stoatctl/engine/rest"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/buildinfo"
)

// Configuration keys of the observation surface.
const (
	// MetricsRecordingLevel is info (default) or debug (prom.LevelKey).
	MetricsRecordingLevel = prom.LevelKey
	// InfoShowWatermarks says GET /info carries the global watermark
	// (default true).
	InfoShowWatermarks = "runtime.endpoints.info.show-watermarks"
	// ProgressLogIntervalMs is the cadence of the progress line
	// (default 30000; 0 turns it off).
	ProgressLogIntervalMs = "stoatflow.log.progress-interval-ms"
	// StallWarningMs is how long the watermark may stand still while
	// records arrive before a warning names the partition pinning it
	// (default 60000; 0 turns it off).
	StallWarningMs = "stoatflow.log.stall-warning-ms"
)

// HTTP configures the REST API an Engine serves while it runs.
type HTTP struct {
	// Addr is host:port, such as 127.0.0.1:8080; port 0 picks a free one.
	Addr string
	// Token is the bearer token POST requests need; required when Addr is
	// not loopback.
	Token string
}

// WithHTTP makes Run serve the REST API (engine/rest) on h.Addr from the
// moment it starts until it returns. An address in use fails Run.
func WithHTTP(h HTTP) Option { return func(o *options) { o.http = &h } }

// WithVersion sets the version GET /info reports.
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithCommit sets the commit GET /info reports.
func WithCommit(c string) Option { return func(o *options) { o.commit = c } }

// HTTPAddr is where the REST API listens, "" when it does not (yet).
func (e *Engine) HTTPAddr() string {
	if s := e.api.Load(); s != nil {
		return s.Addr()
	}
	return ""
}

// MetricsHandler serves the engine's meters in Prometheus' format.
func (e *Engine) MetricsHandler() http.Handler { return e.meters.Handler() }

// newMeters makes the engine's Prometheus meters and hooks them to the
// runtime's events.
func (e *Engine) newMeters() {
	level, err := prom.ParseLevel(e.cfg.String(MetricsRecordingLevel))
	if err != nil {
		level = prom.Info // Run reports the error
	}
	e.meters = prom.New(level, e.promSample, e.metrics)
	// The processor nodes' and the stores' meters cost on the record
	// path; they are on at debug level only, as in Kafka Streams.
	e.metrics.SetDebug(level >= prom.Debug)
	e.obs.onCommit = e.meters.Committed
	e.obs.onAdvance = e.meters.Advanced
	if level >= prom.Debug {
		e.obs.onLate = e.meters.Late
	}
	e.lagMs.Store(-1)
}

func (e *Engine) promSample() prom.Sample {
	o := e.Observe()
	s := prom.Sample{State: string(o.State), Paused: o.Paused, EventTime: o.EventTime, Global: o.Global, Partitions: o.Partitions,
		LagMs: e.lagMs.Load(), QueuedBatches: o.QueuedBatches, BarrierInterval: o.BarrierInterval, Restoring: o.Restoring,
		Restored: o.Restored, RestoreRemaining: o.RestoreRemaining, Committed: o.Stats.Committed, Aborted: o.Stats.Aborted, Resets: o.Stats.Resets,
		RecordsIn: o.RecordsIn, RecordsOut: o.RecordsOut, Lag: o.Lag, Segments: e.storeSegments(),
		PartitionLag: o.PartitionLag, RocksDB: e.rocksProperties()}
	for _, st := range o.StandbyTasks {
		s.Standbys++
		if st.Warmup {
			s.Warmups++
		}
		if st.LagKnown {
			if s.StandbyLag == nil {
				s.StandbyLag = map[string]int64{}
			}
			s.StandbyLag[st.ID] = st.Lag
		}
	}
	return s
}

// storeSegments sums the segments of each window and session store over
// the lanes.
func (e *Engine) storeSegments() []prom.StoreSegments {
	list := e.obs.segmented.Load()
	if list == nil {
		return nil
	}
	idx := map[string]int{}
	var out []prom.StoreSegments
	for _, s := range *list {
		i, ok := idx[s.name]
		if !ok {
			i = len(out)
			idx[s.name] = i
			out = append(out, prom.StoreSegments{Store: s.name, Type: string(s.store.Kind())})
		}
		out[i].Segments += s.store.Segments()
	}
	return out
}

// startAPI starts the REST API when WithHTTP asked for it.
func (e *Engine) startAPI() (stop func(), err error) {
	if e.opts.http == nil {
		return func() {}, nil
	}
	if _, err := prom.ParseLevel(e.cfg.String(MetricsRecordingLevel)); err != nil {
		return nil, err
	}
	srv, err := rest.New(apiBackend{e}, rest.Options{Addr: e.opts.http.Addr, Token: e.opts.http.Token, Metrics: e.meters.Handler(), Logger: e.log})
	if err != nil {
		return nil, fmt.Errorf("engine: REST API: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("engine: REST API: %w (pick another address, or turn the API off)", err)
	}
	e.api.Store(srv)
	e.log.Info("REST API listening", "url", "http://"+srv.Addr(), "token", e.opts.http.Token != "")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	}, nil
}

// apiBackend is the engine as rest.Backend.
type apiBackend struct{ e *Engine }

func (a apiBackend) Watermarks() (inspect.Watermarks, error) {
	return WatermarksDocument(a.e.Observe())
}

// WatermarksDocument is the GET /watermarks document of o, or a
// *rest.Unavailable for a 503: before the runtime registered its
// partitions, when none is registered and no watermark was emitted, or
// for a topology without event time.
func WatermarksDocument(o Observation) (inspect.Watermarks, error) {
	switch {
	case !o.Initialised:
		return inspect.Watermarks{}, &rest.Unavailable{Code: inspect.CodeNotInitialised, Message: "the engine is not initialised yet (state " + string(o.State) + ")"}
	case !o.EventTime:
		return inspect.Watermarks{}, &rest.Unavailable{Code: inspect.CodeNoEventTime, Message: "this topology has no event time, so no watermark (stoatflow_topology_event_time_tracking is 0)"}
	case len(o.Partitions) == 0 && o.Global == watermark.Unset:
		return inspect.Watermarks{}, &rest.Unavailable{Code: inspect.CodeNotInitialised, Message: "no source partition is registered and no watermark was emitted"}
	}
	doc := inspect.Watermarks{GlobalMs: o.Global, GlobalIso: inspect.Iso(o.Global), AlignmentGroupMins: map[string]int64{},
		Partitions: map[string]inspect.PartitionWatermark{}}
	for _, p := range o.Partitions {
		if p.Alignment == "" || p.Idle || p.Watermark == watermark.Unset {
			continue
		}
		if m, ok := doc.AlignmentGroupMins[p.Alignment]; !ok || p.Watermark < m {
			doc.AlignmentGroupMins[p.Alignment] = p.Watermark
		}
	}
	for _, p := range o.Partitions {
		pw := inspect.PartitionWatermark{WatermarkMs: p.Watermark, WatermarkIso: inspect.Iso(p.Watermark), Idle: p.Idle,
			LastEventTimeMs: p.LastEventTime, LastEventTimeIso: inspect.Iso(p.LastEventTime),
			IdlenessTimeoutMs: p.IdlenessTimeout.Milliseconds()}
		pw.LastRecordMs, pw.LastAdvanceMs, pw.IdleSinceMs = wallTime(p.LastRecord), wallTime(p.LastAdvance), wallTime(p.IdleSince)
		if p.Previewing {
			// The next record waits behind older ones and counts toward
			// the global watermark as if processed (Tracker.Heads).
			pv, iso := p.Preview, inspect.Iso(p.Preview)
			pw.PreviewWatermarkMs, pw.PreviewWatermarkIso, pw.HeadHeldSinceMs = &pv, &iso, wallTime(p.HeadHeldSince)
		}
		// Since when the watermark has stood still, by the engine's
		// clock: a partition that never moved here (never written, or
		// resumed) has waited since it was registered.
		since := p.LastAdvance
		if since <= 0 {
			pw.WaitingSinceMs = wallTime(p.Registered)
			since = p.Registered
		}
		if since > 0 && o.ViewAt > 0 {
			d := max(o.ViewAt-since, 0)
			pw.SinceAdvanceMs = &d
		}
		if p.Alignment != "" {
			g := p.Alignment
			pw.AlignmentGroup = &g
			pw.AlignmentHeld = p.AlignmentHeld
			if m, ok := doc.AlignmentGroupMins[g]; ok && p.Watermark != watermark.Unset {
				pw.DriftFromGroupMinMs = p.Watermark - m
			}
		}
		if w, ok := o.Writers[p.Partition]; ok {
			pw.Writers = &inspect.RepartitionWriters{Tasks: orEmpty(w.Tasks), NotTold: orEmpty(w.NotTold), Idle: orEmpty(w.Idle), Holding: orEmpty(w.Holding)}
		}
		doc.Partitions[fmt.Sprintf("%s:%d", p.Topic, p.Partition.Partition)] = pw
	}
	return doc, nil
}

// wallTime is a tracker's wall-clock time for the document: nil for 0,
// the tracker's "not yet".
func wallTime(ms int64) *int64 {
	if ms <= 0 {
		return nil
	}
	return &ms
}

func (a apiBackend) Info() inspect.Info {
	e := a.e
	o := e.Observe()
	info := inspect.Info{ApplicationID: e.cfg.String(config.ApplicationID), InstanceID: e.cfg.String(kafka.InstanceID), State: string(o.State),
		Paused: o.Paused, Version: e.opts.version, Commit: e.opts.commit, Lanes: o.Lanes, Partitions: o.Assignment, Tasks: o.Tasks, StandbyTasks: o.Standbys, EventTimeTracking: o.EventTime}
	for _, st := range o.StandbyTasks {
		sb := inspect.StandbyTask{Task: st.ID, Warmup: st.Warmup}
		if st.LagKnown {
			sb.LagRecords = &st.Lag
		}
		info.Standbys = append(info.Standbys, sb)
	}
	if info.Version == "" || info.Commit == "" {
		bi := buildinfo.Read(buildinfo.Stamp{Version: info.Version, Commit: info.Commit})
		info.Version, info.Commit = bi.Version, bi.Commit
	}
	if b := e.Built(); b != nil {
		info.Topology = summary(b)
	}
	if show, err := e.cfg.Bool(InfoShowWatermarks, true); err != nil || show {
		g, iso := o.Global, inspect.Iso(o.Global)
		info.GlobalIso = &iso
		if g != watermark.Unset {
			// Before the first watermark globalMs is absent: its
			// sentinel, Long.MIN_VALUE, is past what JSON readers hold.
			info.GlobalMs = &g
		}
	}
	return info
}

// summary is a topology in one line.
func summary(b *topology.Built) string {
	var sources, sinks, processors int
	for _, n := range b.Nodes {
		switch {
		case n.Source != nil:
			sources++
		case n.Sink != nil:
			sinks++
		default:
			processors++
		}
	}
	return fmt.Sprintf("%d sub-topologies, %d sources, %d processors, %d sinks, %d stores", len(b.Subtopologies), sources, processors, sinks, len(b.Stores))
}

// TopologyDocument is GET /topology's JSON form.
type TopologyDocument struct {
	ApplicationID string                `json:"applicationId"`
	EventTime     bool                  `json:"eventTime"`
	Subtopologies []SubtopologyDocument `json:"subtopologies"`
	Stores        []StoreDocument       `json:"stores"`
	// Text is the description GET /topology gives as text.
	Text string `json:"text"`
}

// SubtopologyDocument is one sub-topology of TopologyDocument.
type SubtopologyDocument struct {
	ID     int            `json:"id"`
	Global bool           `json:"global,omitempty"`
	Nodes  []NodeDocument `json:"nodes"`
}

// NodeDocument is one node of a SubtopologyDocument.
type NodeDocument struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Topics   []string `json:"topics,omitempty"`
	Children []string `json:"children,omitempty"`
	Stores   []string `json:"stores,omitempty"`
	// EventTime says why the node needs a watermark, when it does.
	EventTime string `json:"eventTime,omitempty"`
}

// StoreDocument is one store of TopologyDocument.
type StoreDocument struct {
	Name      string `json:"name"`
	Changelog string `json:"changelog,omitempty"`
}

func (a apiBackend) Topology() (string, any) {
	// As the engine runs it: under stoatflow.topology.rekey=topic its
	// boundaries are repartition topics.
	d, err := a.e.topo.DescribeWith(a.e.cfg)
	if err != nil {
		d = a.e.topo.Describe()
	}
	text := d.String()
	b := a.e.Built()
	if b == nil {
		return text, TopologyDocument{Text: text, Subtopologies: []SubtopologyDocument{}, Stores: []StoreDocument{}}
	}
	doc := TopologyDocument{ApplicationID: b.ApplicationID, EventTime: b.EventTime, Text: text, Stores: []StoreDocument{}}
	subs := slices.Clone(b.Subtopologies)
	if b.Global != nil {
		subs = append(subs, b.Global)
	}
	for _, st := range subs {
		sd := SubtopologyDocument{ID: st.ID, Global: st.Global}
		for _, n := range st.Nodes {
			nd := NodeDocument{Name: n.Name, Kind: fmt.Sprint(n.Kind), Children: n.Children, Stores: n.Stores, EventTime: n.EventTime}
			switch {
			case n.Source != nil:
				nd.Topics = n.Source.Topics
				if n.Source.Pattern != nil {
					nd.Topics = append(nd.Topics, "/"+n.Source.Pattern.String()+"/")
				}
			case n.Sink != nil && n.Sink.Topic != "":
				nd.Topics = []string{n.Sink.Topic}
			}
			sd.Nodes = append(sd.Nodes, nd)
		}
		doc.Subtopologies = append(doc.Subtopologies, sd)
	}
	for name, s := range b.Stores {
		doc.Stores = append(doc.Stores, StoreDocument{Name: name, Changelog: s.ChangelogTopic})
	}
	slices.SortFunc(doc.Stores, func(x, y StoreDocument) int { return cmp.Compare(x.Name, y.Name) })
	return text, doc
}

func (a apiBackend) Live() inspect.Health {
	st := a.e.State()
	if st == Error {
		return inspect.Health{Status: inspect.StatusDown, State: string(st), Reason: "the engine stopped with an error"}
	}
	return inspect.Health{Status: inspect.StatusUp, State: string(st)}
}

func (a apiBackend) Ready() inspect.Health {
	o := a.e.Observe()
	switch {
	case o.Restoring:
		return inspect.Health{Status: inspect.StatusDown, State: string(o.State), Reason: "restoring state from the changelogs"}
	case o.State != Running:
		return inspect.Health{Status: inspect.StatusDown, State: string(o.State), Reason: "not RUNNING"}
	}
	return inspect.Health{Status: inspect.StatusUp, State: string(o.State)}
}

func (a apiBackend) Pause(reason string) inspect.Control {
	a.e.Pause()
	a.e.log.Info("paused through the REST API", "reason", reason)
	return inspect.Control{Paused: true, State: string(a.e.State())}
}

func (a apiBackend) Resume(reason string) inspect.Control {
	a.e.Resume()
	a.e.log.Info("resumed through the REST API", "reason", reason)
	return inspect.Control{Paused: false, State: string(a.e.State())}
}

// Pinning is the partition whose watermark is the global one: the
// non-idle partition with the lowest watermark (ties: the first in
// topic, partition order). ok is false when every partition is idle or
// none is registered.
func Pinning(parts []watermark.PartitionState) (p watermark.PartitionState, ok bool) {
	for _, q := range parts {
		if q.Idle {
			continue
		}
		if !ok || q.Watermark < p.Watermark {
			p, ok = q, true
		}
	}
	return p, ok
}

func partitionName(p watermark.Partition) string { return fmt.Sprintf("%s:%d", p.Topic, p.Partition) }

// orEmpty is s, or an empty list for nil, so that JSON says [] not null.
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
