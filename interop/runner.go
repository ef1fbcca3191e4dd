package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// MainClass is the Kafka Streams runner's entry point.
const MainClass = "dev.stoatflow.interop.Runner"

// Java runs the interop tooling's Java programs.
type Java struct {
	// Root is the repository root.
	Root string
	// Classpath is the runner's class path: its classes and the jars Maven
	// resolved.
	Classpath string
}

var built struct {
	once sync.Once
	java *Java
	err  error
}

// Build builds the interop Maven project when its sources changed (through
// scripts/lib.sh's interop_classpath, the same step scripts/kafka.sh uses)
// and returns the means to run it. It builds once per process.
func Build(root string) (*Java, error) {
	built.once.Do(func() {
		cmd := exec.Command("bash", "-c", `set -euo pipefail; source scripts/lib.sh; interop_classpath`)
		cmd.Dir = root
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			built.err = fmt.Errorf("build interop tooling: %v\n%s", err, stderr.String())
			return
		}
		built.java = &Java{Root: root, Classpath: strings.TrimSpace(string(out))}
	})
	return built.java, built.err
}

// Runner returns a command running the Kafka Streams runner with args.
func (j *Java) Runner(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"-Xmx768m", "-XX:+UseSerialGC", "-cp", j.Classpath, MainClass}, args...)
	cmd := exec.CommandContext(ctx, "java", full...)
	cmd.Dir = j.Root
	cmd.Env = os.Environ()
	return cmd
}

// Path returns a path under the interop folder.
func (j *Java) Path(elem ...string) string {
	return filepath.Join(append([]string{j.Root, "interop"}, elem...)...)
}

// RocksDBJar is the rocksdbjni jar on the runner's class path: the RocksDB
// Kafka Streams writes its stores with, or "" when there is none.
func (j *Java) RocksDBJar() string {
	for _, p := range filepath.SplitList(j.Classpath) {
		if strings.HasPrefix(filepath.Base(p), "rocksdbjni-") && strings.HasSuffix(p, ".jar") {
			return p
		}
	}
	return ""
}
