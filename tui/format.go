package tui

import (
	"strconv"
	"time"

	"github.com/stoatflow/stoatctl/inspect"
)

// Duration is a compact duration for a table cell: 0s, 42s, 4m12s, 2h05m,
// 3d04h; negative durations get a minus sign.
func Duration(ms int64) string {
	if ms < 0 {
		return "-" + Duration(-ms)
	}
	s := ms / 1000
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + pad2(s%60) + "s"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h" + pad2(s/60%60) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d" + pad2(s/3600%24) + "h"
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// Rate is a per-second rate with at most one decimal.
func Rate(r float64) string {
	if r == 0 {
		return "0"
	}
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

// Time is a readable epoch-millisecond time for a cell: the time of day
// when it falls on now's day (UTC), else the date too; raw gives the epoch
// milliseconds instead. "N/A" before the first watermark.
func Time(ms int64, now time.Time, raw bool) string {
	if ms == inspect.MinWatermark {
		return inspect.NotAvailable
	}
	if raw {
		return strconv.FormatInt(ms, 10)
	}
	t := time.UnixMilli(ms).UTC()
	n := now.UTC()
	if t.Year() == n.Year() && t.YearDay() == n.YearDay() {
		return t.Format("15:04:05")
	}
	if t.Year() == n.Year() {
		return t.Format("01-02 15:04")
	}
	return t.Format("2006-01-02")
}
