// Package topofile reads declarative topology files (YAML) and compiles
// them into the Go DSL, so a topology written without Go runs on the same
// processors as one written in Go.
package topofile
