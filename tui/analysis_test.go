package tui

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/inspect"
)

var seedFlag = flag.Int64("seed", 0, "replay TestVerdictInvariants with this seed")

var testOptions = Options{StallAfter: time.Minute, SkewThreshold: 5 * time.Minute}

func observeAll(opts Options, samples []Sample) Verdict {
	tr := NewTracker(opts)
	var v Verdict
	for _, s := range samples {
		v = tr.Observe(s)
	}
	return v
}

func alertCodes(v Verdict) []string {
	var out []string
	for _, a := range v.Alerts {
		s := a.Code
		if a.Partition != "" {
			s += " " + a.Partition
		}
		if a.Branch != NoBranch {
			s += " " + string(a.Branch)
		}
		out = append(out, s)
	}
	return out
}

func stalledNames(v Verdict) []string {
	var out []string
	for _, p := range v.Partitions {
		if p.Stalled {
			out = append(out, p.Partition)
		}
	}
	return out
}

// TestVerdicts reads each scenario to its last poll and checks the
// verdicts: who pins, who is stalled, the branch, the alerts.
func TestVerdicts(t *testing.T) {
	tests := []struct {
		scenario string
		pinning  string
		branch   Branch
		stalled  []string
		idle     int
		preview  int
		alerts   []string
	}{
		{scenario: "normal", pinning: "orders:2"},
		{scenario: "idle", pinning: "orders:2", idle: 1},
		{scenario: "stalled", pinning: "orders:3", branch: BranchOldTimes, stalled: []string{"orders:3"},
			alerts: []string{"stalled orders:3 old-timestamps", "skew orders:3 old-timestamps", "late_drops"}},
		{scenario: "future", pinning: "orders:2", preview: 1,
			alerts: []string{"future_stamped orders:1 future-timestamp"}},
		{scenario: "alignment", pinning: "views:0", branch: BranchAlignment, stalled: []string{"clicks:0", "views:0"},
			alerts: []string{"stalled views:0 alignment"}},
		{scenario: "unreachable", pinning: "orders:2", alerts: []string{"unreachable"}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			v := observeAll(testOptions, scenarios[tc.scenario].samples())
			if v.Pinning != tc.pinning {
				t.Errorf("pinning %q, want %q", v.Pinning, tc.pinning)
			}
			for _, p := range v.Partitions {
				if p.Pinning && p.Branch != tc.branch {
					t.Errorf("the pinning partition's branch is %q, want %q", p.Branch, tc.branch)
				}
			}
			if got := stalledNames(v); !slices.Equal(got, tc.stalled) {
				t.Errorf("stalled %v, want %v", got, tc.stalled)
			}
			if v.Idle != tc.idle || v.Preview != tc.preview {
				t.Errorf("idle %d preview %d, want %d %d", v.Idle, v.Preview, tc.idle, tc.preview)
			}
			if got := alertCodes(v); !slices.Equal(got, tc.alerts) {
				t.Errorf("alerts %q, want %q\n%+v", got, tc.alerts, v.Alerts)
			}
			for _, a := range v.Alerts {
				if a.Message == "" || a.Fix == "" {
					t.Errorf("alert %s lacks a message or a fix: %+v", a.Code, a)
				}
			}
		})
	}
}

