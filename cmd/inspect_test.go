package cmd

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/rest"
	"github.com/stoatflow/stoatctl/inspect"
)

// fixedEngine serves fixed documents through the real REST server, so
// that the inspect command is tested over real HTTP with stable output.
type fixedEngine struct{}

func (fixedEngine) Watermarks() (inspect.Watermarks, error) {
	return inspect.Watermarks{GlobalMs: 1790071560000, GlobalIso: "2026-09-22T10:06:00Z", AlignmentGroupMins: map[string]int64{},
		Partitions: map[string]inspect.PartitionWatermark{
			"orders:0": {WatermarkMs: 1790071560000, WatermarkIso: "2026-09-22T10:06:00Z", LastEventTimeMs: 1790071592000,
				LastEventTimeIso: "2026-09-22T10:06:32Z", IdlenessTimeoutMs: 300000},
			"orders:1": {WatermarkMs: 1790071058000, WatermarkIso: "2026-09-22T09:57:38Z", Idle: true, LastEventTimeMs: 1790071080000,
				LastEventTimeIso: "2026-09-22T09:58:00Z", IdlenessTimeoutMs: 120000},
		}}, nil
}
func (fixedEngine) Info() inspect.Info {
	return inspect.Info{ApplicationID: "orders", State: "RUNNING", Version: "v0.0.0-test", Topology: "1 sub-topologies", Lanes: 2,
		Partitions: map[string][]int32{"orders": {0, 1}}, EventTimeTracking: true}
}
func (fixedEngine) Topology() (string, any) {
	return "Topologies:\n   Sub-topology: 0\n", map[string]any{"applicationId": "orders", "subtopologies": []any{}}
}
func (fixedEngine) Live() inspect.Health {
	return inspect.Health{Status: inspect.StatusUp, State: "RUNNING"}
}
func (fixedEngine) Ready() inspect.Health {
	return inspect.Health{Status: inspect.StatusUp, State: "RUNNING"}
}
func (fixedEngine) Pause(string) inspect.Control {
	return inspect.Control{Paused: true, State: "RUNNING"}
}
func (fixedEngine) Resume(string) inspect.Control { return inspect.Control{State: "RUNNING"} }

type unavailable struct{ fixedEngine }

func (unavailable) Watermarks() (inspect.Watermarks, error) {
	return inspect.Watermarks{}, &rest.Unavailable{Code: inspect.CodeNotInitialised, Message: "the engine is not initialised yet"}
}

func serve(t *testing.T, b rest.Backend) string {
	t.Helper()
	srv, err := rest.New(b, rest.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return "http://" + srv.Addr()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestInspectCommands(t *testing.T) {
	up := serve(t, fixedEngine{})
	down := serve(t, unavailable{})
	nobody := "http://" + freeAddr(t)
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"inspect_watermarks_json", []string{"inspect", "watermarks", "--url", up, "-o", "json"}, ExitOK},
		{"inspect_watermarks_table", []string{"inspect", "watermarks", "--url", up}, ExitOK},
		{"inspect_watermarks_yaml", []string{"inspect", "watermarks", "--url", up, "-o", "yaml"}, ExitOK},
		{"inspect_info", []string{"inspect", "info", "--url", up}, ExitOK},
		{"inspect_topology", []string{"inspect", "topology", "--url", up}, ExitOK},
		{"inspect_topology_json", []string{"inspect", "topology", "--url", up, "-o", "json"}, ExitOK},
		{"inspect_watermarks_503", []string{"inspect", "watermarks", "--url", down}, ExitFailure},
		{"inspect_watermarks_503_json", []string{"inspect", "watermarks", "--url", down, "-o", "json"}, ExitFailure},
		{"inspect_unreachable", []string{"inspect", "watermarks", "--url", nobody}, ExitUnreachable},
		{"inspect_unreachable_json", []string{"inspect", "info", "--url", nobody, "-o", "json"}, ExitUnreachable},
		{"inspect_usage_bad_url", []string{"inspect", "info", "--url", "localhost:8080"}, ExitUsage},
		{"inspect_usage_bad_output", []string{"inspect", "info", "-o", "xml"}, ExitUsage},
		{"inspect_usage_unknown", []string{"inspect", "lag"}, ExitUsage},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tc.code, stderr.String())
			}
			got := transcript(tc.args, code, stdout.String(), stderr.String())
			got = strings.NewReplacer(up, "http://UP", down, "http://DOWN", nobody, "http://NOBODY", strings.TrimPrefix(nobody, "http://"), "NOBODY").Replace(got)
			checkGolden(t, tc.golden, got)
		})
	}
}

func TestHTTPOption(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		off, usage  bool
	}{
		{addr: "off", off: true}, {addr: "OFF", off: true}, {addr: "127.0.0.1:8080"}, {addr: "localhost:0"}, {addr: "[::1]:9000"},
		{addr: "0.0.0.0:8080", usage: true}, {addr: "0.0.0.0:8080", token: "t"}, {addr: "8080", usage: true},
		{addr: "127.0.0.1:99999", usage: true}, {addr: "127.0.0.1:http", usage: true},
	} {
		h, err := httpOption(tc.addr, tc.token)
		if (ExitCode(err) == ExitUsage) != tc.usage || (err == nil && (h == nil) != tc.off) {
			t.Errorf("--http %s token %q: %+v, %v", tc.addr, tc.token, h, err)
		}
	}
}

// TestTokenFromEnvironment: the token comes from $STOATCTL_HTTP_TOKEN
// when --http-token is not given, and --help never prints it.
func TestTokenFromEnvironment(t *testing.T) {
	t.Setenv(httpTokenEnv, "hunter2")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"run", "--help"}, &stdout, &stderr); code != ExitOK || strings.Contains(stdout.String(), "hunter2") {
		t.Fatalf("run --help: exit %d, prints the token: %v", code, strings.Contains(stdout.String(), "hunter2"))
	}
	stdout.Reset()
	stderr.Reset()
	// Beyond loopback the token from the environment is enough to pass
	// the usage check; the missing topology file then fails the run.
	code := Run([]string{"run", "-t", "testdata/no-such-topology.yaml", "--http", "0.0.0.0:0"}, &stdout, &stderr)
	if code == ExitUsage && strings.Contains(stderr.String(), "--http-token") {
		t.Fatalf("the environment's token was not used: %s", stderr.String())
	}
}
