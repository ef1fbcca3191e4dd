package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/internal/buildinfo"
	"github.com/stoatflow/stoatctl/internal/output"
)

func newVersionCommand(stamp buildinfo.Stamp) *cobra.Command {
	format := output.New()
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version, state backends and RocksDB version of this binary",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			info := buildinfo.Read(stamp)
			return format.Write(c.OutOrStdout(), info, func(w io.Writer) error {
				return writeVersionText(w, info)
			})
		},
	}
	addOutputFlag(c, format)
	return c
}

func writeVersionText(w io.Writer, info buildinfo.Info) error {
	tw := output.NewTable(w)
	fmt.Fprintf(tw, "version\t%s\n", info.Version)
	fmt.Fprintf(tw, "commit\t%s\n", info.Commit)
	fmt.Fprintf(tw, "go\t%s\n", info.GoVersion)
	fmt.Fprintf(tw, "platform\t%s\n", info.Platform)
	fmt.Fprintf(tw, "module\t%s\n", info.Module)
	fmt.Fprintf(tw, "state backends\t%s\n", strings.Join(info.StateBackends, ", "))
	if info.RocksDB != "" {
		fmt.Fprintf(tw, "rocksdb\t%s\n", info.RocksDB)
	}
	return tw.Flush()
}

// addOutputFlag adds -o/--output for format, with shell completion of the
// allowed values.
func addOutputFlag(c *cobra.Command, format *output.Format) {
	c.Flags().VarP(format, "output", "o", "output format: "+format.Usage())
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(format.Allowed(), cobra.ShellCompDirectiveNoFileComp))
}
