package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/fixtures/examples"
)

func newTopologyCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "topology",
		Short: "List, describe, validate and try topologies",
		Long: `List, describe and try the example topologies bundled with stoatctl, and
describe or validate topology files (-t FILE, see docs/topology-files.md).

Each example is a topology built in Go with sample input; "try" runs that
input through the test driver, the engine's single-threaded runner.`,
		Args: cobra.ArbitraryArgs,
		RunE: runGroup,
	}
	c.AddCommand(
		newTopologyListCommand(),
		newTopologyDescribeCommand(),
		newTopologyValidateCommand(),
		newTopologyTryCommand(),
	)
	return c
}

// completeExampleName completes the first argument with example names and
// their descriptions.
func completeExampleName(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, ex := range examples.All() {
		out = append(out, cobra.CompletionWithDesc(ex.Name, ex.Description))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
