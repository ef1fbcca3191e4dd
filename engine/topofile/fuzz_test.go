package topofile

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds the loader arbitrary bytes: it must return a topology or
// an error, never panic, and whatever it compiles must build or fail to
// build without panicking either.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*", "*.yaml"))
	for _, name := range fixtureNames {
		seeds = append(seeds, fixturePath(name))
	}
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("application-id: a\nsources: {s: {topic: t}}\npipelines: {p: {from: s, steps: [count]}}\n"))
	f.Add([]byte("a: &x [*x, *x]\n"))
	// String serdes, where expressions get fast paths (fastpath.go).
	f.Add([]byte("application-id: a\nsources: {s: {topic: t, key-serde: string, value-serde: string}}\npipelines: {p: {from: s, steps: [{filter: 'not (value endsWith \"7\") and key != \"\"'}, {map: {key: 'lower(key)', value: 'trim(value) + key', value-serde: string}}, {map-values: {expr: upper(value), value-serde: string}}, {to: {topic: o, value-serde: string}}]}}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data, dir)
		if err != nil {
			if file != nil {
				t.Fatal("Parse returned a file and an error")
			}
			return
		}
		_, _ = file.Topology.Build(configOf(file))
		_ = file.Topology.Describe().String()
	})
}
