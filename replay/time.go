package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// parseTime reads a point in time: epoch milliseconds, or an RFC 3339
// time (fractional seconds beyond milliseconds are truncated).
func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("want epoch milliseconds or an RFC 3339 time such as 2024-05-01T12:00:00Z, got %q", s)
	}
	return t.UnixMilli(), nil
}

// timeOf reads a time from plain data: an integer (epoch ms) or an RFC
// 3339 string.
func timeOf(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case float64:
		if x == math.Trunc(x) {
			return int64(x), nil
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
	case string:
		return parseTime(x)
	}
	return 0, fmt.Errorf("want epoch milliseconds or an RFC 3339 time, got %v", v)
}

// formatTime writes ms as an RFC 3339 time in UTC, with milliseconds only
// when there are some.
func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.999Z07:00")
}
