package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kcatPath is kcat, the independent client of the black-box tests: a test
// without it fails under CI and is skipped elsewhere.
func kcatPath(t *testing.T) string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	return kcat
}

// runKcat runs kcat with stdin and returns its stdout, its stderr and
// whether it succeeded.
func runKcat(t *testing.T, kcat, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, kcat, args...)
	c.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	return stdout.String(), stderr.String(), err
}

// TestBrokerAutoCreatesTopicsForKcat is issue 16's acceptance test:
// `seq 1 1000 | kcat -b ADDR -t new-topic -P` against `stoatctl broker`
// succeeds and all 1,000 records read back; with --auto-create-topics=false
// the same produce fails and creates nothing.
func TestBrokerAutoCreatesTopicsForKcat(t *testing.T) {
	kcat := kcatPath(t)
	var seq strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintln(&seq, i)
	}

	r := startBrokerCommand(t, "--port", "0")
	if _, stderr, err := runKcat(t, kcat, seq.String(), "-b", r.addr, "-t", "new-topic", "-P"); err != nil {
		t.Fatalf("seq 1 1000 | kcat -b %s -t new-topic -P: %v\n%s\nbroker stderr:\n%s", r.addr, err, stderr, r.stderr)
	}
	out, stderr, err := runKcat(t, kcat, "", "-b", r.addr, "-t", "new-topic", "-C", "-o", "beginning", "-e", "-q")
	if err != nil {
		t.Fatalf("kcat -C new-topic: %v\n%s", err, stderr)
	}
	if out != seq.String() {
		lines := strings.Count(out, "\n")
		t.Fatalf("kcat read back %d lines, want 1 to 1000 in order (one partition):\n%.200s", lines, out)
	}
	list, _, err := runKcat(t, kcat, "", "-b", r.addr, "-L", "-t", "new-topic")
	if err != nil || !strings.Contains(list, `topic "new-topic" with 1 partitions`) {
		t.Errorf("kcat -L: %v, want new-topic with 1 partition:\n%s", err, list)
	}
	if code := r.shutdown(t); code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr)
	}

	r = startBrokerCommand(t, "--port", "0", "--auto-create-topics=false")
	_, stderr, err = runKcat(t, kcat, "1\n", "-b", r.addr, "-t", "new-topic", "-P", "-X", "message.timeout.ms=3000")
	if err == nil {
		t.Fatalf("kcat -P to new-topic succeeded on a broker with --auto-create-topics=false")
	}
	if list, _, _ := runKcat(t, kcat, "", "-b", r.addr, "-L", "-t", "new-topic"); !strings.Contains(list, "Unknown topic or partition") {
		t.Errorf("after a failed produce (%s), kcat -L does not show new-topic missing:\n%s", strings.TrimSpace(stderr), list)
	}
	if !strings.Contains(r.stderr.String(), "new topics are not created on first use") {
		t.Errorf("broker stderr does not say topics are not created on first use:\n%s", r.stderr)
	}
}