// TestStallDetector: the stall is measured across polls, so it needs
// StallAfter of watching (or, in once mode, two polls that agree).
func TestStallDetector(t *testing.T) {
	stuck := ms(t0.Add(-time.Hour))
	at := func(wm, last int64, idle bool) func(int, time.Time) Sample {
		return func(i int, now time.Time) Sample {
			p := pw(wm, last, 300_000)
			p.Idle = idle
			return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": p})}
		}
	}
	moving := func(i int, now time.Time) Sample {
		return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": live(now, 0)})}
	}
	// advancesOnce moves at the second of three polls only.
	advancesOnce := func(i int, now time.Time) Sample {
		wm := stuck
		if i >= 1 {
			wm += 1000
		}
		return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": pw(wm, wm+bound, 300_000)})}
	}
	// told is a server that says when the watermark last moved: an hour
	// after the stuck watermark's event time, two minutes before t0.
	told := func(movedAt time.Time) func(int, time.Time) Sample {
		return func(i int, now time.Time) Sample {
			p := pw(stuck, stuck, 300_000)
			moved := ms(movedAt)
			p.LastAdvanceMs = &moved
			return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": p})}
		}
	}
	// waited is a server that says, by its own clock, how long the
	// watermark has not moved (sinceAdvanceMs): here a partition that
	// never had a record, with no lastAdvanceMs, waiting since the engine
	// registered it; the server's clock runs an hour ahead of ours, which
	// does not matter.
	waited := func(since int64) func(int, time.Time) Sample {
		return func(i int, now time.Time) Sample {
			p := pw(inspect.MinWatermark, inspect.MinWatermark, 0)
			registered := ms(now.Add(time.Hour)) - since
			s := since + int64(i)*1000
			p.WaitingSinceMs, p.SinceAdvanceMs = &registered, &s
			return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": p})}
		}
	}
	tests := []struct {
		name    string
		opts    Options
		sc      scenario
		stalled bool
		since   int64
		seen    bool
	}{
		{"watch: never written, the engine's clock past the threshold", testOptions, scenario{1, time.Second, waited(90_000)}, true, 90_000, true},
		{"watch: never written, the engine's clock under the threshold", testOptions, scenario{1, time.Second, waited(30_000)}, false, 30_000, true},
		{"watch: never written, crossing the threshold over polls", testOptions, scenario{3, time.Second, waited(58_500)}, true, 60_500, true},
		{"watch: one look at a server that says when it moved", testOptions, scenario{1, time.Second, told(t0.Add(-2 * time.Minute))}, true, 120_000, true},
		{"watch: the server's move under the threshold", testOptions, scenario{1, time.Second, told(t0.Add(-30 * time.Second))}, false, 30_000, true},
		{"watch: a server clock ahead of ours", testOptions, scenario{1, time.Second, told(t0.Add(time.Minute))}, false, 0, true},
		{"once: the server's move before the first poll", Options{}, scenario{2, time.Second, told(t0.Add(-2 * time.Minute))}, true, 121_000, true},
		{"once: the server's move between the polls", Options{}, scenario{2, time.Second, told(t0.Add(500 * time.Millisecond))}, false, 500, true},
		{"one poll is no verdict", Options{}, scenario{1, time.Second, at(stuck, stuck, false)}, false, 0, false},
		{"once: two polls that agree", Options{}, scenario{2, time.Second, at(stuck, stuck, false)}, true, 1000, false},
		{"once: moved within the samples", Options{}, scenario{3, time.Second, advancesOnce}, false, 1000, true},
		{"once: moving", Options{}, scenario{3, time.Second, moving}, false, 0, true},
		{"once: idle is never stalled", Options{}, scenario{3, time.Second, at(stuck, stuck, true)}, false, 2000, false},
		{"watch: under the threshold", testOptions, scenario{12, 5 * time.Second, at(stuck, stuck, false)}, false, 55_000, false},
		{"watch: at the threshold", testOptions, scenario{13, 5 * time.Second, at(stuck, stuck, false)}, true, 60_000, false},
		{"watch: moving", testOptions, scenario{30, 5 * time.Second, moving}, false, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := observeAll(tc.opts, tc.sc.samples())
			p := v.Partitions[0]
			if p.Stalled != tc.stalled || p.SinceAdvanceMs != tc.since || p.AdvanceSeen != tc.seen {
				t.Errorf("stalled %v since %d seen %v, want %v %d %v", p.Stalled, p.SinceAdvanceMs, p.AdvanceSeen, tc.stalled, tc.since, tc.seen)
			}
		})
	}
}

