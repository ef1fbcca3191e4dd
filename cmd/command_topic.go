package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/output"
	"github.com/stoatflow/stoatctl/topics"
)

// topicFlags are the flags every topic subcommand shares.
type topicFlags struct {
	bootstrap string
	timeout   time.Duration
	client    clientFlags
}

func newTopicCommand() *cobra.Command {
	var f topicFlags
	c := &cobra.Command{
		Use:   "topic",
		Short: "Create, list and read the topics of a Kafka cluster",
		Long: `Create, list and read the topics of any Kafka cluster: Apache Kafka, or
the embedded broker of stoatctl broker, whose default address is the
default of -b. A secured cluster takes the Kafka client keys
(security.protocol, ssl.*, sasl.*) from --command-config FILE (YAML, or a
Java .properties file, as Kafka's own tools take) and -X KEY=VALUE.`,
		Args: cobra.ArbitraryArgs,
		RunE: runGroup,
	}
	pf := c.PersistentFlags()
	pf.StringVarP(&f.bootstrap, "bootstrap-server", "b", net.JoinHostPort(broker.DefaultHost, strconv.Itoa(broker.DefaultPort)), "connect to Kafka at `HOST:PORT[,...]`")
	pf.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up when the cluster has not answered within `DURATION`")
	f.client.add(c, "command-config", "", true)
	_ = c.RegisterFlagCompletionFunc("bootstrap-server", cobra.NoFileCompletions)
	c.AddCommand(newTopicCreateCommand(&f), newTopicListCommand(&f), newTopicReadCommand(&f))
	return c
}

// connect checks the shared flags and connects to the cluster, returning
// the context the command's requests run under.
func (f *topicFlags) connect(c *cobra.Command) (*topics.Admin, context.Context, func(), error) {
	var seeds []string
	for _, s := range strings.Split(f.bootstrap, ",") {
		s = strings.TrimSpace(s)
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			return nil, nil, nil, usageErrorf("--bootstrap-server %q: want HOST:PORT[,...]", f.bootstrap)
		}
		seeds = append(seeds, s)
	}
	if f.timeout <= 0 {
		return nil, nil, nil, usageErrorf("--timeout %s: want a positive duration", f.timeout)
	}
	opts, err := f.client.connOptions(c)
	if err != nil {
		return nil, nil, nil, err
	}
	adm, err := topics.Connect(seeds, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context(), f.timeout)
	return adm, ctx, func() { cancel(); adm.Close() }, nil
}

// topicResult is what topic create prints under -o json.
type topicResult struct {
	topics.Topic
	// Created is false when the topic existed (--if-not-exists) or on a
	// dry run.
	Created bool `json:"created"`
	DryRun  bool `json:"dryRun,omitempty"`
}

func newTopicCreateCommand(f *topicFlags) *cobra.Command {
	var (
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
		dryRun      bool
	)
	format := output.New()
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: `Create a topic. Without --partitions and --replication-factor the broker
picks (num.partitions and default.replication.factor: one and one on the
embedded broker). --dry-run asks the broker to check the request and
creates nothing.`,
		Example: `  stoatctl topic create orders --partitions 3
  stoatctl topic create orders-changelog -b kafka:9092 --config cleanup.policy=compact --config retention.ms=-1
  stoatctl topic create orders --if-not-exists --dry-run`,
		Args: exactArg("topic name"),
		RunE: func(c *cobra.Command, args []string) error {
			cfgs, err := topics.ParseConfig(configs)
			if err != nil {
				return usageErrorf("--config: %v", err)
			}
			spec := topics.Spec{Name: args[0], Partitions: partitions, ReplicationFactor: replication, Configs: cfgs}
			if err := spec.Check(); err != nil {
				return usageError{err}
			}
			adm, ctx, done, err := f.connect(c)
			if err != nil {
				return err
			}
			defer done()
			res := topicResult{DryRun: dryRun}
			existed := false
			res.Topic, err = adm.Create(ctx, spec, dryRun)
			switch {
			case err == nil:
				res.Created = !dryRun
			case ifNotExists && errors.Is(err, kerr.TopicAlreadyExists):
				listed, lerr := adm.List(ctx, true, spec.Name)
				if lerr != nil {
					return lerr
				}
				res.Topic, existed = listed[0], true
			case errors.Is(err, kerr.TopicAlreadyExists):
				return fmt.Errorf("%w (--if-not-exists accepts an existing topic)", err)
			default:
				return explainConn(err, "create", "topic "+spec.Name)
			}
			return format.Write(c.OutOrStdout(), res, func(w io.Writer) error {
				what := "created topic"
				switch {
				case existed:
					what = "topic exists, left as it is:"
				case dryRun:
					what = "dry run, nothing created: would create topic"
				}
				_, err := fmt.Fprintf(w, "%s %s (%s, replication factor %d)\n", what, res.Name, plural(len(res.Partitions), "partition"), res.ReplicationFactor)
				return err
			})
		},
	}
	fl := c.Flags()
	fl.Int32VarP(&partitions, "partitions", "p", topics.Default, "create `N` partitions; -1 leaves it to the broker (num.partitions)")
	fl.Int16VarP(&replication, "replication-factor", "r", topics.Default, "keep `N` replicas of each partition; -1 leaves it to the broker (default.replication.factor)")
	fl.StringArrayVar(&configs, "config", nil, "set topic config `KEY=VALUE`, such as retention.ms=-1; repeatable")
	fl.BoolVar(&ifNotExists, "if-not-exists", false, "succeed, changing nothing, when the topic exists")
	fl.BoolVar(&dryRun, "dry-run", false, "have the broker check the request, and create nothing")
	_ = c.RegisterFlagCompletionFunc("config", cobra.NoFileCompletions)
	addOutputFlag(c, format)
	return c
}

func newTopicListCommand(f *topicFlags) *cobra.Command {
	var internal bool
	format := output.NewTabular()
	c := &cobra.Command{
		Use:   "list [NAME...]",
		Short: "List topics with their partitions",
		Long: `List the cluster's topics, or those named, sorted by name, with their
partition counts and replication factors; -o json adds each partition's
leader and replicas. A named topic that does not exist is an error.`,
		Example: `  stoatctl topic list
  stoatctl topic list orders payments -o json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			adm, ctx, done, err := f.connect(c)
			if err != nil {
				return err
			}
			defer done()
			list, err := adm.List(ctx, internal, args...)
			if err != nil {
				what := "the topics"
				if len(args) > 0 {
					what = "topic " + strings.Join(args, ", ")
				}
				return explainConn(err, "describe", what)
			}
			if list == nil {
				list = []topics.Topic{}
			}
			return format.Write(c.OutOrStdout(), list, func(w io.Writer) error {
				tw := output.NewTable(w)
				fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICATION FACTOR")
				for _, t := range list {
					fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Name, len(t.Partitions), t.ReplicationFactor)
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().BoolVar(&internal, "internal", false, "include the broker's internal topics (__consumer_offsets, ...)")
	addOutputFlag(c, format)
	return c
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
