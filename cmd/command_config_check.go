package cmd

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
	"github.com/stoatflow/stoatctl/internal/output"
)

// keyVerdict is what config check says of one key.
type keyVerdict struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Origin string `json:"origin,omitempty"`
}

// The statuses of config check.
const (
	statusHonoured = "honoured"
	statusNoEffect = "no effect"
	statusRefused  = "refused"
	statusUnknown  = "unknown"
)

func newConfigCheckCommand() *cobra.Command {
	var overrides []string
	format := output.NewTabular()
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Say key by key what a configuration file's keys do: honoured, no effect, refused, unknown",
		Long: `Check a configuration file (YAML, or a Kafka Streams application's Java
.properties file) and -X overrides against the catalogue and the Kafka
clients, and print every key with its value (secrets hidden) and what
stoatctl does with it: honoured; no effect (accepted, with why); refused
(with why: run would fail on it); unknown (with the closest known key).
Config provider references (${file:...}, ${env:...}) are resolved first.
Exit 1 when a key is refused.`,
		Example: `  stoatctl config check streams.properties
  stoatctl config check app.yaml -X processing.guarantee=at_least_once`,
		Args: exactArg("configuration FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			src := newConfigSources()
			values, err := config.LoadFile(args[0])
			if err != nil {
				return err
			}
			src.add(values, configFileOrigin(args[0]))
			for _, o := range overrides {
				k, v, err := config.ParseAssignment(o)
				if err != nil {
					return usageErrorf("-X %s", err)
				}
				src.set(k, v, "flag -X")
			}
			rows, general := checkKeys(src)
			refused := len(general) > 0
			for _, r := range rows {
				refused = refused || r.Status == statusRefused
			}
			err = format.Write(c.OutOrStdout(), rows, func(w io.Writer) error {
				tw := output.NewTable(w)
				fmt.Fprintln(tw, "KEY\tVALUE\tSTATUS\tWHY")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Key, r.Value, r.Status, r.Reason)
				}
				return tw.Flush()
			})
			if err != nil {
				return err
			}
			if refused {
				msg := "the configuration has refused keys"
				if len(general) > 0 {
					msg = errors.Join(general...).Error()
				}
				return errors.New(msg)
			}
			return nil
		},
	}
	c.Flags().StringArrayVarP(&overrides, "set", "X", nil, "set configuration `KEY=VALUE` over the file; repeatable")
	addOutputFlag(c, format)
	return c
}

// keyError is an error that names its key first.
var keyError = regexp.MustCompile(`^config ([a-z][a-z0-9._-]*)[^:]*: (.*)$`)

// checkKeys gives every key of src its verdict: the catalogue's check,
// then what the Kafka clients refuse when they read it. Errors of the
// clients that name no one key are returned apart.
func checkKeys(src *configSources) ([]keyVerdict, []error) {
	byKey := map[string]*keyVerdict{}
	var rows []keyVerdict
	for _, k := range slices.Sorted(maps.Keys(src.values)) {
		rows = append(rows, keyVerdict{Key: k, Value: config.Redact(k, src.values[k]), Status: statusHonoured, Origin: src.origin(k)})
	}
	for i := range rows {
		byKey[rows[i].Key] = &rows[i]
	}
	for _, p := range config.Check(src.values) {
		r := byKey[p.Key]
		switch p.Kind {
		case config.Unknown:
			r.Status, r.Reason = statusUnknown, ""
			if p.Suggestion != "" {
				r.Reason = "did you mean " + p.Suggestion + "?"
			}
		case config.Invalid:
			r.Status, r.Reason = statusRefused, p.Reason
		case config.Ignored:
			r.Status, r.Reason = statusNoEffect, p.Reason
		}
	}
	resolved, err := config.ResolveProviders(src.values)
	if err != nil {
		return rows, []error{err}
	}
	cfg := config.New(resolved)
	var general []error
	note := func(err error) {
		if err == nil {
			return
		}
		var p config.Problem
		if errors.As(err, &p) {
			// The client read the key under its prefix or none: mark
			// each spelling set.
			for _, r := range rows {
				if _, base := config.SplitClientKey(r.Key); base == p.Key && r.Status == statusHonoured {
					byKey[r.Key].Status, byKey[r.Key].Reason = statusRefused, p.Reason
				}
			}
			return
		}
		// The connection's errors name their key first ("config
		// ssl.truststore.location: open ..."): that key is refused.
		if m := keyError.FindStringSubmatch(err.Error()); m != nil {
			if r, ok := byKey[m[1]]; ok {
				r.Status, r.Reason = statusRefused, m[2]
				return
			}
		}
		general = append(general, err)
	}
	_, err = kafka.ProducerOptions(cfg)
	note(err)
	for _, cl := range []config.Client{config.MainConsumer, config.RestoreConsumer, config.GlobalConsumer} {
		_, err = kafka.ConsumerOptions(cfg, cl)
		note(err)
	}
	_, err = kafka.ApplyTopicSettings(cfg, nil)
	note(err)
	seen := map[string]bool{}
	for _, cl := range []config.Client{config.MainConsumer, config.Producer, config.Admin, config.RestoreConsumer, config.GlobalConsumer} {
		if _, err := conn.Options(cfg.ForClient(cl), nil); err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			note(err)
		}
	}
	if k := conn.Differ(cfg.ForClient(config.MainConsumer), cfg.ForClient(config.Producer)); k != "" {
		general = append(general, fmt.Errorf("config %s differs between the main consumer and the producer, which are one client in stoatctl's engine", k))
	}
	return rows, general
}

// clientRefusals is what the Kafka clients would refuse in src, as one
// error, or nil: run checks it before it starts anything (an embedded
// broker kept up for a configuration error would only be in the way).
func clientRefusals(src *configSources) error {
	rows, general := checkKeys(src)
	var errs []string
	for _, r := range rows {
		if r.Status == statusRefused {
			p := config.Problem{Kind: config.Invalid, Key: r.Key, Reason: r.Reason, Origin: r.Origin}
			errs = append(errs, p.String())
		}
	}
	for _, err := range general {
		errs = append(errs, err.Error())
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errors.New(errs[0])
	}
	return fmt.Errorf("%d configuration problems:\n  %s", len(errs), strings.Join(dedupe(errs), "\n  "))
}
