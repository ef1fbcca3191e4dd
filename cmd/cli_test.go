package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/golden"
)

// testStamp makes version output deterministic but for the toolchain.
var testStamp = WithStamp("v0.0.0-test", "abc1234")

// Each case runs stoatctl in-process and compares its exit code, stdout and
// stderr with testdata/<golden>.golden. The exit code is checked against
// the table too, so -update cannot bless a wrong one.
var cliTests = []struct {
	golden string
	args   []string
	code   int
	mask   func(string) string
}{
	{"topology_list", []string{"topology", "list"}, ExitOK, nil},
	{"topology_list_json", []string{"topology", "list", "-o", "json"}, ExitOK, nil},
	{"topology_describe_uppercase", []string{"topology", "describe", "uppercase"}, ExitOK, nil},
	{"topology_describe_word_count", []string{"topology", "describe", "word-count"}, ExitOK, nil},
	{"topology_describe_rekey_topic", []string{"topology", "describe", "testdata/rekey-topic-topology.yaml"}, ExitOK, nil},
	{"topology_describe_rekey_topic_json", []string{"topology", "describe", "testdata/rekey-topic-topology.yaml", "-o", "json"}, ExitOK, nil},
	{"topology_try_uppercase", []string{"topology", "try", "uppercase"}, ExitOK, nil},
	{"topology_try_uppercase_json", []string{"topology", "try", "uppercase", "--output=json"}, ExitOK, nil},
	{"topology_try_word_count_json", []string{"topology", "try", "word-count", "-o", "json"}, ExitOK, nil},
	{"version", []string{"version"}, ExitOK, maskVersion},
	{"version_json", []string{"version", "-o", "json"}, ExitOK, maskVersion},
	{"version_yaml", []string{"version", "-o", "yaml"}, ExitOK, maskVersion},
	{"root_version", []string{"--version"}, ExitOK, nil},
	{"usage_completion_unknown_shell", []string{"completion", "tcsh"}, ExitUsage, nil},
	{"usage_run_broker_port_with_b", []string{"run", "-t", "word-count", "-b", "127.0.0.1:1", "--broker-port", "0"}, ExitUsage, nil},
	{"usage_run_partitions_with_bootstrap_x", []string{"run", "-t", "word-count", "-X", "bootstrap.servers=127.0.0.1:1", "--partitions", "2"}, ExitUsage, nil},
	{"usage_run_data_dir_with_b", []string{"run", "-t", "word-count", "-b", "127.0.0.1:1", "--broker-data-dir", "/tmp/x"}, ExitUsage, nil},

	{"usage_unknown_flag", []string{"topology", "try", "uppercase", "--bogus"}, ExitUsage, nil},
	{"usage_bad_output_format", []string{"topology", "list", "-o", "xml"}, ExitUsage, nil},
	{"usage_unknown_command", []string{"topolgy", "list"}, ExitUsage, nil},
	{"usage_unknown_subcommand", []string{"topology", "run", "uppercase"}, ExitUsage, nil},
	{"usage_missing_argument", []string{"topology", "describe"}, ExitUsage, nil},
	{"usage_extra_argument", []string{"topology", "try", "uppercase", "word-count"}, ExitUsage, nil},
	{"usage_version_argument", []string{"version", "now"}, ExitUsage, nil},
	{"broker_help", []string{"broker", "--help"}, ExitOK, nil},
	{"usage_broker_bad_topic", []string{"broker", "--topic", "no/slash"}, ExitUsage, nil},
	{"usage_broker_bad_partitions", []string{"broker", "--topic", "orders:0"}, ExitUsage, nil},
	{"usage_broker_topic_twice", []string{"broker", "-t", "orders:2", "-t", "orders:3"}, ExitUsage, nil},
	{"usage_broker_port", []string{"broker", "--port", "70000"}, ExitUsage, nil},
	{"usage_broker_log_level", []string{"broker", "--log-level", "loud"}, ExitUsage, nil},
	{"usage_broker_argument", []string{"broker", "now"}, ExitUsage, nil},
	{"unknown_example", []string{"topology", "try", "nope"}, ExitFailure, maskKnownExamples},
	{"unknown_example_describe", []string{"topology", "describe", "nope"}, ExitFailure, maskKnownExamples},
}

