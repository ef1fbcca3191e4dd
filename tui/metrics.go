package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The metric families the view reads from GET /metrics (issue 12's names).
// Any of them may be missing: an older engine, a recording level that
// leaves them out, or a topology without event time.
const (
	MetricDropped           = "stoatflow_dropped_records_total"
	MetricClientState       = "stoatflow_client_state"
	MetricWatermarkSeconds  = "stoatflow_watermark_timestamp_seconds"
	MetricEventTimeTracking = "stoatflow_topology_event_time_tracking"
)

// ClientStateRunning is stoatflow_client_state's value while RUNNING.
const ClientStateRunning = 4

// Metrics is what the view takes from a /metrics answer. A nil pointer is
// a family the answer did not have.
type Metrics struct {
	// Dropped is stoatflow_dropped_records_total summed by its reason
	// label.
	Dropped     map[string]float64
	ClientState *float64
	// WatermarkSeconds is the global watermark, seconds since the
	// epoch; nil before the first (the series is absent).
	WatermarkSeconds  *float64
	EventTimeTracking *float64
}

// clientStates are stoatflow_client_state's values, as the server of
// issue 12 numbers them (RUNNING 4 is the one the alert rules join on).
var clientStates = []string{"CREATED", "NOT_RUNNING", "REBALANCING", "RESTORING", "RUNNING", "PAUSED", "PENDING_SHUTDOWN", "ERROR"}

// ClientStateName names a stoatflow_client_state value.
func ClientStateName(v float64) string {
	if i := int(v); float64(i) == v && i >= 0 && i < len(clientStates) {
		return clientStates[i]
	}
	return fmt.Sprintf("state %g", v)
}

// ParseMetrics reads the families Metrics holds from Prometheus' text
// exposition format. It skips what it does not understand and keeps going:
// the error, if any, names the first line it could not read, and the
// Metrics returned holds every line it could.
func ParseMetrics(text string) (*Metrics, error) {
	m := &Metrics{Dropped: map[string]float64{}}
	var first error
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("metrics line %d: %w", n+1, err)
			}
			continue
		}
		switch name {
		case MetricDropped:
			m.Dropped[labels["reason"]] += value
		case MetricClientState:
			m.ClientState = &value
		case MetricWatermarkSeconds:
			m.WatermarkSeconds = &value
		case MetricEventTimeTracking:
			m.EventTimeTracking = &value
		}
	}
	return m, first
}

// parseSample reads `name{label="value",...} value [timestamp]`.
func parseSample(line string) (string, map[string]string, float64, error) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", nil, 0, fmt.Errorf("no value after the metric name in %q", clip(line))
	}
	name, rest := line[:i], line[i:]
	var labels map[string]string
	if rest[0] == '{' {
		var err error
		labels, rest, err = parseLabels(rest[1:])
		if err != nil {
			return "", nil, 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return "", nil, 0, fmt.Errorf("%s: want a value and an optional timestamp, got %q", name, clip(rest))
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	return name, labels, v, nil
}

// parseLabels reads label pairs up to the closing brace and returns them
// with what follows it.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", fmt.Errorf("labels not closed")
		}
		if s[0] == '}' {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, "", fmt.Errorf("label without a value in %q", clip(s))
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t")
		if s == "" || s[0] != '"' {
			return nil, "", fmt.Errorf("label %s: value not quoted", key)
		}
		var b strings.Builder
		j := 1
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' && j+1 < len(s) {
				j++
				switch s[j] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[j])
				}
				continue
			}
			b.WriteByte(s[j])
		}
		if j >= len(s) {
			return nil, "", fmt.Errorf("label %s: value not closed", key)
		}
		labels[key] = b.String()
		s = strings.TrimLeft(s[j+1:], " \t")
		s = strings.TrimPrefix(s, ",")
	}
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q is not a number", clip(s))
	}
	return v, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
