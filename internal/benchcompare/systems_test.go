package benchcompare

import (
	"slices"
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
)

func TestSystemsFor(t *testing.T) {
	for _, tc := range []struct {
		topo string
		ks   bool
		want []string
	}{
		{TopoMap, true, []string{SystemBareLoop, SystemStoat, SystemKStreams}},
		{TopoMap, false, []string{SystemBareLoop, SystemStoat}},
		{TopoCount, true, []string{SystemStoat, SystemKStreams, SystemKStreamsNoCache}},
		{TopoWindowClose, true, []string{SystemStoat, SystemKStreams, SystemKStreamsNoCache}},
		{TopoJoin, true, []string{SystemStoat, SystemKStreams}},
	} {
		if got := systemsFor(tc.topo, tc.ks); !slices.Equal(got, tc.want) {
			t.Errorf("systemsFor(%s, %v) = %v, want %v", tc.topo, tc.ks, got, tc.want)
		}
	}
}

// TestBuild builds every topology: the harness must not be the thing
// that fails in a long run.
func TestBuild(t *testing.T) {
	for _, topo := range Topologies {
		if _, err := Build(topo, Topics{Prefix: "p"}, Window).Build(config.New(map[string]string{"application.id": "p"})); err != nil {
			t.Errorf("%s: %v", topo, err)
		}
	}
}

func TestInputRecords(t *testing.T) {
	in := Input{Records: 1001}
	if got := inputRecords(TopoJoin, in); got != 1000 {
		t.Errorf("join input = %d, want 1000 (two halves of 500)", got)
	}
	if got := inputRecords(TopoCount, in); got != 1001 {
		t.Errorf("count input = %d, want 1001", got)
	}
}
