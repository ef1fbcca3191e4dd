package topofile

import (
	"errors"

	"github.com/stoatflow/stoatctl/engine/topology"
)

// File is a compiled topology file.
type File struct {
	// Path is the file it was read from.
	Path string
	// ApplicationID is the file's application id.
	ApplicationID string
	// Config holds the file's configuration keys, application.id included.
	Config map[string]string
	// Topology is the compiled topology, ready to Build.
	Topology *topology.Topology
}

// Load reads, parses and compiles the topology file at path.
func Load(path string) (*File, error) {
	return nil, errors.New("topofile: not implemented yet")
}
