package cmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/internal/syncbuf"
)

// syncBuffer is what a running command writes to while a test reads it.
type syncBuffer = syncbuf.Buffer

// brokerRun is `stoatctl broker` running in-process.
type brokerRun struct {
	addr   string
	stderr *syncBuffer
	stop   context.CancelFunc
	done   chan int
}

// startBrokerCommand runs `stoatctl broker args...` in-process and waits
// for the address it prints.
func startBrokerCommand(t *testing.T, args ...string) *brokerRun {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	r := &brokerRun{stderr: &syncBuffer{}, stop: cancel, done: make(chan int, 1)}
	go func() {
		code := RunContext(ctx, append([]string{"broker"}, args...), pw, r.stderr)
		pw.Close()
		r.done <- code
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, pr)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("stoatctl broker %s printed no address; stderr:\n%s", strings.Join(args, " "), r.stderr)
		}
		r.addr = line
	case <-time.After(20 * time.Second):
		t.Fatalf("stoatctl broker %s printed no address in 20s; stderr:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// shutdown stops the command as a signal would and returns its exit code.
func (r *brokerRun) shutdown(t *testing.T) int {
	t.Helper()
	r.stop()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("stoatctl broker did not stop within 30s; stderr:\n%s", r.stderr)
		return -1
	}
}

func produceRecords(t *testing.T, addr, topic string, kvs ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, ":")
		rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, addr, err)
	}
}

