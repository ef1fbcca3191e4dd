package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/output"
)

// validateResult is what topology validate prints under -o json.
type validateResult struct {
	Topology string            `json:"topology"`
	OK       bool              `json:"ok"`
	Errors   int               `json:"errors"`
	Findings []validateFinding `json:"findings"`
	Summary  string            `json:"summary"`
}

type validateFinding struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

func newTopologyValidateCommand() *cobra.Command {
	var file string
	var strict bool
	format := output.New()
	c := &cobra.Command{
		Use:   "validate FILE | -t FILE",
		Short: "Check a topology file: parse it, compile its expressions, run the build rules",
		Long: `Check a topology file (see docs/topology-files.md): parse it, compile and
type-check its expressions, and build the topology with the file's
configuration, which runs every build-time rule (co-partitioning, event
time, store and timer checks).

The file is the argument or -t's (either also takes an example's name).
Warnings and a summary go to stdout. Errors, each naming its position in the
file or the node at fault, go to stderr and make the exit code 1. -o json
prints every finding, with its level, and the summary to stdout, errors
included, and still exits 1 when there are errors.

The config: block is checked against the catalogue (stoatctl config list):
an unknown key is a warning on stderr naming the closest known key, an
error under --strict (exit 2); a value that does not parse is an error.`,
		Example: `  stoatctl topology validate fixtures/clicks-per-minute/topology.yaml
  stoatctl topology validate -t ./topology.yaml --strict -o json`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeTopology,
		RunE: func(c *cobra.Command, args []string) error {
			file, err := topologyArg(c, file, args)
			if err != nil {
				return err
			}
			r, err := topofile.Validate(file, "")
			if err != nil {
				return err
			}
			// The file's configuration, when it loads, is checked as run
			// would take it.
			if f, err := topofile.Resolve(file, ""); err == nil {
				var report configReport
				report.check(topologyConfig(f), strict)
				if err := report.finish(c); err != nil {
					return err
				}
			}
			if !format.IsText() {
				res := validateResult{Topology: file, OK: r.OK(), Errors: r.Errors(), Findings: []validateFinding{}, Summary: r.Summary()}
				for _, f := range r.Findings {
					res.Findings = append(res.Findings, validateFinding{Level: string(f.Level), Message: f.Message})
				}
				if err := format.Write(c.OutOrStdout(), res, nil); err != nil {
					return err
				}
				if !r.OK() {
					return errors.New(r.Summary())
				}
				return nil
			}
			if !r.OK() {
				var b strings.Builder
				b.WriteString(r.Summary())
				for _, f := range r.Findings {
					b.WriteString("\n  " + f.String())
				}
				return errors.New(b.String())
			}
			out := c.OutOrStdout()
			for _, f := range r.Findings {
				if _, err := fmt.Fprintln(out, f); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintln(out, r.Summary())
			return err
		},
	}
	c.Flags().StringVarP(&file, "topology", "t", "", "topology `FILE` (.yaml) or example name to validate")
	addStrictFlag(c, &strict)
	addOutputFlag(c, format)
	return c
}
