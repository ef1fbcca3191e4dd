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

// TestInterruptWhileBrokersUnreachable: stopping run while it retries a
// cluster it cannot reach is a clean stop, exit 0, as SIGINT is anywhere
// else (it exited 1, "cannot reach the brokers"; issue 16). The context
// stands in for the signal, as signal.NotifyContext derives from it.
func TestInterruptWhileBrokersUnreachable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, []string{"run", "-t", "uppercase", "-b", "127.0.0.1:1", "--log-level", "warn"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "brokers unreachable, retrying") {
		if time.Now().After(deadline) {
			t.Fatalf("run never retried:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK || strings.Contains(stderr.String(), "cannot reach") {
			t.Errorf("run stopped while retrying: exit %d, want 0\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
}
