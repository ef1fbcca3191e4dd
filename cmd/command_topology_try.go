package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/internal/output"
)

// tryResult is the -o json form of `topology try`.
type tryResult struct {
	Example string            `json:"example"`
	Outputs []examples.Result `json:"outputs"`
}

func newTopologyTryCommand() *cobra.Command {
	var file string
	format := output.New()
	c := &cobra.Command{
		Use:   "try NAME | -t NAME",
		Short: "Run an example's sample input through the test driver and print what it wrote",
		Long: `Run an example topology on its bundled sample input with the test driver
(the engine's tasks, single-threaded, with a manual clock) and print the
records it wrote to its output topics, topic by topic: key, value and
timestamp in epoch milliseconds. Null keys and values print as <null> in
text and null in JSON.

The example is the argument or -t's, as in describe and validate. A
topology file has no sample input to try: give it a fixture with the input
and run stoatctl replay (docs/fixtures.md).`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeExampleName,
		RunE: func(c *cobra.Command, args []string) error {
			name, err := topologyArg(c, file, args)
			if err != nil {
				return err
			}
			if topofile.IsFileRef(name) {
				return usageErrorf("%s: a topology file has no sample input to try; write a fixture with its input and run stoatctl replay (docs/fixtures.md), or describe or validate the file", name)
			}
			ex, err := examples.Get(name)
			if err != nil {
				return err
			}
			results, err := examples.Run(ex)
			if err != nil {
				return err
			}
			return format.Write(c.OutOrStdout(), tryResult{Example: ex.Name, Outputs: results}, func(w io.Writer) error {
				return writeTryText(w, results)
			})
		},
	}
	c.Flags().StringVarP(&file, "topology", "t", "", "the example `NAME` to try")
	_ = c.RegisterFlagCompletionFunc("topology", completeExampleName)
	addOutputFlag(c, format)
	return c
}

func writeTryText(w io.Writer, results []examples.Result) error {
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		noun := "records"
		if len(res.Records) == 1 {
			noun = "record"
		}
		fmt.Fprintf(w, "topic %s: %d %s\n", res.Topic, len(res.Records), noun)
		if len(res.Records) == 0 {
			continue
		}
		tw := output.NewTable(w)
		fmt.Fprintln(tw, "  KEY\tVALUE\tTIMESTAMP")
		for _, r := range res.Records {
			fmt.Fprintf(tw, "  %s\t%s\t%d\n", textValue(r.Key), textValue(r.Value), r.Timestamp)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// textValue prints a decoded key or value: nil as <null>, strings as they
// are unless they are empty or hold characters that would garble a table
// (then quoted), anything else with fmt.
func textValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "<null>"
	case string:
		if x == "" || strings.ContainsFunc(x, func(r rune) bool { return r != ' ' && (unicode.IsSpace(r) || !unicode.IsPrint(r)) }) {
			return strconv.Quote(x)
		}
		return x
	case []byte:
		return strconv.Quote(string(x))
	}
	return fmt.Sprint(v)
}
