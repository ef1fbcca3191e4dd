package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestRunWordCountOnTwoInstances runs the bundled word count, which
// re-keys by word, as two stoatctl processes with
// stoatflow.topology.rekey=topic: the second joins while lines arrive and
// later leaves with SIGTERM. Read back with kcat, read-committed, every
// word's counts must be 1, 2, ... n, each exactly once (under the default,
// memory, the second instance is refused).
func TestRunWordCountOnTwoInstances(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	const words, rounds, linesPerRound = 25, 5, 4
	addr := kafkatest.Start(t, map[string]int32{"lines": 4, "word-counts": 4})
	bin := filepath.Join(buildBinary(t), "stoatctl")
	kc := kcatRunner(t, kcat, addr)
	line := 0
	round := func() {
		var in strings.Builder
		for range linesPerRound {
			var ws []string
			for w := range words {
				ws = append(ws, "w"+strconv.Itoa(w))
			}
			fmt.Fprintf(&in, "l%d:%s\n", line, strings.Join(ws, " "))
			line++
		}
		kc(in.String(), "-t", "lines", "-P", "-K:")
	}
	start := func(name string) *runInstance {
		return startRun(t, bin, "run", "-t", "word-count", "-b", addr, "--state-dir", filepath.Join(t.TempDir(), name),
			"-X", "application.id=word-count-two", "-X", "stoatflow.topology.rekey=topic",
			"-X", "stoatflow.commit-barrier.interval-ms=100", "-X", "num.stream.threads=2",
			"-X", "session.timeout.ms=10000", "--http", "off")
	}
	stop := func(name string, in *runInstance) { in.stop(t, name) }

	a := start("a")
	round()
	b := start("b")
	b.awaitAssigned(t, "b")
	round()
	round()
	stop("a", a)
	round()
	a = start("a")
	a.awaitAssigned(t, "a")
	round()

	got := readInt64s(t, kc, "word-counts", words*rounds*linesPerRound)
	stop("a", a)
	stop("b", b)
	checkOneToN(t, "counts", got, words, rounds*linesPerRound)
}
