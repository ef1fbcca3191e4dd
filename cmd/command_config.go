package cmd

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/output"
)

func newConfigCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "List and describe the configuration keys stoatctl knows",
		Long: `List and describe every configuration key the engine, the test driver, the
Kafka client and topology files accept (docs/configuration.md is generated
from the same catalogue).

run, replay and topology validate warn about a key not in the catalogue,
naming the closest known key; under --strict it is an error (exit 2).`,
		Args: cobra.ArbitraryArgs,
		RunE: runGroup,
	}
	c.AddCommand(newConfigListCommand(), newConfigDescribeCommand(), newConfigCheckCommand())
	return c
}

// keyView is a catalogue key as config list and describe print it.
type keyView struct {
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	Values      []string          `json:"values,omitempty"`
	Aliases     map[string]string `json:"aliases,omitempty"`
	Min         *float64          `json:"min,omitempty"`
	Default     string            `json:"default,omitempty"`
	Description string            `json:"description"`
	ReadBy      []string          `json:"readBy"`
	NoOp        bool              `json:"noOp,omitempty"`
	AliasOf     string            `json:"aliasOf,omitempty"`
	Note        string            `json:"note,omitempty"`
	Secret      bool              `json:"secret,omitempty"`
	Clients     []string          `json:"clients,omitempty"`
}

func viewOf(k config.Key) keyView {
	v := keyView{Name: k.Name, Type: string(k.Type), Values: k.Values, Aliases: k.Aliases, Default: k.Default,
		Description: k.Description, NoOp: k.NoOp, AliasOf: k.AliasOf, Note: k.Note, Secret: k.Secret}
	for _, c := range k.Clients {
		v.Clients = append(v.Clients, string(c))
	}
	if k.HasMin {
		m := k.Min
		v.Min = &m
	}
	for _, c := range k.ReadBy {
		v.ReadBy = append(v.ReadBy, string(c))
	}
	return v
}

func newConfigListCommand() *cobra.Command {
	format := output.NewTabular()
	c := &cobra.Command{
		Use:   "list",
		Short: "List every configuration key: type, default, reader, description",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			keys := config.Catalogue()
			rows := make([]keyView, len(keys))
			for i, k := range keys {
				rows[i] = viewOf(k)
			}
			return format.Write(c.OutOrStdout(), rows, func(w io.Writer) error {
				tw := output.NewTable(w)
				fmt.Fprintln(tw, "KEY\tTYPE\tDEFAULT\tREAD BY\tDESCRIPTION")
				for _, k := range keys {
					def := k.Default
					if def == "" {
						def = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Name, k.TypeText(), def, k.ReadByText(), k.Description)
				}
				return tw.Flush()
			})
		},
	}
	addOutputFlag(c, format)
	return c
}

func newConfigDescribeCommand() *cobra.Command {
	format := output.New()
	c := &cobra.Command{
		Use:   "describe KEY",
		Short: "Describe one configuration key in full",
		Args:  exactArg("configuration KEY"),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, k := range config.Catalogue() {
				out = append(out, cobra.CompletionWithDesc(k.Name, k.Description))
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			k, ok := config.Describe(args[0])
			if !ok {
				p := config.Problem{Kind: config.Unknown, Key: args[0]}
				p.Suggestion, _ = config.Closest(args[0])
				return errors.New(p.String())
			}
			return format.Write(c.OutOrStdout(), viewOf(k), func(w io.Writer) error {
				return describeKey(w, k)
			})
		},
	}
	addOutputFlag(c, format)
	return c
}

func describeKey(w io.Writer, k config.Key) error {
	tw := output.NewTable(w)
	row := func(name, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", name, value)
		}
	}
	row("key", k.Name)
	row("type", string(k.Type))
	row("values", strings.Join(k.Values, ", "))
	for _, a := range k.AliasNames() {
		row("also accepted", a+" ("+k.Aliases[a]+")")
	}
	if k.HasMin {
		row("at least", k.MinText())
	}
	def := k.Default
	if def == "" {
		def = "none"
	}
	row("default", def)
	row("read by", k.ReadByText())
	row("description", k.Description)
	if k.NoOp {
		row("effect", "none yet: accepted and ignored")
	}
	if k.Secret {
		row("secret", "yes: its value is never shown")
	}
	if len(k.Clients) > 0 {
		var ps []string
		for _, c := range k.Clients {
			if c == config.Consumer {
				ps = append(ps, "consumer., main.consumer., restore.consumer., global.consumer.")
				continue
			}
			ps = append(ps, string(c)+".")
		}
		row("prefixes", strings.Join(ps, ", "))
	}
	row("alias of", k.AliasOf)
	row("note", k.Note)
	return tw.Flush()
}

