package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads a configuration file: a Java properties file when its name
// ends in .properties (ParseProperties), as a Kafka Streams team has one,
// else a YAML mapping of keys to scalar values, such as
//
//	application.id: orders
//	bootstrap.servers: localhost:9092
//	stoatflow:
//	  commit-barrier:
//	    interval-ms: 250
//
// Nested mappings are flattened with dots, so both spellings above give
// stoatflow.commit-barrier.interval-ms. Errors name the file, line and
// column at fault.
func LoadFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	if IsProperties(path) {
		return ParseProperties(path, data)
	}
	return Parse(path, data)
}

// IsProperties says LoadFile reads the file at path as Java properties.
func IsProperties(path string) bool { return strings.HasSuffix(path, ".properties") }

// FileKeyLines is the line of each key of a configuration file LoadFile
// reads, by the file's kind: KeyLines for YAML, PropertyLines for
// properties.
func FileKeyLines(path string, data []byte) map[string]int {
	if IsProperties(path) {
		return PropertyLines(data)
	}
	return KeyLines(data)
}

// Parse is LoadFile over bytes already read; name is used in errors.
func Parse(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(bytes.TrimSpace(data)) == 0 {
		return out, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return out, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: want a mapping of configuration keys to values", name, root.Line, root.Column)
	}
	if err := flatten(name, "", root, out); err != nil {
		return nil, err
	}
	return out, nil
}

func flatten(name, prefix string, m *yaml.Node, out map[string]string) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return fmt.Errorf("%s:%d:%d: want a key name", name, k.Line, k.Column)
		}
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		switch v.Kind {
		case yaml.MappingNode:
			if err := flatten(name, key, v, out); err != nil {
				return err
			}
		case yaml.ScalarNode:
			if _, dup := out[key]; dup {
				return fmt.Errorf("%s:%d:%d: key %s is set twice", name, k.Line, k.Column, key)
			}
			if v.Tag == "!!null" {
				return fmt.Errorf("%s:%d:%d: key %s has no value", name, v.Line, v.Column, key)
			}
			out[key] = v.Value
		default:
			return fmt.Errorf("%s:%d:%d: key %s: want a scalar value or a mapping, not a list", name, v.Line, v.Column, key)
		}
	}
	return nil
}

// ParseAssignment reads a KEY=VALUE override, as given to -X.
func ParseAssignment(s string) (string, string, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == '=' {
			if i == 0 {
				return "", "", errors.New("empty key")
			}
			return s[:i], s[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("%q is not KEY=VALUE", s)
}

// KeyLines returns the line of each key of the YAML mapping reached
// through path from the document root (none: the root itself), its nested
// mappings flattened with dots as Parse flattens them. It is for pointing
// at a key in a message: what does not parse, or is not a mapping, has no
// lines.
func KeyLines(data []byte, path ...string) map[string]int {
	out := map[string]int{}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return out
	}
	n := doc.Content[0]
	for _, p := range path {
		n = mappingValue(n, p)
		if n == nil {
			return out
		}
	}
	keyLines("", n, out)
	return out
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for m != nil && m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func keyLines(prefix string, m *yaml.Node, out map[string]int) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		if v.Kind == yaml.MappingNode {
			keyLines(key, v, out)
			continue
		}
		if _, seen := out[key]; !seen {
			out[key] = k.Line
		}
	}
}