// TestIdleEligible: a quiet pinning partition whose timeout has not run
// out is the idle-eligible branch, with the time left in the fix; with
// idleness off the fix says so.
func TestIdleEligible(t *testing.T) {
	for _, tc := range []struct {
		timeout int64
		fix     string
	}{
		{300_000, "orders:1 went quiet 2m00s ago and idles out after 5m00s (in at most 3m00s)"},
		{0, "idleness is off for it (timeout 0)"},
	} {
		t.Run(fmt.Sprint(tc.timeout), func(t *testing.T) {
			quiet := ms(t0.Add(-time.Minute))
			v := observeAll(testOptions, scenario{25, 5 * time.Second, func(i int, now time.Time) Sample {
				return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{
					"orders:0": live(now, 0),
					"orders:1": pw(quiet-bound, quiet, tc.timeout),
				})}
			}}.samples())
			if got := alertCodes(v); !slices.Equal(got, []string{"stalled orders:1 idle-eligible"}) {
				t.Fatalf("alerts %q", got)
			}
			if !strings.Contains(v.Alerts[0].Fix, tc.fix) {
				t.Errorf("fix %q does not say %q", v.Alerts[0].Fix, tc.fix)
			}
		})
	}
}

// TestStateGatesStall: a stalled watermark is an alert only while the
// engine is RUNNING (or its state is unknown), as the shipped rule joins on
// stoatflow_client_state == 4.
func TestStateGatesStall(t *testing.T) {
	stuck := ms(t0.Add(-time.Hour))
	for _, tc := range []struct {
		info    *inspect.Info
		metrics *Metrics
		alert   bool
	}{
		{running, nil, true},
		{&inspect.Info{State: "REBALANCING", EventTimeTracking: true}, nil, false},
		{nil, &Metrics{ClientState: ptr(2.0)}, false},
		{nil, &Metrics{ClientState: ptr(5.0)}, false}, // PAUSED
		{nil, &Metrics{ClientState: ptr(4.0)}, true},
		{nil, nil, true},
	} {
		v := observeAll(Options{}, scenario{3, time.Second, func(int, time.Time) Sample {
			return Sample{Info: tc.info, Metrics: tc.metrics, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": pw(stuck, stuck, 0)})}
		}}.samples())
		if got := len(v.Alerts) > 0; got != tc.alert {
			t.Errorf("state %q: alert %v, want %v (%q)", v.State, got, tc.alert, alertCodes(v))
		}
	}
}

func TestAllIdleAndTrackingOff(t *testing.T) {
	idle := pw(ms(t0), ms(t0), 60_000)
	idle.Idle = true
	v := observeAll(testOptions, scenario{2, time.Second, func(int, time.Time) Sample {
		return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"a:0": idle, "a:1": idle})}
	}}.samples())
	if got := alertCodes(v); !slices.Equal(got, []string{"all_idle"}) || v.Pinning != "" || v.GlobalLagMs != nil {
		t.Errorf("all idle: alerts %q pinning %q global lag %v", got, v.Pinning, v.GlobalLagMs)
	}

	// A topology without event time: /watermarks answers 503 by design and
	// /info says tracking is off.
	off := &inspect.Info{ApplicationID: "wordcount", State: "RUNNING"}
	notInit := &inspect.APIError{Status: 503, Path: "/watermarks", Body: inspect.Error{Code: inspect.CodeNotInitialised, Message: "no partition registered"}}
	v = NewTracker(testOptions).Observe(Sample{At: t0, Info: off, Err: notInit})
	if got := alertCodes(v); !slices.Equal(got, []string{"tracking_off no-event-time"}) || !v.Reachable || v.ErrorCode != inspect.CodeNotInitialised {
		t.Errorf("tracking off: alerts %q reachable %v code %q", got, v.Reachable, v.ErrorCode)
	}
	// The API's own code for it says the same without /info.
	noET := &inspect.APIError{Status: 503, Path: "/watermarks", Body: inspect.Error{Code: "no_event_time", Message: "this topology has no event time"}}
	v = NewTracker(testOptions).Observe(Sample{At: t0, Err: noET})
	if got := alertCodes(v); !slices.Equal(got, []string{"tracking_off no-event-time"}) {
		t.Errorf("no_event_time: alerts %q", got)
	}
	// The same 503 while restoring is no alert.
	v = NewTracker(testOptions).Observe(Sample{At: t0, Info: &inspect.Info{State: "REBALANCING", EventTimeTracking: true}, Err: notInit})
	if len(v.Alerts) != 0 {
		t.Errorf("503 while restoring: alerts %q", alertCodes(v))
	}
	// Any other API error is an alert that carries the message.
	v = NewTracker(testOptions).Observe(Sample{At: t0, Err: &inspect.APIError{Status: 401, Path: "/watermarks", Body: inspect.Error{Code: inspect.CodeUnauthorized, Message: "bad token"}}})
	if got := alertCodes(v); !slices.Equal(got, []string{"error"}) || !strings.Contains(v.Alerts[0].Message, "bad token") {
		t.Errorf("401: %+v", v.Alerts)
	}
}

