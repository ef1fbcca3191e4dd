package cmd

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/fixtures/examples"
)

func newTopologyDescribeCommand() *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "describe NAME | -t FILE",
		Short: "Print a topology's sub-topologies, nodes, boundaries and stores",
		Long: `Print a topology's description in the layout of Kafka Streams'
TopologyDescription: its sub-topologies with their sources, processors and
sinks, the in-memory boundaries between sub-topologies, and its state stores
with their changelog topics.

Name a bundled example, or give a topology file with -t (see
docs/topology-files.md); -t also accepts an example's name.`,
		Args: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("topology") {
				if len(args) > 0 {
					return usageErrorf("unexpected argument %q: give an example NAME or -t FILE, not both", args[0])
				}
				return nil
			}
			return exactArg("example NAME")(c, args)
		},
		ValidArgsFunction: completeExampleName,
		RunE: func(c *cobra.Command, args []string) error {
			if c.Flags().Changed("topology") {
				if strings.TrimSpace(file) == "" {
					return usageErrorf("flag -t/--topology: empty topology file")
				}
				f, err := topofile.Resolve(file, "")
				if err != nil {
					return err
				}
				_, err = io.WriteString(c.OutOrStdout(), f.Topology.Describe().String())
				return err
			}
			ex, err := examples.Get(args[0])
			if err != nil {
				return err
			}
			_, err = io.WriteString(c.OutOrStdout(), ex.Build().Describe().String())
			return err
		},
	}
	c.Flags().StringVarP(&file, "topology", "t", "", "topology `FILE` (.yaml) or example name to describe")
	return c
}
