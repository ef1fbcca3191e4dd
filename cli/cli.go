package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/stoatflow/stoatctl/cmd"
	"github.com/stoatflow/stoatctl/fixtures/examples"
)

// Topology is a topology a program registers: Name (lower-case words
// joined by dashes, like "order-totals"), a one-line Description, the
// Config it runs with (application.id defaults to Name; flags, -X,
// STOATCTL_* and -c override it as for a topology file) and Build, called
// for a fresh topology each time a command needs one. Inputs and Outputs
// are optional sample data for `topology try`.
//
// It is the type the bundled examples register with.
type Topology = examples.Example

// Input is a sample record for `topology try` (see Topology).
type Input = examples.Input

// Output is a topic `topology try` prints, with the codecs that decode it.
type Output = examples.Output

// Errors Register's error wraps.
var (
	// ErrNameTaken: a bundled example or an earlier Register has the name.
	ErrNameTaken = examples.ErrNameTaken
	// ErrInvalid: the name is not lower-case words joined by dashes, or
	// Build is nil.
	ErrInvalid = examples.ErrInvalid
)

// refused holds the errors of every refused Register, for Run to report:
// a program that ignores Register's error must not start without the
// topology it meant to register.
var refused struct {
	mu   sync.Mutex
	errs []error
}

// Register adds t to the topologies every command knows by name. Call it
// before Main, from main or an init function. It refuses, with an error
// naming t and what is wrong, a name a bundled example or an earlier
// registration holds and an invalid Topology; after a refusal, Main and
// Run print the error and exit 1 without running any command.
func Register(t Topology) error {
	err := examples.Add(t)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("cli: %w", err)
	refused.mu.Lock()
	refused.errs = append(refused.errs, err)
	refused.mu.Unlock()
	return err
}

// Option configures the command line (see WithStamp).
type Option = cmd.Option

// WithStamp passes the version and commit a program was built with to
// `version` and `--version`; without it they come from the module's build
// information.
func WithStamp(version, commit string) Option { return cmd.WithStamp(version, commit) }

// Main runs the command line on os.Args and exits with its exit code: 0
// success, 1 failure, 2 usage error (see Run).
func Main(opts ...Option) {
	os.Exit(Run(context.Background(), os.Args[1:], opts...))
}

// Run runs the command line on args (without the program name), writing
// data to os.Stdout and diagnostics to os.Stderr, and returns the exit
// code. Long-running commands stop when ctx is done, as on SIGINT and
// SIGTERM.
func Run(ctx context.Context, args []string, opts ...Option) int {
	return run(ctx, args, os.Stdout, os.Stderr, opts...)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) int {
	refused.mu.Lock()
	err := errors.Join(refused.errs...)
	refused.mu.Unlock()
	if err != nil {
		fmt.Fprintf(stderr, "stoatctl: %v\n", err)
		return cmd.ExitFailure
	}
	return cmd.RunContext(ctx, args, stdout, stderr, opts...)
}
