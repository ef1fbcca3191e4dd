package topofile

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/golden"
)

// Each testdata/errors/NAME.yaml is a broken topology; NAME.golden holds
// what validating it reports. Every case must report at least one error,
// and every file-level error must carry a position in that file.
func TestErrorsGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			r, err := Validate(path, "")
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() {
				t.Fatalf("%s validated without errors", path)
			}
			var b strings.Builder
			b.WriteString(r.Summary() + "\n")
			for _, f := range r.Findings {
				b.WriteString(f.String() + "\n")
				if f.Level == LevelError && !strings.HasPrefix(f.Message, "topology:") && !strings.HasPrefix(f.Message, path+":") {
					t.Errorf("error without a position in %s: %s", path, f.Message)
				}
			}
			checkGolden(t, strings.TrimSuffix(path, ".yaml")+".golden", b.String())
		})
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.Check(t, "./engine/topofile", path, got)
}

func TestLoadErrorsAreTyped(t *testing.T) {
	_, err := Parse("x.yaml", []byte("application-id: a\nsources:\n  s: {topic: t, bogus: 1}\n"), ".")
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not an *Error", err)
	}
	if fe.File != "x.yaml" || fe.Line != 3 || fe.Column != 17 {
		t.Fatalf("position %s:%d:%d, want x.yaml:3:17", fe.File, fe.Line, fe.Column)
	}
}
