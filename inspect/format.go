package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stoatflow/stoatctl/internal/output"
)

// Output formats of the formatters.
const (
	Table = "table"
	JSON  = "json"
	YAML  = "yaml"
)

// Formats lists the output formats, table first.
var Formats = []string{Table, JSON, YAML}

// TableTime is how tables print a time: UTC, to the second, with the
// milliseconds when there are any.
func TableTime(ms int64) string {
	if ms == MinWatermark {
		return NotAvailable
	}
	t := time.UnixMilli(ms).UTC()
	if ms%1000 != 0 {
		return t.Format("2006-01-02 15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05")
}

// Pinning is the key of the partition pinning the global watermark: the
// non-idle partition whose watermark (its preview watermark, when it
// shows one) equals GlobalMs, else the non-idle one with the lowest; ties
// go to the first key in order. ok is false when every partition is idle.
func Pinning(w Watermarks) (key string, ok bool) {
	var best int64
	for _, k := range slices.Sorted(maps.Keys(w.Partitions)) {
		p := w.Partitions[k]
		if p.Idle {
			continue
		}
		v := p.WatermarkMs
		if p.PreviewWatermarkMs != nil {
			v = *p.PreviewWatermarkMs
		}
		if v == w.GlobalMs {
			return k, true
		}
		if !ok || v < best {
			key, best, ok = k, v, true
		}
	}
	return key, ok
}

// partitionKeys sorts "topic:partition" keys by topic, then partition
// number.
func partitionKeys(m map[string]PartitionWatermark) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		at, ap, _ := strings.Cut(a, ":")
		bt, bp, _ := strings.Cut(b, ":")
		if at != bt {
			return strings.Compare(at, bt)
		}
		an, _ := strconv.Atoi(ap)
		bn, _ := strconv.Atoi(bp)
		return an - bn
	})
	return keys
}

// shortTime is TableTime without the date when it is day's.
func shortTime(ms int64, day string) string {
	t := TableTime(ms)
	if d, rest, ok := strings.Cut(t, " "); ok && d == day {
		return rest
	}
	return t
}

