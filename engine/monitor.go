package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/inspect"
)

// The monitor samples the watermark lag once a second (the lag gauge),
// logs a progress line every ProgressLogIntervalMs, warns when the
// watermark stands still for StallWarningMs while records arrive, and
// warns of records dropped on purpose (dropped.records.total by reason),
// at most once per reason every dropWarnEvery. It
// reads only Observe, so it runs beside the runtime without touching it.

// Runbook branches (docs/runbook.md) a stall warning names.
const (
	BranchIdleEligible  = "idle-eligible"
	BranchOldTimestamps = "old-timestamps"
	BranchAlignment     = "alignment"
	BranchFuture        = "future-timestamp"
	BranchNoEventTime   = "no-event-time"
)

// restoreLogEvery is how often a long restoration logs its progress.
const restoreLogEvery = 5 * time.Second

// sampleEvery is the lag sampling period.
const sampleEvery = time.Second

type monitorState struct {
	progressEvery, stallAfter time.Duration
	lastProgress              time.Time
	lastIn                    int64
	// stallSince is when the watermark last moved (or the monitor
	// started); stallIn and stallOffsets what had arrived then.
	stallSince   time.Time
	stallGlobal  int64
	stallIn      int64
	stallOffsets map[watermark.Partition]int64
	warned       bool
	// lastRestoreLog is when a restoration in progress was last logged.
	lastRestoreLog time.Time
	// dropped is dropped.records.total by reason as of the last warning
	// of each reason, lastDropWarn when that was.
	dropped      map[string]int64
	lastDropWarn map[string]time.Time
}

// dropWarnEvery is the least time between two drop warnings of one
// reason: Kafka Streams logs every dropped record, which a topic of null
// keys turns into a log of nothing else; this says how many, once in a
// while, and the counter has them all.
const dropWarnEvery = 10 * time.Second

// ReasonProduction is the dropped.records.total reason of a sink record
// skipped by default.production.exception.handler=continue (one over
// max.request.size or its topic's max.message.bytes). It is the engine's
// own, beside engine/metrics' reasons, since only the committer drops on
// production.
const ReasonProduction = "production_error"

// dropHints say, per reason, why records are dropped.
var dropHints = map[string]string{
	metrics.ReasonNullKey:         "an aggregation, join or repartition got a record with a null key, which it cannot place",
	metrics.ReasonNullValue:       "an operation that needs a value got a null one",
	metrics.ReasonLateWindow:      "the record's window had closed (its end plus grace is behind the watermark)",
	metrics.ReasonLateSession:     "the record's session had closed (behind the watermark by more than its gap plus grace)",
	metrics.ReasonExpiredVersion:  "a versioned table got an update older than its history retention behind the newest it had",
	metrics.ReasonNoEventTime:     "no event time at the source (a timestamp extractor gave none)",
	metrics.ReasonDeserialization: "a deserialization error, skipped by the continue handler",
	metrics.ReasonProcessing:      "a processing error, skipped by the continue handler",
	ReasonProduction:              "a sink record over max.request.size or its topic's max.message.bytes, skipped by default.production.exception.handler=continue (the DEBUG log names each)",
}

// warnDrops logs, for each reason whose count grew, how many records were
// dropped since its last warning, at most once per dropWarnEvery.
func (e *Engine) warnDrops(m *monitorState, now time.Time) {
	if e.metrics == nil {
		return
	}
	cur := map[string]int64{}
	e.metrics.Each(func(l metrics.Labelled, v int64) {
		if l.Name == metrics.DroppedRecords {
			cur[metrics.Label(l.Labels, "reason")] += v
		}
	})
	if m.dropped == nil {
		m.dropped, m.lastDropWarn = map[string]int64{}, map[string]time.Time{}
	}
	for _, reason := range slices.Sorted(maps.Keys(cur)) {
		n := cur[reason] - m.dropped[reason]
		if n <= 0 || now.Sub(m.lastDropWarn[reason]) < dropWarnEvery {
			continue
		}
		e.log.Warn("records dropped", "reason", reason, "dropped", n, "total", cur[reason],
			"metric", `stoatflow_dropped_records_total{reason="`+reason+`"}`, "hint", dropHints[reason])
		m.dropped[reason], m.lastDropWarn[reason] = cur[reason], now
	}
}

// monitorSettings reads the monitor's two keys: a value that is not a
// whole number of milliseconds, or is negative, is an error naming the
// key (it was the default before, silently).
func monitorSettings(c config.Config) (progressEvery, stallAfter time.Duration, err error) {
	progress, err := c.BoundedInt(ProgressLogIntervalMs, 30000)
	if err != nil {
		return 0, 0, err
	}
	stall, err := c.BoundedInt(StallWarningMs, 60000)
	if err != nil {
		return 0, 0, err
	}
	return time.Duration(progress) * time.Millisecond, time.Duration(stall) * time.Millisecond, nil
}

