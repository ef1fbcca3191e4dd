package serde

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hamba/avro/v2"
)

// SchemaSet maps Confluent schema ids to writer schemas, standing in for a
// schema registry: with it an Avro serde can read records written under
// older (or newer) schema ids. Ids are immutable, as in a registry: adding
// a different schema under a known id is an error. The zero value is an
// empty set; a SchemaSet is safe for concurrent use.
type SchemaSet struct {
	mu   sync.RWMutex
	byID map[int32]avro.Schema
}

// NewSchemaSet returns an empty set.
func NewSchemaSet() *SchemaSet { return &SchemaSet{} }

// SchemaSetFromFiles builds a set from schema files keyed by schema id.
func SchemaSetFromFiles(files map[int32]string) (*SchemaSet, error) {
	set := NewSchemaSet()
	// Sorted so that, of several bad files, the same one is reported each run.
	for _, id := range slices.Sorted(maps.Keys(files)) {
		if err := set.AddFile(id, files[id]); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// Add registers schema under id. Adding the same schema again is a no-op.
func (s *SchemaSet) Add(id int32, schema avro.Schema) error {
	if schema == nil {
		return errors.New("add schema: nil schema")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byID[id]; ok {
		if old.Fingerprint() == schema.Fingerprint() {
			return nil
		}
		return fmt.Errorf("add schema: schema id %d already holds a different schema", id)
	}
	if s.byID == nil {
		s.byID = make(map[int32]avro.Schema)
	}
	s.byID[id] = schema
	return nil
}

// AddFile parses a schema file and registers it under id.
func (s *SchemaSet) AddFile(id int32, path string) error {
	schema, err := parseSchemaFile(path)
	if err != nil {
		return err
	}
	if err := s.Add(id, schema); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Schema returns the schema registered under id.
func (s *SchemaSet) Schema(id int32) (avro.Schema, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	schema, ok := s.byID[id]
	return schema, ok
}

// IDs returns the registered ids in ascending order.
func (s *SchemaSet) IDs() []int32 {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.byID))
}
