package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/rest"
	"github.com/stoatflow/stoatctl/internal/output"
)

// walk calls f on every command of the tree but cobra's own (help,
// completion).
func walk(c *cobra.Command, f func(*cobra.Command)) {
	if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
		return
	}
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

// pathArgs is a command's path without "stoatctl".
func pathArgs(c *cobra.Command) []string {
	return strings.Fields(c.CommandPath())[1:]
}

// TestEveryCommandFollowsTheConvention checks docs/cli.md's rules on
// every command in the tree, so that a new command cannot miss them: -o
// is internal/output's Format with text, json and yaml (and table where
// text is one); the brokers' flag is -b/--bootstrap-server and reads
// --bootstrap-servers too; an unknown flag exits 2.
func TestEveryCommandFollowsTheConvention(t *testing.T) {
	root := NewRootCommand()
	var withOutput []string
	walk(root, func(c *cobra.Command) {
		path := c.CommandPath()
		if fl := c.Flags().Lookup("output"); fl != nil {
			withOutput = append(withOutput, path)
			f, ok := fl.Value.(*output.Format)
			switch {
			case !ok:
				t.Errorf("%s: -o is a %T, not internal/output's Format", path, fl.Value)
			case fl.Shorthand != "o":
				t.Errorf("%s: --output's shorthand is %q, want o", path, fl.Shorthand)
			case f.Usage() != "text|json|yaml" && f.Usage() != "table|text|json|yaml":
				t.Errorf("%s: -o takes %s, want text|json|yaml or table|text|json|yaml", path, f.Usage())
			}
		}
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if strings.Contains(fl.Name, "bootstrap") && (fl.Name != "bootstrap-server" || fl.Shorthand != "b") {
				t.Errorf("%s: brokers flag -%s/--%s, want -b/--bootstrap-server", path, fl.Shorthand, fl.Name)
			}
		})
		if fl := c.Flags().Lookup("bootstrap-server"); fl != nil {
			if err := c.Flags().Parse([]string{"--bootstrap-servers", "alias:9092"}); err != nil || fl.Value.String() != "alias:9092" {
				t.Errorf("%s: --bootstrap-servers alias:9092 gave %q, %v", path, fl.Value.String(), err)
			}
		}
		var stdout, stderr bytes.Buffer
		args := append(pathArgs(c), "--no-such-flag")
		if code := Run(args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("stoatctl %s exited %d, want %d (usage)\n%s", strings.Join(args, " "), code, ExitUsage, stderr.String())
		}
	})
	// Every command with -o is walked through its formats below, or says
	// here why not.
	covered := map[string]bool{}
	for _, g := range formatGoldens {
		covered["stoatctl "+g.command] = true
	}
	for _, s := range formatShapes {
		covered["stoatctl "+s.command] = true
	}
	for _, path := range withOutput {
		if !covered[path] {
			if why, ok := formatsElsewhere[path]; ok {
				t.Logf("%s: its formats are tested elsewhere: %s", path, why)
				continue
			}
			t.Errorf("%s has -o but TestOutputFormats does not walk it", path)
		}
	}
}

// formatsElsewhere are the commands with -o that TestOutputFormats cannot
// run on its own, and the test that runs their formats.
var formatsElsewhere = map[string]string{
	"stoatctl migrate shadow": "it needs a Kafka Streams application's committed state; TestMigrateShadowCommand runs it with -o json and text (yaml is the JSON document through output.Format)",
}

