package migrate

import (
	"testing"
	"time"
)

// TestEstimate: the copy time is the records still to copy (finished
// partitions left out) at copyPerRead of the rate the plan read at, or at the
// assumed rate when the plan read too few records to measure one; the
// text says which.
func TestEstimate(t *testing.T) {
	plan := func(done bool) *Plan {
		return &Plan{Stores: []*StorePlan{{Partitions: []PartitionPlan{
			{Partition: 0, Records: 6_000_000, Done: done},
			{Partition: 1, Records: 4_000_000},
		}}}}
	}
	tests := []struct {
		name  string
		meter readMeter
		plan  *Plan
		want  Estimate
		text  string
	}{
		{"measured", readMeter{records: 10_000_000, took: 10 * time.Second}, plan(false),
			Estimate{Records: 10_000_000, ReadRate: 1_000_000, CopyRate: 300_000, Seconds: 10_000_000.0 / 300_000, Measured: true},
			"estimated copy time: 33s for 10000000 records at 300000 records/s (0.3 of the 1000000 records/s this plan read and decoded them at: a copy reads them again and writes them in transactions)"},
		{"a partition done", readMeter{records: 10_000_000, took: 10 * time.Second}, plan(true),
			Estimate{Records: 4_000_000, ReadRate: 1_000_000, CopyRate: 300_000, Seconds: 4_000_000.0 / 300_000, Measured: true},
			"estimated copy time: 13s for 4000000 records at 300000 records/s (0.3 of the 1000000 records/s this plan read and decoded them at: a copy reads them again and writes them in transactions)"},
		{"too few to measure", readMeter{records: minMeasured - 1, took: time.Millisecond}, plan(false),
			Estimate{Records: 10_000_000, CopyRate: assumedCopyRate, Seconds: 10_000_000.0 / assumedCopyRate},
			"estimated copy time: 33s for 10000000 records at an assumed 300000 records/s (too few records read to measure a rate)"},
		{"nothing to copy", readMeter{}, &Plan{},
			Estimate{CopyRate: assumedCopyRate},
			"estimated copy time: nothing to copy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.meter.estimate(tc.plan)
			if *got != tc.want {
				t.Errorf("estimate %+v, want %+v", *got, tc.want)
			}
			if got.String() != tc.text {
				t.Errorf("text %q\nwant %q", got.String(), tc.text)
			}
		})
	}
}
