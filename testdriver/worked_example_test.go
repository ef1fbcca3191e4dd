package testdriver_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

// TestWorkedExampleDriverCountsThree is the worked example of "Testing and
// operating event time": a five-minute window [10:00, 10:05) with a minute
// of grace, so closing at 10:06:00, on a source with a 10-second
// out-of-orderness bound, and six arrivals over two partitions:
//
//	   partition  event time  window
//	①  P0         10:01:00    [10:00, 10:05)
//	②  P1         10:02:00    [10:00, 10:05)
//	③  P0         10:03:00    [10:00, 10:05)
//	④  P0         10:06:30    [10:05, 10:10)
//	⑤  P1         10:04:30    [10:00, 10:05)  behind ④, inside grace
//	⑥  P1         10:06:20    [10:05, 10:10)
//
// The driver holds one event-time number, the largest timestamp piped: it
// ignores the partitions (the input topic has none to give) and never runs
// the bound's watermark generator. ④ carries that number to 10:06:30, past
// the close, so the window's final count, three, is emitted on ④'s pipe;
// ⑤ is then judged against a floor of 10:06:30, its window has closed, and
// it is dropped.
//
// The engine counts four. Its watermark is the minimum over both
// partitions less the 10-second bound, and P1 is behind: after ④ it is
// min(10:06:30, 10:02:00) - 10 s = 10:01:50, after ⑤ min(10:06:30,
// 10:04:30) - 10 s = 10:04:20. ⑤ is judged against a floor at or below
// that, under 10:06:00, so it is counted; only ⑥, P1's own record from
// the next window, lifts the watermark to min(10:06:30, 10:06:20) - 10 s =
// 10:06:10 and closes the window, and the emission follows at a commit
// barrier. The rule is the same in both (a window is closed once its close
// time is at or before the floor); the clock under it is not. A test of
// what is counted, not only of when, has to allow for that.
func TestWorkedExampleDriverCountsThree(t *testing.T) {
	at := func(hhmmss string) int64 {
		ts, err := time.Parse(time.DateTime, "2026-09-22 "+hhmmss)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UnixMilli()
	}
	b := dsl.NewBuilder()
	consumed := dsl.ConsumedWith(str, str).WithWatermarkStrategy(watermark.ForBoundedOutOfOrderness(10 * time.Second))
	windows := window.TimeWindowsOfSizeAndGrace(5*time.Minute, time.Minute)
	dsl.CountWindowed(dsl.Stream(b, consumed, "orders").GroupByKey().WindowedBy(windows).EmitStrategy(dsl.OnWindowClose())).
		ToStream().To("counts")
	d, err := testdriver.New(b.Topology(), map[string]string{"application.id": "worked-example"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "orders", str, str)
	out := testdriver.CreateOutputTopic(d, "counts", window.TimeWindowedSerde(str, windows.Size()), serde.Int64())

	arrivals := []struct {
		name, partition, time string
		// emitted is what the arrival's pipe emits.
		emitted []string
	}{
		{"①", "P0", "10:01:00", nil},
		{"②", "P1", "10:02:00", nil},
		{"③", "P0", "10:03:00", nil},
		{"④", "P0", "10:06:30", []string{"shop [10:00:00, 10:05:00) = 3 @ 10:03:00"}},
		{"⑤", "P1", "10:04:30", nil},
		{"⑥", "P1", "10:06:20", nil},
	}
	clock := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.TimeOnly) }
	for _, a := range arrivals {
		// The driver has no partitions: a.partition is for the reader.
		if err := in.PipeInputAt("shop", a.name, at(a.time)); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		rs, err := out.ReadRecordsToList()
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%s [%s, %s) = %d @ %s", r.Key.Key, clock(r.Key.Window.Start), clock(r.Key.Window.End), r.Value, clock(r.Timestamp)))
		}
		if fmt.Sprint(got) != fmt.Sprint(a.emitted) && (len(got) != 0 || len(a.emitted) != 0) {
			t.Fatalf("%s (%s, %s): emitted %q, want %q", a.name, a.partition, a.time, got, a.emitted)
		}
	}
	if late := d.Metrics().Value(metrics.DroppedRecords, "reason", "late_window"); late != 1 {
		t.Fatalf("late_window drops = %d, want 1 (⑤)", late)
	}
}
