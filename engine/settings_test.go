package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
)

// TestCadenceFitsTheTransactionTimeout: under exactly-once the longest
// barrier interval is at most a third of transaction.timeout.ms; defaults
// are lowered to fit, an interval set above it is refused naming both
// keys, and at-least-once has no transaction to fit.
func TestCadenceFitsTheTransactionTimeout(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"application.id": "fit", "bootstrap.servers": "localhost:9092", "state.dir": t.TempDir()}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name                 string
		cfg                  map[string]string
		max, interval, least time.Duration
		err                  string
	}{
		{name: "defaults fit the default timeout", cfg: base(), max: 5 * time.Second, interval: 500 * time.Millisecond, least: 150 * time.Millisecond},
		{name: "a short timeout lowers the default max", cfg: base("transaction.timeout.ms", "3000"), max: time.Second, interval: 500 * time.Millisecond, least: 150 * time.Millisecond},
		{name: "a very short timeout lowers every default", cfg: base("transaction.timeout.ms", "1200"), max: 400 * time.Millisecond, interval: 400 * time.Millisecond, least: 150 * time.Millisecond},
		{name: "a max set above a third is refused", cfg: base("transaction.timeout.ms", "6000", BarrierMaxIntervalMs, "5000"),
			err: "config stoatflow.commit-barrier.max-interval-ms (5s) is above a third of transaction.timeout.ms (6s)"},
		{name: "an interval set above a third is refused", cfg: base("transaction.timeout.ms", "1500", BarrierIntervalMs, "600"),
			err: "config stoatflow.commit-barrier.interval-ms (600ms) is above a third of transaction.timeout.ms"},
		{name: "at least once has no transaction", cfg: base("processing.guarantee", "at_least_once", "transaction.timeout.ms", "3000"), max: 5 * time.Second, interval: 500 * time.Millisecond, least: 150 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := readSettings(config.New(tc.cfg))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.maxInterval != tc.max || s.interval != tc.interval || s.minInterval != tc.least {
				t.Fatalf("max %s, interval %s, min %s; want %s, %s, %s", s.maxInterval, s.interval, s.minInterval, tc.max, tc.interval, tc.least)
			}
		})
	}
}

// TestSettingsReadRackAwareness: the client tags and
// rack.aware.assignment.tags reach the balancer's settings, and a rack tag
// the instance does not set stops the start.
func TestSettingsReadRackAwareness(t *testing.T) {
	c := map[string]string{"application.id": "racks", "bootstrap.servers": "localhost:9092", "state.dir": t.TempDir(),
		"client.tag.zone": "eu-1a", "client.tag.host": "h1", "rack.aware.assignment.tags": "zone"}
	s, err := readSettings(config.New(c))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.rackTags) != 1 || s.rackTags[0] != "zone" || s.clientTags["zone"] != "eu-1a" || s.clientTags["host"] != "h1" {
		t.Fatalf("rack tags %q, client tags %v", s.rackTags, s.clientTags)
	}
	c["rack.aware.assignment.tags"] = "zone,rack"
	if _, err := readSettings(config.New(c)); err == nil || !strings.Contains(err.Error(), "tag rack is not set on this instance") {
		t.Fatalf("error %v, want one naming the tag rack", err)
	}
}
