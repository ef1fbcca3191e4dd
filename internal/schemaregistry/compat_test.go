package schemaregistry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hamba/avro/v2/registry"

	"github.com/stoatflow/stoatctl/internal/schemaregistry"
)

func rec(fields string) string {
	return `{"type": "record", "name": "R", "fields": [` + fields + `]}`
}

// TestCompatibility registers a subject's versions one after the other
// over HTTP, under each level, and checks which the registry refuses with
// Confluent's 409 (error_code 409) and that a refused schema is not
// registered.
func TestCompatibility(t *testing.T) {
	var (
		idOnly      = rec(`{"name": "id", "type": "long"}`)
		withDefault = rec(`{"name": "id", "type": "long"}, {"name": "item", "type": "string", "default": ""}`)
		withItem    = rec(`{"name": "id", "type": "long"}, {"name": "item", "type": "string"}`)
		aString     = rec(`{"name": "a", "type": "string"}`)
		empty       = rec(``)
		aInt        = rec(`{"name": "a", "type": "int", "default": 0}`)
	)
	tests := []struct {
		name, level string // "" keeps the default
		versions    []string
		refused     int // index of the version refused, -1 for none
	}{
		{"backward by default: a field with a default", "", []string{idOnly, withDefault}, -1},
		{"backward by default: a field without one", "", []string{idOnly, withItem}, 1},
		{"backward: a field removed", "BACKWARD", []string{withItem, idOnly}, -1},
		{"forward: a field without a default removed", "FORWARD", []string{withItem, idOnly}, 1},
		{"forward: a field added", "FORWARD", []string{idOnly, withItem}, -1},
		{"full: a field without a default added", "FULL", []string{idOnly, withItem}, 1},
		{"full: a field with a default added", "FULL", []string{idOnly, withDefault}, -1},
		{"none", "NONE", []string{idOnly, withItem, aString}, -1},
		// Compatible with the latest, not with the first.
		{"backward: only the latest", "BACKWARD", []string{aString, empty, aInt}, -1},
		{"backward transitive: every version", "BACKWARD_TRANSITIVE", []string{aString, empty, aInt}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(schemaregistry.New())
			defer srv.Close()
			ctx := context.Background()
			c, err := registry.NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if tc.level != "" {
				req, err := http.NewRequest(http.MethodPut, srv.URL+"/config/s", strings.NewReader(`{"compatibility": "`+tc.level+`"}`))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("PUT /config/s %s: %s", tc.level, resp.Status)
				}
			}
			for i, v := range tc.versions {
				_, _, err := c.CreateSchema(ctx, "s", v)
				var re registry.Error
				switch {
				case i == tc.refused && (!errors.As(err, &re) || re.StatusCode != 409 || re.Code != 409 || !strings.Contains(re.Message, "incompatible")):
					t.Fatalf("version %d: %v, want 409 incompatible", i+1, err)
				case i != tc.refused && err != nil:
					t.Fatalf("version %d: %v", i+1, err)
				}
			}
			versions, err := c.GetVersions(ctx, "s")
			want := len(tc.versions)
			if tc.refused >= 0 {
				want = tc.refused
			}
			if err != nil || len(versions) != want {
				t.Fatalf("versions %v, %v; want %d: a refused schema is not registered", versions, err, want)
			}
		})
	}
}

// TestReRegisterNeedsNoCheck: a schema the subject already has is
// answered with its id, whatever the versions after it, as Confluent's.
func TestReRegisterNeedsNoCheck(t *testing.T) {
	reg := schemaregistry.New()
	v1 := rec(`{"name": "id", "type": "long"}, {"name": "item", "type": "string"}`)
	id, err := reg.Register("s", v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register("s", rec(`{"name": "id", "type": "long"}`)); err != nil {
		t.Fatal(err)
	}
	if again, err := reg.Register("s", v1); err != nil || again != id {
		t.Fatalf("re-register: %d, %v; want %d", again, err, id)
	}
	var ie *schemaregistry.IncompatibleError
	if _, err := reg.Register("s", rec(`{"name": "id", "type": "string"}`)); !errors.As(err, &ie) || ie.Subject != "s" || ie.Level != "BACKWARD" {
		t.Fatalf("an incompatible schema: %v", err)
	}
}
