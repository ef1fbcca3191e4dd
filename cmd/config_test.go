package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/replay"
)

// configTests are the catalogue commands and the configuration checks of
// run, replay and topology validate, compared with testdata/<golden>.golden.
// None of them starts a broker: every run case fails its check first.
var configTests = []struct {
	golden string
	args   []string
	code   int
}{
	{"config_list", []string{"config", "list"}, ExitOK},
	{"config_list_json", []string{"config", "list", "-o", "json"}, ExitOK},
	{"config_describe", []string{"config", "describe", "num.stream.threads"}, ExitOK},
	{"config_describe_enum", []string{"config", "describe", "default.deserialization.exception.handler"}, ExitOK},
	{"config_describe_json", []string{"config", "describe", "state.dir", "-o", "json"}, ExitOK},
	{"config_describe_unknown", []string{"config", "describe", "num.stream.thread"}, ExitFailure},
	{"config_describe_no_key", []string{"config", "describe"}, ExitUsage},
	{"config_describe_secret", []string{"config", "describe", "sasl.jaas.config"}, ExitOK},
	{"config_check_properties", []string{"config", "check", "testdata/config/streams.properties"}, ExitOK},
	{"config_check_json", []string{"config", "check", "testdata/config/streams.properties", "-o", "json"}, ExitOK},
	{"run_strict_properties_file", []string{"run", "-t", "word-count", "-c", "testdata/config/typo.properties", "--strict"}, ExitUsage},
	{"run_refused_client_key", []string{"run", "-t", "word-count", "-X", "acks=1", "-X", "ssl.truststore.location=testdata/config/none.jks", "-X", "security.protocol=SSL"}, ExitFailure},

	{"run_strict_typo", []string{"run", "-t", "word-count", "-X", "num.stream.thread=4", "--strict"}, ExitUsage},
	{"run_bad_value", []string{"run", "-t", "word-count", "-X", "num.stream.threads=four", "-X", "foo.bar=1"}, ExitUsage},
	{"run_strict_config_file", []string{"run", "-t", "word-count", "-c", "testdata/config/typo.yaml", "--strict"}, ExitUsage},
	{"run_strict_topology_file", []string{"run", "-t", "testdata/config/topology.yaml", "--strict"}, ExitUsage},
	{"run_bad_value_topology_file", []string{"run", "-t", "testdata/config/bad-value.yaml"}, ExitFailure},
	{"validate_config_warns", []string{"topology", "validate", "-t", "testdata/config/topology.yaml"}, ExitOK},
	{"validate_config_strict", []string{"topology", "validate", "-t", "testdata/config/topology.yaml", "--strict"}, ExitUsage},
	{"validate_config_bad_value", []string{"topology", "validate", "-t", "testdata/config/bad-value.yaml"}, ExitFailure},
	{"replay_config_warns", []string{"replay", "testdata/config/typo.fixture.yaml"}, ExitOK},
	{"replay_config_strict", []string{"replay", "--strict", "testdata/config/typo.fixture.yaml"}, ExitUsage},
}

func TestConfigCommands(t *testing.T) {
	for _, tc := range configTests {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, &stdout, &stderr, testStamp)
			if code != tc.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stderr.String())
			}
			if tc.code != ExitOK && stdout.Len() > 0 {
				t.Errorf("stoatctl %s failed but wrote to stdout:\n%s", strings.Join(tc.args, " "), stdout.String())
			}
			checkGolden(t, tc.golden, transcript(tc.args, code, stdout.String(), stderr.String()))
		})
	}
}

// TestRunStrictNamesTheKeyAndStartsNothing is the acceptance check of
// issue 16: -X num.stream.thread=4 --strict exits 2 naming
// num.stream.threads, before any broker or engine starts (nothing on
// stdout, where the embedded broker's address would go).
func TestRunStrictNamesTheKeyAndStartsNothing(t *testing.T) {
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := Run([]string{"run", "-t", "word-count", "-X", "num.stream.thread=4", "--strict", "--broker-port", "0", "--http", "off"}, &stdout, &stderr)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitUsage, stderr.String())
	}
	if !strings.Contains(stderr.String(), "did you mean num.stream.threads?") {
		t.Errorf("stderr does not name num.stream.threads:\n%s", stderr.String())
	}
	if stdout.Len() > 0 || strings.Contains(stderr.String(), "embedded broker") {
		t.Errorf("something started: stdout %q, stderr:\n%s", stdout.String(), stderr.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to refuse", took)
	}
}

