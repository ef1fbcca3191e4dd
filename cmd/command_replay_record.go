package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/replay"
)

func newReplayRecordCommand() *cobra.Command {
	var (
		bootstrap, from, to, topo, out, oldOut, recordsFile string
		topics                                              []string
		limit                                               int
		client                                              clientFlags
	)
	c := &cobra.Command{
		Use:   "record -b HOST:PORT -t TOPIC [-t TOPIC...]",
		Short: "Record a slice of live topics as a fixture's input steps",
		Long: `Read a slice of live topics and write it as a fixture's input steps, so
that a production slice becomes a regression test. The topics are read
read-committed and without a consumer group; several topics are merged.

The records are written in the order the engine dispatches them: each
partition in offset order, never reordered, and across partitions the record
with the oldest timestamp at the head first (ties: topic, then partition).
The fixture says so at the top, lists the offsets read per partition, and
names each record's source (topic[partition]@offset) in a comment.

--from and --to take beginning, end, offset:N (the same offset in every
partition), epoch milliseconds or an RFC 3339 time (in each partition, the
first record stamped at or after it). --from defaults to the beginning;
--to, which is exclusive, to the end as it stands when the command starts,
so the command terminates. --limit keeps the first N records of the merged
order.

Keys, values and header values are written as strings when they are UTF-8,
else as !!binary (base64). The fixture has no expect section:
'stoatctl replay --update FILE' fills it in. The format is described in
docs/fixtures.md.

A secured cluster takes the Kafka client keys (security.protocol, ssl.*,
sasl.*) from -c FILE (YAML, or a Java .properties file) and -X KEY=VALUE.`,
		Example: `  stoatctl replay record -b localhost:9092 -t sentences --topology uppercase --out sentences.fixture.yaml
  stoatctl replay record -b localhost:9092 -t orders -t payments --from 2024-05-01T00:00:00Z --limit 1000 \
      --topology ./orders.yaml --out fixtures/orders/orders.fixture.yaml --records-file orders.jsonl`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if c.Flags().Changed("output-file") {
				if c.Flags().Changed("out") {
					return usageErrorf("--out and -o/--output-file both name the fixture file: give --out only")
				}
				// -o is the output format everywhere else.
				fmt.Fprintln(c.ErrOrStderr(), "warning: -o/--output-file is deprecated and will go; use --out FILE (-o is the output format in every other command)")
				out = oldOut
			}
			opts := replay.RecordOptions{Limit: limit}
			for _, b := range strings.Split(bootstrap, ",") {
				if b = strings.TrimSpace(b); b != "" {
					opts.Brokers = append(opts.Brokers, b)
				}
			}
			if len(opts.Brokers) == 0 {
				return usageErrorf("--bootstrap-server: want HOST:PORT[,...]")
			}
			for _, t := range topics {
				if t == "" {
					return usageErrorf("--topic: want a topic name, got an empty string")
				}
				opts.Topics = append(opts.Topics, t)
			}
			if len(opts.Topics) == 0 {
				return usageErrorf("missing flag: --topic (-t), the topic to record")
			}
			var err error
			if opts.From, err = replay.ParseBound(from); err != nil {
				return usageErrorf("--from: %v", err)
			}
			if opts.To, err = replay.ParseBound(to); err != nil {
				return usageErrorf("--to: %v", err)
			}
			if limit < 0 {
				return usageErrorf("--limit: want a record count of at least 0, got %d", limit)
			}
			if recordsFile != "" && filepath.IsAbs(recordsFile) {
				return usageErrorf("--records-file: want a file name relative to the fixture, got %s", recordsFile)
			}
			// Relative references (a topology file, the records file)
			// are relative to the fixture, as replay reads them.
			dir := "."
			if out != "" && out != "-" {
				dir = filepath.Dir(out)
			}
			fo := replay.FixtureOptions{Topology: topo, RecordsFile: filepath.ToSlash(recordsFile)}
			if topo != "" {
				f, err := topofile.Resolve(topo, dir)
				if err != nil {
					return usageErrorf("--topology: %v", err)
				}
				// Keys and values are written as the topology reads them.
				if fo.Serdes, err = replay.SourceSerdes(f); err != nil {
					return fmt.Errorf("--topology %s: %w", topo, err)
				}
				// A topic the topology does not read would make a
				// fixture that cannot run.
				sources, err := replay.SourceTopics(f)
				if err != nil {
					return fmt.Errorf("--topology %s: %w", topo, err)
				}
				for _, t := range opts.Topics {
					if !slices.Contains(sources, t) {
						return usageErrorf("--topic %s: topology %s does not read it (its source topics: %s)", t, topo, strings.Join(sources, ", "))
					}
				}
			}

			if opts.Opts, err = client.connOptions(c); err != nil {
				return err
			}
			rec, err := replay.Capture(c.Context(), opts)
			if err != nil {
				return explainConn(err, "read", "topic "+strings.Join(opts.Topics, ", "))
			}
			var fixture, records bytes.Buffer
			if recordsFile != "" {
				if err := rec.WriteRecordsWith(&records, fo); err != nil {
					return err
				}
			}
			if err := rec.WriteFixture(&fixture, fo); err != nil {
				return err
			}
			// The folders the files go in are made, as docs/fixtures.md's
			// fixtures/NAME/prod.fixture.yaml needs.
			if out != "" && out != "-" {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("fixture: %w", err)
				}
			}
			if recordsFile != "" {
				path := filepath.Join(dir, recordsFile)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return fmt.Errorf("records file: %w", err)
				}
				if err := os.WriteFile(path, records.Bytes(), 0o644); err != nil {
					return fmt.Errorf("records file: %w", err)
				}
			}
			if out == "" || out == "-" {
				_, err = c.OutOrStdout().Write(fixture.Bytes())
				return err
			}
			if err := os.WriteFile(out, fixture.Bytes(), 0o644); err != nil {
				return fmt.Errorf("fixture: %w", err)
			}
			fmt.Fprintf(c.ErrOrStderr(), "recorded %d records to %s\n", len(rec.Records), out)
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&bootstrap, "bootstrap-server", "b", "", "read from Kafka at `HOST:PORT[,...]` (required)")
	f.StringArrayVarP(&topics, "topic", "t", nil, "a `TOPIC` to record; repeat to merge several")
	f.StringVar(&from, "from", "", "start: beginning, end, offset:N, epoch ms or an RFC 3339 `TIME` (default beginning)")
	f.StringVar(&to, "to", "", "end, exclusive: beginning, end, offset:N, epoch ms or an RFC 3339 `TIME` (default the end when the command starts)")
	f.IntVar(&limit, "limit", 0, "keep the first `N` records of the merged order (0: all)")
	f.StringVar(&topo, "topology", "", "the topology `REF` the fixture runs: a topology file relative to the fixture or a registered name")
	f.StringVar(&out, "out", "", "write the fixture to `FILE`, making its folder (default stdout)")
	f.StringVarP(&oldOut, "output-file", "o", "", "deprecated: --out")
	_ = f.MarkHidden("output-file")
	client.add(c, "config", "c", false)
	f.StringVar(&recordsFile, "records-file", "", "write the records to `FILE`, JSON Lines next to the fixture, instead of inline")
	return c
}
