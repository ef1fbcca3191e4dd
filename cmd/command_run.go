package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/rest"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/buildinfo"
)

func newRunCommand(stamp buildinfo.Stamp) *cobra.Command {
	var (
		topo, configFile, bootstrap, stateDir, logLevel, dataDir string
		httpAddr, httpToken, logFormat                           string
		overrides                                                []string
		port, partitions                                         int
		strict                                                   bool
	)
	c := &cobra.Command{
		Use:   "run -t TOPOLOGY",
		Short: "Run a topology against Kafka, or against an embedded broker",
		Long: `Run a topology (a YAML topology file, or the name of a bundled example or
of a Go topology the binary registered with package cli) on the live engine
until SIGINT or SIGTERM, which commits a final barrier and exits 0.

Without -b (and without bootstrap.servers in the configuration) it starts
an embedded Kafka-protocol broker on 127.0.0.1:--broker-port, creates the
topology's topics there, prints its address on stdout, and prints how to
produce to it and read from it with kcat on stderr. If the engine fails
there, the broker stays up until Ctrl-C, so that the record at fault can
be read (the notice says how), and run then exits 1. The embedded broker's
flags (--broker-port, --broker-data-dir, --partitions) are refused when a
cluster is named, since no broker starts then.

Configuration comes from the topology file, then -c FILE (YAML, or a Kafka
Streams application's Java .properties file: keys such as application.id,
processing.guarantee, num.stream.threads, security.protocol, sasl.*,
ssl.*, the consumer./producer./admin./topic. prefixed keys, and the
stoatflow.* keys), then the environment (STOATCTL_ and the key upper-cased,
dots as underscores, hyphens as two: STOATCTL_SASL_JAAS_CONFIG), then
-X KEY=VALUE, then -b. ${file:PATH:KEY},
${env:NAME} and ${dir:DIR:FILE} in a value are resolved as Kafka's config
providers resolve them; passwords and keys are never printed.
Every key is checked against the catalogue (stoatctl config list) before
anything starts: an unknown key is a warning naming the closest known key,
an error under --strict (exit 2); a value that does not parse is an error.

While it runs it serves its REST API on --http (default 127.0.0.1:8080):
GET /watermarks, /info, /topology, /health/liveness, /health/readiness,
/metrics (Prometheus), POST /pause and /resume (docs/rest-api.yaml);
stoatctl inspect reads it. Beyond loopback a token is required
(--http-token or $STOATCTL_HTTP_TOKEN), and POST requests must carry it.
An address in use fails the start, but for the default, which another
instance on this host may hold: a free port is taken instead and the log
says which. --http off serves nothing.`,
		Example: `  stoatctl run -t word-count
  stoatctl run -t fixtures/word-count/topology.yaml -b localhost:9092 -X num.stream.threads=8`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if topo == "" {
				return usageErrorf("-t/--topology is required: a topology file or the name of a compiled-in topology (topology list)")
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
			if err := fileArg("-t/--topology", topo); err != nil {
				return err
			}
			if configFile != "" {
				if err := fileArg("-c/--config", configFile); err != nil {
					return err
				}
			}
			if !c.Flags().Changed("http-token") {
				// Read here, not as the flag's default, so that --help
				// never prints it.
				httpToken = os.Getenv(httpTokenEnv)
			}
			api, err := httpOption(httpAddr, httpToken)
			if err != nil {
				return err
			}
			if logFormat != "text" && logFormat != "json" {
				return usageErrorf("--log-format %q: want text or json", logFormat)
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
				src.add(fromFile, configFileOrigin(configFile))
			}
			addEnvironment(src)
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
			// What the Kafka clients would refuse (acks=1 under
			// exactly-once, a truststore that does not open) fails here,
			// before an embedded broker starts.
			if err := clientRefusals(src); err != nil {
				return err
			}
			if err := resolveProviders(src); err != nil {
				return err
			}
			cfg := src.values
			if err := embeddedOnly(c, cfg); err != nil {
				return err
			}
			log := newLogger(c.ErrOrStderr(), logFormat, level)
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			defer exitOnSecondSignal(ctx, c.ErrOrStderr(), nil)()
			if api != nil {
				// Fail before the embedded broker starts, not after: the
				// engine listens again when it runs.
				if err := probeListen(api.Addr); err != nil {
					if c.Flags().Changed("http") || !errors.Is(err, syscall.EADDRINUSE) {
						return err
					}
					// The default address, taken (another instance on
					// this host): a free port instead, so that two runs
					// with default flags start side by side; the
					// "REST API listening" line says which.
					api.Addr = "127.0.0.1:0"
					fmt.Fprintf(c.ErrOrStderr(), "--http %s is in use: serving the REST API on a free port instead (see the REST API listening line)\n", defaultHTTPAddr)
				}
			}
			var embedded *broker.Broker
			if cfg[config.BootstrapServers] == "" {
				b, err := startEmbedded(ctx, c.OutOrStdout(), c.ErrOrStderr(), topo, file, cfg, port, int32(partitions), dataDir)
				if err != nil {
					return err
				}
				defer b.Close()
				embedded = b
				src.set(config.BootstrapServers, b.Addr(), "the embedded broker")
			}
			logEffectiveConfig(log, src)
			// The unknown keys were reported above, with where each was set.
			opts := []engine.Option{engine.WithLogger(log), engine.WithVersion(buildinfo.Read(stamp).Version), engine.WithCommit(buildinfo.Read(stamp).Commit), engine.WithConfigChecked()}
			if api != nil {
				opts = append(opts, engine.WithHTTP(*api))
			}
			e := engine.New(file.Topology, cfg, opts...)
			err = e.Run(ctx)
			if err != nil && embedded != nil && ctx.Err() == nil {
				// The broker holds the record at fault, and nothing else
				// does: keep it up until the user has looked.
				sources, _, _ := engine.Topics(file.Topology, cfg)
				writeKeptUp(c.ErrOrStderr(), c.CommandPath(), embedded.Addr(), err, sources)
				<-ctx.Done()
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVarP(&topo, "topology", "t", "", "run `TOPOLOGY`: a YAML topology file or a compiled-in topology's name (topology list)")
	f.StringVarP(&configFile, "config", "c", "", "read configuration from `FILE`: YAML, or a Java .properties file")
	f.StringVarP(&bootstrap, "bootstrap-server", "b", "", "connect to Kafka at `HOST:PORT[,...]` (default: an embedded broker)")
	f.StringVar(&stateDir, "state-dir", "", "keep local state under `DIR` (state.dir)")
	f.StringArrayVarP(&overrides, "set", "X", nil, "set configuration `KEY=VALUE`; repeatable")
	f.IntVar(&port, "broker-port", broker.DefaultPort, "embedded broker: listen on `PORT` (0 picks a free one)")
	f.StringVar(&dataDir, "broker-data-dir", "", "embedded broker: keep its topics in `DIR` across restarts")
	f.IntVar(&partitions, "partitions", 4, "embedded broker: create the topology's topics with `N` partitions")
	addStrictFlag(c, &strict)
	f.StringVar(&logLevel, "log-level", "info", "log from `LEVEL` up on stderr: debug, info, warn, error")
	f.StringVar(&logFormat, "log-format", "text", "log lines as `FORMAT`: text (key=value) or json")
	f.StringVar(&httpAddr, "http", defaultHTTPAddr, "serve the REST API and /metrics on `ADDR` (host:port, port 0 for a free one), or off")
	f.StringVar(&httpToken, "http-token", "", "bearer `TOKEN` for POST /pause and /resume; required when --http is not loopback (default $"+httpTokenEnv+")")
	_ = c.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions([]string{"debug", "info", "warn", "error"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("topology", completeTopology)
	return c
}

// embeddedOnly refuses the embedded broker's flags when a cluster is named
// (-b, or bootstrap.servers from -c or -X): no broker starts, and they
// would silently do nothing.
func embeddedOnly(c *cobra.Command, cfg map[string]string) error {
	if cfg[config.BootstrapServers] == "" {
		return nil
	}
	for _, name := range []string{"broker-port", "broker-data-dir", "partitions"} {
		if c.Flags().Changed(name) {
			return usageErrorf("--%s is for the embedded broker, which does not start when bootstrap.servers names a cluster (%s)", name, cfg[config.BootstrapServers])
		}
	}
	return nil
}

// startEmbedded starts the embedded broker with the topology's topics and
// tells the user how to reach it.
func startEmbedded(ctx context.Context, out, w io.Writer, ref string, file *topofile.File, cfg map[string]string, port int, partitions int32, dataDir string) (*broker.Broker, error) {
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
		if errors.Is(err, syscall.EADDRINUSE) {
			// Most often the first instance's embedded broker: a second
			// instance of the application joins it with -b (then both
			// share the partitions); a broker of its own would be another
			// cluster, so the port is not changed silently as --http's is.
			addr := net.JoinHostPort(broker.DefaultHost, strconv.Itoa(port))
			return nil, fmt.Errorf("embedded broker: %w (another stoatctl run or broker has it? run this one beside it with -b %s, or give --broker-port 0 for a broker of its own on a free port, printed on stdout)", err, addr)
		}
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	// The address is the command's one line of data: scripts start it
	// with --broker-port 0 and read where it listens.
	fmt.Fprintln(out, b.Addr())
	writeBanner(w, b.Addr(), ref, sources, sinks)
	return b, nil
}

// writeBanner tells how to reach the embedded broker: kcat to produce to
// every input topic, and stoatctl topic read to follow every output
// topic decoded with the topology's serdes (kcat would print a long or a
// windowed key as raw bytes).
func writeBanner(w io.Writer, addr, ref string, sources, sinks []string) {
	fmt.Fprintf(w, "embedded broker on %s (no -b given); topics: %s\n", addr, strings.Join(append(append([]string{}, sources...), sinks...), ", "))
	for _, t := range sources {
		fmt.Fprintf(w, "produce lines of key:value to %s:  kcat -b %s -t %s -P -K:\n", t, addr, t)
	}
	for _, t := range sinks {
		fmt.Fprintf(w, "follow %s, decoded:  stoatctl topic read -b %s -t %s --topology %s -f\n", t, addr, t, ref)
	}
	if len(sinks) > 0 {
		fmt.Fprintf(w, "or raw, committed, with kcat:  kcat -b %s -t %s -C -o beginning -K: -X isolation.level=read_committed\n", addr, sinks[0])
	}
	fmt.Fprintln(w, "stop with Ctrl-C")
}

// writeKeptUp says that the engine stopped on err and that the embedded
// broker on addr stays up, and how to read the record at fault: the one a
// deserialization error names, or else the source topics.
func writeKeptUp(w io.Writer, path, addr string, err error, sources []string) {
	fmt.Fprintf(w, "%s: the engine stopped: %v\n", path, err)
	fmt.Fprintf(w, "the embedded broker stays up on %s, so that the input can be inspected:\n", addr)
	if de, ok := serde.AsDecodeError(err); ok && de.Positioned {
		// --from and --to bound every partition: the one record each
		// has at that offset, the fault's among them.
		fmt.Fprintf(w, "read the record at fault (partition %d offset %d of %s), raw:  stoatctl topic read -b %s -t %s --from offset:%d --to offset:%d\n",
			de.Partition, de.Offset, de.Topic, addr, de.Topic, de.Offset, de.Offset+1)
	} else {
		for _, t := range sources {
			fmt.Fprintf(w, "read %s:  stoatctl topic read -b %s -t %s\n", t, addr, t)
		}
	}
	fmt.Fprintln(w, "stop the broker with Ctrl-C")
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

// The REST API's defaults.
const (
	defaultHTTPAddr = "127.0.0.1:8080"
	httpTokenEnv    = "STOATCTL_HTTP_TOKEN"
)

// httpOption reads --http and --http-token: nil for off, a usage error
// for an address that does not parse or is beyond loopback without a token.
func httpOption(addr, token string) (*engine.HTTP, error) {
	if strings.EqualFold(addr, "off") || addr == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageErrorf("--http %q: want host:port, such as %s, or off", addr, defaultHTTPAddr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, usageErrorf("--http %q: port %q: want 0-65535", addr, port)
	}
	if !rest.Loopback(host) && token == "" {
		return nil, usageErrorf("--http %s is not a loopback address: set --http-token or $%s, which POST requests must then carry", addr, httpTokenEnv)
	}
	return &engine.HTTP{Addr: addr, Token: token}, nil
}

// probeListen checks that the REST API's address can be listened on.
func probeListen(addr string) error {
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w (pick another address with --http, or --http off)", addr, err)
	}
	return l.Close()
}

// newLogger is the log of run: text or JSON lines on w.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// liveDefault is the value key k takes when unset, as a value: the
// catalogue's Default is written for people, and for a few keys it is a
// phrase ("number of CPUs (live engine); 16 (lane checks)", "by
// processing.guarantee"), which the effective configuration line printed
// as if it were the value. Those are worked out here as the live engine
// works them out; a default that is still not a value of its key (the
// instance id, made and kept at the first start, which the engine's start
// line names) is left out rather than printed as prose.
func liveDefault(k config.Key, values map[string]string) (string, bool) {
	switch k.Name {
	case config.NumStreamThreads:
		return strconv.Itoa(runtime.NumCPU()), true
	case config.StateDir:
		return config.DefaultStateDir(), true
	case config.DefaultDSLStore:
		// Unset here means stoatctl run did not set rocksDB: this build
		// has no RocksDB.
		return config.StoreInMemory, true
	case "isolation.level":
		if values[config.ProcessingGuarantee] == "at_least_once" {
			return "read_uncommitted", true
		}
		return "read_committed", true
	case "stoatflow.instance.id":
		return "", false
	}
	for _, p := range config.Check(map[string]string{k.Name: k.Default}) {
		if p.Kind == config.Invalid {
			return "", false
		}
	}
	return k.Default, true
}

// logEffectiveConfig logs the configuration the engine starts with, one
// attribute per key, each value with where it came from: what was set,
// and the catalogue's default of every other key the live engine, its
// Kafka client or the processing core reads.
func logEffectiveConfig(log *slog.Logger, src *configSources) {
	values := maps.Clone(src.values)
	for _, k := range config.Catalogue() {
		if _, set := values[k.Name]; set || k.Default == "" || k.AliasOf != "" ||
			!slices.ContainsFunc(k.ReadBy, func(c config.Component) bool { return c != config.TestDriver }) {
			continue
		}
		if strings.HasPrefix(k.Name, "ssl.") || strings.HasPrefix(k.Name, "sasl.") {
			// Their defaults (JKS, GSSAPI) say nothing unless
			// security.protocol uses them, and then they are set.
			continue
		}
		if v, ok := liveDefault(k, values); ok {
			values[k.Name] = v
		}
	}
	var attrs []any
	for _, k := range slices.Sorted(maps.Keys(values)) {
		// Passwords, keys and credentials are hidden; a URL's password
		// (schema.registry.url's user:password@) is cut.
		v := config.Redact(k, values[k])
		from := src.origin(k)
		if from == "" {
			from = "default"
		}
		attrs = append(attrs, slog.String(k, v+" ("+from+")"))
	}
	log.Info("effective configuration", slog.Group("config", attrs...))
}
