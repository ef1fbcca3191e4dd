package topofile

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/fixtures/examples"
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
	// Description is the file's one-line description, or the example's.
	Description string
	// Example is set when the topology is a registered Go example rather
	// than a file (see Resolve).
	Example bool
}

// maxFileSize bounds what Load reads: a topology file is a page or two of
// YAML, and a mistaken path to a large data file should fail at once.
const maxFileSize = 4 << 20

// Load reads, parses and compiles the topology file at path. Errors are
// *Error values joined with errors.Join, each "file:line:column: message".
func Load(path string) (*File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load topology file: %w", err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("load topology file %s: is a directory", path)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("load topology file %s: %d bytes is more than a topology file holds (limit %d)", path, fi.Size(), maxFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load topology file: %w", err)
	}
	return Parse(path, data, filepath.Dir(path))
}

// Parse compiles a topology file held in memory. name is the file's name
// in errors; baseDir is where relative paths in it (Avro schemas) start.
func Parse(name string, data []byte, baseDir string) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(name, data, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: name, Line: 1, Column: 1, Msg: "empty topology file: expected a mapping with application-id, sources and pipelines"}
	}
	c := &compiler{
		file:    name,
		baseDir: baseDir,
		b:       dsl.NewBuilder(),
		names:   map[string]flow{},
		defined: map[string]*yaml.Node{},
	}
	c.compile(doc.Content[0])
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return &File{
		Path:          name,
		ApplicationID: c.appID,
		Config:        c.config,
		Topology:      c.b.Topology(),
		Description:   c.description,
	}, nil
}

// IsFileRef reports whether ref names a topology file rather than a
// registered example: it ends in .yaml or .yml.
func IsFileRef(ref string) bool {
	ext := strings.ToLower(filepath.Ext(ref))
	return ext == ".yaml" || ext == ".yml"
}

// Resolve finds the topology ref stands for: a topology file (a path
// ending in .yaml or .yml, relative to baseDir unless absolute), else an
// example registered in Go under that name, whose topology is built fresh.
func Resolve(ref, baseDir string) (*File, error) {
	if ref == "" {
		return nil, errors.New("resolve topology: empty reference")
	}
	if IsFileRef(ref) {
		path := ref
		if !filepath.IsAbs(path) && baseDir != "" {
			path = filepath.Join(baseDir, path)
		}
		return Load(path)
	}
	ex, err := examples.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("resolve topology %q: not a .yaml file, and %w", ref, err)
	}
	cfg := maps.Clone(ex.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if cfg[config.ApplicationID] == "" {
		cfg[config.ApplicationID] = ex.Name
	}
	return &File{
		Path:          ex.Name,
		ApplicationID: cfg[config.ApplicationID],
		Config:        cfg,
		Topology:      ex.Build(),
		Description:   ex.Description,
		Example:       true,
	}, nil
}
