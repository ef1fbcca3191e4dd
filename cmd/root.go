// Package cmd is stoatctl's command line: one file per command, each built
// by an unexported constructor and assembled by NewRootCommand. Commands
// parse flags and print; what they print comes from importable packages
// (fixtures/examples, internal/buildinfo, internal/output).
//
// Commands write data to cmd.OutOrStdout() and nothing else there, so tests
// run them against buffers and scripts can pipe them. Errors go to stderr
// through Run, which also maps them to exit codes: 0 success, 1 failure,
// 2 usage error, 3 no broker or REST endpoint answered, 4 a shadow run
// that did not reach its last aligned point (migrate shadow). The
// convention (formats, exit codes, the brokers' flag) is internal/output's
// and docs/cli.md's.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stoatflow/stoatctl/internal/buildinfo"
	"github.com/stoatflow/stoatctl/internal/output"
)

// Exit codes: internal/output's, the same in every command (docs/cli.md).
const (
	ExitOK      = output.ExitOK
	ExitFailure = output.ExitFailure
	ExitUsage   = output.ExitUsage
	// ExitUnreachable is a command finding no Kafka broker or REST
	// endpoint at the address it was given.
	ExitUnreachable = output.ExitUnreachable
	// ExitShadowIncomplete is `migrate shadow` ending before its last
	// aligned point (the seed refused, the broker or our engine failed):
	// nothing says whether the outputs agree. Its unexpected differences
	// are ExitFailure.
	ExitShadowIncomplete = 4
)

// Option configures the root command.
type Option func(*options)

type options struct {
	stamp buildinfo.Stamp
}

// WithStamp passes the version and commit set at link time (main.version,
// main.commit) to the version command.
func WithStamp(version, commit string) Option {
	return func(o *options) { o.stamp = buildinfo.Stamp{Version: version, Commit: commit} }
}

// NewRootCommand assembles the command tree.
func NewRootCommand(opts ...Option) *cobra.Command {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	root := &cobra.Command{
		Use:   "stoatctl",
		Short: "Run, test and inspect Kafka Streams-style stream processing in Go",
		Long: `stoatctl is a stream-processing engine for Apache Kafka with Kafka Streams'
programming model: topologies of sources, processors and sinks, state stores
backed by changelogs, stream time and punctuators.

Today it runs topologies on Kafka or on an embedded broker (run), replays
fixtures through the test driver (replay), describes, validates and tries
topologies (topology), runs a development broker (broker), creates and
lists topics (topic), reads a running engine's REST API (inspect), watches
its event time (watch), and moves a Kafka Streams application's state,
offsets and event time over (migrate).`,
		Args:          cobra.ArbitraryArgs,
		RunE:          runGroup,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// Group commands are runnable only to refuse unknown subcommands (see
	// runGroup); their usage shows the subcommands, not "stoatctl [flags]".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"Usage:{{if .Runnable}}", "Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newVersionCommand(o.stamp),
		newTopologyCommand(),
		newBrokerCommand(),
		newReplayCommand(),
		newRunCommand(o.stamp),
		newTopicCommand(),
		newConfigCommand(),
		newWatchCommand(),
		newInspectCommand(),
		newMigrateCommand(),
	)
	// --version, as most command-line tools have; stoatctl version tells
	// more.
	info := buildinfo.Read(o.stamp)
	root.Version = info.Version
	root.SetVersionTemplate(fmt.Sprintf("stoatctl %s (commit %s)\n", info.Version, info.Commit))
	root.Flags().Bool("version", false, "print the version and commit (stoatctl version prints more)")
	markFailures(root)
	acceptFlagAliases(root)
	return root
}

// flagAliases are old or other spellings of a flag, accepted and not
// shown: --bootstrap-servers (kcat's and Kafka Streams' config key, and
// what migrate took before) is --bootstrap-server, as Kafka's own tools
// spell it.
var flagAliases = map[string]string{
	"bootstrap-servers": "bootstrap-server",
}

