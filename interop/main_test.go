package interop_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
)

// stoatctl is the binary under test, built once by TestMain.
var stoatctl string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stoatctl-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stoatctl = filepath.Join(dir, "stoatctl")
	build := exec.Command("go", "build", "-buildvcs=false", "-o", stoatctl, "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// java builds the interop tooling (once) or fails the test: the machines
// this runs on have Java and Maven, and scripts/test.sh installs them.
func java(t *testing.T) *interop.Java {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the Kafka Streams runner; skipped with -short")
	}
	root, err := kafkatest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	j, err := interop.Build(root)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