// configOrigin says where a key of a merged configuration was set, for
// messages: "flag -X", "app.yaml:3", "topology file t.yaml:12".
type configOrigin func(key string) string

// configSources merges configuration layers, later over earlier, and
// remembers which layer set each key.
type configSources struct {
	values map[string]string
	from   map[string]configOrigin
}

func newConfigSources() *configSources {
	return &configSources{values: map[string]string{}, from: map[string]configOrigin{}}
}

// add sets values, each from origin.
func (s *configSources) add(values map[string]string, origin configOrigin) {
	for k, v := range values {
		s.values[k] = v
		s.from[k] = origin
	}
}

// set sets one key from a fixed origin, such as a flag.
func (s *configSources) set(key, value, origin string) {
	s.add(map[string]string{key: value}, func(string) string { return origin })
}

func (s *configSources) origin(key string) string {
	if o := s.from[key]; o != nil {
		return o(key)
	}
	return ""
}

// fileOrigin names a line of a YAML file: the line of each key of the
// mapping reached through path, read only when a message needs it (a
// fixture can be large). prefix goes before the file name.
func fileOrigin(prefix, file string, path ...string) configOrigin {
	var lines map[string]int
	return func(key string) string {
		if lines == nil {
			lines = map[string]int{}
			if data, err := os.ReadFile(file); err == nil {
				lines = config.KeyLines(data, path...)
			}
		}
		where := file
		if n, ok := lines[key]; ok {
			where = fmt.Sprintf("%s:%d", file, n)
		}
		return strings.TrimSpace(prefix + " " + where)
	}
}

// topologyOrigin is where a topology's config: block sets a key: the
// file's line, or the example's name.
func topologyOrigin(f *topofile.File) configOrigin {
	if f.Example {
		return func(string) string { return "example " + f.Path }
	}
	return fileOrigin("topology file", displayPath(f.Path), "config")
}

// displayPath is path relative to the working directory when it is
// absolute and that is possible, so messages show what the user typed.
func displayPath(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil {
		return rel
	}
	return path
}

// configReport is what checking a configuration found: lines to print as
// they are (warnings and notes) and errors.
type configReport struct {
	warnings []string
	errs     []string
	// usage says an error is the command line's (a bad -X value, or an
	// unknown key under --strict): exit 2.
	usage bool
}

// check checks s against the catalogue into r. Unknown keys are warnings,
// errors under strict; invalid values are errors.
func (r *configReport) check(s *configSources, strict bool) {
	for _, p := range config.Check(s.values) {
		p.Origin = s.origin(p.Key)
		switch {
		case p.Kind == config.Unknown && strict:
			r.errs = append(r.errs, p.String()+" (--strict)")
			r.usage = true
		case p.Kind == config.Invalid:
			r.errs = append(r.errs, p.String())
			if strings.HasPrefix(p.Origin, "flag ") {
				r.usage = true
			}
		default:
			r.warnings = append(r.warnings, p.Level()+": "+p.String())
		}
	}
}

// finish prints the warnings on w, each once, prefixed with the command
// path as errors are, and returns the errors as one, or nil.
func (r *configReport) finish(c *cobra.Command) error {
	w := c.ErrOrStderr()
	seen := map[string]bool{}
	for _, line := range r.warnings {
		if !seen[line] {
			seen[line] = true
			fmt.Fprintf(w, "%s: %s\n", c.CommandPath(), line)
		}
	}
	errs := dedupe(r.errs)
	if len(errs) == 0 {
		return nil
	}
	var err error
	if len(errs) == 1 {
		err = errors.New(errs[0])
	} else {
		err = fmt.Errorf("%d configuration problems:\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
	if r.usage {
		return usageError{err}
	}
	return err
}

func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// addStrictFlag adds --strict, which makes unknown configuration keys
// errors.
func addStrictFlag(c *cobra.Command, strict *bool) {
	c.Flags().BoolVar(strict, "strict", false, "make unknown configuration keys errors (exit 2) instead of warnings")
}

// topologyConfig is the topology's config: block with its origins.
func topologyConfig(f *topofile.File) *configSources {
	s := newConfigSources()
	s.add(maps.Clone(f.Config), topologyOrigin(f))
	return s
}
