package inspect

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/golden"
)

func ptr[T any](v T) *T { return &v }

// example is the testing article's two-partition document.
func example() Watermarks {
	return Watermarks{GlobalMs: 1790071560000, GlobalIso: "2026-09-22T10:06:00Z", AlignmentGroupMins: map[string]int64{},
		Partitions: map[string]PartitionWatermark{
			"orders:0": {WatermarkMs: 1790071560000, WatermarkIso: "2026-09-22T10:06:00Z", LastEventTimeMs: 1790071592000,
				LastEventTimeIso: "2026-09-22T10:06:32Z", IdlenessTimeoutMs: 300000},
			"orders:1": {WatermarkMs: 1790071058000, WatermarkIso: "2026-09-22T09:57:38Z", Idle: true, LastEventTimeMs: 1790071080000,
				LastEventTimeIso: "2026-09-22T09:58:00Z", IdlenessTimeoutMs: 120000},
			"orders:10": {WatermarkMs: 1790071570500, WatermarkIso: "2026-09-22T10:06:10.5Z", LastEventTimeMs: 1790071580500,
				LastEventTimeIso: "2026-09-22T10:06:20.5Z", IdlenessTimeoutMs: 0},
		}}
}

func start() Watermarks {
	return Watermarks{GlobalMs: MinWatermark, GlobalIso: NotAvailable, AlignmentGroupMins: map[string]int64{},
		Partitions: map[string]PartitionWatermark{
			"clicks:0": {WatermarkMs: MinWatermark, WatermarkIso: NotAvailable, LastEventTimeMs: MinWatermark, LastEventTimeIso: NotAvailable, IdlenessTimeoutMs: 300000},
		}}
}

func aligned() Watermarks {
	w := example()
	w.AlignmentGroupMins = map[string]int64{"g": 1790071560000}
	w.AlignmentBinding = ptr("g")
	p := w.Partitions["orders:0"]
	p.AlignmentGroup, p.AlignmentHeld = ptr("g"), true
	p.PreviewWatermarkMs, p.PreviewWatermarkIso, p.HeadHeldSinceMs = ptr(int64(1790071560000)), ptr("2026-09-22T10:06:00Z"), ptr(int64(1790071500000))
	w.Partitions["orders:0"] = p
	return w
}

func TestWatermarksGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  Watermarks
	}{{"example", example()}, {"start", start()}, {"aligned", aligned()}} {
		for _, format := range Formats {
			t.Run(tc.name+"_"+format, func(t *testing.T) {
				var b bytes.Buffer
				if err := WriteWatermarks(&b, format, tc.doc); err != nil {
					t.Fatal(err)
				}
				if format == Table {
					for _, line := range strings.Split(b.String(), "\n") {
						if len(line) > 80 {
							t.Errorf("line of %d columns, want at most 80: %q", len(line), line)
						}
					}
				}
				golden.Check(t, "./inspect", "testdata/watermarks_"+tc.name+"."+format, b.String())
			})
		}
	}
}

func TestPinning(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  Watermarks
		want string
		ok   bool
	}{
		{"equal to global", example(), "orders:0", true},
		{"preview counts", aligned(), "orders:0", true},
		{"all idle", Watermarks{Partitions: map[string]PartitionWatermark{"a:0": {Idle: true}}}, "", false},
		{"lowest when none equals", Watermarks{GlobalMs: 5, Partitions: map[string]PartitionWatermark{"a:0": {WatermarkMs: 9}, "a:1": {WatermarkMs: 7}}}, "a:1", true},
	} {
		if got, ok := Pinning(tc.doc); got != tc.want || ok != tc.ok {
			t.Errorf("%s: Pinning = %q %v, want %q %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestInfoStandbyGolden: an instance that runs no task and keeps two
// standbys, one measured and one warm-up not yet measured.
func TestInfoStandbyGolden(t *testing.T) {
	lag := int64(42)
	info := Info{ApplicationID: "clicks", InstanceID: "1", State: "RUNNING", Version: "v0.3.0", Commit: "0123456789ab", Topology: "1 sub-topologies, 1 sources, 2 processors, 1 sinks, 1 stores",
		Lanes: 4, Partitions: map[string][]int32{}, Tasks: []string{}, StandbyTasks: []string{"0_0", "0_1"},
		Standbys: []StandbyTask{{Task: "0_0", LagRecords: &lag}, {Task: "0_1", Warmup: true}}, EventTimeTracking: true}
	for _, format := range Formats {
		var b bytes.Buffer
		if err := WriteInfo(&b, format, info); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "./inspect", "testdata/info_standby."+format, b.String())
	}
}

func TestInfoAndMetricsGolden(t *testing.T) {
	g := int64(1790071560000)
	info := Info{ApplicationID: "clicks", InstanceID: "0", State: "RUNNING", Paused: true, Version: "v0.3.0", Commit: "0123456789ab", Topology: "1 sub-topologies, 1 sources, 2 processors, 1 sinks, 1 stores",
		Lanes: 4, Partitions: map[string][]int32{"clicks": {0, 1}}, Tasks: []string{"0_0", "0_1"}, EventTimeTracking: true, GlobalMs: &g, GlobalIso: ptr(Iso(g))}
	metrics := "# HELP stoatflow_client_state The engine's state.\n# TYPE stoatflow_client_state gauge\nstoatflow_client_state 4\n" +
		"# HELP stoatflow_dropped_records_total Dropped.\n# TYPE stoatflow_dropped_records_total counter\nstoatflow_dropped_records_total{reason=\"late_window\"} 1\n" +
		"# HELP stoatflow_commit_duration_seconds Commit.\n# TYPE stoatflow_commit_duration_seconds histogram\nstoatflow_commit_duration_seconds_bucket{le=\"+Inf\"} 2\nstoatflow_commit_duration_seconds_sum 0.5\nstoatflow_commit_duration_seconds_count 2\n"
	for _, format := range Formats {
		var b bytes.Buffer
		if err := WriteInfo(&b, format, info); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "./inspect", "testdata/info."+format, b.String())
		b.Reset()
		if err := WriteMetrics(&b, format, metrics); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "./inspect", "testdata/metrics."+format, b.String())
	}
	if _, err := ParseMetrics("not metrics {"); err == nil {
		t.Error("ParseMetrics accepted garbage")
	}
}