// acceptFlagAliases makes every command read an alias as its flag. A
// normalize function, unlike a second flag, cannot be set twice with two
// values, and does not show in help.
func acceptFlagAliases(c *cobra.Command) {
	c.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := flagAliases[name]; ok {
			return pflag.NormalizedName(to)
		}
		return pflag.NormalizedName(name)
	})
}

// refuseUnknownShells makes `completion SHELL` for a shell cobra has no
// script for a usage error: by default it prints the help and exits 0.
func refuseUnknownShells(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, s := range c.Commands() {
			shells = append(shells, s.Name())
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return usageErrorf("unknown shell %q: completion scripts exist for %s", args[0], strings.Join(shells, ", "))
		}
	}
}

// Run executes stoatctl with args, writing data to stdout and errors to
// stderr, and returns the exit code.
func Run(args []string, stdout, stderr io.Writer, opts ...Option) int {
	return RunContext(context.Background(), args, stdout, stderr, opts...)
}

// RunContext is Run with a context that long-running commands (broker)
// stop on, as they stop on SIGINT and SIGTERM.
func RunContext(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) int {
	root := NewRootCommand(opts...)
	// A nil slice would make cobra read os.Args.
	root.SetArgs(append([]string{}, args...))
	root.SetOut(stdout)
	root.SetErr(stderr)
	// After SetOut: cobra's completion scripts write to the writer the
	// command had when it was made.
	refuseUnknownShells(root)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	path := "stoatctl"
	if c != nil {
		path = c.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %s\n", path, withoutCommandPrefix(err.Error(), c))
	code := ExitCode(err)
	if code == ExitUsage {
		fmt.Fprintf(stderr, "run '%s --help' for usage\n", path)
	}
	return code
}

// withoutCommandPrefix drops a leading "NAME: " from msg when NAME is the
// command's own name: the packages behind the commands (migrate, replay)
// prefix their errors with their name, and the line already starts with
// the command path ("stoatctl migrate: migrate: ..." said it twice).
func withoutCommandPrefix(msg string, c *cobra.Command) string {
	if c == nil {
		return msg
	}
	return strings.TrimPrefix(msg, c.Name()+": ")
}

// ExitCode is the exit code for an error Execute returned: 0 for nil, 3
// for a command that could not reach its broker or REST endpoint, 1 for a
// command that ran and failed otherwise, 2 for anything cobra refused
// before running a command (an unknown command, flag or argument), or the
// code a command asked for (watch's --exit-code).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e exitError
	if errors.As(err, &e) {
		return e.code
	}
	var f failure
	if errors.As(err, &f) {
		if output.Unreachable(err) {
			return ExitUnreachable
		}
		return ExitFailure
	}
	return ExitUsage
}

// usageError is a command line that cannot run: a bad flag, argument or
// command.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError is a command that ran and asks for a particular exit code
// (watch's --exit-code).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// failure is an error from a command that ran.
type failure struct{ err error }

func (e failure) Error() string { return e.err.Error() }
func (e failure) Unwrap() error { return e.err }

// markFailures wraps every command's RunE so that the errors it returns,
// other than usage errors, are failures (exit 1). Errors that never went
// through a RunE come from cobra's parsing and are usage errors.
func markFailures(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			var u usageError
			if err == nil || errors.As(err, &u) {
				return err
			}
			return failure{err}
		}
	}
	for _, sub := range c.Commands() {
		markFailures(sub)
	}
}

// runGroup is the RunE of a command that only groups others: alone it
// prints help; followed by anything else it is an unknown command.
func runGroup(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg)}
}

// exactArg accepts exactly one positional argument, described by what.
func exactArg(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch len(args) {
		case 1:
			return nil
		case 0:
			return usageErrorf("missing argument: %s", what)
		}
		return usageErrorf("too many arguments: want one %s, got %d (%s)", what, len(args), strings.Join(args, " "))
	}
}

// noArgs refuses positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q: this command takes none", args[0])
	}
	return nil
}
