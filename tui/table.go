package tui

import (
	"fmt"
	"io"

	"github.com/stoatflow/stoatctl/internal/output"
)

// WriteTable prints a verdict for `--once -o table`: the header, one line
// per partition, then the alerts with their fixes. Times are readable; -o
// json has them raw.
func WriteTable(w io.Writer, v Verdict) error {
	tw := output.NewTable(w)
	state := v.State
	if state == "" {
		state = "state unknown"
	}
	fmt.Fprintf(tw, "endpoint\t%s\n", v.Endpoint)
	if !v.Reachable {
		fmt.Fprintf(tw, "reachable\tno: %s\n", v.Error)
		if v.Samples > 0 {
			fmt.Fprintf(tw, "last answer\t%s ago; what follows is from it\n", Duration(v.At.Sub(v.LastAnswer).Milliseconds()))
		}
	}
	if v.ApplicationID != "" {
		fmt.Fprintf(tw, "application\t%s (%s)\n", v.ApplicationID, state)
	}
	global := v.GlobalIso
	if v.GlobalLagMs != nil {
		global += ", lag " + Duration(*v.GlobalLagMs)
	}
	fmt.Fprintf(tw, "global watermark\t%s\n", global)
	if v.Pinning != "" {
		fmt.Fprintf(tw, "pinned by\t%s\n", v.Pinning)
	}
	fmt.Fprintf(tw, "partitions\t%d: %d idle, %d stalled, %d preview (over %d polls, %s)\n",
		len(v.Partitions), v.Idle, v.Stalled, v.Preview, v.Samples, Duration(v.ObservedMs))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Partitions) > 0 {
		fmt.Fprintln(w)
		// One space between columns keeps a row within 80; the last event
		// time and the rest are in -o json.
		tw = output.NewCompactTable(w)
		fmt.Fprintln(tw, "\tPARTITION\tWATERMARK\tLAG\tMOVED\tIDLE\tTIMEOUT\tSKEW\tSTATUS\tBRANCH")
		for i := range v.Partitions {
			p := &v.Partitions[i]
			mark := ""
			if p.Pinning {
				mark = "*"
			}
			moved := Duration(p.SinceAdvanceMs)
			if !p.AdvanceSeen && p.SinceAdvanceMs > 0 {
				moved += "+"
			}
			idle := "-"
			if p.Idle {
				idle = Duration(p.IdleForMs)
			}
			timeout := "off"
			if p.IdlenessTimeoutMs > 0 {
				timeout = Duration(p.IdlenessTimeoutMs)
			}
			branch := string(p.Branch)
			if branch == "" {
				branch = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, p.Partition,
				Time(int64(p.WatermarkMs), v.At, false), lagCell(p.LagMs), moved, idle, timeout, skewCell(p.SkewMs),
				status(p), branch)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(v.Alerts) == 0 {
		_, err := fmt.Fprintln(w, "\nno alerts")
		return err
	}
	fmt.Fprintln(w)
	for _, a := range v.Alerts {
		fmt.Fprintf(w, "ALERT %s: %s\n", a.Code, a.Message)
		if a.Fix != "" {
			if a.Branch != NoBranch {
				fmt.Fprintf(w, "  branch: %s (%s)\n", a.Branch.Title(), a.Branch)
			}
			fmt.Fprintf(w, "  fix: %s\n", a.Fix)
		}
	}
	return nil
}
