package cmd

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
)

// clientFlags are the Kafka client configuration flags of the commands
// that talk to a cluster without running a topology (topic, replay
// record): a configuration file, as Kafka's tools take a
// --command-config, and -X overrides. run and migrate read the same keys
// from their own -c and -X.
type clientFlags struct {
	file      string
	overrides []string
}

func (f *clientFlags) add(c *cobra.Command, fileFlag, short string, persistent bool) {
	fl := c.Flags()
	if persistent {
		fl = c.PersistentFlags()
	}
	fl.StringVarP(&f.file, fileFlag, short, "", "read Kafka client configuration (security.protocol, ssl.*, sasl.*, ...) from `FILE`: YAML, or Java .properties")
	fl.StringArrayVarP(&f.overrides, "set", "X", nil, "set Kafka client configuration `KEY=VALUE`; repeatable")
}

// sources merges the file, the environment and the overrides, -X over
// the environment over the file.
func (f *clientFlags) sources() (*configSources, error) {
	src := newConfigSources()
	if f.file != "" {
		values, err := config.LoadFile(f.file)
		if err != nil {
			return nil, err
		}
		src.add(values, configFileOrigin(f.file))
	}
	addEnvironment(src)
	for _, o := range f.overrides {
		k, v, err := config.ParseAssignment(o)
		if err != nil {
			return nil, usageErrorf("-X %s", err)
		}
		src.set(k, v, "flag -X")
	}
	return src, nil
}

// resolveProviders replaces ${file:...}, ${env:...} and ${dir:...} in
// s's values (config.ResolveProviders).
func resolveProviders(s *configSources) error {
	resolved, err := config.ResolveProviders(s.values)
	if err != nil {
		return err
	}
	s.values = resolved
	return nil
}

// connOptions checks the configuration (reporting on c's stderr) and
// returns how a tool's clients connect: the admin's connection, which
// its consumer must share.
func (f *clientFlags) connOptions(c *cobra.Command) ([]kgo.Opt, error) {
	src, err := f.sources()
	if err != nil {
		return nil, err
	}
	var report configReport
	report.check(src, false)
	if err := report.finish(c); err != nil {
		return nil, err
	}
	if err := resolveProviders(src); err != nil {
		return nil, err
	}
	cfg := config.New(src.values)
	if k := conn.Differ(cfg.ForClient(config.Admin), cfg.ForClient(config.Consumer)); k != "" {
		return nil, fmt.Errorf("config %s differs between the admin and the consumer prefixes: %s reads and lists topics through one client", k, c.CommandPath())
	}
	return kafka.ConnOptions(cfg, config.Admin, nil)
}

// explainConn makes an authentication or authorization failure name its
// cause (conn.Explain); other errors come back as they are.
func explainConn(err error, operation, resource string) error {
	if err == nil || !conn.Fatal(err) {
		return err
	}
	var e *conn.Error
	if errors.As(err, &e) {
		return err
	}
	return conn.Explain(err, operation, resource)
}

// configFileOrigin names a line of a -c file, YAML or properties.
func configFileOrigin(file string) configOrigin {
	if config.IsProperties(file) {
		return propertiesOrigin(file)
	}
	return fileOrigin("", file)
}

func propertiesOrigin(file string) configOrigin {
	var lines map[string]int
	return func(key string) string {
		if lines == nil {
			lines = config.FileKeyLines(file, readFileOrNil(file))
		}
		if n, ok := lines[key]; ok {
			return fmt.Sprintf("%s:%d", file, n)
		}
		return strings.TrimSpace(file)
	}
}

func readFileOrNil(path string) []byte {
	data, _ := os.ReadFile(path)
	return data
}

// envPrefix starts the environment variable of every configuration key.
const envPrefix = "STOATCTL_"

// EnvName is the environment variable that sets key: STOATCTL_, then the
// key upper-cased with each dot an underscore and each hyphen two
// (STOATCTL_SASL_JAAS_CONFIG, STOATCTL_PRODUCER_COMPRESSION_TYPE,
// STOATCTL_STOATFLOW_COMMIT__BARRIER_INTERVAL__MS), as container images of
// Kafka name theirs.
func EnvName(key string) string {
	return envPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "__").Replace(key))
}

// envKeys are the keys an environment variable may set: every key of the
// catalogue, and every Kafka client key under each prefix its clients
// read. A variable is looked up by name, so an unrelated STOATCTL_
// variable (STOATCTL_HTTP_TOKEN) is never read as a key.
func envKeys() []string {
	var out []string
	for _, k := range config.Catalogue() {
		out = append(out, k.Name)
		for _, c := range k.Clients {
			prefixes := []string{string(c) + "."}
			if c == config.Consumer {
				prefixes = []string{"consumer.", "main.consumer.", "restore.consumer.", "global.consumer."}
			}
			for _, p := range prefixes {
				out = append(out, p+k.Name)
			}
		}
	}
	return out
}

// addEnvironment adds the keys set by environment variables to s, each
// from its variable.
func addEnvironment(s *configSources) {
	for _, k := range envKeys() {
		name := EnvName(k)
		if v, ok := os.LookupEnv(name); ok {
			s.set(k, v, "environment "+name)
		}
	}
}