func TestDropRates(t *testing.T) {
	tr := NewTracker(testOptions)
	w := doc(map[string]inspect.PartitionWatermark{"t:0": live(t0, 0)})
	v := tr.Observe(Sample{At: t0, Watermarks: w, Metrics: metricsText(10, 0)})
	if v.DropsPerSecond != nil {
		t.Errorf("rates after one answer: %v", v.DropsPerSecond)
	}
	v = tr.Observe(Sample{At: t0.Add(2 * time.Second), Watermarks: w, Metrics: metricsText(14, 1)})
	if v.DropsPerSecond["late_window"] != 2 || v.DropsPerSecond["no_event_time"] != 0.5 {
		t.Errorf("rates %v, want late_window 2 no_event_time 0.5", v.DropsPerSecond)
	}
	// A poll without /metrics keeps the last rates; a restarted counter
	// counts from zero.
	v = tr.Observe(Sample{At: t0.Add(3 * time.Second), Watermarks: w})
	if v.DropsPerSecond["late_window"] != 2 {
		t.Errorf("rates without /metrics: %v", v.DropsPerSecond)
	}
	v = tr.Observe(Sample{At: t0.Add(4 * time.Second), Watermarks: w, Metrics: metricsText(3, 0)})
	if v.DropsPerSecond["late_window"] != 1.5 {
		t.Errorf("rates after a restart: %v", v.DropsPerSecond)
	}
}

// TestRevokedPartitionStartsAfresh: a partition that leaves and comes back
// (a rebalance) is watched anew, not judged on its old owner's history.
func TestRevokedPartitionStartsAfresh(t *testing.T) {
	stuck := ms(t0.Add(-time.Hour))
	tr := NewTracker(testOptions)
	both := doc(map[string]inspect.PartitionWatermark{"t:0": pw(stuck, stuck, 0), "t:1": live(t0, 0)})
	for i := range 13 {
		tr.Observe(Sample{At: t0.Add(time.Duration(i) * 5 * time.Second), Watermarks: both})
	}
	tr.Observe(Sample{At: t0.Add(65 * time.Second), Watermarks: doc(map[string]inspect.PartitionWatermark{"t:1": live(t0, 0)})})
	v := tr.Observe(Sample{At: t0.Add(70 * time.Second), Watermarks: both})
	if p := v.Partitions[0]; p.Stalled || p.SinceAdvanceMs != 0 {
		t.Errorf("t:0 after coming back: stalled %v since %d", p.Stalled, p.SinceAdvanceMs)
	}
}

