package rest_test

import (
	"maps"
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stoatflow/stoatctl/engine/rest"
)

// TestOpenAPIDocumentsTheServer holds docs/rest-api.yaml to the server:
// the same paths, and the same error codes.
func TestOpenAPIDocumentsTheServer(t *testing.T) {
	b, err := os.ReadFile("../../docs/rest-api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI    string         `yaml:"openapi"`
		Paths      map[string]any `yaml:"paths"`
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `yaml:"enum"`
						} `yaml:"code"`
					} `yaml:"properties"`
				} `yaml:"Error"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/rest-api.yaml: %v", err)
	}
	if doc.OpenAPI == "" {
		t.Fatal("docs/rest-api.yaml has no openapi version")
	}
	if got, want := slices.Sorted(maps.Keys(doc.Paths)), slices.Sorted(slices.Values(rest.Paths)); !slices.Equal(got, want) {
		t.Errorf("documented paths %v, served %v", got, want)
	}
	if got, want := slices.Sorted(slices.Values(doc.Components.Schemas.Error.Properties.Code.Enum)), slices.Sorted(slices.Values(rest.Codes)); !slices.Equal(got, want) {
		t.Errorf("documented error codes %v, sent %v", got, want)
	}
}
