package engine

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/metrics"
)

// TestWarnDrops: records dropped on purpose are logged at WARN by reason,
// with how many since the last warning, at most once per reason every
// dropWarnEvery; a reason that did not grow says nothing.
func TestWarnDrops(t *testing.T) {
	var buf bytes.Buffer
	e := &Engine{log: slog.New(slog.NewTextHandler(&buf, nil)), metrics: metrics.NewRegistry()}
	nullKey := e.metrics.Counter(metrics.DroppedRecords, "reason", metrics.ReasonNullKey)
	late := e.metrics.Counter(metrics.DroppedRecords, "reason", metrics.ReasonLateWindow)
	m := &monitorState{}
	t0 := time.Unix(1_800_000_000, 0)
	steps := []struct {
		at            time.Duration
		nullKey, late int64
		want          []string
	}{
		{0, 0, 0, nil},
		{time.Second, 3, 0, []string{"reason=null_key dropped=3 total=3"}},
		// Within dropWarnEvery of the last null_key warning: counted, not logged.
		{2 * time.Second, 500, 1, []string{"reason=late_window dropped=1 total=1"}},
		{5 * time.Second, 200, 0, nil},
		{11 * time.Second, 0, 0, []string{"reason=null_key dropped=700 total=703"}},
		{30 * time.Second, 0, 0, nil},
	}
	for _, s := range steps {
		buf.Reset()
		nullKey.Add(s.nullKey)
		late.Add(s.late)
		e.warnDrops(m, t0.Add(s.at))
		var lines []string
		for l := range strings.Lines(buf.String()) {
			lines = append(lines, l)
		}
		if len(lines) != len(s.want) {
			t.Fatalf("at %s: %d lines, want %d:\n%s", s.at, len(lines), len(s.want), buf.String())
		}
		for i, w := range s.want {
			if !strings.Contains(lines[i], "level=WARN") || !strings.Contains(lines[i], w) || !strings.Contains(lines[i], "hint=") {
				t.Errorf("at %s: %q lacks %q", s.at, lines[i], w)
			}
		}
	}
}

// TestProgressArgs: the progress line's counts are all totals, named so;
// the interval shows only as the rate.
func TestProgressArgs(t *testing.T) {
	var o Observation
	o.State = Running
	o.RecordsIn = map[string]int64{"in": 1500}
	o.RecordsOut = map[string]int64{"a": 700, "b": 300}
	o.Stats.Committed = 12
	o.Lag = map[string]int64{"in": 5}
	args := progressArgs(o, 1500, 1000, 10*time.Second, "2s")
	got := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		got[args[i].(string)] = args[i+1]
	}
	want := map[string]any{"records_in_total": int64(1500), "records_out_total": int64(1000), "records_in_per_sec": "50.0", "lag.in": int64(5), "lag": "2s"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (%T), want %v (%T)", k, got[k], got[k], v, v)
		}
	}
	if _, ok := got["epochs_committed_total"]; !ok {
		t.Errorf("no epochs_committed_total in %v", args)
	}
	for k := range got {
		if k == "records_in" || k == "records_out" || k == "epochs" {
			t.Errorf("%s: a count without saying whether it is a total or the interval's", k)
		}
	}
}