func TestUnreachableKeepsLastAnswer(t *testing.T) {
	samples := scenarios["unreachable"].samples()
	v := observeAll(testOptions, samples)
	if v.Reachable || len(v.Partitions) != 4 || !v.LastAnswer.Equal(samples[4].At) {
		t.Fatalf("reachable %v partitions %d last answer %v", v.Reachable, len(v.Partitions), v.LastAnswer)
	}
	if !strings.Contains(v.Alerts[0].Message, "last answer 35s ago") {
		t.Errorf("alert %q", v.Alerts[0].Message)
	}
	// Without any answer, there is nothing to show but the reason.
	v = NewTracker(testOptions).Observe(Sample{At: t0, Err: fmt.Errorf("x: %w", inspect.ErrUnreachable)})
	if v.Reachable || v.Partitions != nil || v.GlobalIso != inspect.NotAvailable || alertCodes(v)[0] != AlertUnreachable {
		t.Errorf("%+v", v)
	}
}

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(`# HELP stoatflow_dropped_records_total Records dropped, by reason.
# TYPE stoatflow_dropped_records_total counter
stoatflow_dropped_records_total{reason="late_window",lane="0"} 3
stoatflow_dropped_records_total{lane="1", reason="late_window"} 4 1790071560000
stoatflow_dropped_records_total{reason="deserialization"} 1e3
stoatflow_client_state 4
stoatflow_watermark_timestamp_seconds +Inf
go_goroutines 12
broken{reason="x 1
stoatflow_topology_event_time_tracking 0
`)
	if err == nil || !strings.Contains(err.Error(), "line 9") {
		t.Errorf("error %v, want one naming line 9", err)
	}
	if m.Dropped["late_window"] != 7 || m.Dropped["deserialization"] != 1000 {
		t.Errorf("dropped %v", m.Dropped)
	}
	if *m.ClientState != 4 || !math.IsInf(*m.WatermarkSeconds, 1) || *m.EventTimeTracking != 0 {
		t.Errorf("gauges %v %v %v", *m.ClientState, *m.WatermarkSeconds, *m.EventTimeTracking)
	}
	m, err = ParseMetrics("")
	if err != nil || m.ClientState != nil || len(m.Dropped) != 0 {
		t.Errorf("empty: %+v %v", m, err)
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add(`stoatflow_dropped_records_total{reason="late_window"} 3`)
	f.Add("a{b=\"\\\"\\n\\\\\",} NaN 12\n# x\n")
	f.Add(`x{`)
	f.Fuzz(func(t *testing.T, s string) {
		m, _ := ParseMetrics(s)
		if m == nil || m.Dropped == nil {
			t.Fatal("ParseMetrics returned no Metrics")
		}
	})
}

func TestDuration(t *testing.T) {
	for ms, want := range map[int64]string{0: "0s", 999: "0s", 42_000: "42s", 252_000: "4m12s", 7_500_000: "2h05m", 273_600_000: "3d04h", -5000: "-5s"} {
		if got := Duration(ms); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ms, got, want)
		}
	}
}

