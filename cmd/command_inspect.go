package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/output"
)

// inspectURLEnv overrides the default --url of stoatctl inspect.
const inspectURLEnv = "STOATCTL_URL"

func newInspectCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "inspect watermarks|info|topology|metrics",
		Short: "Read a running engine's REST API: watermarks, info, topology, metrics",
		Long: `Read what a running engine (stoatctl run) serves on its REST API.

  watermarks  the global watermark and each partition's, the one pinning
              it marked *; readable UTC times in the table, raw epoch
              milliseconds in -o json and -o yaml
  info        application, state, lanes, partitions owned
  topology    the topology's description (-o json: its JSON document)
  metrics     the Prometheus families (-o json: parsed)

Exit codes: 0 success, 1 the engine could not be reached or answered
with an error, 2 a usage error.`,
		Example: `  stoatctl inspect watermarks
  stoatctl inspect watermarks --url http://10.0.0.5:8080 -o json
  stoatctl inspect metrics | grep stoatflow_watermark`,
		Args: cobra.ArbitraryArgs,
		RunE: runGroup,
	}
	c.AddCommand(
		newInspectSubcommand("watermarks", "The global watermark and every partition's", func(ctx context.Context, cl *inspect.Client, w *inspectOut) error {
			doc, err := cl.Watermarks(ctx)
			if err != nil {
				return err
			}
			return inspect.WriteWatermarks(w.out, w.format, doc)
		}),
		newInspectSubcommand("info", "The application, its state, lanes and partitions", func(ctx context.Context, cl *inspect.Client, w *inspectOut) error {
			doc, err := cl.Info(ctx)
			if err != nil {
				return err
			}
			return inspect.WriteInfo(w.out, w.format, doc)
		}),
		newInspectSubcommand("topology", "The topology's description", func(ctx context.Context, cl *inspect.Client, w *inspectOut) error {
			want := "text"
			if w.format != inspect.Table {
				want = "json"
			}
			b, err := cl.Topology(ctx, want)
			if err != nil {
				return err
			}
			return inspect.WriteTopology(w.out, w.format, b)
		}),
		newInspectSubcommand("metrics", "The Prometheus metrics", func(ctx context.Context, cl *inspect.Client, w *inspectOut) error {
			text, err := cl.Metrics(ctx)
			if err != nil {
				return err
			}
			return inspect.WriteMetrics(w.out, w.format, text)
		}),
	)
	return c
}

type inspectOut struct {
	out    interface{ Write([]byte) (int, error) }
	format string
}

func newInspectSubcommand(name, short string, run func(context.Context, *inspect.Client, *inspectOut) error) *cobra.Command {
	var (
		base, token string
		timeout     time.Duration
	)
	format := output.NewTabular()
	c := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			u, err := url.Parse(base)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageErrorf("--url %q: want http://HOST:PORT", base)
			}
			if timeout <= 0 {
				return usageErrorf("--timeout %s: want a positive duration", timeout)
			}
			if !c.Flags().Changed("token") {
				token = os.Getenv(httpTokenEnv) // not the flag's default: --help would print it
			}
			cl := inspect.NewClient(base)
			cl.Token = token
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			err = run(ctx, cl, &inspectOut{out: c.OutOrStdout(), format: format.String()})
			if err == nil {
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: no answer from %s within %s", inspect.ErrUnreachable, base, timeout)
			}
			if !format.IsText() {
				writeDataError(c, format, err)
			}
			if errors.Is(err, inspect.ErrUnreachable) {
				return fmt.Errorf("%w (is stoatctl run serving its API there? see --http)", err)
			}
			return err
		},
	}
	def := os.Getenv(inspectURLEnv)
	if def == "" {
		def = inspect.DefaultURL
	}
	c.Flags().StringVar(&base, "url", def, "the engine's REST API at `URL` (default $"+inspectURLEnv+", else "+inspect.DefaultURL+")")
	c.Flags().StringVar(&token, "token", "", "send bearer `TOKEN` (default $"+httpTokenEnv+")")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after `DURATION`")
	addOutputFlag(c, format)
	return c
}

// writeDataError prints err on stdout as the API's error body, in JSON or
// YAML, so that a script under -o json or yaml reads a code either way.
func writeDataError(c *cobra.Command, format *output.Format, err error) {
	e := inspect.Error{Code: inspect.CodeUnreachable, Message: err.Error()}
	var ae *inspect.APIError
	if errors.As(err, &ae) {
		e = ae.Body
	}
	_ = format.Write(c.OutOrStdout(), e, nil)
}
