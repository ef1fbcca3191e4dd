package cmd

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalExitsAtOnce: once a first signal has begun a clean stop,
// a second one exits at once with status 130. The test runs itself as a
// child that stands in for a slow shutdown.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if os.Getenv("STOATCTL_SECOND_SIGNAL_CHILD") != "" {
		ctx, cancel := context.WithCancel(context.Background())
		armed := make(chan struct{})
		defer exitOnSecondSignal(ctx, os.Stderr, func() { close(armed) })()
		cancel() // the first signal: the clean stop begins
		<-armed
		os.Stdout.WriteString("stopping\n")
		<-time.After(30 * time.Second) // a final commit that takes long
		os.Exit(0)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestSecondSignalExitsAtOnce$")
	child.Env = append(os.Environ(), "STOATCTL_SECOND_SIGNAL_CHILD=1")
	var stderr strings.Builder
	child.Stderr = &stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "stopping" {
		t.Fatalf("child said %q, want stopping", sc.Text())
	}
	start := time.Now()
	if err := child.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = child.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("child ended with %v, want exit status 130", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("child took %s to exit after the second signal", took)
	}
	if !strings.Contains(stderr.String(), "second signal, exiting now") {
		t.Errorf("stderr %q does not say why it exits", stderr.String())
	}
}
