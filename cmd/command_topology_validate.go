package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/topofile"
)

func newTopologyValidateCommand() *cobra.Command {
	var file string
	var strict bool
	c := &cobra.Command{
		Use:   "validate -t FILE",
		Short: "Check a topology file: parse it, compile its expressions, run the build rules",
		Long: `Check a topology file (see docs/topology-files.md): parse it, compile and
type-check its expressions, and build the topology with the file's
configuration, which runs every build-time rule (co-partitioning, event
time, store and timer checks).

Warnings and a summary go to stdout. Errors, each naming its position in the
file or the node at fault, go to stderr and make the exit code 1.

The config: block is checked against the catalogue (stoatctl config list):
an unknown key is a warning on stderr naming the closest known key, an
error under --strict (exit 2); a value that does not parse is an error.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if !c.Flags().Changed("topology") {
				return usageErrorf("missing flag: -t/--topology FILE")
			}
			if strings.TrimSpace(file) == "" {
				return usageErrorf("flag -t/--topology: empty topology file")
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
	return c
}
