package cmd

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/fixtures/examples"
)

func newTopologyDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Print an example topology's sub-topologies, nodes, boundaries and stores",
		Long: `Print an example topology's description in the layout of Kafka Streams'
TopologyDescription: its sub-topologies with their sources, processors and
sinks, the in-memory boundaries between sub-topologies, and its state stores
with their changelog topics.`,
		Args:              exactArg("example NAME"),
		ValidArgsFunction: completeExampleName,
		RunE: func(c *cobra.Command, args []string) error {
			ex, err := examples.Get(args[0])
			if err != nil {
				return err
			}
			_, err = io.WriteString(c.OutOrStdout(), ex.Build().Describe().String())
			return err
		},
	}
}
