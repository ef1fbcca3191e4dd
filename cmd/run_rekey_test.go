package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	kc := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, kcat, append([]string{"-b", addr}, args...)...)
		c.Stdin = strings.NewReader(stdin)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
		}
		return string(b)
	}
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
	type instance struct {
		cmd    *exec.Cmd
		stderr *syncBuffer
	}
	start := func(name string) *instance {
		t.Helper()
		cmd := exec.Command(bin, "run", "-t", "word-count", "-b", addr, "--state-dir", filepath.Join(t.TempDir(), name),
			"-X", "application.id=word-count-two", "-X", "stoatflow.topology.rekey=topic",
			"-X", "stoatflow.commit-barrier.interval-ms=100", "-X", "num.stream.threads=2",
			"-X", "session.timeout.ms=10000", "--http", "off")
		in := &instance{cmd: cmd, stderr: &syncBuffer{}}
		cmd.Stderr = in.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return in
	}
	stop := func(name string, in *instance) {
		t.Helper()
		if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- in.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("instance %s after SIGTERM: %v; stderr:\n%s", name, err, in.stderr)
			}
		case <-time.After(40 * time.Second):
			t.Fatalf("instance %s did not stop within 40 s of SIGTERM; stderr:\n%s", name, in.stderr)
		}
	}
	settle := func() { time.Sleep(1500 * time.Millisecond) }

	a := start("a")
	round()
	b := start("b")
	settle()
	round()
	round()
	stop("a", a)
	round()
	a = start("a")
	settle()
	round()

	want := words * rounds * linesPerRound
	var got map[string][]int
	deadline := time.Now().Add(90 * time.Second)
	for {
		got = map[string][]int{}
		n := 0
		out := kc("", "-t", "word-counts", "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n", "-s", "value=q", "-X", "isolation.level=read_committed")
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				continue
			}
			c, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("count %q of %s: %v", v, k, err)
			}
			got[k] = append(got[k], int(c))
			n++
		}
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	stop("a", a)
	stop("b", b)
	if len(got) != words {
		t.Fatalf("counts of %d words, want %d: %v", len(got), words, got)
	}
	for w, cs := range got {
		slices.Sort(cs)
		ok := len(cs) == rounds*linesPerRound
		for i, c := range cs {
			ok = ok && c == i+1
		}
		if !ok {
			t.Errorf("word %s: counts %v, want 1..%d once each", w, cs, rounds*linesPerRound)
		}
	}
}