// formatGoldens are commands whose output is stable: each of their -o
// choices is compared with testdata/output_<name>_<format>.golden.
// ADDR and URL in args are an embedded broker's address and a REST
// endpoint's.
var formatGoldens = []struct {
	name, command string
	args          []string
	mask          func(string) string
}{
	{"version", "version", nil, maskVersion},
	{"config_describe", "config describe", []string{"processing.guarantee"}, nil},
	{"config_check", "config check", []string{"testdata/config/streams.properties"}, nil},
	{"topology_list", "topology list", nil, nil},
	{"topology_describe", "topology describe", []string{"uppercase"}, nil},
	{"topology_try", "topology try", []string{"uppercase"}, nil},
	{"topology_validate", "topology validate", []string{"-t", "testdata/config/topology.yaml"}, nil},
	{"replay", "replay", []string{"testdata/replay/pass.fixture.yaml"}, nil},
	{"inspect_info", "inspect info", []string{"--url", "URL"}, nil},
	{"inspect_watermarks", "inspect watermarks", []string{"--url", "URL"}, nil},
	{"inspect_topology", "inspect topology", []string{"--url", "URL"}, nil},
	{"inspect_metrics", "inspect metrics", []string{"--url", "URL"}, nil},
	{"topic_list", "topic list", []string{"-b", "ADDR"}, nil},
	{"topic_read", "topic read", []string{"-b", "ADDR", "-t", "seeded", "--limit", "1"}, nil},
	// The plan of a stopped Kafka Streams word count, as TestMigrateCommand
	// lays it out.
	{"migrate_dry_run", "migrate", []string{"--from-application-id", "ks", "--application-id", "ours", "-t", "../interop/topologies/word-count.yaml", "-b", "ADDR", "--dry-run"}, nil},
}

// formatShapes are commands whose output changes with the catalogue or
// the clock: each -o choice must succeed, and json and yaml must be the
// same document.
var formatShapes = []struct {
	command string
	args    []string
}{
	{"config list", nil},
	{"topic create", []string{"-b", "ADDR", "--dry-run", "later"}},
	{"watch watermarks", []string{"--url", "URL", "--once", "--samples", "1"}},
}

// TestOutputFormats runs every command with -o through each of its
// formats: against an embedded broker over TCP and the real REST server
// where they need one.
func TestOutputFormats(t *testing.T) {
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"seeded": 1, "lines": 2, "word-counts": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A fixed timestamp, so that topic read's golden files hold.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	err = cl.ProduceSync(t.Context(), &kgo.Record{Topic: "seeded", Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1790071560000)}).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	fakeKafkaStreamsWordCount(t, b.Addr())
	url := serveWithMetrics(t)
	expand := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = strings.NewReplacer("ADDR", b.Addr(), "URL", url).Replace(a)
		}
		return out
	}
	formatsOf := func(command string) []string {
		c, _, err := NewRootCommand().Find(strings.Fields(command))
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		return c.Flags().Lookup("output").Value.(*output.Format).Allowed()
	}
	run := func(t *testing.T, args []string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Run(args, &stdout, &stderr, testStamp)
		return code, stdout.String(), stderr.String()
	}
	for _, g := range formatGoldens {
		for _, format := range formatsOf(g.command) {
			t.Run(g.name+"_"+format, func(t *testing.T) {
				args := append(append(strings.Fields(g.command), expand(g.args)...), "-o", format)
				code, stdout, stderr := run(t, args)
				if code != ExitOK {
					t.Fatalf("stoatctl %s exited %d\n%s", strings.Join(args, " "), code, stderr)
				}
				got := strings.NewReplacer(url, "http://127.0.0.1:<port>").Replace(transcript(args, code, stdout, stderr))
				got = maskBroker("")(got)
				if g.mask != nil {
					got = g.mask(got)
				}
				checkGolden(t, "output_"+g.name+"_"+format, got)
			})
		}
		t.Run(g.name+"_json_is_yaml", func(t *testing.T) {
			sameDocument(t, run, append(strings.Fields(g.command), expand(g.args)...))
		})
	}
	for _, s := range formatShapes {
		for _, format := range formatsOf(s.command) {
			t.Run(strings.ReplaceAll(s.command, " ", "_")+"_"+format, func(t *testing.T) {
				args := append(append(strings.Fields(s.command), expand(s.args)...), "-o", format)
				if code, stdout, stderr := run(t, args); code != ExitOK || stdout == "" {
					t.Fatalf("stoatctl %s exited %d with %d bytes on stdout\n%s", strings.Join(args, " "), code, len(stdout), stderr)
				}
			})
		}
		t.Run(strings.ReplaceAll(s.command, " ", "_")+"_json_is_yaml", func(t *testing.T) {
			if s.command == "watch watermarks" {
				t.Skip("each run samples the engine at its own time: the two documents differ in their clock fields")
			}
			sameDocument(t, run, append(strings.Fields(s.command), expand(s.args)...))
		})
	}
}