func TestSplitPartition(t *testing.T) {
	for in, want := range map[string]string{"orders:3": "orders 3", "a:b:12": "a:b 12", "odd": "odd -1", "x:y": "x:y -1"} {
		topic, n := splitPartition(in)
		if got := fmt.Sprintf("%s %d", topic, n); got != want {
			t.Errorf("splitPartition(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestFutureWithoutPreview: with a custom watermark generator there is no
// preview, so a partition whose next record is stamped in the future holds
// the watermark still; the branch is the future one, not old timestamps.
func TestFutureWithoutPreview(t *testing.T) {
	stuck := ms(t0.Add(-time.Minute))
	future := ms(t0.Add(3 * time.Hour))
	v := observeAll(testOptions, scenario{20, 5 * time.Second, func(i int, now time.Time) Sample {
		p := pw(stuck, future, 300_000)
		return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"orders:0": live(now, 0), "orders:1": p})}
	}}.samples())
	want := []string{"stalled orders:1 future-timestamp", "future_stamped orders:1 future-timestamp"}
	if got := alertCodes(v); !slices.Equal(got, want) {
		t.Errorf("alerts %q, want %q", got, want)
	}
}

// TestVerdictInvariants feeds random runs of polls (partitions idle or
// not, moving or not, with or without a preview, some missing now and
// then) and checks what must hold of every verdict. The seed is printed;
// -seed replays one.
func TestVerdictInvariants(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (go test ./tui -run TestVerdictInvariants -seed %d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for run := range 200 {
		opts := Options{SkewThreshold: time.Duration(rng.IntN(3)) * time.Minute}
		if rng.IntN(2) == 0 {
			opts.StallAfter = time.Duration(1+rng.IntN(30)) * time.Second
		}
		tr := NewTracker(opts)
		n := 1 + rng.IntN(6)
		wms := make([]int64, n)
		for i := range wms {
			wms[i] = ms(t0) - int64(rng.IntN(600_000))
		}
		at := t0
		for poll := range 1 + rng.IntN(40) {
			at = at.Add(time.Duration(1+rng.IntN(5000)) * time.Millisecond)
			parts := map[string]inspect.PartitionWatermark{}
			for i := range n {
				if rng.IntN(20) == 0 {
					continue // revoked for this poll
				}
				if rng.IntN(3) == 0 {
					wms[i] += int64(rng.IntN(5000))
				}
				p := pw(wms[i], wms[i]+bound-int64(rng.IntN(3000)), int64(rng.IntN(3))*60_000)
				p.Idle = rng.IntN(4) == 0
				if rng.IntN(8) == 0 {
					p.PreviewWatermarkMs = ptr(wms[i] + int64(rng.IntN(7_200_000)))
				}
				parts[fmt.Sprintf("t:%d", i)] = p
			}
			s := Sample{At: at, Info: running, Watermarks: doc(parts)}
			if rng.IntN(15) == 0 {
				s = Sample{At: at, Err: fmt.Errorf("x: %w", inspect.ErrUnreachable)}
			}
			v := tr.Observe(s)
			where := fmt.Sprintf("seed %d run %d poll %d", seed, run, poll)
			checkInvariants(t, where, v)
		}
	}
}

func checkInvariants(t *testing.T, where string, v Verdict) {
	t.Helper()
	pins, idle, stalled := 0, 0, 0
	for _, p := range v.Partitions {
		if p.Pinning {
			pins++
			if p.Idle || p.Partition != v.Pinning {
				t.Fatalf("%s: pinning partition %+v (verdict says %q)", where, p, v.Pinning)
			}
		}
		if p.Idle {
			idle++
		}
		if p.Stalled {
			stalled++
			if p.Idle || p.PreviewWatermarkMs != nil || p.Branch == NoBranch {
				t.Fatalf("%s: stalled partition that is idle, previewing or unexplained: %+v", where, p)
			}
		}
		if p.SinceAdvanceMs < 0 || p.QuietForMs < 0 || p.IdleForMs < 0 {
			t.Fatalf("%s: negative age: %+v", where, p)
		}
	}
	if v.Idle != idle || v.Stalled != stalled || pins > 1 || (pins == 0) != (v.Pinning == "") {
		t.Fatalf("%s: counts idle %d/%d stalled %d/%d pins %d %q", where, v.Idle, idle, v.Stalled, stalled, pins, v.Pinning)
	}
	if len(v.Partitions) > 0 && idle < len(v.Partitions) && v.Reachable && pins != 1 {
		t.Fatalf("%s: %d non-idle partitions but no pinning one", where, len(v.Partitions)-idle)
	}
	for _, a := range v.Alerts {
		if a.Message == "" {
			t.Fatalf("%s: alert without a message: %+v", where, a)
		}
		if a.Code == AlertUnreachable && v.Reachable {
			t.Fatalf("%s: unreachable alert on a reachable verdict", where)
		}
	}
}

// TestServerIdleSince: a server that says since when a partition is idle
// gives its idle time from one look, exact rather than "at least".
func TestServerIdleSince(t *testing.T) {
	since := ms(t0.Add(-90 * time.Second))
	p := pw(ms(t0.Add(-time.Hour)), ms(t0.Add(-time.Hour)), 60_000)
	p.Idle, p.IdleSinceMs = true, &since
	v := observeAll(testOptions, scenario{1, time.Second, func(int, time.Time) Sample {
		return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": p})}
	}}.samples())
	if got := v.Partitions[0]; got.IdleForMs != 90_000 || !got.IdleStartSeen {
		t.Fatalf("idle for %d (start seen %v), want 90000 seen", got.IdleForMs, got.IdleStartSeen)
	}
}

// TestOneLookOldTimestamps: a server that says when the watermark last
// moved and when records last arrived lets one look name the
// old-timestamps branch: stalled for two minutes while records arrived
// five seconds ago. Records two minutes old instead make it quiet.
func TestOneLookOldTimestamps(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lastRecord time.Duration
		live       bool
		quiet      int64
	}{
		{"records five seconds ago: live", 5 * time.Second, true, 5_000},
		{"records two minutes ago: quiet", 2 * time.Minute, false, 120_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stuck := ms(t0.Add(-time.Hour))
			p := pw(stuck, stuck, 0)
			moved, rec := ms(t0.Add(-2*time.Minute)), ms(t0.Add(-tc.lastRecord))
			p.LastAdvanceMs, p.LastRecordMs = &moved, &rec
			v := observeAll(testOptions, scenario{1, time.Second, func(int, time.Time) Sample {
				return Sample{Info: running, Watermarks: doc(map[string]inspect.PartitionWatermark{"t:0": p})}
			}}.samples())
			got := v.Partitions[0]
			if !got.Stalled || got.Live != tc.live || got.QuietForMs != tc.quiet {
				t.Fatalf("stalled %v live %v quiet %d, want stalled, live %v, quiet %d", got.Stalled, got.Live, got.QuietForMs, tc.live, tc.quiet)
			}
			if tc.live && !slices.Contains(alertCodes(v), "stalled t:0 "+string(BranchOldTimes)) {
				t.Fatalf("alerts %v, want the stall on t:0 with the old-timestamps branch", alertCodes(v))
			}
		})
	}
}

