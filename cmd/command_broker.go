package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/kafka"
)

// maxSeedPartitions bounds --topic's partition count: the embedded broker
// keeps every partition in this process, so a larger count is a typo, and
// one that would take the broker minutes to create.
const maxSeedPartitions = 10_000

// brokerLogLevels are the values of broker --log-level.
var brokerLogLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

func newBrokerCommand() *cobra.Command {
	var (
		host, dataDir, logLevel string
		port                    int
		topics                  []string
		autoCreate              bool
	)
	c := &cobra.Command{
		Use:   "broker",
		Short: "Run an embedded Kafka broker until interrupted",
		Long: `Run an in-process Kafka broker (franz-go's kfake) that speaks the Kafka
protocol over TCP, so that any Kafka client can produce to it and consume
from it, until SIGINT (Ctrl-C) or SIGTERM stops it.

It prints the address it listens on to stdout, and how to produce and
consume with kcat to stderr. Without --data-dir everything it holds is lost
when it stops; with it, topics, records, committed offsets and transactions
are kept there and found again on the next start, even after kill -9: a
transaction left open is aborted, and one killed while it committed is
finished, before any client is let in. Records are synced to disk on stop
only (as Kafka's default is), so a machine crash can lose the latest.

As Apache Kafka does by default (auto.create.topics.enable=true), it
creates a topic, with one partition, the first time a client asks for one
that does not exist (kcat -P and Java producers ask; stoatctl's own clients
do not). --auto-create-topics=false makes a missing topic an error instead,
as on most production clusters.`,
		Example: `  stoatctl broker --topic orders:3 --topic payments
  stoatctl broker --port 0 --data-dir ./kafka-data
  stoatctl broker --auto-create-topics=false -t orders:3`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			seeds, err := parseSeedTopics(topics)
			if err != nil {
				return err
			}
			if port < 0 || port > 65535 {
				return usageErrorf("--port %d: want 1-65535, or 0 for a free port", port)
			}
			level, ok := brokerLogLevels[logLevel]
			if !ok {
				return usageErrorf("--log-level %q: want one of debug, info, warn, error", logLevel)
			}
			opts := broker.Options{
				Host:             host,
				Port:             port,
				DataDir:          dataDir,
				SeedTopics:       seeds,
				AutoCreateTopics: autoCreate,
				Logger:           slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
			}
			if port == 0 {
				opts.Port = broker.RandomPort
			}
			return runBroker(c, opts)
		},
	}
	f := c.Flags()
	f.StringVar(&host, "host", broker.DefaultHost, "listen on `HOST`, which clients are also told to connect to")
	f.IntVar(&port, "port", broker.DefaultPort, "listen on `PORT` (0 picks a free one)")
	f.StringVar(&dataDir, "data-dir", "", "keep the broker's data in `DIR` across restarts (default: in memory only)")
	f.StringArrayVarP(&topics, "topic", "t", nil, "create topic `NAME[:PARTITIONS]` if missing (1 partition by default); repeatable")
	f.BoolVar(&autoCreate, "auto-create-topics", true, "create a topic the first time a client asks for it (Kafka's auto.create.topics.enable)")
	f.StringVar(&logLevel, "log-level", "warn", "log the broker's own messages from `LEVEL` up on stderr: debug, info, warn, error")
	_ = c.MarkFlagDirname("data-dir")
	_ = c.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("topic", cobra.NoFileCompletions)
	return c
}

// portHint adds to an error starting a broker on a port in use how to
// pick another: flag 0 takes a free one.
func portHint(err error, flag string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w (another broker running? stop it, or give %s 0 for a free port, printed on stdout)", err, flag)
	}
	return err
}

// runBroker runs the broker until the command's context is cancelled or a
// SIGINT or SIGTERM arrives, then closes it, which with a data directory
// saves its state.
func runBroker(c *cobra.Command, opts broker.Options) error {
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := broker.Start(ctx, opts)
	if err != nil {
		return portHint(err, "--port")
	}
	topics, err := b.Topics(ctx)
	if err != nil {
		b.Close()
		return err
	}
	for _, addr := range b.Addrs() {
		fmt.Fprintln(c.OutOrStdout(), addr)
	}
	writeBrokerHelp(c.ErrOrStderr(), b.Addrs(), opts, topics)

	<-ctx.Done()
	// From here a second signal gets its default action, so that a user
	// can still kill a broker whose close hangs.
	stop()
	if opts.DataDir != "" {
		fmt.Fprintf(c.ErrOrStderr(), "stopping: saving to %s (Ctrl-C again to abandon)\n", opts.DataDir)
	}
	if err := b.Close(); err != nil {
		return err
	}
	fmt.Fprintln(c.ErrOrStderr(), "stopped")
	return nil
}

// writeBrokerHelp tells a user where the broker is, what it holds and how
// to use it with kcat.
func writeBrokerHelp(w io.Writer, addrs []string, opts broker.Options, topics map[string]int32) {
	nodes := "1 node"
	if len(addrs) > 1 {
		nodes = fmt.Sprintf("%d nodes", len(addrs))
	}
	fmt.Fprintf(w, "broker listening on %s (%s)\n", strings.Join(addrs, ", "), nodes)
	if opts.DataDir != "" {
		fmt.Fprintf(w, "data kept in %s\n", opts.DataDir)
	} else {
		fmt.Fprintln(w, "data kept in memory, lost when the broker stops (--data-dir keeps it)")
	}
	names := slices.Sorted(maps.Keys(topics))
	topic := "TOPIC"
	if len(names) == 0 {
		fmt.Fprintln(w, "topics: none yet (--topic NAME[:PARTITIONS] or stoatctl topic create makes them)")
	} else {
		topic = names[0]
		var list []string
		for _, n := range names {
			list = append(list, fmt.Sprintf("%s (%d)", n, topics[n]))
		}
		fmt.Fprintf(w, "topics (partitions): %s\n", strings.Join(list, ", "))
	}
	if opts.AutoCreateTopics {
		fmt.Fprintln(w, "new topics are created on first use, with 1 partition (--auto-create-topics=false turns that off)")
	} else {
		fmt.Fprintf(w, "new topics are not created on first use: create them with stoatctl topic create -b %s\n", addrs[0])
	}
	fmt.Fprintf(w, `
produce lines of key:value with kcat:
  kcat -b %[1]s -t %[2]s -P -K:
consume from the beginning, exit at the end (without -e, keep waiting):
  kcat -b %[1]s -t %[2]s -C -o beginning -K: -e
list topics:
  kcat -b %[1]s -L

stop with Ctrl-C or SIGTERM
`, addrs[0], topic)
}

// parseSeedTopics reads --topic NAME[:PARTITIONS] values.
func parseSeedTopics(values []string) (map[string]int32, error) {
	seeds := map[string]int32{}
	for _, v := range values {
		name, count, hasCount := strings.Cut(v, ":")
		if err := kafka.CheckTopicName(name); err != nil {
			return nil, usageErrorf("--topic %q: %v", v, err)
		}
		p := int32(1)
		if hasCount {
			n, err := strconv.Atoi(count)
			if err != nil || n < 1 || n > maxSeedPartitions {
				return nil, usageErrorf("--topic %q: partition count %q is not a number from 1 to %d", v, count, maxSeedPartitions)
			}
			p = int32(n)
		}
		if prev, dup := seeds[name]; dup && prev != p {
			return nil, usageErrorf("--topic %s given twice, with %d and %d partitions", name, prev, p)
		}
		seeds[name] = p
	}
	return seeds, nil
}
