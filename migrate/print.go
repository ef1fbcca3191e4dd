package migrate

import (
	"fmt"
	"io"

	"github.com/stoatflow/stoatctl/internal/output"
)

// WriteText prints the plan for people: topics found and skipped with
// reasons, the store mapping, record counts per partition, the frontier
// and floor values, and the offsets to copy.
func (p *Plan) WriteText(w io.Writer) error {
	tw := output.NewTable(w)
	if p.Direction == Reverse {
		return p.writeReverse(tw)
	}
	fmt.Fprintf(tw, "migrate %s (Kafka Streams) to %s\n\n", p.From, p.To)
	fmt.Fprintln(tw, "STORE\tKIND\tFROM\tTO\tPARTITION\tRECORDS\tTOMBSTONES\tEND OFFSET\tSTATE")
	for _, s := range p.Stores {
		for _, pp := range s.Partitions {
			state := "to copy"
			if pp.Done {
				state = "done"
			}
			from := s.SourceTopic
			if s.StateDir != "" {
				from = "state dir " + s.StateDir
			}
			fmt.Fprintf(tw, "%s <- %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Store, s.Source, s.Kind, from, s.Topic, pp.Partition, pp.Records, pp.Tombstones, pp.End, state)
		}
	}
	if len(p.Stores) == 0 {
		fmt.Fprintln(tw, "(no store mapped)")
	}
	fmt.Fprintln(tw)
	for _, s := range p.Stores {
		if f := s.Frontier; f != nil {
			if p.EmitFrontier {
				fmt.Fprintf(tw, "emit frontier of %s: seeded to %d (%s) in %s; windows emitted again: %d; pending (closed, not yet emitted by Kafka Streams, emitted once after the cutover): %d\n", s.Store, f.Value, f.From, f.Topic, f.ReEmittedWithFrontier, f.Pending)
			} else {
				fmt.Fprintf(tw, "emit frontier of %s: not seeded (--emit-frontier would seed %d, from %s); windows emitted again: %d; pending (closed, not yet emitted by Kafka Streams, emitted once after the cutover): %d\n", s.Store, f.Value, f.From, f.ReEmitted, f.Pending)
			}
		}
	}
	for _, s := range p.Stores {
		if n := s.NullJoins; n != nil {
			fmt.Fprintf(tw, "unmatched records of %s: %d waiting for a partner or their null-join; pending (window closed, null-join not yet emitted by Kafka Streams, emitted once after the cutover): %d\n", s.Store, n.Waiting, n.Pending)
		}
	}
	if p.Floor != nil {
		fmt.Fprintf(tw, "watermark floor: %d (%s) in %s\n", p.Floor.Value, p.Floor.From, p.Floor.Topic)
	} else {
		fmt.Fprintln(tw, "watermark floor: not seeded (our topology has no event time, or no partition time is committed)")
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "OFFSET\tPARTITION\tCOMMITTED\tPARTITION TIME")
	for _, o := range p.Offsets {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", o.Topic, o.Partition, o.Offset, o.PartitionTime)
	}
	if len(p.Offsets) == 0 {
		fmt.Fprintln(tw, "(no committed offsets of our input topics)")
	}
	fmt.Fprintln(tw)
	if len(p.Accepted) > 0 {
		// Each problem accepted, and what the migration loses by it.
		fmt.Fprintln(tw, "ACCEPTED\tPROBLEM\tLOSES")
		for _, a := range p.Accepted {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Override, a.Message, a.Loses)
		}
		for _, e := range p.Empty {
			fmt.Fprintf(tw, "our store %s starts empty (verified: %s holds nothing)\n", e.Store, e.Topic)
		}
		fmt.Fprintln(tw)
	}
	if len(p.Unmapped) > 0 {
		fmt.Fprintln(tw, "NOT MIGRATED\tREASON")
		for _, u := range p.Unmapped {
			fmt.Fprintf(tw, "%s\t%s\n", u.Topic, u.Reason)
		}
		fmt.Fprintln(tw)
	}
	return p.writeTail(tw)
}

// writeTail prints what both directions share: the problems accepted,
// the topics left, the groups.
func (p *Plan) writeTail(tw *output.TableWriter) error {
	for _, g := range p.Groups {
		fmt.Fprintf(tw, "group %s: %d active members\n", g.Group, g.Members)
	}
	if p.Estimate != nil {
		fmt.Fprintln(tw, p.Estimate)
	}
	return tw.Flush()
}

// writeReverse prints a reverse plan: per store and partition, the keys
// written to Kafka Streams' changelog and the tombstones for its keys
// ours does not hold; the processor metadata; the offsets.
func (p *Plan) writeReverse(tw *output.TableWriter) error {
	fmt.Fprintf(tw, "migrate %s back to %s (Kafka Streams)\n\n", p.To, p.From)
	fmt.Fprintln(tw, "STORE\tKIND\tFROM\tTO\tPARTITION\tKEYS\tTOMBSTONES\tOUR END OFFSET")
	for _, s := range p.Stores {
		for _, pp := range s.Partitions {
			fmt.Fprintf(tw, "%s -> %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", s.Store, s.Source, s.Kind, s.Topic, s.SourceTopic, pp.Partition, pp.Records, pp.Tombstones, pp.End)
		}
	}
	if len(p.Stores) == 0 {
		fmt.Fprintln(tw, "(no store mapped)")
	}
	fmt.Fprintln(tw)
	for _, s := range p.Stores {
		if f := s.Frontier; f != nil {
			if f.Value >= 0 {
				fmt.Fprintf(tw, "processor metadata %s (lastEmitWindowCloseTime): %d, from %s\n", s.Source, f.Value, f.From)
			} else {
				fmt.Fprintf(tw, "processor metadata %s: not set (%s)\n", s.Source, f.From)
			}
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "OFFSET\tPARTITION\tCOMMITTED\tPARTITION TIME")
	for _, o := range p.Offsets {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", o.Topic, o.Partition, o.Offset, o.PartitionTime)
	}
	fmt.Fprintln(tw)
	if len(p.Accepted) > 0 {
		fmt.Fprintln(tw, "ACCEPTED\tPROBLEM\tLOSES")
		for _, a := range p.Accepted {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Override, a.Message, a.Loses)
		}
		fmt.Fprintln(tw)
	}
	if len(p.Unmapped) > 0 {
		fmt.Fprintln(tw, "NOT CARRIED BACK\tREASON")
		for _, u := range p.Unmapped {
			fmt.Fprintf(tw, "%s\t%s\n", u.Topic, u.Reason)
		}
		fmt.Fprintln(tw)
	}
	return p.writeTail(tw)
}

// WriteText prints the report.
func (r *Report) WriteText(w io.Writer) error {
	if err := r.Plan.WriteText(w); err != nil {
		return err
	}
	if r.VerifyOnly {
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "\ntranslated %d records (%d partitions already done)\n", r.Translated, r.Skipped)
	}
	for _, s := range r.Verify.Stores {
		fmt.Fprintf(w, "verified %s: %d keys, %d differences\n", s.Store, s.Keys, s.Differences)
		for _, e := range s.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	for _, o := range r.Verify.Offsets {
		fmt.Fprintf(w, "offset differs: %s\n", o)
	}
	for _, d := range r.Verify.Time {
		fmt.Fprintf(w, "time differs: %s\n", d)
	}
	return nil
}