// TestUpstreamBranch: a repartition topic's partition pins the watermark
// because a task writing the topic has not told its event time (its
// instance died): the branch says so and the fix names the task; once
// every writer told, it names the one holding the partition back.
func TestUpstreamBranch(t *testing.T) {
	stuckFor := int64(10 * time.Minute / time.Millisecond)
	sample := func(w inspect.RepartitionWriters) []Sample {
		return []Sample{{At: t0, Info: running, Watermarks: func() *inspect.Watermarks {
			rep := pw(ms(t0.Add(-time.Hour)), ms(t0), 0)
			rep.SinceAdvanceMs, rep.Writers = &stuckFor, &w
			return doc(map[string]inspect.PartitionWatermark{"orders:0": live(t0, 0), "app-win-repartition:0": rep})
		}()}}
	}
	for _, tc := range []struct {
		name    string
		writers inspect.RepartitionWriters
		names   string
	}{
		{"not told", inspect.RepartitionWriters{Tasks: []string{"0_0", "0_1"}, NotTold: []string{"0_1"}, Holding: []string{"0_0"}}, "0_1"},
		{"held", inspect.RepartitionWriters{Tasks: []string{"0_0", "0_1"}, Holding: []string{"0_0"}}, "0_0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := observeAll(Options{StallAfter: time.Minute, SkewThreshold: 5 * time.Minute}, sample(tc.writers))
			if v.Pinning != "app-win-repartition:0" {
				t.Fatalf("pinning %q, want the repartition partition", v.Pinning)
			}
			var found bool
			for _, a := range v.Alerts {
				if a.Code == "stalled" {
					found = true
					if a.Branch != BranchUpstream || !strings.Contains(a.Fix, tc.names) {
						t.Errorf("stalled alert %+v: want branch %s and a fix naming %s", a, BranchUpstream, tc.names)
					}
				}
			}
			if !found {
				t.Fatalf("no stalled alert: %q", alertCodes(v))
			}
		})
	}
}
