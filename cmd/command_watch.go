package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/output"
	"github.com/stoatflow/stoatctl/tui"
)

func newWatchCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "watch",
		Short: "Watch a running engine live",
		Args:  cobra.ArbitraryArgs,
		RunE:  runGroup,
	}
	c.AddCommand(newWatchWatermarksCommand())
	return c
}

type watchFlags struct {
	url, token      string
	interval        time.Duration
	once, exitCode  bool
	samples         int
	stallAfter      time.Duration
	skewThreshold   time.Duration
	format          *output.Format
	formatRequested bool
}

func newWatchWatermarksCommand() *cobra.Command {
	f := watchFlags{format: output.NewTabular()}
	c := &cobra.Command{
		Use:   "watermarks",
		Short: "Show each input partition's watermark and say why windows are not closing",
		Long: `Watermarks polls a running engine's REST API (GET /watermarks, /info,
/metrics) and shows, one row per input partition, its watermark, lag, the
time since it last moved (the engine's sinceAdvanceMs, by its own clock;
from an older engine, measured here across polls), idleness and the
timeout in force, skew to the global watermark, preview and alignment state,
and a sparkline of its lag. The partition pinning the global watermark is
marked. When the watermark is stalled while RUNNING, every input is idle,
skew passes --skew-threshold, late drops rise, a record is stamped in the
future or the endpoint does not answer, an alert names the runbook branch
that applies and its fix (docs/watch.md).

Without --once it is a full-screen view (keys: ? help, q quit). With --once
it polls --samples times, --interval apart, prints the verdict of the last
poll (-o table|text|json|yaml) and exits; a partition whose watermark has not
moved for --stall-after is stalled, as in the view, so one sample is enough
against an engine that says since when (a partition that never had a
record counts from when the engine registered it). With --exit-code it exits 1 when any alert
holds and 3 when the endpoint does not answer.`,
		Example: `  stoatctl watch watermarks
  stoatctl watch watermarks --url http://10.0.0.5:8080 --interval 5s
  stoatctl watch watermarks --once -o json --samples 5 --exit-code`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f.formatRequested = c.Flags().Changed("output")
			return runWatchWatermarks(c, f)
		},
	}
	fl := c.Flags()
	// The same flags and variables as stoatctl inspect (issue 12).
	url := os.Getenv("STOATCTL_URL")
	if url == "" {
		url = inspect.DefaultURL
	}
	fl.StringVar(&f.url, "url", url, "the engine's REST API at `URL` ($STOATCTL_URL when set)")
	// The token's default is read when the command runs, so that help
	// never prints it.
	fl.StringVar(&f.token, "token", "", "send bearer `TOKEN` (default $STOATCTL_HTTP_TOKEN)")
	fl.DurationVar(&f.interval, "interval", time.Second, "time between polls (the view: 250ms to 1m, +/- change it)")
	fl.BoolVar(&f.once, "once", false, "print one verdict to stdout and exit, instead of the full-screen view")
	fl.IntVar(&f.samples, "samples", 3, "with --once: polls to take; the stall verdict needs at least 2")
	fl.BoolVar(&f.exitCode, "exit-code", false, "with --once: exit 1 when an alert holds, 3 when the endpoint does not answer")
	fl.DurationVar(&f.stallAfter, "stall-after", time.Minute, "a watermark that has not moved this long is stalled (the view and --once), by the engine's sinceAdvanceMs")
	fl.DurationVar(&f.skewThreshold, "skew-threshold", 5*time.Minute, "alert when the pinning partition is this far behind another (0: never)")
	addOutputFlag(c, f.format)
	return c
}

func runWatchWatermarks(c *cobra.Command, f watchFlags) error {
	switch {
	case !f.once && f.formatRequested:
		return usageErrorf("-o/--output needs --once: the full-screen view has no output format")
	case !f.once && f.exitCode:
		return usageErrorf("--exit-code needs --once")
	case f.samples < 1:
		return usageErrorf("--samples %d: want at least 1", f.samples)
	case f.interval <= 0:
		return usageErrorf("--interval %v: want a positive duration", f.interval)
	case f.skewThreshold < 0 || f.stallAfter <= 0:
		return usageErrorf("--stall-after and --skew-threshold: want positive durations (--skew-threshold 0 turns the alert off)")
	}
	token := f.token
	if token == "" {
		token = os.Getenv("STOATCTL_HTTP_TOKEN")
	}
	client := &inspect.Client{BaseURL: f.url, Token: token}
	src := tui.HTTPSource{Client: client}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if f.once {
		// The same threshold as the view and the shipped alert's
		// horizon: an engine that sends sinceAdvanceMs is judged at
		// the first poll by its own clock.
		opts := tui.Options{StallAfter: f.stallAfter, SkewThreshold: f.skewThreshold}
		v := tui.Observe(ctx, src, tui.SystemClock{}, opts, f.samples, f.interval)
		v.Endpoint = f.url
		if v.Partitions == nil {
			v.Partitions = []tui.PartitionVerdict{}
		}
		if v.Alerts == nil {
			v.Alerts = []tui.Alert{}
		}
		if err := f.format.Write(c.OutOrStdout(), v, func(w io.Writer) error { return tui.WriteTable(w, v) }); err != nil {
			return fmt.Errorf("writing the verdict: %w", err)
		}
		return onceExit(v, f.exitCode)
	}

	out, ok := c.OutOrStdout().(*os.File)
	if !ok || !term.IsTerminal(out.Fd()) {
		return usageErrorf("the watch view needs a terminal on stdout; for scripts use --once -o table|text|json|yaml")
	}
	model := tui.New(tui.Config{Source: src, Clock: tui.SystemClock{}, Endpoint: f.url, Interval: f.interval,
		Options: tui.Options{StallAfter: f.stallAfter, SkewThreshold: f.skewThreshold}})
	p := tea.NewProgram(model, tea.WithContext(ctx), tea.WithOutput(out), tea.WithInput(c.InOrStdin()))
	if _, err := p.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, tea.ErrInterrupted) {
		return fmt.Errorf("the watch view: %w", err)
	}
	return nil
}

// onceExit is --once's outcome: 3 when the endpoint did not answer, as
// every command exits when what it talks to is not there (docs/cli.md);
// with --exit-code, also 1 when an alert holds.
func onceExit(v tui.Verdict, exitCode bool) error {
	if !v.Reachable {
		return exitError{ExitUnreachable, fmt.Errorf("%s: %s", v.Endpoint, v.Error)}
	}
	if !exitCode || len(v.Alerts) == 0 {
		return nil
	}
	var names []string
	for _, a := range v.Alerts {
		n := a.Code
		if a.Partition != "" {
			n += " (" + a.Partition + ")"
		}
		names = append(names, n)
	}
	return exitError{ExitFailure, fmt.Errorf("%d alert(s) hold: %s", len(v.Alerts), strings.Join(names, ", "))}
}
