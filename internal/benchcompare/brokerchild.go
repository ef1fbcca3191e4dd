package benchcompare

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// brokerChildEnv, set in a child's environment, makes ServeBrokerChild
// run an embedded broker instead of the program.
const brokerChildEnv = "STOATCTL_BENCHCOMPARE_BROKER_CHILD"

// ServeBrokerChild, called first in main, turns the process into an
// embedded broker when it was started as one by the comparison: it prints
// the broker's address on a line, serves until SIGTERM or interrupt, and
// exits. Otherwise it returns at once.
//
// The embedded broker runs apart from the systems it serves because its
// in-memory logs grow by copying into fresh memory: inside the process of
// the system being measured, what that costs depends on how far earlier
// runs grew the heap, and lands on the system (decision 0019).
func ServeBrokerChild() {
	if os.Getenv(brokerChildEnv) == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	b, err := broker.Start(ctx, broker.Options{Port: broker.RandomPort,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare broker child:", err)
		os.Exit(1)
	}
	fmt.Println(b.Addr())
	<-ctx.Done()
	_ = b.Close()
	os.Exit(0)
}

// startBrokerChild starts this program again as an embedded broker and
// returns its address, and a stop that ends it and waits.
func startBrokerChild(ctx context.Context) (addr string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("start the embedded broker: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), brokerChildEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, fmt.Errorf("start the embedded broker: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the embedded broker %s: %w", exe, err)
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
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
			return "", nil, fmt.Errorf("start the embedded broker: the child %s printed no address", exe)
		}
		return addr, stop, nil
	case <-ctx.Done():
		stop()
		return "", nil, fmt.Errorf("start the embedded broker: %w", ctx.Err())
	case <-time.After(time.Minute):
		stop()
		return "", nil, fmt.Errorf("start the embedded broker: the child %s gave no address within a minute", exe)
	}
}
