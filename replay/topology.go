package replay

import (
	"maps"

	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// resolveTopology finds the topology a fixture names (a topology file
// relative to baseDir, or a registered Go topology) and returns a fresh
// topology with the configuration it runs with, which the caller may
// change.
func resolveTopology(ref, baseDir string) (*topology.Topology, map[string]string, error) {
	f, err := topofile.Resolve(ref, baseDir)
	if err != nil {
		return nil, nil, err
	}
	cfg := maps.Clone(f.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	return f.Topology, cfg, nil
}