func (e *Engine) monitor(ctx context.Context, progressEvery, stallAfter time.Duration) <-chan struct{} {
	done := make(chan struct{})
	m := &monitorState{progressEvery: progressEvery, stallAfter: stallAfter}
	go func() {
		defer close(done)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		now := time.Now()
		m.lastProgress, m.stallSince, m.stallGlobal = now, now, watermark.Unset
		for {
			select {
			case <-ctx.Done():
				return
			case now = <-tick.C:
			}
			e.sample(m, now)
		}
	}()
	return done
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// sample is one tick of the monitor.
func (e *Engine) sample(m *monitorState, now time.Time) {
	e.warnDrops(m, now)
	o := e.Observe()
	if o.Global == watermark.Unset {
		e.lagMs.Store(-1)
	} else {
		e.lagMs.Store(e.opts.wall() - o.Global)
	}
	if o.Restoring && now.Sub(m.lastRestoreLog) >= restoreLogEvery {
		if !m.lastRestoreLog.IsZero() {
			e.log.Info("restoring", "restored", o.Restored, "remaining_about", o.RestoreRemaining)
		}
		m.lastRestoreLog = now
	} else if !o.Restoring {
		m.lastRestoreLog = time.Time{}
	}
	in := total(o.RecordsIn)
	pin, pinned := Pinning(o.Partitions)
	if m.progressEvery > 0 && now.Sub(m.lastProgress) >= m.progressEvery {
		args := progressArgs(o, in, m.lastIn, now.Sub(m.lastProgress), e.lagText())
		if pinned {
			args = append(args, "pinned_by", partitionName(pin.Partition))
		}
		e.log.Info("progress", args...)
		m.lastProgress, m.lastIn = now, in
	}
	if o.Global != m.stallGlobal || o.State != Running || o.Paused || !o.EventTime {
		m.stallSince, m.stallGlobal, m.stallIn, m.stallOffsets, m.warned = now, o.Global, in, o.Dispatched, false
		return
	}
	if m.stallAfter <= 0 || m.warned || now.Sub(m.stallSince) < m.stallAfter || in == m.stallIn || !pinned {
		return
	}
	m.warned = true
	branch, hint := BranchIdleEligible, fmt.Sprintf("it delivers nothing; it idles out after its timeout of %s (0 means never): wait, or lower its source's idleness", pin.IdlenessTimeout)
	if o.Dispatched[pin.Partition] > m.stallOffsets[pin.Partition] {
		branch, hint = BranchOldTimestamps, "it is live but delivering old timestamps (a producer's clock or a replay); no watermark setting fixes it"
	}
	e.log.Warn("watermark has not moved while records arrive", "for", now.Sub(m.stallSince).Round(time.Second),
		"watermark", inspect.Iso(o.Global), "pinned_by", partitionName(pin.Partition), "partition_watermark", inspect.Iso(pin.Watermark),
		"last_event_time", inspect.Iso(pin.LastEventTime), "idle", pin.Idle, "runbook", "docs/runbook.md#"+branch, "hint", hint,
		"records_since", in-m.stallIn)
}

// progressArgs are the progress line's attributes. Every count is a total
// since the start, named _total as its metric is; what the interval adds
// is the one rate, records_in_per_sec over the interval. (The line once
// put the interval's records_in beside the total records_out and epochs,
// which read as three totals.) in is the records in so far, lastIn what
// they were an interval ago.
func progressArgs(o Observation, in, lastIn int64, interval time.Duration, lag string) []any {
	rate := 0.0
	if interval > 0 {
		rate = float64(in-lastIn) / interval.Seconds()
	}
	args := []any{"state", string(o.State), "records_in_total", in, "records_out_total", total(o.RecordsOut),
		"epochs_committed_total", o.Stats.Committed, "records_in_per_sec", fmt.Sprintf("%.1f", rate),
		"watermark", inspect.Iso(o.Global), "lag", lag}
	// Consumer lag now, per topic, in a stable order.
	for _, t := range slices.Sorted(maps.Keys(o.Lag)) {
		args = append(args, "lag."+t, o.Lag[t])
	}
	return args
}

func (e *Engine) lagText() string {
	l := e.lagMs.Load()
	if l < 0 {
		return "N/A"
	}
	return (time.Duration(l) * time.Millisecond).String()
}
