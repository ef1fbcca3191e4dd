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

// TestRunThreeInstancesWithKcat runs the running-total example as three
// stoatctl processes in one group, its input written by kcat (librdkafka's
// default partitioner, CRC-32 of the key, where Java's clients use
// murmur2), while the instances join and leave one by one and partitions
// move between them under load. Read back with kcat, read-committed, every
// key's totals must be 1, 2, ... n, each exactly once: a task's state is
// the state of its partition's records, restored where the task goes,
// whatever the producer's partitioner.
func TestRunThreeInstancesWithKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	const keys, rounds, perRound = 30, 7, 3
	addr := kafkatest.Start(t, map[string]int32{"amounts": 6, "totals-out": 6})
	bin := filepath.Join(buildBinary(t), "stoatctl")
	kc := kcatRunner(t, kcat, addr)
	round := func() {
		var in strings.Builder
		for range perRound {
			for k := range keys {
				fmt.Fprintf(&in, "key-%d:1\n", k)
			}
		}
		kc(in.String(), "-t", "amounts", "-P", "-K:")
	}
	start := func(name string) *runInstance {
		return startRun(t, bin, "run", "-t", "running-total", "-b", addr, "--state-dir", filepath.Join(t.TempDir(), name),
			"-X", "application.id=three-instances", "-X", "stoatflow.commit-barrier.interval-ms=100", "-X", "num.stream.threads=2",
			"-X", "session.timeout.ms=10000", "--http", "off")
	}
	stop := func(name string, in *runInstance) { in.stop(t, name) }
	// Each join completes (the new instance is assigned partitions)
	// before the next round, so that the rounds land on different
	// assignments.

	a := start("a")
	round()
	b := start("b")
	b.awaitAssigned(t, "b")
	round()
	c := start("c")
	c.awaitAssigned(t, "c")
	round()
	stop("b", b)
	round()
	b = start("b")
	b.awaitAssigned(t, "b")
	round()
	stop("a", a)
	round()
	round()

	got := readInt64s(t, kc, "totals-out", keys*rounds*perRound)
	stop("b", b)
	stop("c", c)
	checkOneToN(t, "totals", got, keys, rounds*perRound)
}

// kcatRunner runs kcat against addr with stdin, failing t on an error,
// and returns its output.
func kcatRunner(t *testing.T, kcat, addr string) func(stdin string, args ...string) string {
	return func(stdin string, args ...string) string {
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
}

// runInstance is a stoatctl process of a multi-instance test.
type runInstance struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// startRun starts bin with args, killed when the test ends.
func startRun(t *testing.T, bin string, args ...string) *runInstance {
	t.Helper()
	cmd := exec.Command(bin, args...)
	in := &runInstance{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = in.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return in
}

// awaitAssigned waits until the instance logs its first assignment
// (the engine's "partitions assigned" line), at most 60 s.
func (in *runInstance) awaitAssigned(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(in.stderr.String(), "partitions assigned") {
		if time.Now().After(deadline) {
			t.Fatalf("instance %s was assigned no partition within 60 s; stderr:\n%s", name, in.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and requires a clean exit within 40 s.
func (in *runInstance) stop(t *testing.T, name string) {
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

// readInt64s reads topic read-committed with kcat, key and 64-bit value,
// until want records are there or 90 s passed, and returns the values by
// key.
func readInt64s(t *testing.T, kc func(string, ...string) string, topic string, want int) map[string][]int {
	t.Helper()
	var got map[string][]int
	deadline := time.Now().Add(90 * time.Second)
	for {
		got = map[string][]int{}
		n := 0
		out := kc("", "-t", topic, "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n", "-s", "value=q", "-X", "isolation.level=read_committed")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("value %q of %s: %v", v, k, err)
			}
			got[k] = append(got[k], int(x))
			n++
		}
		if n >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkOneToN requires keys keys, each with the values 1..n exactly once.
func checkOneToN(t *testing.T, what string, got map[string][]int, keys, n int) {
	t.Helper()
	if len(got) != keys {
		t.Fatalf("%s of %d keys, want %d", what, len(got), keys)
	}
	wrong := 0
	for k, vs := range got {
		slices.Sort(vs)
		ok := len(vs) == n
		for i, v := range vs {
			ok = ok && v == i+1
		}
		if !ok {
			if wrong++; wrong <= 5 {
				t.Errorf("key %s: %s %v, want 1..%d once each", k, what, vs, n)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d keys have wrong %s", wrong, keys, what)
	}
}
