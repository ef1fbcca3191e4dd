package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/fixtures/examples"
)

func emptyTopology() *topology.Topology { return topology.New() }

// forgetRefusals undoes what a test's refused registrations leave behind,
// so that Run works again in the tests after it.
func forgetRefusals(t *testing.T) {
	t.Cleanup(func() {
		refused.mu.Lock()
		refused.errs = nil
		refused.mu.Unlock()
	})
}

// TestRegisterRefuses: a name a bundled example holds, a name registered
// twice and an invalid registration are refused with an error saying
// which and why, and Run then refuses to run any command.
func TestRegisterRefuses(t *testing.T) {
	if err := Register(Topology{Name: "cli-test-once", Build: emptyTopology}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		t        Topology
		sentinel error
		want     string
	}{
		{"a bundled example's name", Topology{Name: "word-count", Build: emptyTopology}, ErrNameTaken,
			"cli: register word-count: name already registered: stoatctl bundles an example called word-count (bundled: enrich-orders, running-total, uppercase, word-count); choose another name"},
		{"registered twice", Topology{Name: "cli-test-once", Build: emptyTopology}, ErrNameTaken,
			"cli: register cli-test-once: name already registered: this program registers cli-test-once twice"},
		{"a file's name", Topology{Name: "orders.yaml", Build: emptyTopology}, ErrInvalid,
			`cli: register "orders.yaml": invalid topology registration: the name must be lower-case words joined by dashes`},
		{"no build", Topology{Name: "no-build"}, ErrInvalid,
			"cli: register no-build: invalid topology registration: Build is nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forgetRefusals(t)
			err := Register(tc.t)
			if !errors.Is(err, tc.sentinel) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Register: %v\nwant an error wrapping %q starting %q", err, tc.sentinel, tc.want)
			}
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{"topology", "list"}, &stdout, &stderr)
			if code != 1 || stdout.Len() > 0 || stderr.String() != "stoatctl: "+err.Error()+"\n" {
				t.Fatalf("after a refused Register, topology list exited %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, nothing on stdout and the refusal on stderr",
					code, stdout.String(), stderr.String())
			}
		})
	}
	if ex, _ := examples.Lookup("word-count"); !examples.Bundled("word-count") || ex.Build == nil {
		t.Fatal("a refused registration replaced the bundled word-count")
	}
}

// TestRegisteredTopologyIsKnownToCommands: a registered topology is
// described and listed by name beside the bundled examples, through the
// same command line stoatctl's main runs.
func TestRegisteredTopologyIsKnownToCommands(t *testing.T) {
	if err := Register(Topology{Name: "cli-test-known", Description: "registered by a test", Build: emptyTopology}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"topology", "list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("topology list: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"cli-test-known  registered by a test", "word-count "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("topology list lacks %q:\n%s", want, stdout.String())
		}
	}
}
