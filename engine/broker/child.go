package broker

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ChildEnv is set in the environment of a process StartChild starts: a
// program that finds it set serves a broker (ServeChild) instead of
// doing its own work.
const ChildEnv = "STOATFLOW_EMBEDDED_BROKER_CHILD"

// IsChild reports whether this process was started by StartChild.
func IsChild() bool { return os.Getenv(ChildEnv) != "" }

// ServeChild runs an in-memory broker on a free port, prints its address
// as the first line of standard output, serves until SIGTERM or an
// interrupt, and returns the process's exit status. Call it first in main
// (or TestMain) when IsChild says so.
//
// A broker in a process of its own is what benchmarks measure against:
// its in-memory logs grow by copying into fresh memory, and inside the
// measured process what that costs would land on the system measured,
// more or less depending on how far earlier runs grew the heap
// (docs/decisions/0019-bench-broker-per-phase.md).
func ServeChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	b, err := Start(ctx, Options{Port: RandomPort,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded broker child:", err)
		return 1
	}
	fmt.Println(b.Addr())
	<-ctx.Done()
	_ = b.Close()
	return 0
}

// childStart bounds how long a child may take to print its address.
const childStart = time.Minute

// childStop bounds how long stop waits for a child after SIGTERM before
// killing it.
const childStop = 30 * time.Second

// StartChild starts cmd, a program that calls ServeChild when IsChild,
// with ChildEnv set (on top of os.Environ when cmd.Env is nil), and
// returns the broker's address once the child printed it. stop ends the
// child (SIGTERM, then SIGKILL after 30 s) and waits for it; it may be
// called more than once. The child's standard error is this process's
// unless cmd says otherwise.
func StartChild(ctx context.Context, cmd *exec.Cmd) (addr string, stop func(), err error) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, ChildEnv+"=1")
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, fmt.Errorf("start the embedded broker %s: %w", cmd.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the embedded broker %s: %w", cmd.Path, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(childStop):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- strings.TrimSpace(sc.Text())
		}
		close(line)
	}()
	select {
	case addr, ok := <-line:
		if !ok || addr == "" {
			stop()
			return "", nil, fmt.Errorf("start the embedded broker: the child %s printed no address", cmd.Path)
		}
		return addr, stop, nil
	case <-ctx.Done():
		stop()
		return "", nil, fmt.Errorf("start the embedded broker %s: %w", cmd.Path, ctx.Err())
	case <-time.After(childStart):
		stop()
		return "", nil, fmt.Errorf("start the embedded broker: the child %s gave no address within %s", cmd.Path, childStart)
	}
}
