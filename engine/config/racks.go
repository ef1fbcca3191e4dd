package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RackAwareAssignmentTags is Kafka Streams' key (KIP-708): the client tags
// standby tasks are spread over, so that a task's standbys run where the
// values of those tags differ from its owner's.
const RackAwareAssignmentTags = "rack.aware.assignment.tags"

// ClientTagPrefix prefixes an instance's client tags, Kafka Streams'
// client.tag.<name>=<value> (client.tag.zone=eu-west-1a).
const ClientTagPrefix = "client.tag."

// Kafka Streams' limits on tags (StreamsConfig): the tags travel in every
// subscription, which the coordinator keeps.
const (
	maxTags           = 5
	maxTagNameLength  = 20
	maxTagValueLength = 30
)

// ClientTags returns the client.tag. keys with the prefix cut, their
// values trimmed.
func (c Config) ClientTags() map[string]string {
	out := map[string]string{}
	for k, v := range c.values {
		// An empty value counts as unset, as everywhere.
		if name, ok := strings.CutPrefix(k, ClientTagPrefix); ok && name != "" && strings.TrimSpace(v) != "" {
			out[name] = strings.TrimSpace(v)
		}
	}
	return out
}

// RackAwareness returns rack.aware.assignment.tags and the instance's
// client tags, checked as Kafka Streams checks them: at most 5 of each,
// every rack tag one the instance sets, tag names of at most 20
// characters and values of at most 30.
func (c Config) RackAwareness() (rackTags []string, tags map[string]string, err error) {
	tags = c.ClientTags()
	if len(tags) > maxTags {
		return nil, nil, fmt.Errorf("config %s*: %d client tags set, at most %d may be", ClientTagPrefix, len(tags), maxTags)
	}
	for _, name := range slices.Sorted(maps.Keys(tags)) {
		if reason := clientTagInvalid(name, tags[name]); reason != "" {
			return nil, nil, fmt.Errorf("config %s%s: %s", ClientTagPrefix, name, reason)
		}
	}
	for _, t := range strings.Split(c.String(RackAwareAssignmentTags), ",") {
		if t = strings.TrimSpace(t); t == "" || slices.Contains(rackTags, t) {
			continue
		}
		if _, ok := tags[t]; !ok {
			return nil, nil, fmt.Errorf("config %s: tag %s is not set on this instance (set %s%s)", RackAwareAssignmentTags, t, ClientTagPrefix, t)
		}
		rackTags = append(rackTags, t)
	}
	if len(rackTags) > maxTags {
		return nil, nil, fmt.Errorf("config %s: %d tags, at most %d may be", RackAwareAssignmentTags, len(rackTags), maxTags)
	}
	return rackTags, tags, nil
}

// clientTagInvalid says what is wrong with client tag name=value, "" when
// nothing is.
func clientTagInvalid(name, value string) string {
	switch {
	case len(name) > maxTagNameLength:
		return fmt.Sprintf("the tag name %q is longer than %d characters", name, maxTagNameLength)
	case len(value) > maxTagValueLength:
		return fmt.Sprintf("the value %q is longer than %d characters", value, maxTagValueLength)
	}
	return ""
}