func TestCLI(t *testing.T) {
	for _, tc := range cliTests {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, &stdout, &stderr, testStamp)
			if code != tc.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stderr.String())
			}
			if tc.code == ExitOK && stderr.Len() > 0 {
				t.Errorf("stoatctl %s succeeded but wrote to stderr:\n%s", strings.Join(tc.args, " "), stderr.String())
			}
			if tc.code != ExitOK && stdout.Len() > 0 {
				t.Errorf("stoatctl %s failed but wrote to stdout:\n%s", strings.Join(tc.args, " "), stdout.String())
			}
			got := transcript(tc.args, code, stdout.String(), stderr.String())
			if tc.mask != nil {
				got = tc.mask(got)
			}
			checkGolden(t, tc.golden, got)
		})
	}
}

// transcript lays a run out as a golden file: the command line, the exit
// code, then stdout and stderr as txtar-style sections.
func transcript(args []string, code int, stdout, stderr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ stoatctl %s\n", strings.Join(args, " "))
	fmt.Fprintf(&b, "exit %d\n", code)
	b.WriteString("-- stdout --\n")
	b.WriteString(stdout)
	b.WriteString("-- stderr --\n")
	b.WriteString(stderr)
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, "./cmd", filepath.Join("testdata", name+".golden"), got)
}

// maskVersion hides what depends on the toolchain and machine: the go and
// platform fields in the text, json and yaml layouts.
var versionMasks = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^(\s*"(?:go|platform|rocksdb)": ")[^"]*`),
	regexp.MustCompile(`(?m)^((?:go|platform|rocksdb):? +)\S.*$`),
}

func maskVersion(s string) string {
	for _, re := range versionMasks {
		s = re.ReplaceAllString(s, "${1}<masked>")
	}
	return s
}

// maskKnownExamples hides the list of known examples, which grows.
func maskKnownExamples(s string) string {
	return regexp.MustCompile(`\(known: [^)]*\)`).ReplaceAllString(s, "(known: <examples>)")
}

func TestVersionJSONShape(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"version", "-o", "json"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, stdout.String())
	}
	for _, key := range []string{"module", "version", "commit", "go", "platform", "stateBackends", "rocksdb"} {
		if _, ok := v[key]; !ok {
			t.Errorf("version -o json has no %q: %s", key, stdout.String())
		}
	}
	if len(v) != 7 {
		t.Errorf("version -o json has %d fields, want 7: %s", len(v), stdout.String())
	}
}

func TestUnknownExampleListsKnownNames(t *testing.T) {
	var stdout, stderr bytes.Buffer
	Run([]string{"topology", "try", "nope"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "uppercase") {
		t.Fatalf("error does not list the known examples:\n%s", stderr.String())
	}
}

func TestGroupWithoutSubcommandPrintsHelp(t *testing.T) {
	for _, args := range [][]string{{}, {"topology"}} {
		var stdout, stderr bytes.Buffer
		if code := Run(args, &stdout, &stderr); code != ExitOK || !strings.Contains(stdout.String(), "Available Commands:") {
			t.Errorf("stoatctl %s: exit %d, stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
}

func TestTextValue(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, "<null>"},
		{"plain words", "plain words"},
		{"", `""`},
		{"tab\there", `"tab\there"`},
		{"line\n", `"line\n"`},
		{int64(42), "42"},
		{[]byte("raw"), `"raw"`},
	}
	for _, tc := range tests {
		if got := textValue(tc.in); got != tc.want {
			t.Errorf("textValue(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestRunBanner: how run tells the user to reach the embedded broker, for
// a topology of one input and one output and one of two inputs, in
// testdata/run_banner_<name>.golden. Every input gets a kcat line, every
// output a topic read line that decodes it.
func TestRunBanner(t *testing.T) {
	tests := []struct {
		name, ref      string
		sources, sinks []string
	}{
		{"word_count", "word-count", []string{"lines"}, []string{"word-counts"}},
		{"two_inputs", "fixtures/enrich-orders/topology.yaml", []string{"customers", "orders"}, []string{"enriched-orders"}},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		writeBanner(&b, "127.0.0.1:9092", tc.ref, tc.sources, tc.sinks)
		checkGolden(t, "run_banner_"+tc.name, b.String())
	}
}
