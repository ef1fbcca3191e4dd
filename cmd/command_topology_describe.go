package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/output"
)

func newTopologyDescribeCommand() *cobra.Command {
	var file string
	format := output.New()
	c := &cobra.Command{
		Use:   "describe NAME|FILE | -t FILE",
		Short: "Print a topology's sub-topologies, nodes, boundaries and stores",
		Long: `Print a topology's description in the layout of Kafka Streams'
TopologyDescription: its sub-topologies with their sources, processors and
sinks, the boundaries between sub-topologies (in memory, or the repartition
topics that carry them when the file sets stoatflow.topology.rekey: topic),
and its state stores with their changelog topics.

Name a bundled example or a Go topology the binary registered (package
cli), or give a topology file (see docs/topology-files.md), as the argument
or with -t. -o json prints the same as data.`,
		Example: `  stoatctl topology describe uppercase
  stoatctl topology describe fixtures/word-count/topology.yaml -o json`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeTopology,
		RunE: func(c *cobra.Command, args []string) error {
			ref, err := topologyArg(c, file, args)
			if err != nil {
				return err
			}
			f, err := topofile.Resolve(ref, "")
			if err != nil {
				return err
			}
			// The file's own configuration says how its re-key
			// boundaries run: under stoatflow.topology.rekey=topic as
			// repartition topics, which the description names.
			d, err := f.Topology.DescribeWith(config.New(f.Config))
			if err != nil {
				return fmt.Errorf("describe %s: %w", ref, err)
			}
			return format.Write(c.OutOrStdout(), d.Data(), func(w io.Writer) error {
				_, err := io.WriteString(w, d.String())
				return err
			})
		},
	}
	c.Flags().StringVarP(&file, "topology", "t", "", "topology `FILE` (.yaml) or example name to describe")
	addOutputFlag(c, format)
	return c
}