// consumeRecords reads n records of topic as key:value, sorted.
func consumeRecords(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+":"+string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

var brokerMasks = []*regexp.Regexp{regexp.MustCompile(`127\.0\.0\.1:\d+`)}

func maskBroker(dir string) func(string) string {
	return func(s string) string {
		for _, re := range brokerMasks {
			s = re.ReplaceAllString(s, "127.0.0.1:<port>")
		}
		if dir != "" {
			s = strings.ReplaceAll(s, dir, "<data-dir>")
		}
		return s
	}
}

// TestBrokerCommand runs the command in-process on a free port, produces
// and consumes through it with franz-go, stops it as a signal would, and
// compares what it printed with testdata/broker_run.golden.
func TestBrokerCommand(t *testing.T) {
	args := []string{"--port", "0", "--topic", "orders:3", "-t", "audit"}
	r := startBrokerCommand(t, args...)
	want := []string{"k1:v1", "k2:v2", "k3:v3"}
	produceRecords(t, r.addr, "orders", want...)
	if got := consumeRecords(t, r.addr, "orders", len(want)); !slices.Equal(got, want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
	code := r.shutdown(t)
	if code != ExitOK {
		t.Fatalf("exit %d after the stop, want 0; stderr:\n%s", code, r.stderr)
	}
	checkGolden(t, "broker_run", maskBroker("")(transcript(append([]string{"broker"}, args...), code, r.addr+"\n", r.stderr.String())))
}

// TestBrokerCommandDataDir restarts the command on one data directory: the
// records written before are read after.
func TestBrokerCommandDataDir(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--port", "0", "--data-dir", dir, "--topic", "orders:2"}
	r := startBrokerCommand(t, args...)
	produceRecords(t, r.addr, "orders", "a:1", "b:2")
	if code := r.shutdown(t); code != ExitOK {
		t.Fatalf("first run: exit %d; stderr:\n%s", code, r.stderr)
	}
	first := maskBroker(dir)(transcript(append([]string{"broker"}, args...), ExitOK, r.addr+"\n", r.stderr.String()))
	checkGolden(t, "broker_run_data_dir", first)

	r = startBrokerCommand(t, "--port", "0", "--data-dir", dir)
	if got := consumeRecords(t, r.addr, "orders", 2); !slices.Equal(got, []string{"a:1", "b:2"}) {
		t.Fatalf("after restart consumed %q, want the records written before", got)
	}
	if !strings.Contains(r.stderr.String(), "topics (partitions): orders (2)") {
		t.Errorf("after restart the broker does not list its restored topic:\n%s", r.stderr)
	}
	if code := r.shutdown(t); code != ExitOK {
		t.Fatalf("second run: exit %d; stderr:\n%s", code, r.stderr)
	}
}

func TestBrokerCommandPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var stdout, stderr bytes.Buffer
	code := Run([]string{"broker", "--port", port}, &stdout, &stderr)
	if code != ExitFailure || stdout.Len() > 0 {
		t.Fatalf("exit %d, stdout %q, want exit 1 and nothing on stdout", code, stdout.String())
	}
	if want := "stoatctl broker: start broker on 127.0.0.1:" + port; !strings.HasPrefix(stderr.String(), want) {
		t.Fatalf("stderr %q, want it to start with %q", stderr.String(), want)
	}
}

// testBrokerBinaryWithKcat is the black-box test: the built binary as a
// user runs it, and Debian's kcat (librdkafka, an independent client)
// producing and consuming through it, across a SIGTERM, a SIGKILL and a
// SIGINT. TestBinary runs it with the binary it built.
func testBrokerBinaryWithKcat(t *testing.T, bin string) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	dir := filepath.Join(t.TempDir(), "data")

	type proc struct {
		cmd    *exec.Cmd
		addr   string
		stderr *syncBuffer
	}
	start := func(args ...string) *proc {
		t.Helper()
		p := &proc{cmd: exec.Command(bin, append([]string{"broker", "--port", "0", "--data-dir", dir}, args...)...), stderr: &syncBuffer{}}
		p.cmd.Stderr = p.stderr
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
		line := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(out)
			sc.Scan()
			line <- sc.Text()
			io.Copy(io.Discard, out)
		}()
		select {
		case p.addr = <-line:
		case <-time.After(30 * time.Second):
		}
		if p.addr == "" {
			t.Fatalf("stoatctl broker printed no address; stderr:\n%s", p.stderr)
		}
		return p
	}
	stop := func(p *proc, sig syscall.Signal) {
		t.Helper()
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := p.cmd.Wait()
		var exit *exec.ExitError
		switch {
		case sig == syscall.SIGKILL:
			if !errors.As(err, &exit) {
				t.Fatalf("after SIGKILL: %v", err)
			}
		case err != nil:
			t.Fatalf("stoatctl broker after %v: %v; stderr:\n%s", sig, err, p.stderr)
		case !strings.HasSuffix(p.stderr.String(), "stopped\n"):
			t.Fatalf("stoatctl broker after %v exited 0 without saying it stopped; stderr:\n%s", sig, p.stderr)
		}
	}
	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, kcat, args...)
		c.Stdin = strings.NewReader(stdin)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	produce := func(addr, lines string) {
		t.Helper()
		run(lines, "-b", addr, "-t", "orders", "-P", "-K:")
	}
	consume := func(addr string) []string {
		t.Helper()
		out := run("", "-b", addr, "-t", "orders", "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		slices.Sort(lines)
		return lines
	}

	p := start("--topic", "orders:2")
	produce(p.addr, "k1:v1\nk2:v2\nk3:v3\n")
	if got, want := consume(p.addr), []string{"k1:v1", "k2:v2", "k3:v3"}; !slices.Equal(got, want) {
		t.Fatalf("kcat consumed %q, want %q", got, want)
	}
	if !strings.Contains(p.stderr.String(), "kcat -b "+p.addr+" -t orders -P -K:") {
		t.Errorf("stderr does not show how to produce with kcat:\n%s", p.stderr)
	}
	stop(p, syscall.SIGTERM)

	// A SIGKILL skips the clean close: what kcat had acknowledged must
	// still be there, from the segments written as it went.
	p = start()
	produce(p.addr, "k4:v4\n")
	stop(p, syscall.SIGKILL)

	p = start()
	if got, want := consume(p.addr), []string{"k1:v1", "k2:v2", "k3:v3", "k4:v4"}; !slices.Equal(got, want) {
		t.Fatalf("after SIGTERM, restart, SIGKILL and restart kcat consumed %q, want %q", got, want)
	}
	topics := run("", "-b", p.addr, "-L")
	if !strings.Contains(topics, `topic "orders" with 2 partitions`) {
		t.Errorf("kcat -L does not show orders with 2 partitions:\n%s", topics)
	}
	stop(p, syscall.SIGINT)
}

// TestPortInUseHint: a broker port in use says how to get a free one, for
// broker --port and run --broker-port, in
// testdata/port_in_use_<command>.golden (PORT the port).
func TestPortInUseHint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"broker", "--port", port},
		{"run", "-t", "uppercase", "--broker-port", port},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(args, &stdout, &stderr)
		if code != ExitFailure {
			t.Errorf("%v: exit %d, want 1\n%s", args, code, stderr.String())
		}
		checkGolden(t, "port_in_use_"+args[0], strings.ReplaceAll(transcript(args, code, stdout.String(), stderr.String()), port, "PORT"))
	}
}
