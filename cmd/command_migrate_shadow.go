package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/internal/output"
	"github.com/stoatflow/stoatctl/migrate"
)

func newMigrateShadowCommand() *cobra.Command {
	var (
		from, shadowID, topo, bootstrap string
		configFile                      string
		maps_, overrides                []string
		accept                          migrate.Overrides
		forDur, interval, settle        time.Duration
		records                         int64
		examples                        int
		logLevel                        string
	)
	format := output.New()
	c := &cobra.Command{
		Use:   "shadow",
		Short: "Run a topology beside a live Kafka Streams application and compare their output key by key",
		Long: `Run our topology beside a running Kafka Streams application, on the same
input, and compare what each writes, key by key, before a cutover. Nothing of
the Kafka Streams application is written: not its group, offsets, changelogs
or output topics.

The shadow is seeded from Kafka Streams' state as a migration would (into
--shadow-id's changelogs and group; Kafka Streams must commit nothing while
its state is read: start it while the input pauses for a few seconds). Our
engine then reads a copy of the input (SHADOW_ID-input-TOPIC) made up to
Kafka Streams' committed offsets, and writes SHADOW_ID-output-TOPIC. At each
aligned point, when both sides have processed the same input offsets, the
latest value of every key written since the last point is compared:
matched, a documented difference (window-not-emitted-yet: a window one side
has not closed yet), or an unexpected difference, listed with both records.
Keys with records in Kafka Streams' repartition topics are compared at a
later point. docs/migration.md says how the points are aligned.

It runs --for a duration, until --records input records are compared, or
until interrupted, then takes a last aligned point and prints the summary.

Exit codes: 0 no unexpected difference; 1 unexpected differences (the
report lists them); 2 usage error; 4 the run ended before its last aligned
point (the seed refused, the broker or our engine failed).`,
		Example: `  stoatctl migrate shadow --from-application-id wordcount -t topology.yaml -b kafka:9092 --for 10m
  stoatctl migrate shadow --from-application-id clicks -t clicks.yaml -b kafka:9092 \
      --map KSTREAM-AGGREGATE-STATE-STORE-0000000002=clicks-store --records 1000000 -o json`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if from == "" {
				return usageErrorf("--from-application-id is required: the Kafka Streams application's id")
			}
			if topo == "" {
				return usageErrorf("-t/--topology is required: a topology file or the name of a compiled-in topology (topology list)")
			}
			if shadowID == "" {
				// Not FROM-shadow: a topic FROM-... is taken for one
				// of Kafka Streams' own by a migration of FROM.
				shadowID = "shadow-" + from
			}
			if forDur < 0 || records < 0 {
				return usageErrorf("--for and --records must not be negative")
			}
			level, ok := brokerLogLevels[logLevel]
			if !ok {
				return usageErrorf("--log-level %q: want one of debug, info, warn, error", logLevel)
			}
			setup, err := loadMigrateSetup(c, topo, configFile, overrides, shadowID, bootstrap, maps_)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stderr := c.ErrOrStderr()
			// The first signal ends the run with a last aligned point,
			// which may wait up to --settle; a second abandons it.
			abort, abortNow := context.WithCancel(c.Context())
			defer abortNow()
			go func() {
				select {
				case <-abort.Done():
					return
				case <-ctx.Done():
				}
				again := make(chan os.Signal, 1)
				signal.Notify(again, os.Interrupt, syscall.SIGTERM)
				defer signal.Stop(again)
				select {
				case <-abort.Done():
				case <-again:
					fmt.Fprintln(stderr, "stoatctl: second signal: the last aligned point is abandoned")
					abortNow()
				}
			}()
			opts := migrate.ShadowOptions{
				Options: migrate.Options{From: from, To: shadowID, Built: setup.built, Seeds: strings.Split(setup.cfg["bootstrap.servers"], ","),
					ClientOpts: setup.clientOpts, Config: setup.conf, Map: setup.mapping, Overrides: accept},
				Topology: setup.file.Topology, EngineConfig: maps.Clone(setup.cfg),
				EngineOptions: []engine.Option{engine.WithLogger(newLogger(stderr, "text", level)), engine.WithConfigChecked()},
				For:           forDur, Records: records, Interval: interval, Settle: settle, Examples: examples, Abort: abort,
			}
			if format.String() != output.JSON {
				// Under -o json, stderr carries errors (and our engine's
				// log) only.
				opts.Point = func(p migrate.ShadowPoint) { writePoint(stderr, p) }
			}
			rep, err := migrate.Shadow(ctx, opts)
			if rep != nil && rep.Seed != nil {
				if werr := format.Write(c.OutOrStdout(), rep, rep.WriteText); werr != nil {
					return werr
				}
			}
			switch {
			case err == nil:
				return nil
			case errors.Is(err, migrate.ErrUnexpectedDifferences):
				return exitError{ExitFailure, err}
			default:
				return exitError{ExitShadowIncomplete, err}
			}
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from-application-id", "", "the live Kafka Streams application's `ID`")
	f.StringVar(&shadowID, "shadow-id", "", "the shadow's application `ID`: its group, changelogs and topics (default shadow-FROM)")
	f.StringVarP(&topo, "topology", "t", "", "our `TOPOLOGY`: a YAML topology file or a compiled-in topology's name (topology list)")
	f.StringVarP(&bootstrap, "bootstrap-server", "b", "", "connect to Kafka at `HOST:PORT[,...]`")
	f.StringVarP(&configFile, "config", "c", "", "read configuration from `FILE`: YAML, or a Java .properties file (security.protocol, ssl.*, sasl.*, ...)")
	f.StringArrayVarP(&overrides, "set", "X", nil, "configuration `KEY=VALUE` (repeatable)")
	f.StringArrayVar(&maps_, "map", nil, "map a Kafka Streams store to ours: `KS_STORE=OUR_STORE` (repeatable)")
	f.StringArrayVar(&accept.SkipStores, "skip-store", nil, "do not seed from Kafka Streams' store `KS_STORE`, accepting its problem (repeatable)")
	f.StringArrayVar(&accept.NewStores, "new-store", nil, "let our store `STORE`, which no Kafka Streams store feeds, start empty (repeatable)")
	f.StringArrayVar(&accept.SkipInputs, "skip-input", nil, "accept that our topology does not read Kafka Streams' input `TOPIC` (repeatable)")
	f.StringArrayVar(&accept.NewInputs, "new-input", nil, "accept that Kafka Streams committed no offset for our input `TOPIC` (repeatable)")
	f.DurationVar(&forDur, "for", 0, "stop after `DURATION` (default: until interrupted or --records)")
	f.Int64Var(&records, "records", 0, "stop once `N` input records are compared (default: until interrupted or --for)")
	f.DurationVar(&interval, "interval", time.Second, "take an aligned point every `DURATION`")
	f.DurationVar(&settle, "settle", time.Minute, "how long the last aligned point may wait for both sides, at most `DURATION`")
	f.IntVar(&examples, "examples", 20, "list at most `N` unexpected differences with their records (-1: all)")
	f.StringVar(&logLevel, "log-level", "warn", "log our engine from `LEVEL` up on stderr: debug, info, warn, error")
	addOutputFlag(c, format)
	_ = c.RegisterFlagCompletionFunc("topology", completeTopology)
	return c
}

// writePoint is the live line of an aligned point, on stderr.
func writePoint(w io.Writer, p migrate.ShadowPoint) {
	var doc []string
	for _, v := range slices.Sorted(maps.Keys(p.Documented)) {
		doc = append(doc, fmt.Sprintf("%s %d", v, p.Documented[v]))
	}
	documented := "none"
	if len(doc) > 0 {
		documented = strings.Join(doc, ", ")
	}
	fmt.Fprintf(w, "point %d: %d input records; compared %d keys: %d matched, documented %s, %d unexpected, %d deferred\n",
		p.Point, p.Records, p.Compared, p.Matched, documented, p.Unexpected, p.Deferred)
}
