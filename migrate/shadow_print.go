package migrate

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
)

// WriteText prints a shadow run's report for people: what was compared,
// the counts by verdict, and each unexpected difference with both sides'
// records.
func (r *ShadowReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "shadow of %s (Kafka Streams) as %s: %d input records, %d aligned points, %.1f s\n", r.From, r.Shadow, r.Records, r.Points, r.Seconds)
	if r.Seed != nil {
		fmt.Fprintf(tw, "seeded from its state: %d changelog records translated, verified: %v\n", r.Seed.Translated, r.Seed.Verify.OK)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "OUTPUT\tOURS")
	for _, o := range r.Outputs {
		fmt.Fprintf(tw, "%s\t%s\n", o.Topic, o.Shadow)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "keys compared\t%d\n", r.Compared)
	fmt.Fprintf(tw, "matched\t%d\n", r.Matched)
	for _, v := range slices.Sorted(maps.Keys(r.Documented)) {
		fmt.Fprintf(tw, "documented difference %s\t%d\n", v, r.Documented[v])
	}
	fmt.Fprintf(tw, "unexpected differences\t%d\n", r.Unexpected)
	fmt.Fprintf(tw, "transient (differed at a point, matched at the last)\t%d\n", r.Transient)
	fmt.Fprintf(tw, "deferred (latest records not compared)\t%d\n", r.Deferred)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Differences) > 0 {
		fmt.Fprintf(w, "\nunexpected differences (%d of %d):\n", len(r.Differences), r.Unexpected)
		for _, d := range r.Differences {
			fmt.Fprintf(w, "  %s key %s: %s\n", d.Topic, d.Key, d.Verdict)
			fmt.Fprintf(w, "    kafka-streams: %s\n", recordText(d.KafkaStreams))
			fmt.Fprintf(w, "    ours:          %s\n", recordText(d.Ours))
		}
	}
	verdict := "OK: no unexpected difference"
	if !r.OK {
		verdict = "FAILED: unexpected differences, or the run did not reach its last aligned point"
	}
	_, err := fmt.Fprintf(w, "\n%s\n", verdict)
	return err
}

func recordText(r *OutputRecord) string {
	if r == nil {
		return "(nothing written)"
	}
	return fmt.Sprintf("%s[%d]@%d timestamp %d value %s", r.Topic, r.Partition, r.Offset, r.Timestamp, r.ValueText)
}
