package buildinfo

import (
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state/rocks"
)

func TestFromBuildInfo(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	full := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "example.com/m", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name  string
		stamp Stamp
		bi    *debug.BuildInfo
		want  Info
	}{
		{"no build info", Stamp{}, nil,
			Info{Module: modulePath, Version: Unknown, Commit: Unknown, GoVersion: runtime.Version()}},
		{"build info only", Stamp{}, full,
			Info{Module: "example.com/m", Version: "v1.2.3", Commit: "0123456789ab-dirty", GoVersion: "go1.99.1"}},
		{"stamp wins", Stamp{Version: "v2.0.0", Commit: "abc1234"}, full,
			Info{Module: "example.com/m", Version: "v2.0.0", Commit: "abc1234", GoVersion: "go1.99.1"}},
		{"go install from the proxy: the pseudo-version's commit", Stamp{},
			&debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "example.com/m", Version: "v0.0.0-20261205101500-0123456789ab"}},
			Info{Module: "example.com/m", Version: "v0.0.0-20261205101500-0123456789ab", Commit: "0123456789ab", GoVersion: "go1.99.1"}},
		{"go install from the proxy: a pre-release pseudo-version", Stamp{},
			&debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "example.com/m", Version: "v1.2.4-0.20261205101500-0123456789ab+incompatible"}},
			Info{Module: "example.com/m", Version: "v1.2.4-0.20261205101500-0123456789ab+incompatible", Commit: "0123456789ab", GoVersion: "go1.99.1"}},
		{"go install of a release: no commit to tell", Stamp{},
			&debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "example.com/m", Version: "v1.2.3"}},
			Info{Module: "example.com/m", Version: "v1.2.3", Commit: Unknown, GoVersion: "go1.99.1"}},
		{"devel build, stamped commit", Stamp{Commit: "abc1234"},
			&debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "example.com/m", Version: "(devel)"}},
			Info{Module: "example.com/m", Version: "(devel)", Commit: "abc1234", GoVersion: "go1.99.1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Platform = platform
			tc.want.StateBackends = []string{"in-memory"}
			tc.want.RocksDB = rocks.Version()
			if rocks.Available() {
				tc.want.StateBackends = append(tc.want.StateBackends, "rocksdb")
			}
			if got := fromBuildInfo(tc.stamp, tc.bi); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