// TestRunWarnsBeforeStarting: without --strict the same typo is a warning
// on stderr, printed before the embedded broker starts; the run goes on
// and stops cleanly when cancelled.
func TestRunWarnsBeforeStarting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, []string{"run", "-t", "word-count", "-X", "num.stream.thread=4", "--broker-port", "0", "--http", "off", "--log-level", "error"}, stdout, stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for stdout.String() == "" && time.Now().Before(deadline) {
		select {
		case code := <-done:
			t.Fatalf("run ended with %d before starting; stderr:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if stdout.String() == "" {
		t.Fatalf("the embedded broker did not start; stderr:\n%s", stderr.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("run cancelled exited %d, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	out := stderr.String()
	warning := "stoatctl run: warning: flag -X: unknown configuration key num.stream.thread; did you mean num.stream.threads?\n"
	w, b := strings.Index(out, warning), strings.Index(out, "embedded broker on")
	if w < 0 || b < 0 || w > b {
		t.Errorf("want the warning before the broker starts; stderr:\n%s", out)
	}
	if strings.Count(out, "warning:") != 1 {
		t.Errorf("want one warning line; stderr:\n%s", out)
	}
}

// TestCatalogueCoversReaders holds the catalogue in step with the keys
// the engine and its Kafka client read under their own constants and
// literals (engine/engine.go, engine/kafka/client.go, groupOptions in
// engine/runtime.go).
func TestCatalogueCoversReaders(t *testing.T) {
	for _, k := range []string{
		engine.BarrierIntervalMs, engine.BarrierIntervalFactor, engine.BarrierMinIntervalMs, engine.BarrierMaxIntervalMs,
		engine.LaneQueueSize, engine.CreateTopics, engine.ShutdownTimeoutMs,
		engine.CommitHeldRecords, engine.RestoreChunkRecords, engine.RestoreRocksDBBatchBytes, engine.RestoreFetchMaxBytes, engine.BufferMemory,
		engine.MetricsRecordingLevel, engine.InfoShowWatermarks, engine.ProgressLogIntervalMs, engine.StallWarningMs,
		kafka.ClientID, kafka.AutoOffsetReset, kafka.InstanceID,
		"session.timeout.ms", "heartbeat.interval.ms", "group.instance.id",
	} {
		if !config.Known(k) {
			t.Errorf("%s is read by the engine but not in the catalogue", k)
		}
	}
	k, _ := config.Describe(config.ProcessingGuarantee)
	if strings.Join(k.Values, ",") != kafka.ExactlyOnceV2+","+kafka.AtLeastOnce {
		t.Errorf("processing.guarantee values %v differ from the Kafka client's", k.Values)
	}
}

// TestShippedConfigurationsAreClean: the examples, the topology files and
// the fixtures in the repository set no unknown key and no bad value.
func TestShippedConfigurationsAreClean(t *testing.T) {
	check := func(where string, values map[string]string) {
		for _, p := range config.Check(values) {
			if p.Kind != config.Ignored {
				t.Errorf("%s: %s", where, p)
			}
		}
	}
	for _, ex := range examples.All() {
		check("example "+ex.Name, ex.Config)
	}
	var files []string
	for _, root := range []string{"../fixtures", "../replay/testdata"} {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				files = append(files, path)
			}
			return nil
		})
	}
	for _, path := range files {
		if strings.HasSuffix(path, ".fixture.yaml") {
			if f, err := replay.Load(path); err == nil {
				check(path, f.Driver.Config)
			}
			continue
		}
		if f, err := topofile.Load(path); err == nil {
			check(path, f.Config)
		}
	}
}

func TestConfigListJSONShape(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"config", "list", "-o", "json"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rows []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(config.Catalogue()) {
		t.Fatalf("%d rows, want %d", len(rows), len(config.Catalogue()))
	}
	for _, r := range rows {
		for _, f := range []string{"name", "type", "description", "readBy"} {
			if _, ok := r[f]; !ok {
				t.Errorf("row %v has no %q", r["name"], f)
			}
		}
	}
}

// TestCatalogueCoversSourceKeys scans the engine's, the Kafka client's and
// the test driver's sources for configuration keys: stoatflow.* and
// test.driver.* string constants, and string literals handed to the
// config accessors. Each must be in the catalogue, so that a key added to
// the engine without a catalogue entry fails here.
func TestCatalogueCoversSourceKeys(t *testing.T) {
	keyLike := regexp.MustCompile(`^(stoatflow|test\.driver)\.[a-z0-9.-]+$`)
	accessors := map[string]bool{"Int": true, "Bool": true, "String": true, "IsSet": true, "Lookup": true, "OneOf": true, "Verdict": true}
	found := map[string]string{}
	for _, dir := range []string{"../engine", "../engine/kafka", "../engine/task", "../engine/topology", "../engine/lane", "../testdriver"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for _, v := range n.Values {
						if s, ok := stringLit(v); ok && keyLike.MatchString(s) {
							found[s] = path
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && accessors[sel.Sel.Name] && len(n.Args) > 0 {
						if s, ok := stringLit(n.Args[0]); ok && strings.Contains(s, ".") {
							found[s] = path
						}
					}
				}
				return true
			})
		}
	}
	if len(found) < 10 {
		t.Fatalf("found only %d keys in the sources; is the scan broken? %v", len(found), found)
	}
	for k, path := range found {
		if !config.Known(k) {
			t.Errorf("%s (read in %s) is not in the catalogue (engine/config/catalog.go)", k, path)
		}
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
