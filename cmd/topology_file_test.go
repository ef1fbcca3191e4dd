package cmd

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// Topology files through describe -t and validate -t, compared with
// testdata/<golden>.golden like the cases in cli_test.go.
var topologyFileTests = []struct {
	golden string
	args   []string
	code   int
}{
	{"topology_describe_file", []string{"topology", "describe", "-t", "../fixtures/word-count/topology.yaml"}, ExitOK},
	{"topology_describe_file_example", []string{"topology", "describe", "--topology", "uppercase"}, ExitOK},
	{"topology_validate_file", []string{"topology", "validate", "-t", "../fixtures/clicks-per-minute/topology.yaml"}, ExitOK},
	{"topology_validate_example", []string{"topology", "validate", "-t", "word-count"}, ExitOK},
	{"topology_describe_store_backends", []string{"topology", "describe", "-t", "testdata/store-backends-topology.yaml"}, ExitOK},
	{"topology_validate_store_backends", []string{"topology", "validate", "-t", "testdata/store-backends-topology.yaml"}, ExitOK},
	{"topology_validate_file_errors", []string{"topology", "validate", "-t", "testdata/topology_bad.yaml"}, ExitFailure},
	{"topology_validate_file_missing", []string{"topology", "validate", "-t", "testdata/no-such-topology.yaml"}, ExitUsage},
	{"usage_validate_no_file", []string{"topology", "validate"}, ExitUsage},
	{"usage_describe_name_and_file", []string{"topology", "describe", "uppercase", "-t", "x.yaml"}, ExitUsage},

	// The file as the argument, as docs/topology-files.md shows it, and
	// -o json (issue 16).
	{"topology_describe_file_positional", []string{"topology", "describe", "../fixtures/word-count/topology.yaml"}, ExitOK},
	{"topology_describe_file_json", []string{"topology", "describe", "../fixtures/word-count/topology.yaml", "-o", "json"}, ExitOK},
	{"topology_describe_example_json", []string{"topology", "describe", "enrich-orders", "-o", "json"}, ExitOK},
	{"topology_validate_file_positional", []string{"topology", "validate", "../fixtures/clicks-per-minute/topology.yaml"}, ExitOK},
	{"topology_validate_file_json", []string{"topology", "validate", "../fixtures/clicks-per-minute/topology.yaml", "-o", "json"}, ExitOK},
	{"topology_validate_file_errors_json", []string{"topology", "validate", "testdata/topology_bad.yaml", "-o", "json"}, ExitFailure},
	{"topology_validate_positional_missing", []string{"topology", "validate", "x.yaml"}, ExitUsage},
	{"usage_validate_two_files", []string{"topology", "validate", "a.yaml", "b.yaml"}, ExitUsage},
	{"topology_try_flag", []string{"topology", "try", "-t", "uppercase"}, ExitOK},
	{"usage_try_file", []string{"topology", "try", "-t", "../fixtures/word-count/topology.yaml"}, ExitUsage},
}

func TestTopologyFileCommands(t *testing.T) {
	for _, tc := range topologyFileTests {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, &stdout, &stderr, testStamp)
			if code != tc.code {
				t.Errorf("stoatctl %s exited %d, want %d\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stderr.String())
			}
			if tc.code == ExitOK && stderr.Len() > 0 {
				t.Errorf("stoatctl %s succeeded but wrote to stderr:\n%s", strings.Join(tc.args, " "), stderr.String())
			}
			if tc.code != ExitOK && stdout.Len() > 0 && !slices.Contains(tc.args, "json") {
				t.Errorf("stoatctl %s failed but wrote to stdout:\n%s", strings.Join(tc.args, " "), stdout.String())
			}
			checkGolden(t, tc.golden, transcript(tc.args, code, stdout.String(), stderr.String()))
		})
	}
}

// TestMissingFileIsAUsageError: a file named on the command line that does
// not exist exits 2 in every command, as it does in replay (the exit codes
// differed, 1 or 2; issue 16).
func TestMissingFileIsAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "nope.fixture.yaml"},
		{"topology", "describe", "nope.yaml"},
		{"topology", "describe", "-t", "nope.yaml"},
		{"topology", "validate", "nope.yaml"},
		{"run", "-t", "nope.yaml"},
		{"run", "-t", "uppercase", "-c", "nope.yaml"},
		{"topic", "read", "-t", "x", "--topology", "nope.yaml", "-b", "127.0.0.1:1"},
		{"replay", "record", "-b", "127.0.0.1:1", "-t", "x", "--topology", "nope.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(args, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "nope") {
			t.Errorf("stoatctl %s: exit %d, want %d naming the file\n%s", strings.Join(args, " "), code, ExitUsage, stderr.String())
		}
	}
}
