package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/output"
	"github.com/stoatflow/stoatctl/migrate"
)

func newMigrateCommand() *cobra.Command {
	var (
		from, to, topo, bootstrap string
		configFile                string
		maps, overrides           []string
		emitFrontier, dryRun, yes bool
		verifyOnly, reverse       bool
		batch                     int
		stateDir, rocksLib        string
		waitGroups                time.Duration
		accept                    migrate.Overrides
	)
	format := output.New()
	c := &cobra.Command{
		Use:   "migrate",
		Short: "Move a Kafka Streams application's state, offsets and event time to a topology",
		Long: `Migrate a stopped Kafka Streams application to a topology of ours: its
changelogs are translated into our changelogs (our placement, our lane-hash
header), its committed input offsets are copied to our group, our watermark
floor is seeded from its partition times, and with --emit-frontier the emit
frontier of every on-window-close store is seeded so that no window it
already emitted is emitted again. A verification pass then compares our
changelogs with the source key by key.

Before writing anything the plan refuses, listing every problem: a Kafka
Streams store that maps to no store of ours, a store of ours that nothing
feeds, input topics that differ, windows or records that contradict our
store's definition or serdes. Each is accepted only by naming it, with
--skip-store, --new-store, --skip-input or --new-input; the plan then says
what that loses.

--dry-run prints the plan and writes nothing. A real run asks for -y, or a
confirmation on a terminal, and refuses while either group has members. It
can be interrupted and run again: partitions already translated are marked
and skipped. docs/migration.md walks through a cutover.

--from-state-dir reads the stores from a stopped Kafka Streams' state
directory instead of its changelogs (for changelogs disabled, compacted away
or deleted), with the RocksDB of --rocksdb-library: Kafka Streams 4.x writes
its stores with a RocksDB newer than the system's, so pass the application's
rocksdbjni jar. Offsets and event time still come from its committed offsets.

--reverse is the way back, with the same flags and the same plan: our
stopped application's state goes to Kafka Streams' changelogs (the same
stores, the same --map), our group's offsets with their partition times to
its group, and each on-window-close store's emit frontier to its processor
metadata (lastEmitWindowCloseTime), so that it resumes where ours stopped
and emits no window twice. It refuses a store with no Kafka Streams layout
and a suppress buffer still holding records.`,
		Example: `  stoatctl migrate --from-application-id wordcount -t topology.yaml -b kafka:9092 --dry-run
  stoatctl migrate --from-application-id clicks --application-id clicks-stoat -t clicks.yaml \
      --map KSTREAM-AGGREGATE-STATE-STORE-0000000002=clicks-store --emit-frontier -y
  stoatctl migrate --from-application-id wordcount -t topology.yaml -b kafka:9092 \
      --from-state-dir /var/lib/kafka-streams --rocksdb-library rocksdbjni-10.1.3.jar --dry-run
  stoatctl migrate --reverse --from-application-id wordcount -t topology.yaml -b kafka:9092 --wait-for-groups 60s -y`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if from == "" {
				return usageErrorf("--from-application-id is required: the Kafka Streams application's id")
			}
			if topo == "" {
				return usageErrorf("-t/--topology is required: a topology file or the name of a compiled-in topology (topology list)")
			}
			setup, err := loadMigrateSetup(c, topo, configFile, overrides, to, bootstrap, maps)
			if err != nil {
				return err
			}
			cfg, mapping, built, clientOpts, conf := setup.cfg, setup.mapping, setup.built, setup.clientOpts, setup.conf
			opts := migrate.Options{From: from, To: built.ApplicationID, Built: built, Seeds: strings.Split(cfg[config.BootstrapServers], ","),
				ClientOpts: clientOpts, Config: conf, Map: mapping, EmitFrontier: emitFrontier, BatchRecords: batch, WaitForGroups: waitGroups,
				StateDir: stateDir, RocksDBLibrary: rocksLib, Overrides: accept}
			if reverse {
				if stateDir != "" {
					return usageErrorf("--reverse writes Kafka Streams' changelogs; --from-state-dir reads its state directory: pass one")
				}
				opts.Direction = migrate.Reverse
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if verifyOnly {
				rep, err := migrate.VerifyOnly(ctx, opts)
				if rep != nil {
					if werr := format.Write(c.OutOrStdout(), rep, rep.WriteText); werr != nil {
						return werr
					}
				}
				return err
			}
			plan, err := migrate.MakePlan(ctx, opts)
			var refusal *migrate.RefusalError
			if errors.As(err, &refusal) && !format.IsText() {
				// For scripts: every problem with its stable code, its
				// subject and the flag that accepts it.
				if werr := format.Write(c.OutOrStdout(), refusal, nil); werr != nil {
					return werr
				}
			}
			if err != nil {
				return err
			}
			if dryRun {
				return format.Write(c.OutOrStdout(), plan, plan.WriteText)
			}
			if !yes {
				if !isTerminal(os.Stdin) {
					return usageErrorf("a migration writes to the cluster: pass -y, or run it on a terminal to confirm (--dry-run shows the plan)")
				}
				if err := plan.WriteText(c.ErrOrStderr()); err != nil {
					return err
				}
				fmt.Fprintf(c.ErrOrStderr(), "\nmigrate %s to %s? type yes: ", from, opts.To)
				answer, _ := bufio.NewReader(c.InOrStdin()).ReadString('\n')
				if strings.TrimSpace(answer) != "yes" {
					return fmt.Errorf("migrate: not confirmed; nothing written")
				}
			}
			if format.IsText() {
				// Under -o json and yaml, stderr carries errors only.
				opts.Progress = newProgressMeter(c.ErrOrStderr(), isTerminal(os.Stderr), time.Now).report
			}
			rep, err := migrate.Run(ctx, opts)
			if rep != nil {
				if werr := format.Write(c.OutOrStdout(), rep, rep.WriteText); werr != nil {
					return werr
				}
			}
			if err != nil && ctx.Err() != nil {
				if reverse {
					return fmt.Errorf("interrupted: run the same command again to finish (it writes every key again): %w", err)
				}
				return fmt.Errorf("interrupted: run the same command again to finish (partitions done are marked and skipped): %w", err)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from-application-id", "", "the Kafka Streams application's `ID`")
	f.StringVar(&to, "application-id", "", "our application `ID` (default: the topology's application-id)")
	f.StringVarP(&topo, "topology", "t", "", "our `TOPOLOGY`: a YAML topology file or a compiled-in topology's name (topology list)")
	f.StringVarP(&bootstrap, "bootstrap-server", "b", "", "connect to Kafka at `HOST:PORT[,...]`")
	f.StringVarP(&configFile, "config", "c", "", "read configuration from `FILE`: YAML, or a Java .properties file (security.protocol, ssl.*, sasl.*, ...)")
	f.StringArrayVarP(&overrides, "set", "X", nil, "configuration `KEY=VALUE` (repeatable)")
	f.StringArrayVar(&maps, "map", nil, "map a Kafka Streams store to ours: `KS_STORE=OUR_STORE` (repeatable)")
	f.StringArrayVar(&accept.SkipStores, "skip-store", nil, "do not migrate Kafka Streams' store `KS_STORE`, accepting its problem: its state is lost, ours starts empty (repeatable)")
	f.StringArrayVar(&accept.NewStores, "new-store", nil, "let our store `STORE`, which no Kafka Streams store feeds, start empty (repeatable)")
	f.StringArrayVar(&accept.SkipInputs, "skip-input", nil, "accept that our topology does not read Kafka Streams' input `TOPIC` (repeatable)")
	f.StringArrayVar(&accept.NewInputs, "new-input", nil, "accept that Kafka Streams committed no offset for our input `TOPIC`: it starts at auto.offset.reset (repeatable)")
	f.BoolVar(&emitFrontier, "emit-frontier", false, "seed the emit frontier of on-window-close stores, so already emitted windows are not emitted again")
	f.BoolVar(&reverse, "reverse", false, "the way back: move our stopped application's state, offsets and emit frontiers to the Kafka Streams application")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and write nothing")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	f.BoolVar(&verifyOnly, "verify-only", false, "only compare our changelogs and offsets with the source")
	f.IntVar(&batch, "batch-records", 50_000, "records per transaction, at most `N`")
	f.DurationVar(&waitGroups, "wait-for-groups", 0, "wait up to `DURATION` for both groups to have no members (a stopped Kafka Streams instance stays one until its session times out)")
	f.StringVar(&stateDir, "from-state-dir", "", "read the stores from Kafka Streams' state `DIR` (its state.dir, Kafka Streams stopped) instead of its changelogs")
	f.StringVar(&rocksLib, "rocksdb-library", "", "the RocksDB that reads --from-state-dir: a librocksdb.so, or the Kafka Streams application's rocksdbjni `JAR` (default "+migrate.DefaultRocksDBLibrary+")")
	addOutputFlag(c, format)
	c.AddCommand(newMigrateShadowCommand())
	return c
}

// migrateSetup is what migrate and migrate shadow build from their flags:
// our topology, its configuration (the topology's, then -c, the
// environment, -X, then --application-id and -b), the store mapping, and
// the Kafka client options.
type migrateSetup struct {
	file       *topofile.File
	cfg        map[string]string
	conf       config.Config
	mapping    map[string]string
	built      *topology.Built
	clientOpts []kgo.Opt
}

func loadMigrateSetup(c *cobra.Command, topo, configFile string, overrides []string, to, bootstrap string, maps []string) (*migrateSetup, error) {
	wd, _ := os.Getwd()
	file, err := topofile.Resolve(topo, wd)
	if err != nil {
		return nil, err
	}
	src := topologyConfig(file)
	if configFile != "" {
		fromFile, err := config.LoadFile(configFile)
		if err != nil {
			return nil, err
		}
		src.add(fromFile, configFileOrigin(configFile))
	}
	addEnvironment(src)
	for _, o := range overrides {
		k, v, err := config.ParseAssignment(o)
		if err != nil {
			return nil, usageErrorf("-X %s", err)
		}
		src.set(k, v, "flag -X")
	}
	var report configReport
	report.check(src, false)
	if err := report.finish(c); err != nil {
		return nil, err
	}
	if err := resolveProviders(src); err != nil {
		return nil, err
	}
	cfg := src.values
	if to != "" {
		cfg[config.ApplicationID] = to
	}
	if bootstrap != "" {
		cfg[config.BootstrapServers] = bootstrap
	}
	if cfg[config.BootstrapServers] == "" {
		return nil, usageErrorf("-b/--bootstrap-server is required")
	}
	mapping := map[string]string{}
	for _, m := range maps {
		ks, ours, ok := strings.Cut(m, "=")
		if !ok || ks == "" || ours == "" {
			return nil, usageErrorf("--map %q: want KS_STORE=OUR_STORE", m)
		}
		mapping[ks] = ours
	}
	conf := config.New(cfg)
	built, err := file.Topology.Build(conf)
	if err != nil {
		return nil, fmt.Errorf("build topology %s: %w", topo, err)
	}
	clientOpts, err := kafka.ClientOptions(conf)
	if err != nil {
		return nil, err
	}
	return &migrateSetup{file: file, cfg: cfg, conf: conf, mapping: mapping, built: built, clientOpts: clientOpts}, nil
}
