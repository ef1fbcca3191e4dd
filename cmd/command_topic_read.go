package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/output"
	"github.com/stoatflow/stoatctl/replay"
	"github.com/stoatflow/stoatctl/topics"
)

func newTopicReadCommand(f *topicFlags) *cobra.Command {
	var (
		topic, topo, keySerde, valueSerde, from, to string
		limit                                       int
		follow                                      bool
	)
	format := output.NewTabular()
	c := &cobra.Command{
		Use:   "read -t TOPIC",
		Short: "Read a topic's records, decoded with a topology's serdes",
		Long: `Read a topic's records, read committed and without a consumer group, and
print each with its partition, offset, timestamp (epoch milliseconds),
key and value, decoded: with the serdes of the topology's sink that writes
the topic, or else of its source that reads it (--topology, an example name
or a topology file), a windowed key as {key, start, end}; or with the serdes
--key-serde and --value-serde name, which take precedence. Without either,
keys and values are shown as strings when they are UTF-8, else as
{base64: ...}.

The records are printed in the order the engine dispatches them: each
partition in offset order, and across partitions the oldest timestamp at
the head first. --from and --to take beginning, end, offset:N, epoch
milliseconds or an RFC 3339 time; --to is exclusive and defaults to the end
when the command starts. -f follows the topic after that, printing records
as they are committed, until interrupted or --limit is reached.

-o json prints one JSON object per line (JSON Lines), -o yaml a YAML list
item per record. A record the serdes cannot read stops the command, naming
its topic, partition and offset. --timeout does not apply: a read takes as
long as the topic is.`,
		Example: `  stoatctl topic read -t word-counts --topology word-count -o json
  stoatctl topic read -t clicks-per-minute --topology fixtures/clicks-per-minute/topology.yaml
  stoatctl topic read -t orders --key-serde string --value-serde json --from 2024-05-01T00:00:00Z --limit 10
  stoatctl topic read -t shouted -f`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if topic == "" {
				return usageErrorf("missing flag: --topic (-t), the topic to read")
			}
			opts := topics.ReadOptions{Topic: topic, Limit: limit, Follow: follow}
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
			if follow && to != "" {
				return usageErrorf("--follow and --to exclude each other: a followed read has no end")
			}
			if topo != "" {
				tf, err := topofile.Resolve(topo, ".")
				if err != nil {
					return usageErrorf("--topology: %v", err)
				}
				if opts.Serdes, err = topics.TopologySerdes(tf, topic); err != nil {
					if errors.Is(err, topics.ErrTopicNotInTopology) {
						return usageErrorf("--topology: %v", err)
					}
					return err
				}
			}
			for _, s := range []struct {
				flag, name string
				to         *serde.Any
			}{{"key-serde", keySerde, &opts.Serdes.Key}, {"value-serde", valueSerde, &opts.Serdes.Value}} {
				if s.name == "" {
					continue
				}
				if *s.to, err = serde.ByName(s.name); err != nil {
					return usageErrorf("--%s: %v", s.flag, err)
				}
			}
			adm, _, done, err := f.connect(c)
			if err != nil {
				return err
			}
			defer done()
			p := newMessagePrinter(c.OutOrStdout(), format.String(), follow)
			if err := adm.Read(c.Context(), opts, p.print); err != nil {
				p.flush(false)
				return explainConn(err, "read", "topic "+topic)
			}
			return p.flush(true)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&topic, "topic", "t", "", "the `TOPIC` to read (required)")
	fl.StringVar(&topo, "topology", "", "decode with the serdes this topology `REF` writes or reads the topic with: an example name or a topology file")
	fl.StringVar(&keySerde, "key-serde", "", "decode keys with the serde `NAME` (string, int64, json, ...)")
	fl.StringVar(&valueSerde, "value-serde", "", "decode values with the serde `NAME` (string, int64, json, ...)")
	fl.StringVar(&from, "from", "", "start: beginning, end, offset:N, epoch ms or an RFC 3339 `TIME` (default beginning)")
	fl.StringVar(&to, "to", "", "end, exclusive: beginning, end, offset:N, epoch ms or an RFC 3339 `TIME` (default the end when the command starts)")
	fl.IntVar(&limit, "limit", 0, "stop after `N` records (0: no limit)")
	fl.BoolVarP(&follow, "follow", "f", false, "after the end, keep printing records as they are committed")
	_ = c.RegisterFlagCompletionFunc("topic", cobra.NoFileCompletions)
	_ = c.RegisterFlagCompletionFunc("topology", completeTopology)
	_ = c.RegisterFlagCompletionFunc("key-serde", cobra.FixedCompletions(serde.Names(), cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("value-serde", cobra.FixedCompletions(serde.Names(), cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(c, format)
	return c
}

// messagePrinter prints records as they come: a table (aligned over
// everything read, or line by line when following), JSON Lines or YAML
// list items.
type messagePrinter struct {
	w      io.Writer
	format string
	tw     *output.TableWriter
	follow bool
	// header says whether the table's header is written: with the first
	// row, or at the end of a read that found none.
	header bool
}

func (p *messagePrinter) writeHeader() {
	if p.tw != nil && !p.header {
		p.tw.Row("PARTITION", "OFFSET", "TIMESTAMP", "KEY", "VALUE")
		p.header = true
	}
}

func newMessagePrinter(w io.Writer, format string, follow bool) *messagePrinter {
	p := &messagePrinter{w: w, format: format, follow: follow}
	if format == output.Table {
		p.tw = output.NewTable(w)
	}
	return p
}

func (p *messagePrinter) print(m topics.Message) error {
	switch p.format {
	case output.JSON:
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	case output.YAML:
		// A list of one: the messages of a read are one YAML list.
		return output.WriteYAML(p.w, []topics.Message{m})
	}
	p.writeHeader()
	ts := time.UnixMilli(m.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z")
	p.tw.Row(strconv.Itoa(int(m.Partition)), strconv.FormatInt(m.Offset, 10), ts, cell(m.Key), cell(m.Value))
	if p.follow {
		return p.tw.Flush()
	}
	return nil
}

// flush writes what is buffered; done, on a read that succeeded, writes
// the header of an empty table.
func (p *messagePrinter) flush(done bool) error {
	if done {
		p.writeHeader()
	}
	if p.tw != nil {
		return p.tw.Flush()
	}
	return nil
}

// cell shows a decoded key or value in a table: a string as it is (null
// as null), anything else as JSON; tabs and newlines escaped so a row
// stays a row.
func cell(v any) string {
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		s = string(b)
	}
	return strings.NewReplacer("\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(s)
}
