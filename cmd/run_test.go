package cmd

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestRunOnEmbeddedBrokerWithKcat is the black-box test of stoatctl run:
// with no cluster it starts the embedded broker, kcat (an independent
// client) produces the input, and kcat reads the output read-committed.
// SIGTERM commits a final barrier and exits 0. In the real-Kafka tier
// (STOATCTL_TEST_KAFKA=real) the same run gets -b with the real broker's
// address instead, and must not start a broker of its own.
func TestRunOnEmbeddedBrokerWithKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	bin := filepath.Join(buildBinary(t), "stoatctl")
	args := []string{"run", "-t", "uppercase", "--broker-port", "0", "--http", "127.0.0.1:0", "-X", "stoatflow.commit-barrier.interval-ms=100"}
	var realAddr string
	if kafkatest.Real() {
		realAddr = kafkatest.Start(t, map[string]int32{"sentences": 2, "shouted": 2})
		args = []string{"run", "-t", "uppercase", "-b", realAddr, "--http", "127.0.0.1:0", "-X", "stoatflow.commit-barrier.interval-ms=100"}
	}
	cmd := exec.Command(bin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
		io.Copy(io.Discard, out)
	}()
	addr := realAddr
	if addr == "" {
		select {
		case addr = <-line:
		case <-time.After(30 * time.Second):
		}
		if addr == "" {
			t.Fatalf("stoatctl run printed no broker address; stderr:\n%s", stderr)
		}
	}
	kc := func(stdin string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, kcat, args...)
		c.Stdin = strings.NewReader(stdin)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("kcat %s: %v", strings.Join(args, " "), err)
		}
		return string(b)
	}
	kc("alice:hello, world\nbob:   \ncarol:bye\n", "-b", addr, "-t", "sentences", "-P", "-K:")
	want := []string{"alice:HELLO, WORLD", "carol:BYE"}
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		o := kc("", "-b", addr, "-t", "shouted", "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n", "-X", "isolation.level=read_committed")
		got = strings.Split(strings.TrimSpace(o), "\n")
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("kcat read %q, want %q; stderr:\n%s", got, want, stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stoatctl run after SIGTERM: %v; stderr:\n%s", err, stderr)
	}
	want = []string{"to=RUNNING", "to=PENDING_SHUTDOWN", "to=NOT_RUNNING"}
	if realAddr == "" {
		want = append(want, "kcat -b "+addr+" -t sentences -P -K:")
	}
	for _, s := range want {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr)
		}
	}
}
