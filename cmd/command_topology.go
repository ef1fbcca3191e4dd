package cmd

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/topofile"

	"github.com/stoatflow/stoatctl/fixtures/examples"
)

func newTopologyCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "topology",
		Short: "List, describe, validate and try topologies",
		Long: `List, describe and try the example topologies bundled with stoatctl (and
the Go topologies a program built on package cli registered), and
describe or validate topology files (FILE or -t FILE, see
docs/topology-files.md).

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

// topologyArg is the topology a command names, given as its one
// argument or with -t/--topology (a topology file or an example name),
// not both.
func topologyArg(c *cobra.Command, file string, args []string) (string, error) {
	if c.Flags().Changed("topology") {
		if len(args) > 0 {
			return "", usageErrorf("unexpected argument %q: give the topology as an argument or with -t, not both", args[0])
		}
		if strings.TrimSpace(file) == "" {
			return "", usageErrorf("flag -t/--topology: empty topology file")
		}
		return file, fileArg("-t/--topology", file)
	}
	switch len(args) {
	case 0:
		return "", usageErrorf("missing argument: a topology FILE (.yaml) or example NAME, or -t FILE")
	case 1:
		if strings.TrimSpace(args[0]) == "" {
			return "", usageErrorf("empty topology argument")
		}
		return args[0], fileArg("topology", args[0])
	}
	return "", usageErrorf("too many arguments: want one topology, got %d (%s)", len(args), strings.Join(args, " "))
}

// fileArg refuses, as the usage error it is, a topology or configuration
// file named on the command line that does not exist, so that every
// command exits 2 for it as replay does for a missing fixture. what names
// the argument or flag; ref is checked only when it names a file (an
// example name is not one).
func fileArg(what, ref string) error {
	if !topofile.IsFileRef(ref) && what != "-c/--config" {
		return nil
	}
	if _, err := os.Stat(ref); errors.Is(err, fs.ErrNotExist) {
		return usageErrorf("%s %s: no such file", what, ref)
	}
	return nil
}

// completeTopology completes the first argument with example names and
// topology files.
func completeTopology(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out, _ := completeExampleName(c, args, toComplete)
	return out, cobra.ShellCompDirectiveDefault
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
