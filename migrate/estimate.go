package migrate

import (
	"fmt"
	"time"
)

// Estimate is the plan's guess at how long the copy of the stores takes:
// the records still to copy (partitions an earlier run finished are not
// counted) at a rate derived from how fast the plan itself read and
// decoded them.
type Estimate struct {
	// Records is how many records the run copies.
	Records int64 `json:"recordsToCopy"`
	// ReadRate is the records per second the plan read and decoded the
	// stores at; 0 when it read too few to measure (minMeasured).
	ReadRate float64 `json:"planReadRecordsPerSecond"`
	// CopyRate is the rate the estimate assumes: ReadRate × copyPerRead,
	// or assumedCopyRate when ReadRate is 0.
	CopyRate float64 `json:"copyRecordsPerSecond"`
	// Seconds is Records / CopyRate.
	Seconds float64 `json:"seconds"`
	// Measured says whether CopyRate comes from ReadRate.
	Measured bool `json:"measured"`
}

const (
	// copyPerRead is a copy's rate over the plan's read: the translation
	// reads each record again as the plan did, decodes it, and writes it
	// in a transaction. BenchmarkMigrateVsCopy reports it
	// (copy-per-plan-read): 0.31-0.37 on the embedded broker at 1 M
	// records; the estimate takes 0.3, to err long.
	copyPerRead = 0.3
	// minMeasured is the fewest records whose reading is taken as a rate:
	// below it the time is mostly round trips, not records.
	minMeasured = 50_000
	// assumedCopyRate (records/s) stands in for a measurement when the
	// plan read too little to time: a third to a fifth of the copy rate
	// BenchmarkMigrateVsCopy measures on the embedded broker (0.9-1.7 M
	// records/s), since a replicated cluster across a network is slower.
	// Below minMeasured records the copy takes a second or two whatever
	// the rate, so the guess matters little.
	assumedCopyRate = 300_000
)

// readMeter adds up the records the plan read and the time it took.
type readMeter struct {
	records int64
	took    time.Duration
}

// measure runs read, counting the records it reports.
func (m *readMeter) measure(read func() (int64, error)) error {
	start := time.Now()
	n, err := read()
	m.took += time.Since(start)
	m.records += n
	return err
}

// estimate is the Estimate for p, whose partitions' Done are known.
func (m *readMeter) estimate(p *Plan) *Estimate {
	e := &Estimate{}
	for _, sp := range p.Stores {
		for _, pp := range sp.Partitions {
			if !pp.Done {
				e.Records += pp.Records
			}
		}
	}
	e.CopyRate = assumedCopyRate
	if m.records >= minMeasured && m.took > 0 {
		e.ReadRate = float64(m.records) / m.took.Seconds()
		e.CopyRate = e.ReadRate * copyPerRead
		e.Measured = true
	}
	e.Seconds = float64(e.Records) / e.CopyRate
	return e
}

// String is the estimate for people, saying where the rate comes from.
func (e *Estimate) String() string {
	if e.Records == 0 {
		return "estimated copy time: nothing to copy"
	}
	d := "under a second"
	if t := time.Duration(e.Seconds * float64(time.Second)); t >= time.Second {
		d = t.Round(time.Second).String()
	}
	if e.Measured {
		return fmt.Sprintf("estimated copy time: %s for %d records at %.0f records/s (%.1f of the %.0f records/s this plan read and decoded them at: a copy reads them again and writes them in transactions)",
			d, e.Records, e.CopyRate, copyPerRead, e.ReadRate)
	}
	return fmt.Sprintf("estimated copy time: %s for %d records at an assumed %d records/s (too few records read to measure a rate)",
		d, e.Records, assumedCopyRate)
}
