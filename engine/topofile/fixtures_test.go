package topofile

import (
	"path/filepath"
	"strings"
	"testing"
)

// fixtureNames are the example topologies under fixtures/ written as
// topology files.
var fixtureNames = []string{"word-count", "clicks-per-minute", "sessionization", "orders-payments", "alert-suppress", "enrich-orders", "stock-listings", "order-customers", "versioned-prices"}

func fixturePath(name string) string {
	return filepath.Join("..", "..", "fixtures", name, "topology.yaml")
}

func TestFixturesLoadBuildDescribe(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			f, err := Load(fixturePath(name))
			if err != nil {
				t.Fatal(err)
			}
			if f.ApplicationID != name {
				t.Errorf("application id %q, want %q", f.ApplicationID, name)
			}
			if _, err := f.Build(); err != nil {
				t.Fatal(err)
			}
			if d := f.Topology.Describe().String(); !strings.HasPrefix(d, "Topologies:") {
				t.Fatalf("describe:\n%s", d)
			}
		})
	}
}
