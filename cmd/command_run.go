package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topofile"
)

func newRunCommand() *cobra.Command {
	var (
		topo, configFile, bootstrap, stateDir, logLevel, dataDir string
		overrides                                                []string
		port, partitions                                         int
		strict                                                   bool
	)
	c := &cobra.Command{
		Use:   "run -t TOPOLOGY",
		Short: "Run a topology against Kafka, or against an embedded broker",
		Long: `Run a topology (a YAML topology file, or the name of a bundled example) on
the live engine until SIGINT or SIGTERM, which commits a final barrier and
exits 0.

Without -b (and without bootstrap.servers in the configuration) it starts
an embedded Kafka-protocol broker on 127.0.0.1:--broker-port, creates the
topology's topics there, prints its address on stdout, and prints how to
produce to it and read from it with kcat on stderr.

Configuration comes from the topology file, then -c FILE (YAML: Kafka
Streams-style keys such as application.id, processing.guarantee,
num.stream.threads, and the stoatflow.* keys), then -X KEY=VALUE, then -b.
Every key is checked against the catalogue (stoatctl config list) before
anything starts: an unknown key is a warning naming the closest known key,
an error under --strict (exit 2); a value that does not parse is an error.`,
		Example: `  stoatctl run -t word-count
  stoatctl run -t fixtures/word-count/topology.yaml -b localhost:9092 -X num.stream.threads=8`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if topo == "" {
				return usageErrorf("-t/--topology is required: a topology file or a bundled example name")
			}
			level, ok := brokerLogLevels[logLevel]
			if !ok {
				return usageErrorf("--log-level %q: want one of debug, info, warn, error", logLevel)
			}
			if port < 0 || port > 65535 {
				return usageErrorf("--broker-port %d: want 1-65535, or 0 for a free port", port)
			}
			if partitions < 1 || partitions > maxSeedPartitions {
				return usageErrorf("--partitions %d: want 1 to %d", partitions, maxSeedPartitions)
			}
			wd, _ := os.Getwd()
			file, err := topofile.Resolve(topo, wd)
			if err != nil {
				return err
			}
			src := topologyConfig(file)
			if configFile != "" {
				fromFile, err := config.LoadFile(configFile)
				if err != nil {
					return err
				}
				src.add(fromFile, fileOrigin("", configFile))
			}
			for _, o := range overrides {
				k, v, err := config.ParseAssignment(o)
				if err != nil {
					return usageErrorf("-X %s", err)
				}
				src.set(k, v, "flag -X")
			}
			if bootstrap != "" {
				src.set(config.BootstrapServers, bootstrap, "flag -b")
			}
			if stateDir != "" {
				src.set(config.StateDir, stateDir, "flag --state-dir")
			}
			if _, ok := src.values[config.DefaultDSLStore]; !ok && rocks.Available() {
				// stoatctl run keeps state in RocksDB unless told otherwise;
				// the engine package and the test driver default to memory.
				src.set(config.DefaultDSLStore, config.StoreRocksDB, "stoatctl run's default")
			}
			// Nothing starts before the configuration is checked.
			var report configReport
			report.check(src, strict)
			if err := report.finish(c); err != nil {
				return err
			}
			cfg := src.values
			log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			defer exitOnSecondSignal(ctx, c.ErrOrStderr(), nil)()
			if cfg[config.BootstrapServers] == "" {
				b, err := startEmbedded(ctx, c.OutOrStdout(), c.ErrOrStderr(), file, cfg, port, int32(partitions), dataDir)
				if err != nil {
					return err
				}
				defer b.Close()
				cfg[config.BootstrapServers] = b.Addr()
			}
			e := engine.New(file.Topology, cfg, engine.WithLogger(log))
			return e.Run(ctx)
		},
	}
	f := c.Flags()
	f.StringVarP(&topo, "topology", "t", "", "run `TOPOLOGY`: a YAML topology file or a bundled example name")
	f.StringVarP(&configFile, "config", "c", "", "read configuration from YAML `FILE`")
	f.StringVarP(&bootstrap, "bootstrap-server", "b", "", "connect to Kafka at `HOST:PORT[,...]` (default: an embedded broker)")
	f.StringVar(&stateDir, "state-dir", "", "keep local state under `DIR` (state.dir)")
	f.StringArrayVarP(&overrides, "set", "X", nil, "set configuration `KEY=VALUE`; repeatable")
	f.IntVar(&port, "broker-port", broker.DefaultPort, "embedded broker: listen on `PORT` (0 picks a free one)")
	f.StringVar(&dataDir, "broker-data-dir", "", "embedded broker: keep its topics in `DIR` across restarts")
	f.IntVar(&partitions, "partitions", 4, "embedded broker: create the topology's topics with `N` partitions")
	addStrictFlag(c, &strict)
	f.StringVar(&logLevel, "log-level", "info", "log from `LEVEL` up on stderr: debug, info, warn, error")
	_ = c.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// startEmbedded starts the embedded broker with the topology's topics and
// tells the user how to reach it.
func startEmbedded(ctx context.Context, out, w io.Writer, file *topofile.File, cfg map[string]string, port int, partitions int32, dataDir string) (*broker.Broker, error) {
	probe := maps.Clone(cfg)
	if probe[config.ApplicationID] == "" {
		probe[config.ApplicationID] = "probe"
	}
	sources, sinks, err := engine.Topics(file.Topology, probe)
	if err != nil {
		return nil, err
	}
	seeds := map[string]int32{}
	for _, t := range append(append([]string{}, sources...), sinks...) {
		seeds[t] = partitions
	}
	opts := broker.Options{Port: port, DataDir: dataDir, SeedTopics: seeds}
	if port == 0 {
		opts.Port = broker.RandomPort
	}
	b, err := broker.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	// The address is the command's one line of data: scripts start it
	// with --broker-port 0 and read where it listens.
	fmt.Fprintln(out, b.Addr())
	in, sink := "TOPIC", "TOPIC"
	if len(sources) > 0 {
		in = sources[0]
	}
	if len(sinks) > 0 {
		sink = sinks[0]
	}
	fmt.Fprintf(w, `embedded broker on %[1]s (no -b given); topics: %[2]s
produce lines of key:value:  kcat -b %[1]s -t %[3]s -P -K:
read the output committed:   kcat -b %[1]s -t %[4]s -C -o beginning -K: -X isolation.level=read_committed
stop with Ctrl-C
`, b.Addr(), strings.Join(append(append([]string{}, sources...), sinks...), ", "), in, sink)
	return b, nil
}

// exitOnSecondSignal makes a second SIGINT or SIGTERM, after the first has
// begun a clean stop, exit at once: an operator who asks twice does not
// want to wait out the final commit. What was not committed is
// reprocessed on the next start, so nothing is lost. armed, when not nil,
// is called once the second signal is watched for. The returned func ends
// the watch.
func exitOnSecondSignal(ctx context.Context, stderr io.Writer, armed func()) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(again)
		if armed != nil {
			armed()
		}
		select {
		case <-done:
		case <-again:
			fmt.Fprintln(stderr, "stoatctl: second signal, exiting now; what was not committed is reprocessed on the next start")
			os.Exit(130)
		}
	}()
	return func() { close(done) }
}
