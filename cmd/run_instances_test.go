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
	round := func() {
		var in strings.Builder
		for range perRound {
			for k := range keys {
				fmt.Fprintf(&in, "key-%d:1\n", k)
			}
		}
		kc(in.String(), "-t", "amounts", "-P", "-K:")
	}
	type instance struct {
		cmd    *exec.Cmd
		stderr *syncBuffer
	}
	start := func(name string) *instance {
		t.Helper()
		cmd := exec.Command(bin, "run", "-t", "running-total", "-b", addr, "--state-dir", filepath.Join(t.TempDir(), name),
			"-X", "application.id=three-instances", "-X", "stoatflow.commit-barrier.interval-ms=100", "-X", "num.stream.threads=2",
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
	// Let each join settle a little before the next round, so that the
	// rounds land on different assignments.
	settle := func() { time.Sleep(1500 * time.Millisecond) }

	a := start("a")
	round()
	b := start("b")
	settle()
	round()
	c := start("c")
	settle()
	round()
	stop("b", b)
	round()
	b = start("b")
	settle()
	round()
	stop("a", a)
	round()
	round()

	want := keys * rounds * perRound
	var got map[string][]int
	deadline := time.Now().Add(90 * time.Second)
	for {
		got = map[string][]int{}
		n := 0
		out := kc("", "-t", "totals-out", "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n", "-s", "value=q", "-X", "isolation.level=read_committed")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			total, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("total %q of %s: %v", v, k, err)
			}
			got[k] = append(got[k], int(total))
			n++
		}
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	stop("b", b)
	stop("c", c)
	if len(got) != keys {
		t.Fatalf("totals of %d keys, want %d", len(got), keys)
	}
	wrong := 0
	for k, ts := range got {
		slices.Sort(ts)
		ok := len(ts) == rounds*perRound
		for i, v := range ts {
			ok = ok && v == i+1
		}
		if !ok {
			if wrong++; wrong <= 5 {
				t.Errorf("key %s: totals %v, want 1..%d once each", k, ts, rounds*perRound)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d keys have wrong totals", wrong, keys)
	}
}
