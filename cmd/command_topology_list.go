package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/internal/output"
)

// exampleSummary is one row of `topology list`.
type exampleSummary struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	InputTopics  []string `json:"inputTopics"`
	OutputTopics []string `json:"outputTopics"`
}

func newTopologyListCommand() *cobra.Command {
	format := output.NewTabular()
	c := &cobra.Command{
		Use:   "list",
		Short: "List the example topologies",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var rows []exampleSummary
			for _, ex := range examples.All() {
				rows = append(rows, exampleSummary{
					Name:         ex.Name,
					Description:  ex.Description,
					InputTopics:  ex.InputTopics(),
					OutputTopics: ex.OutputTopics(),
				})
			}
			return format.Write(c.OutOrStdout(), rows, func(w io.Writer) error {
				tw := output.NewTable(w)
				fmt.Fprintln(tw, "NAME\tDESCRIPTION")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\n", r.Name, r.Description)
				}
				return tw.Flush()
			})
		},
	}
	addOutputFlag(c, format)
	return c
}