// serveWithMetrics is serve(fixedEngine{}) with a fixed /metrics page.
func serveWithMetrics(t *testing.T) string {
	t.Helper()
	page := "# HELP stoatflow_records_in_total Records read.\n# TYPE stoatflow_records_in_total counter\n" +
		"stoatflow_records_in_total{topic=\"orders\"} 42\n"
	srv, err := rest.New(fixedEngine{}, rest.Options{Addr: "127.0.0.1:0", Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, page)
	})})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return "http://" + srv.Addr()
}

// sameDocument runs args with -o json and -o yaml and requires the same
// document: the same keys (camelCase, as the REST API's) and values.
func sameDocument(t *testing.T, run func(*testing.T, []string) (int, string, string), args []string) {
	t.Helper()
	code, js, stderr := run(t, append(slices.Clone(args), "-o", "json"))
	if code != ExitOK {
		t.Fatalf("-o json exited %d: %s", code, stderr)
	}
	code, ys, stderr := run(t, append(slices.Clone(args), "-o", "yaml"))
	if code != ExitOK {
		t.Fatalf("-o yaml exited %d: %s", code, stderr)
	}
	var fromJSON, fromYAML []any
	dec := json.NewDecoder(strings.NewReader(js))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("-o json: %v\n%s", err, js)
		}
		fromJSON = append(fromJSON, v)
	}
	ydec := yaml.NewDecoder(strings.NewReader(ys))
	for {
		var v any
		if err := ydec.Decode(&v); err != nil {
			break
		}
		fromYAML = append(fromYAML, v)
	}
	// topic read writes JSON Lines and one YAML list of the same
	// messages.
	if len(fromYAML) == 1 {
		l, isList := fromYAML[0].([]any)
		_, jsonList := fromJSON[0].([]any)
		if isList && (len(fromJSON) > 1 || !jsonList) {
			fromYAML = l
		}
	}
	if a, b := normalize(fromJSON), normalize(fromYAML); !reflect.DeepEqual(a, b) {
		t.Errorf("-o json and -o yaml differ:\njson: %v\nyaml: %v", a, b)
	}
}

// normalize makes JSON's and YAML's decodings comparable: numbers as
// float64, maps as map[string]any.
func normalize(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

// TestUnreachableExitsThree: a command whose broker or REST endpoint does
// not answer exits 3, whichever it is. (run tries its brokers for tens of
// seconds before it gives up, and is left out.)
func TestUnreachableExitsThree(t *testing.T) {
	closed := freeAddr(t) // nothing listens there now
	for _, args := range [][]string{
		{"topic", "list", "-b", closed},
		{"topic", "create", "t", "-b", closed},
		{"topic", "read", "-t", "t", "-b", closed},
		{"replay", "record", "-t", "t", "-b", closed},
		{"migrate", "--from-application-id", "ks", "-t", "../interop/topologies/word-count.yaml", "-b", closed, "--dry-run"},
		{"inspect", "info", "--url", "http://" + closed},
		{"watch", "watermarks", "--once", "--samples", "1", "--url", "http://" + closed},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(args, &stdout, &stderr); code != ExitUnreachable {
			t.Errorf("stoatctl %s exited %d, want %d\n%s", strings.Join(args, " "), code, ExitUnreachable, stderr.String())
		}
	}
}
