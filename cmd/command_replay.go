package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/output"
	"github.com/stoatflow/stoatctl/replay"
)

func newReplayCommand() *cobra.Command {
	format := output.New()
	var (
		strict     bool
		update     string
		countAbove int
		onEngine   bool
		countOnly  bool
		everyStep  bool
	)
	var junit string
	c := &cobra.Command{
		Use:   "replay PATH...",
		Short: "Run fixture files through the test driver and compare the output",
		Long: `Run fixture files through the test driver (the engine's tasks,
single-threaded, with a manual clock) and compare what the topology wrote
with what each fixture expects. A directory stands for every *.fixture.yaml
beneath it, in sorted order.

Prints PASS, FAIL or ERROR per fixture and, for a failure, the differences:
"-" lines are expected records the run did not write, "+" lines records it
wrote that were not expected. The format is described in docs/fixtures.md.

--update rewrites the expect section of every failing fixture, and of one
that has none, with what the run wrote (the golden workflow), drops by
reason included; an output of several keys that does not say its order is
written per-key, the order the live engine keeps. When any fixture cannot
run, nothing is written. --update=timing also writes the step that wrote each output record
(after: N, or the step's label); --update=counts writes every output as
{count: N}, and --update-count-above N those of more than N records; timing
and counts rewrite passing fixtures too. Exit status: 0 all passed (or were updated), 1 a mismatch or a
fixture that could not run, 2 a usage error.

Before any fixture runs, the configuration each runs with (its topology's
config: block and its driver config) is checked against the catalogue
(stoatctl config list): an unknown key is a warning on stderr naming the
closest known key, an error under --strict (exit 2); a value that does not
parse is an error.

--engine runs every fixture through the live engine instead, on an
embedded broker started for the run: records are produced with their
timestamps, the watermark and the wall clock are driven through the
engine's clocks, the engine settles after every step (a run of in-order
record steps to one topic settles once, after its last, where that cannot
change the outcome; --settle-every-step settles each) and stops with a
final barrier, and what it committed is compared. A fixture that differs
from the expectations only in the steps that wrote its records prints
TIMING (the live engine emits at barriers, the driver per step) and counts
as passed. Key-value stores are rebuilt from their changelogs and
compared; windowed and session stores are not compared under --engine.

--count-only compares only how many records each output got, as many as
the fixture lists, and keeps none of them: for slices too big to hold.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("missing argument: fixture PATH (a file or a directory)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			uopts, err := updateOptions(update, countAbove)
			if err != nil {
				return err
			}
			if onEngine && update != "" {
				return usageErrorf("--update goes without --engine: expectations are written from the test driver")
			}
			if countOnly && update != "" {
				return usageErrorf("--count-only goes without --update: --update=counts writes counts")
			}
			if everyStep && !onEngine {
				return usageErrorf("--settle-every-step goes with --engine")
			}
			paths, err := replay.Expand(args)
			if err != nil {
				return usageError{err}
			}
			// Every fixture is loaded and its configuration checked
			// before any runs.
			fixtures := make([]*replay.Fixture, len(paths))
			results := make([]*replay.Result, len(paths))
			var report configReport
			for i, p := range paths {
				f, err := replay.Load(p)
				if err != nil {
					results[i] = &replay.Result{Path: p, Status: replay.Errored, Err: &replay.RunError{Code: replay.CodeFixture, Err: err}}
					continue
				}
				if countOnly {
					f.CountOnly()
				}
				fixtures[i] = f
				checkFixtureConfig(&report, f, strict)
			}
			if err := report.finish(c); err != nil {
				return err
			}
			if onEngine {
				if err := runOnEngine(c, fixtures, results, everyStep); err != nil {
					return err
				}
			} else {
				for i, f := range fixtures {
					if f != nil {
						results[i] = replay.Run(f)
					}
				}
			}
			var updated map[string]bool
			var updateErr error
			if update != "" {
				updated, updateErr = replay.UpdateAll(results, uopts)
			}
			if junit != "" {
				var b bytes.Buffer
				if err := replay.WriteJUnit(&b, results); err != nil {
					return fmt.Errorf("junit report: %w", err)
				}
				if err := os.WriteFile(junit, b.Bytes(), 0o644); err != nil {
					return fmt.Errorf("junit report: %w", err)
				}
			}
			out := c.OutOrStdout()
			switch format.String() {
			case output.JSON:
				err = replay.WriteJSON(out, results, updated)
			case output.YAML:
				var b bytes.Buffer
				if err = replay.WriteJSON(&b, results, updated); err == nil {
					err = output.JSONToYAML(out, b.Bytes())
				}
			default:
				err = replay.WriteText(out, results, replay.TextOptions{Color: useColor(out), Updated: updated})
			}
			if err != nil {
				return err
			}
			if updateErr != nil {
				return updateErr
			}
			return replayOutcome(results, updated)
		},
	}
	c.Flags().StringVar(&update, "update", "", "rewrite the expect section of failing fixtures with what the run wrote; `MODE` records, timing (also each record's step) or counts (only counts); timing and counts rewrite passing fixtures too")
	c.Flags().Lookup("update").NoOptDefVal = "records"
	c.Flags().IntVar(&countAbove, "update-count-above", 0, "with --update, write an output of more than `N` records as {count: N} (0: never)")
	c.Flags().StringVar(&junit, "junit", "", "also write a JUnit XML report to `FILE`")
	c.Flags().BoolVar(&onEngine, "engine", false, "run the fixtures through the live engine on an embedded broker, not the test driver")
	c.Flags().BoolVar(&countOnly, "count-only", false, "compare only how many records each output got (as many as the fixture lists), keeping none: for big slices")
	c.Flags().BoolVar(&everyStep, "settle-every-step", false, "with --engine, settle after every step, also record steps that could share one settle")
	// Fixture files and the directories holding them.
	c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
	}
	addStrictFlag(c, &strict)
	addOutputFlag(c, format)
	c.AddCommand(newReplayRecordCommand())
	return c
}

// runOnEngine runs the loaded fixtures through the live engine, on one
// embedded broker for all.
func runOnEngine(c *cobra.Command, fixtures []*replay.Fixture, results []*replay.Result, everyStep bool) error {
	b, err := broker.Start(c.Context(), broker.Options{Port: broker.RandomPort})
	if err != nil {
		return fmt.Errorf("--engine: start the embedded broker: %w", err)
	}
	defer b.Close()
	for i, f := range fixtures {
		if f != nil {
			results[i] = replay.RunEngine(c.Context(), f, replay.EngineOptions{Bootstrap: b.Addr(), SettleEveryStep: everyStep})
		}
	}
	return nil
}

// checkFixtureConfig checks the configuration f runs with: its
// topology's, then its driver config over it. A topology that does not
// resolve is left to the run, which reports it.
func checkFixtureConfig(r *configReport, f *replay.Fixture, strict bool) {
	topo, err := topofile.Resolve(f.Topology, filepath.Dir(f.Path))
	if err != nil {
		return
	}
	src := topologyConfig(topo)
	src.add(f.Driver.Config, fileOrigin("fixture", f.Path, "driver", "config"))
	r.check(src, strict)
}

// updateOptions reads --update's modes, a comma-separated list of
// records (the default), timing and counts.
func updateOptions(update string, countAbove int) (replay.UpdateOptions, error) {
	o := replay.UpdateOptions{CountAbove: countAbove}
	if countAbove < 0 {
		return o, usageErrorf("--update-count-above: want a record count of at least 0, got %d", countAbove)
	}
	if update == "" {
		if countAbove > 0 {
			return o, usageErrorf("--update-count-above goes with --update")
		}
		return o, nil
	}
	for _, m := range strings.Split(update, ",") {
		switch strings.TrimSpace(m) {
		case "records":
		case "timing":
			o.Timing = true
		case "counts":
			o.Counts = true
		default:
			return o, usageErrorf("--update=%s: want records, timing or counts (or a comma-separated list)", update)
		}
	}
	if o.Timing && o.Counts {
		return o, usageErrorf("--update=%s: timing and counts exclude each other (a count has no records to time)", update)
	}
	return o, nil
}

// replayOutcome is the error that gives exit 1 when a fixture failed
// (and was not updated) or could not run.
func replayOutcome(results []*replay.Result, updated map[string]bool) error {
	s := replay.Summarize(results)
	failed := s.Failed
	for _, r := range results {
		if r.Status == replay.Fail && updated[r.Path] {
			failed--
		}
	}
	if failed == 0 && s.Errors == 0 {
		return nil
	}
	switch {
	case s.Errors == 0:
		return fmt.Errorf("%d of %d fixtures failed", failed, s.Total)
	case failed == 0:
		return fmt.Errorf("%d of %d fixtures could not run", s.Errors, s.Total)
	}
	return fmt.Errorf("%d of %d fixtures failed and %d could not run", failed, s.Total, s.Errors)
}

// useColor says whether w is a terminal that wants colour: never when it
// is not a terminal, nor when NO_COLOR is set (no-color.org) or TERM is
// dumb.
func useColor(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
