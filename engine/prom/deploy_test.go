package prom_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/prom"
)

// TestShippedQueriesUseExportedFamilies: every stoatflow_ series the alert
// rules and the Grafana dashboard query is a family the engine exports
// (a histogram's _bucket, _sum and _count included), so a rename here
// cannot leave them reading nothing.
func TestShippedQueriesUseExportedFamilies(t *testing.T) {
	known := map[string]bool{}
	for _, f := range prom.Families {
		known[f.Name] = true
		if f.Type == prom.Histogram {
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
	name := regexp.MustCompile(`stoatflow_[a-z_]+`)
	for _, q := range queries {
		for _, n := range name.FindAllString(q, -1) {
			if !known[n] {
				t.Errorf("%q queries %s, which the engine does not export", q, n)
			}
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
