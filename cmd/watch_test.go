package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/tui"
)

// recordedEngine serves recorded /watermarks, /info and /metrics
// documents (testdata/watch) over real HTTP, played forward: at the n-th
// request of /watermarks every partition that is not idle or stuck moves
// on n seconds, and a stuck one keeps receiving records with old
// timestamps (its last event time changes, its watermark does not).
//
// It stands in for `stoatctl run` until the REST API (issue 12) is merged;
// the end-to-end test that drives a stall through a real engine on the
// embedded broker comes with that merge.
type recordedEngine struct {
	mu    sync.Mutex
	n     int64
	stuck map[string]bool
	doc   inspect.Watermarks
	info  []byte
	text  []byte
}

func newRecordedEngine(t *testing.T, stuck ...string) *httptest.Server {
	t.Helper()
	e := &recordedEngine{stuck: map[string]bool{}}
	for _, s := range stuck {
		e.stuck[s] = true
	}
	b, err := os.ReadFile("testdata/watch/watermarks.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &e.doc); err != nil {
		t.Fatalf("testdata/watch/watermarks.json: %v", err)
	}
	if e.info, err = os.ReadFile("testdata/watch/info.json"); err != nil {
		t.Fatal(err)
	}
	if e.text, err = os.ReadFile("testdata/watch/metrics.txt"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func (e *recordedEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/watermarks":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e.next())
	case "/info":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(e.info)
	case "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(e.text)
	default:
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(inspect.Error{Code: inspect.CodeNotFound, Message: "no such path: " + r.URL.Path})
	}
}

func (e *recordedEngine) next() inspect.Watermarks {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.n
	e.n++
	d := e.doc
	d.Partitions = map[string]inspect.PartitionWatermark{}
	d.GlobalMs = inspect.MinWatermark
	for name, p := range e.doc.Partitions {
		// As the engine does, each says how long its watermark has not
		// moved: a stuck one two minutes and more, a moving one not at
		// all.
		switch {
		case e.stuck[name]:
			p.LastEventTimeMs -= (n % 3) * 1000
			since := 120_000 + n*20
			p.SinceAdvanceMs = &since
		case !p.Idle:
			p.WatermarkMs += n * 1000
			p.LastEventTimeMs += n * 1000
			var since int64
			p.SinceAdvanceMs = &since
		}
		p.WatermarkIso, p.LastEventTimeIso = inspect.Iso(p.WatermarkMs), inspect.Iso(p.LastEventTimeMs)
		if !p.Idle && (d.GlobalMs == inspect.MinWatermark || p.WatermarkMs < d.GlobalMs) {
			d.GlobalMs = p.WatermarkMs
		}
		d.Partitions[name] = p
	}
	d.GlobalIso = inspect.Iso(d.GlobalMs)
	return d
}

func runWatch(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(append([]string{"watch", "watermarks"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestWatchOnceStall: --once over three polls of an engine whose clicks:1
// keeps receiving old records names the stall, the partition and its
// runbook branch, and --exit-code exits 1; once it moves again, exit 0.
func TestWatchOnceStall(t *testing.T) {
	srv := newRecordedEngine(t, "clicks:1")
	code, out, errOut := runWatch(t, "--url", srv.URL, "--once", "-o", "json", "--samples", "3", "--interval", "20ms", "--exit-code")
	if code != ExitFailure {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	var v tui.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not a verdict: %v\n%s", err, out)
	}
	if v.Pinning != "clicks:1" || v.Stalled != 1 || v.Samples != 3 || v.Idle != 1 {
		t.Errorf("pinning %q stalled %d samples %d idle %d", v.Pinning, v.Stalled, v.Samples, v.Idle)
	}
	if len(v.Alerts) != 1 || v.Alerts[0].Code != tui.AlertStalled || v.Alerts[0].Partition != "clicks:1" || v.Alerts[0].Branch != tui.BranchOldTimes {
		t.Errorf("alerts %+v, want one stall of clicks:1 in branch old-timestamps", v.Alerts)
	}
	if !strings.Contains(errOut, "1 alert(s) hold: stalled (clicks:1)") {
		t.Errorf("stderr does not name the alert:\n%s", errOut)
	}

	// One sample is enough: the engine says how long the watermark has
	// stood still, and --once judges it by --stall-after as the view
	// does; a threshold past the engine's figure is no stall.
	for _, tc := range []struct {
		stallAfter string
		want       int
	}{{"1m", ExitFailure}, {"5m", ExitOK}} {
		code, out, errOut = runWatch(t, "--url", srv.URL, "--once", "-o", "json", "--samples", "1", "--stall-after", tc.stallAfter, "--exit-code")
		if code != tc.want {
			t.Errorf("one sample, --stall-after %s: exit %d, want %d\n%s%s", tc.stallAfter, code, tc.want, out, errOut)
		}
	}

	// The stall clears: every partition moves.
	srv = newRecordedEngine(t)
	code, out, errOut = runWatch(t, "--url", srv.URL, "--once", "-o", "json", "--samples", "3", "--interval", "20ms", "--exit-code")
	if code != ExitOK {
		t.Fatalf("exit %d after the stall cleared, want 0; stderr:\n%s\n%s", code, errOut, out)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Stalled != 0 || len(v.Alerts) != 0 {
		t.Errorf("after clearing: stalled %d alerts %+v (%v)", v.Stalled, v.Alerts, err)
	}
}

// TestWatchOnceFormats: the table is for people (readable times, the
// branch), yaml for scripts; data only on stdout, the alert summary on
// stderr.
func TestWatchOnceFormats(t *testing.T) {
	srv := newRecordedEngine(t, "clicks:1")
	code, out, errOut := runWatch(t, "--url", srv.URL, "--once", "--samples", "2", "--interval", "10ms")
	if code != ExitOK || errOut != "" {
		t.Fatalf("without --exit-code: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"application       clicks-per-minute (RUNNING)", "pinned by         clicks:1", "* clicks:1", "STALLED old-timestamps",
		"IDLE", "ALERT stalled:", "branch: live but old timestamps (old-timestamps)", "fix: records still arrive on clicks:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 80 && !strings.HasPrefix(line, "  fix:") && !strings.HasPrefix(line, "ALERT") {
			t.Errorf("table line wider than 80 columns: %q", line)
		}
	}
	code, out, _ = runWatch(t, "--url", srv.URL, "--once", "-o", "yaml", "--samples", "1")
	var v map[string]any
	if err := yaml.Unmarshal([]byte(out), &v); code != ExitOK || err != nil || v["pinning"] == nil {
		t.Errorf("-o yaml: exit %d, %v\n%s", code, err, out)
	}
}

func TestWatchExitCodes(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--url", url, "--once", "--samples", "1", "--exit-code"}, ExitUnreachable, "engine unreachable"},
		{[]string{"--url", url, "--once", "--samples", "1"}, ExitUnreachable, "engine unreachable"},
		{[]string{"-o", "json"}, ExitUsage, "-o/--output needs --once"},
		{[]string{"--exit-code"}, ExitUsage, "--exit-code needs --once"},
		{[]string{"--once", "--samples", "0"}, ExitUsage, "--samples 0"},
		{[]string{"--once", "-o", "xml"}, ExitUsage, "unknown output format"},
		{nil, ExitUsage, "needs a terminal"}, // stdout is a buffer here
	}
	for _, tc := range tests {
		code, _, errOut := runWatch(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("watch watermarks %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, errOut)
		}
	}
	// The unreachable verdict still goes to stdout, for scripts.
	_, out, _ := runWatch(t, "--url", url, "--once", "--samples", "1", "-o", "json", "--exit-code")
	if !strings.Contains(out, fmt.Sprintf("%q: %q", "code", tui.AlertUnreachable)) {
		t.Errorf("the unreachable verdict: %s", out)
	}
}
