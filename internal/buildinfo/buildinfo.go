// Package buildinfo says what a stoatctl binary is: its version, the
// commit it was built from, the Go toolchain that built it and the state
// backends compiled in.
//
// Terms:
//   - A Stamp is what the build script writes into package main with
//     -ldflags -X (main.version, main.commit); empty fields are not set.
//   - Build information is what the Go toolchain records in every binary
//     (runtime/debug.ReadBuildInfo): the module's version and, when the
//     build could see a version control checkout, its revision.
//
// A stamp wins over build information, which wins over "unknown". A
// binary built by `go install module@version` from the module proxy has no
// VCS information, but a pseudo-version (v0.0.0-20260101120000-0123456789ab)
// names its commit: that is its commit then.
package buildinfo

import (
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
)

// Stamp is the version and commit set at link time; empty means unset.
type Stamp struct {
	Version string
	Commit  string
}

// Info describes the running binary.
type Info struct {
	// Module is the main module's path.
	Module string `json:"module" yaml:"module"`
	// Version is the stamped version, else the module version ("(devel)"
	// for a build from a checkout).
	Version string `json:"version" yaml:"version"`
	// Commit is the stamped commit, else the VCS revision the toolchain
	// recorded (suffixed "-dirty" for a modified checkout), else "unknown".
	Commit string `json:"commit" yaml:"commit"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go" yaml:"go"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform" yaml:"platform"`
	// StateBackends are the state store backends compiled in.
	StateBackends []string `json:"stateBackends" yaml:"stateBackends"`
	// RocksDB is the version of the RocksDB library linked in, "" in a
	// binary built without it.
	RocksDB string `json:"rocksdb" yaml:"rocksdb"`
}

// Unknown stands for a field nothing could tell.
const Unknown = "unknown"

// modulePath is the fallback when build information is missing.
const modulePath = "github.com/stoatflow/stoatctl"

// pseudoRev matches a pseudo-version's revision: the twelve hex digits
// after its fourteen-digit UTC timestamp (Go's module reference,
// "Pseudo-versions").
var pseudoRev = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(?:\+incompatible)?$`)

// Read combines the stamp with the binary's build information.
func Read(s Stamp) Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(s, bi)
}

func fromBuildInfo(s Stamp, bi *debug.BuildInfo) Info {
	info := Info{
		Module:        modulePath,
		Version:       Unknown,
		Commit:        Unknown,
		GoVersion:     runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
		StateBackends: state.Backends(),
		RocksDB:       rocks.Version(),
	}
	if rocks.Available() {
		info.StateBackends = append(info.StateBackends, "rocksdb")
	}
	if bi != nil {
		if bi.Main.Path != "" {
			info.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		var revision string
		var modified bool
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				revision = kv.Value
			case "vcs.modified":
				modified = kv.Value == "true"
			}
		}
		if m := pseudoRev.FindStringSubmatch(info.Version); revision == "" && m != nil {
			revision = m[1]
		}
		if revision != "" {
			if len(revision) > 12 {
				revision = revision[:12]
			}
			if modified {
				revision += "-dirty"
			}
			info.Commit = revision
		}
	}
	if s.Version != "" {
		info.Version = s.Version
	}
	if s.Commit != "" {
		info.Commit = s.Commit
	}
	return info
}