func duration(ms int64) string {
	if ms <= 0 {
		return "never"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// WriteWatermarks prints w as a table (times in UTC; the pinning
// partition marked *) or as JSON or YAML with the raw fields.
func WriteWatermarks(out io.Writer, format string, w Watermarks) error {
	if format != Table {
		return writeData(out, format, w)
	}
	pin, pinned := Pinning(w)
	fmt.Fprintf(out, "global watermark: %s", TableTime(w.GlobalMs))
	day := ""
	if w.GlobalMs != MinWatermark {
		fmt.Fprintf(out, " UTC (%d)\ntimes in UTC, on that day unless dated", w.GlobalMs)
		day, _, _ = strings.Cut(TableTime(w.GlobalMs), " ")
	}
	fmt.Fprintln(out)
	if w.AlignmentBinding != nil {
		fmt.Fprintf(out, "alignment hold: group %s stops dispatch\n", *w.AlignmentBinding)
	}
	aligned := false
	for _, p := range w.Partitions {
		aligned = aligned || p.AlignmentGroup != nil
	}
	tw := output.NewTable(out)
	head := "  PARTITION\tWATERMARK\tLAST EVENT\tIDLE\tIDLES AFTER"
	if aligned {
		head += "\tGROUP\tDRIFT"
	}
	fmt.Fprintln(tw, head)
	preview := false
	for _, k := range partitionKeys(w.Partitions) {
		p := w.Partitions[k]
		mark := "  "
		if pinned && k == pin {
			mark = "* "
		}
		wm := shortTime(p.WatermarkMs, day)
		if p.PreviewWatermarkMs != nil {
			wm = shortTime(*p.PreviewWatermarkMs, day) + " (p)"
			preview = true
		}
		idle := "no"
		if p.Idle {
			idle = "yes"
		}
		row := fmt.Sprintf("%s%s\t%s\t%s\t%s\t%s", mark, k, wm, shortTime(p.LastEventTimeMs, day), idle, duration(p.IdlenessTimeoutMs))
		if aligned {
			g := "-"
			if p.AlignmentGroup != nil {
				g = *p.AlignmentGroup
				if p.AlignmentHeld {
					g += " (held)"
				}
			}
			row += fmt.Sprintf("\t%s\t%s", g, time.Duration(p.DriftFromGroupMinMs)*time.Millisecond)
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if preview {
		fmt.Fprintln(out, "(p) a preview watermark: the partition's next record waits behind older ones")
	}
	switch {
	case len(w.Partitions) == 0:
		fmt.Fprintln(out, "no partition registered")
	case pinned:
		fmt.Fprintf(out, "* %s pins the global watermark\n", pin)
	default:
		fmt.Fprintln(out, "every partition is idle: the watermark stays where it is")
	}
	return nil
}

// WriteInfo prints i as a table of fields, or as JSON or YAML.
func WriteInfo(out io.Writer, format string, i Info) error {
	if format != Table {
		return writeData(out, format, i)
	}
	tw := output.NewTable(out)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("application", i.ApplicationID)
	if i.InstanceID != "" {
		row("instance", i.InstanceID)
	}
	state := i.State
	if i.Paused {
		state += " (paused)"
	}
	row("state", state)
	row("version", i.Version)
	if i.Commit != "" {
		row("commit", i.Commit)
	}
	row("topology", i.Topology)
	row("lanes", strconv.Itoa(i.Lanes))
	for _, t := range slices.Sorted(maps.Keys(i.Partitions)) {
		ps := make([]string, len(i.Partitions[t]))
		for n, p := range i.Partitions[t] {
			ps[n] = strconv.Itoa(int(p))
		}
		row("partitions of "+t, strings.Join(ps, ", "))
	}
	if len(i.Partitions) == 0 {
		row("partitions", "none")
	}
	if len(i.Tasks) > 0 {
		row("tasks", strings.Join(i.Tasks, ", "))
	}
	if len(i.StandbyTasks) > 0 {
		row("standby tasks", strings.Join(i.StandbyTasks, ", "))
	}
	for _, sb := range i.Standbys {
		v := "lag not measured"
		if sb.LagRecords != nil {
			v = "lag " + strconv.FormatInt(*sb.LagRecords, 10) + " records"
		}
		if sb.Warmup {
			v += " (warm-up)"
		}
		row("standby "+sb.Task, v)
	}
	row("event time", map[bool]string{true: "tracked", false: "not tracked"}[i.EventTimeTracking])
	switch {
	case i.GlobalMs != nil:
		row("global watermark", TableTime(*i.GlobalMs))
	case i.GlobalIso != nil:
		row("global watermark", TableTime(MinWatermark))
	}
	return tw.Flush()
}

// WriteTopology prints a GET /topology answer: the text as it came, or
// the JSON document as JSON or YAML.
func WriteTopology(out io.Writer, format string, body []byte) error {
	if format == Table {
		_, err := out.Write(body)
		return err
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("topology: decoding the answer: %w", err)
	}
	return writeData(out, format, v)
}

// MetricFamily is one family of GET /metrics in JSON and YAML output.
type MetricFamily struct {
	Name    string         `json:"name"`
	Type    string         `json:"type"`
	Help    string         `json:"help,omitempty"`
	Samples []MetricSample `json:"samples"`
}

// MetricSample is one series of a MetricFamily; histograms give their
// count and sum.
type MetricSample struct {
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
	Count  *uint64           `json:"count,omitempty"`
}

// ParseMetrics reads Prometheus' text format into families sorted by
// name.
func ParseMetrics(text string) ([]MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	var out []MetricFamily
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		f := fams[name]
		mf := MetricFamily{Name: name, Type: strings.ToLower(f.GetType().String()), Help: f.GetHelp(), Samples: []MetricSample{}}
		for _, m := range f.GetMetric() {
			s := MetricSample{}
			for _, l := range m.GetLabel() {
				if s.Labels == nil {
					s.Labels = map[string]string{}
				}
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Counter != nil:
				s.Value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.Value = m.GetGauge().GetValue()
			case m.Untyped != nil:
				s.Value = m.GetUntyped().GetValue()
			case m.Histogram != nil:
				c := m.GetHistogram().GetSampleCount()
				s.Value, s.Count = m.GetHistogram().GetSampleSum(), &c
			case m.Summary != nil:
				c := m.GetSummary().GetSampleCount()
				s.Value, s.Count = m.GetSummary().GetSampleSum(), &c
			}
			mf.Samples = append(mf.Samples, s)
		}
		out = append(out, mf)
	}
	return out, nil
}

// WriteMetrics prints GET /metrics: the text as it came for a table,
// parsed families for JSON and YAML.
func WriteMetrics(out io.Writer, format, text string) error {
	if format == Table {
		_, err := io.WriteString(out, text)
		return err
	}
	fams, err := ParseMetrics(text)
	if err != nil {
		return err
	}
	return writeData(out, format, fams)
}

// writeData writes v as indented JSON, or as YAML with the JSON field
// names in the JSON order: internal/output's convention, as every command.
func writeData(out io.Writer, format string, v any) error {
	switch format {
	case JSON:
		return output.WriteJSON(out, v)
	case YAML:
		return output.WriteYAML(out, v)
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, "|"))
}
