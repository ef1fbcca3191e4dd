package cmd

import (
	"bytes"
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
	{"topology_validate_file_errors", []string{"topology", "validate", "-t", "testdata/topology_bad.yaml"}, ExitFailure},
	{"topology_validate_file_missing", []string{"topology", "validate", "-t", "testdata/no-such-topology.yaml"}, ExitFailure},
	{"usage_validate_no_file", []string{"topology", "validate"}, ExitUsage},
	{"usage_validate_argument", []string{"topology", "validate", "x.yaml"}, ExitUsage},
	{"usage_describe_name_and_file", []string{"topology", "describe", "uppercase", "-t", "x.yaml"}, ExitUsage},
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
			if tc.code != ExitOK && stdout.Len() > 0 {
				t.Errorf("stoatctl %s failed but wrote to stdout:\n%s", strings.Join(tc.args, " "), stdout.String())
			}
			checkGolden(t, tc.golden, transcript(tc.args, code, stdout.String(), stderr.String()))
		})
	}
}
