package prom

import (
	"fmt"
	"strings"
)

// Markdown is docs/metrics.md: every family with its type, labels, level
// and help, generated from Families.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Metrics

<!-- Generated from engine/prom/families.go by
     go test ./engine/prom -run TestMetricsDoc -update; do not edit. -->

The live engine (` + "`stoatctl run`" + `, ` + "`engine.New`" + `) exports these families at
` + "`GET /metrics`" + ` of its REST API, in Prometheus' text format, beside the Go
runtime's and the process's own (` + "`go_*`, `process_*`" + `).
` + "`" + LevelKey + "`" + ` chooses the level: ` + "`info`" + ` (default) records the info
families, ` + "`debug`" + ` the debug ones too, whose series grow with the partitions owned.

Watermarks and event times are epoch milliseconds, -1 before the first.
` + "`stoatflow_watermark_lag_ms`" + ` keeps the reference design's name (its alert
reads it), so ` + "`promtool check metrics`" + ` reports one lint on it, for the
abbreviated unit; the end-to-end test accepts that lint and no other.

The shipped alerts are in deploy/prometheus/rules.yaml; what to do when
they fire is docs/runbook.md.

| Family | Type | Labels | Level | Meaning |
| --- | --- | --- | --- | --- |
`)
	for _, f := range Families {
		labels := "-"
		if len(f.Labels) > 0 {
			labels = "`" + strings.Join(f.Labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.Name, f.Type, labels, f.Level, f.Help)
	}
	b.WriteString("\n`stoatflow_dropped_records_total` carries every reason from the first scrape, at zero:\n")
	for _, r := range Reasons {
		fmt.Fprintf(&b, "`%s` ", r)
	}
	b.WriteString("(the engine/metrics reasons `deserialization_error` and `processing_error`, which replay\nfixtures read, are exported as `deserialization` and `processing`).\n")
	return b.String()
}
