package tui

import (
	"fmt"
	"time"

	"github.com/stoatflow/stoatctl/inspect"
)

// The scenarios the analysis tests and the golden frames share: each is a
// run of polls, every step apart, of an engine in one of the states the
// runbook tells apart. The documents are built as the engine would answer
// (a 10 s out-of-orderness bound, the global watermark the minimum over the
// non-idle partitions), from t0, the wall clock at the first poll.

var t0 = time.Date(2026, 9, 22, 10, 10, 0, 0, time.UTC)

const bound = 10_000 // ms, the default out-of-orderness bound

type scenario struct {
	steps int
	step  time.Duration
	// at gives the sample of poll i, taken at wall-clock time now.
	at func(i int, now time.Time) Sample
}

func (sc scenario) samples() []Sample {
	out := make([]Sample, sc.steps)
	for i := range sc.steps {
		now := t0.Add(time.Duration(i) * sc.step)
		s := sc.at(i, now)
		s.At = now
		out[i] = s
	}
	return out
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// live is a partition receiving records up to behind the wall clock.
func live(now time.Time, behind time.Duration) inspect.PartitionWatermark {
	last := ms(now.Add(-behind))
	return pw(last-bound, last, 300_000)
}

func pw(wm, last, timeout int64) inspect.PartitionWatermark {
	return inspect.PartitionWatermark{
		WatermarkMs: wm, WatermarkIso: inspect.Iso(wm),
		LastEventTimeMs: last, LastEventTimeIso: inspect.Iso(last),
		IdlenessTimeoutMs: timeout,
	}
}

// doc computes the global watermark as the engine does.
func doc(parts map[string]inspect.PartitionWatermark) *inspect.Watermarks {
	global := inspect.MinWatermark
	for _, p := range parts {
		if p.Idle {
			continue
		}
		eff := p.WatermarkMs
		if p.PreviewWatermarkMs != nil {
			eff = *p.PreviewWatermarkMs
		}
		if global == inspect.MinWatermark || eff < global {
			global = eff
		}
	}
	return &inspect.Watermarks{GlobalMs: global, GlobalIso: inspect.Iso(global),
		AlignmentGroupMins: map[string]int64{}, Partitions: parts}
}

var running = &inspect.Info{ApplicationID: "clicks-per-minute", State: "RUNNING", Version: "v0.9.0",
	Lanes: 2, EventTimeTracking: true}

func metricsText(lateWindow, noEventTime float64) *Metrics {
	m, err := ParseMetrics(fmt.Sprintf(`# TYPE stoatflow_dropped_records_total counter
stoatflow_dropped_records_total{reason="late_window"} %g
stoatflow_dropped_records_total{reason="no_event_time"} %g
stoatflow_client_state 4
stoatflow_topology_event_time_tracking 1
`, lateWindow, noEventTime))
	if err != nil {
		panic(err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func normal(i int, now time.Time) Sample {
	return Sample{Info: running, Metrics: metricsText(0, float64(i)*3), Watermarks: doc(map[string]inspect.PartitionWatermark{
		"orders:0":   live(now, 500*time.Millisecond),
		"orders:1":   live(now, 800*time.Millisecond),
		"orders:2":   live(now, 1500*time.Millisecond),
		"payments:0": live(now, time.Second),
	})}
}

var scenarios = map[string]scenario{
	// Four partitions keeping up; orders:2 is a second further behind and
	// pins the watermark; records without event time are skipped at 0.6/s.
	"normal": {steps: 30, step: 5 * time.Second, at: normal},
	// orders:1 went quiet at t0-3m, its source asked for two minutes, so it
	// idled out and no longer counts.
	"idle": {steps: 30, step: 5 * time.Second, at: func(i int, now time.Time) Sample {
		quiet := ms(t0.Add(-3 * time.Minute))
		o1 := pw(quiet-bound, quiet, 120_000)
		o1.Idle = true
		return Sample{Info: running, Metrics: metricsText(0, 0), Watermarks: doc(map[string]inspect.PartitionWatermark{
			"orders:0": live(now, 500*time.Millisecond),
			"orders:1": o1,
			"orders:2": live(now, 900*time.Millisecond),
		})}
	}},
	// orders:3 keeps delivering records but with timestamps half an hour
	// old and never past its maximum: not idle, its watermark stuck.
	"stalled": {steps: 30, step: 5 * time.Second, at: func(i int, now time.Time) Sample {
		top := ms(t0.Add(-30 * time.Minute))
		last := top - int64(i%5)*1000
		return Sample{Info: running, Metrics: metricsText(float64(i)*2, 0), Watermarks: doc(map[string]inspect.PartitionWatermark{
			"orders:0": live(now, 500*time.Millisecond),
			"orders:1": live(now, 700*time.Millisecond),
			"orders:2": live(now, 600*time.Millisecond),
			"orders:3": pw(top-bound, last, 300_000),
		})}
	}},
	// orders:1's next record is stamped two hours ahead (a seconds-vs-
	// milliseconds slip upstream would be worse); it waits behind older
	// records and its preview watermark counts meanwhile.
	"future": {steps: 30, step: 5 * time.Second, at: func(i int, now time.Time) Sample {
		future := ms(t0.Add(2 * time.Hour))
		o1 := live(t0.Add(-20*time.Second), 0)
		o1.LastEventTimeMs, o1.LastEventTimeIso = future, inspect.Iso(future)
		o1.PreviewWatermarkMs, o1.PreviewWatermarkIso = ptr(future-bound), ptr(inspect.Iso(future-bound))
		o1.HeadHeldSinceMs = ptr(ms(t0.Add(-20 * time.Second)))
		return Sample{Info: running, Metrics: metricsText(0, 0), Watermarks: doc(map[string]inspect.PartitionWatermark{
			"orders:0": live(now, 500*time.Millisecond),
			"orders:1": o1,
			"orders:2": live(now, 800*time.Millisecond),
		})}
	}},
	// The alignment group "clicks" binds: clicks:0 ran ahead and is held,
	// views:0 lags with nothing buffered, and nothing moves.
	"alignment": {steps: 30, step: 5 * time.Second, at: func(i int, now time.Time) Sample {
		stuck := ms(t0.Add(-4 * time.Minute))
		c0 := pw(stuck+90_000, stuck+100_000, 300_000)
		c0.AlignmentGroup, c0.AlignmentHeld, c0.DriftFromGroupMinMs = ptr("clicks"), true, 90_000
		v0 := pw(stuck, stuck+bound, 600_000)
		v0.AlignmentGroup = ptr("clicks")
		d := doc(map[string]inspect.PartitionWatermark{"clicks:0": c0, "views:0": v0})
		d.AlignmentBinding = ptr("clicks")
		d.AlignmentGroupMins = map[string]int64{"clicks": stuck}
		return Sample{Info: running, Metrics: metricsText(0, 0), Watermarks: d}
	}},
	// The normal engine answers five polls, then stops answering.
	"unreachable": {steps: 12, step: 5 * time.Second, at: func(i int, now time.Time) Sample {
		if i >= 5 {
			return Sample{Err: fmt.Errorf("GET http://127.0.0.1:8080/watermarks: %w: dial tcp 127.0.0.1:8080: connect: connection refused", inspect.ErrUnreachable)}
		}
		return normal(i, now)
	}},
	// Nothing has arrived on either partition for longer than its
	// timeout: both idle, the watermark where they left it.
	"all-idle": {steps: 12, step: 5 * time.Second, at: func(i int, now time.Time) Sample {
		quiet := ms(t0.Add(-10 * time.Minute))
		a, b := pw(quiet-bound, quiet, 300_000), pw(quiet-bound-4000, quiet-4000, 300_000)
		a.Idle, b.Idle = true, true
		d := doc(map[string]inspect.PartitionWatermark{"orders:0": a, "orders:1": b})
		// The engine keeps the global watermark where the last partition
		// left it when it idled out.
		d.GlobalMs, d.GlobalIso = quiet-bound, inspect.Iso(quiet-bound)
		return Sample{Info: running, Metrics: metricsText(0, 0), Watermarks: d}
	}},
	// The engine is restoring its stores: /watermarks answers 503.
	"restoring": {steps: 3, step: time.Second, at: func(i int, now time.Time) Sample {
		return Sample{Info: &inspect.Info{ApplicationID: "clicks-per-minute", State: "RESTORING", EventTimeTracking: true},
			Err: &inspect.APIError{Status: 503, Path: "/watermarks", Body: inspect.Error{Code: inspect.CodeNotInitialised, Message: "restoring: no partition registered yet"}}}
	}},
	// An instance that runs no task and keeps four standbys, one a
	// warm-up: /watermarks answers 503 (no partition registered), /info
	// gives the lags, the warm-up's not measured yet.
	"standby": {steps: 3, step: time.Second, at: func(i int, now time.Time) Sample {
		lag, most := int64(0), int64(58)
		return Sample{Info: &inspect.Info{ApplicationID: "clicks-per-minute", State: "RUNNING", EventTimeTracking: true,
			StandbyTasks: []string{"0_0", "0_1", "0_2", "0_3"},
			Standbys:     []inspect.StandbyTask{{Task: "0_0", LagRecords: &lag}, {Task: "0_1", LagRecords: &most}, {Task: "0_2", LagRecords: &lag}, {Task: "0_3", Warmup: true}}},
			Err: &inspect.APIError{Status: 503, Path: "/watermarks", Body: inspect.Error{Code: inspect.CodeNotInitialised, Message: "no source partition is registered and no watermark was emitted"}}}
	}},
	// A topology the engine found no event time in.
	"no-event-time": {steps: 3, step: time.Second, at: func(i int, now time.Time) Sample {
		return Sample{Info: &inspect.Info{ApplicationID: "word-count", State: "RUNNING"},
			Err: &inspect.APIError{Status: 503, Path: "/watermarks", Body: inspect.Error{Code: "no_event_time", Message: "this topology has no event time"}}}
	}},
}
