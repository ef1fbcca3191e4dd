package prom_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/prom"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// TestShippedQueriesUseExportedFamilies: every stoatflow_ series the alert
// rules and the Grafana dashboard query is a family the engine exports
// (a histogram's _bucket, _sum and _count included), so a rename here
// cannot leave them reading nothing.
func TestShippedQueriesUseExportedFamilies(t *testing.T) {
	known := map[string]bool{}
	for _, f := range prom.Families {
		known[f.Name] = true
		if f.Type == prom.Histogram || f.Type == prom.Summary {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[f.Name+s] = true
			}
		}
	}
	var queries []string
	rules, err := os.ReadFile("../../deploy/prometheus/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(rules), "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(l), "expr:"); ok {
			queries = append(queries, e)
		}
	}
	b, err := os.ReadFile("../../deploy/grafana/stoatflow-event-time.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries = append(queries, tg.Expr)
		}
	}
	if len(queries) < 10 {
		t.Fatalf("found %d queries; the files moved?", len(queries))
	}
	for _, q := range queries {
		for _, n := range seriesName.FindAllString(q, -1) {
			if !known[n] {
				t.Errorf("%q queries %s, which the engine does not export", q, n)
			}
		}
	}
}

// seriesName matches the engine's series in a query.
var seriesName = regexp.MustCompile(`stoatflow_[a-z0-9_]+`)

// notOnDashboard are the families the Grafana dashboard leaves out, and
// why: every other family has a panel.
var notOnDashboard = map[string]string{
	prom.WatermarkAdvance:        "the watermark's panel shows it move",
	prom.WatermarkPreview:        "transient, within one poll's dispatch: /watermarks and stoatctl watch show the partition",
	prom.EventTimeTracking:       "a fact of the topology, not a time series",
	prom.TimerLaneMismatch:       "a bug detector; alert on it, do not chart it",
	prom.EpochRecords:            "the throughput panel shows the same load",
	prom.EpochsCommitted:         "the commit-duration histogram counts commits",
	prom.BarrierInterval:         "configuration",
	prom.LaneQueueBatches:        "an internal queue; the lag panels show a backlog",
	prom.RestoreRemaining:        "read during a restore from /metrics or the progress log",
	prom.StoreSegmentCount:       "follows the watermark, whose panels are there",
	prom.PartitionWatermark:      "per partition: stoatctl watch watermarks shows it",
	prom.PartitionIdle:           "per partition: stoatctl watch watermarks shows it",
	prom.PartitionLastEventTime:  "per partition: stoatctl watch watermarks shows it",
	prom.PartitionIdlenessTimout: "configuration",
	prom.LateRecords:             "the drops panel shows what lateness costs",
	prom.OutOfOrderness:          "stoatctl watch watermarks shows it",
	prom.TaskProcessLatency:      "the per-task process count and the sub-topology latency cover it",
	prom.TaskProcessLatencyMax:   "the per-task process count and the sub-topology latency cover it",
}

// TestDashboardCoversFamilies: every family the engine exports has a
// panel on the Grafana dashboard, or a reason in notOnDashboard; a new
// family needs one or the other.
func TestDashboardCoversFamilies(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana/stoatflow-event-time.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	charted := map[string]bool{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range seriesName.FindAllString(tg.Expr, -1) {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					n = strings.TrimSuffix(n, suffix)
				}
				charted[n] = true
			}
		}
	}
	known := map[string]bool{}
	for _, f := range prom.Families {
		known[f.Name] = true
		if _, left := notOnDashboard[f.Name]; !charted[f.Name] && !left {
			t.Errorf("%s has no panel on the dashboard and no reason to be left out", f.Name)
		}
	}
	for n := range notOnDashboard {
		if !known[n] {
			t.Errorf("notOnDashboard names %s, which is no family", n)
		}
	}
}

// TestRulesWithPromtool runs promtool check rules and promtool test rules
// (deploy/prometheus/rules_test.yaml fires each alert) when promtool is
// installed; scripts/test.sh installs it and runs the same in its rules
// step.
func TestRulesWithPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; CI needs Debian's prometheus package (scripts/test.sh installs it)")
		}
		t.Skip("promtool is not installed (Debian's prometheus package)")
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../../deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestScrapeWithPromtool serves every family at the debug level over HTTP
// and runs promtool check metrics on what a GET /metrics returns: it must
// say nothing (no abbreviated unit, no counter without _total, no
// non-base unit). The end-to-end test in cmd does the same on a running
// engine.
func TestScrapeWithPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; CI needs Debian's prometheus package (scripts/test.sh installs it)")
		}
		t.Skip("promtool is not installed (Debian's prometheus package)")
	}
	sample := func() prom.Sample {
		return prom.Sample{State: "RUNNING", EventTime: true, Global: 1_700_000_000_000, LagMs: 1500, BarrierInterval: 500 * time.Millisecond,
			Partitions: []watermark.PartitionState{{Partition: watermark.Partition{Topic: "in", Partition: 0}, Watermark: 1_700_000_000_000,
				LastEventTime: 1_700_000_001_000, IdlenessTimeout: time.Minute}},
			RecordsIn: map[string]int64{"in": 3}, RecordsOut: map[string]int64{"out": 1}, Lag: map[string]int64{"in": 2},
			Segments: []prom.StoreSegments{{Store: "win", Type: "timestamped-window", Segments: 3}}}
	}
	reg := metrics.NewRegistry()
	m := prom.New(prom.Debug, withEverything(sample), reg)
	m.Committed(10, 20*time.Millisecond)
	m.Late(watermark.Partition{Topic: "in", Partition: 0})
	meterEverything(reg, m)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range prom.Families {
		if !strings.Contains(string(body), "# TYPE "+f.Name+" ") {
			t.Errorf("the scrape lacks %s", f.Name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(body))
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestDashboardQueriesParse hands every query of the Grafana dashboard to
// promtool check rules, as recording rules, with Grafana's variables
// filled in: a query Prometheus cannot parse fails here, not on a
// dashboard.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; CI needs Debian's prometheus package (scripts/test.sh installs it)")
		}
		t.Skip("promtool is not installed (Debian's prometheus package)")
	}
	b, err := os.ReadFile("../../deploy/grafana/stoatflow-event-time.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$job", "stoat", "$__rate_interval", "1m")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			n++
			q, err := json.Marshal(vars.Replace(tg.Expr))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", n, q)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's %d queries: %v\n%s", n, err, out)
	}
}
