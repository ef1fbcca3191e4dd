package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestRackAwareness: rack.aware.assignment.tags and client.tag.<name>
// are read, and refused, as Kafka Streams reads them.
func TestRackAwareness(t *testing.T) {
	long := strings.Repeat("x", 21)
	for _, tc := range []struct {
		name     string
		values   map[string]string
		wantRack []string
		wantTags map[string]string
		err      string
	}{
		{name: "none", values: map[string]string{}, wantTags: map[string]string{}},
		{name: "tags without rack awareness", values: map[string]string{"client.tag.zone": "eu-1a"}, wantTags: map[string]string{"zone": "eu-1a"}},
		{name: "two tags", values: map[string]string{"client.tag.zone": " eu-1a ", "client.tag.cluster": "k1", RackAwareAssignmentTags: "zone, cluster,zone"},
			wantRack: []string{"zone", "cluster"}, wantTags: map[string]string{"zone": "eu-1a", "cluster": "k1"}},
		{name: "a rack tag the instance lacks", values: map[string]string{"client.tag.zone": "eu-1a", RackAwareAssignmentTags: "zone,rack"},
			err: "config rack.aware.assignment.tags: tag rack is not set on this instance (set client.tag.rack)"},
		{name: "an empty tag is unset", values: map[string]string{"client.tag.zone": " ", RackAwareAssignmentTags: "zone"},
			err: "tag zone is not set"},
		{name: "six tags", values: map[string]string{"client.tag.a": "1", "client.tag.b": "1", "client.tag.c": "1", "client.tag.d": "1", "client.tag.e": "1", "client.tag.f": "1"},
			err: "config client.tag.*: 6 client tags set, at most 5 may be"},
		{name: "a long name", values: map[string]string{"client.tag." + long: "1"}, err: "is longer than 20 characters"},
		{name: "a long value", values: map[string]string{"client.tag.zone": strings.Repeat("v", 31)}, err: "config client.tag.zone: the value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rack, tags, err := New(tc.values).RackAwareness()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rack, tc.wantRack) || !maps.Equal(tags, tc.wantTags) {
				t.Fatalf("rack tags %q, tags %v; want %q, %v", rack, tags, tc.wantRack, tc.wantTags)
			}
		})
	}
}

// TestCheckClientTags: config check knows client.tag.<name> for any name
// and says when one is longer than Kafka Streams allows.
func TestCheckClientTags(t *testing.T) {
	ps := Check(map[string]string{"client.tag.zone": "eu-1a", "client.tag.cluster": strings.Repeat("v", 31), RackAwareAssignmentTags: "zone"})
	if len(ps) != 1 || ps[0].Key != "client.tag.cluster" || ps[0].Kind != Invalid {
		t.Fatalf("problems %v, want one: client.tag.cluster's value is too long", ps)
	}
}
