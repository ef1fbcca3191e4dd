package benchcompare

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/interop"
)

// Env is what the systems run against.
type Env struct {
	Seeds []string
	// Java runs Kafka Streams; nil skips it.
	Java *interop.Java
	// Lanes is stoatctl's num.stream.threads and Kafka Streams'.
	Lanes int
	// Store is stoatctl's default.dsl.store (in_memory or rocksDB).
	Store string
	// Compression is the producers' compression.type, stoatctl's and
	// the bare loop's: none (Kafka Streams' default) unless set.
	Compression string
	Logger      *slog.Logger
	// Timeout bounds one system's run.
	Timeout time.Duration
	// LogDir, when set, gets each Kafka Streams run's stderr as
	// PREFIX.log.
	LogDir string
}

// stderrOf is where a Kafka Streams run under prefix writes its stderr:
// tail, and LogDir's file when there is one; close closes the file.
func (env Env) stderrOf(prefix string, tail *tailBuffer) (w io.Writer, close func()) {
	if env.LogDir == "" {
		return tail, func() {}
	}
	if err := os.MkdirAll(env.LogDir, 0o755); err != nil {
		return tail, func() {}
	}
	f, err := os.Create(filepath.Join(env.LogDir, prefix+".log"))
	if err != nil {
		return tail, func() {}
	}
	return io.MultiWriter(tail, f), func() { f.Close() }
}

// runBareLoop runs the ceiling over t's map input: engine/benchbase's
// exactly-once loop, timed from assignment to its last commit.
func runBareLoop(ctx context.Context, env Env, t Topics, n int) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, env.Timeout)
	defer cancel()
	codec, err := kafka.CompressionCodec(env.Compression)
	if err != nil {
		return 0, err
	}
	res, err := benchbase.Baseline(ctx, env.Seeds, t.In(), t.Out(), t.Prefix, true, n, kgo.ProducerBatchCompression(codec))
	if err != nil {
		return 0, err
	}
	return res.RecordsPerSec, nil
}

// stoatConfig is stoatctl's configuration for a run under t: exactly-once,
// Env's lanes and store, and a watermark that trails event time by
// nothing, so that a window closes at the same stream time as in Kafka
// Streams (no grace either side). The barrier interval is the default
// (500 ms).
func stoatConfig(env Env, t Topics) map[string]string {
	return map[string]string{
		"application.id":                    t.Prefix,
		"bootstrap.servers":                 strings.Join(env.Seeds, ","),
		"processing.guarantee":              "exactly_once_v2",
		"num.stream.threads":                strconv.Itoa(env.Lanes),
		config.DefaultDSLStore:              env.Store,
		config.WatermarkMaxOutOfOrdernessMs: "0",
		"compression.type":                  cmp.Or(env.Compression, "none"),
	}
}

// runStoat runs topo through the engine until n source records are
// committed. Time counts from the last RUNNING state before anything
// committed (the first comes before the group assigned any partition), as
// the bare loop's counts from its assignment. It also returns the peak
// heap in use, sampled every 50 ms (the whole process: with the embedded
// broker in process, that includes the broker's topics).
func runStoat(ctx context.Context, env Env, topo string, t Topics, n int) (rate float64, peak uint64, err error) {
	e := engine.New(Build(topo, t, Window), stoatConfig(env, t), engine.WithLogger(env.Logger))
	var mu sync.Mutex
	var start time.Time
	e.OnStateChange(func(_, s engine.State) {
		mu.Lock()
		defer mu.Unlock()
		if s == engine.Running && e.Stats().Records == 0 {
			start = time.Now()
		}
	})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	deadline := time.After(env.Timeout)
	polls := 0
	for e.Stats().Records < int64(n) {
		select {
		case err := <-done:
			return 0, peak, fmt.Errorf("stoatctl stopped after %d of %d records: %w", e.Stats().Records, n, err)
		case <-deadline:
			cancel()
			<-done
			return 0, peak, fmt.Errorf("stoatctl committed %d of %d records within %v", e.Stats().Records, n, env.Timeout)
		case <-time.After(5 * time.Millisecond):
		}
		if polls++; polls%10 == 0 {
			peak = max(peak, benchbase.HeapInUse())
		}
	}
	mu.Lock()
	elapsed := time.Since(start)
	mu.Unlock()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return 0, peak, fmt.Errorf("stoatctl: stop: %w", err)
	}
	return float64(n) / elapsed.Seconds(), peak, nil
}

// runKStreams runs topo through Kafka Streams (the interop runner's
// bench-<topo>), exactly_once_v2, Env's lanes as stream threads, its
// defaults otherwise, with the record cache as shipped (cache) or off.
// Time counts from its RUNNING line (the group has assigned the input
// and the tasks are up) to the first poll, every 50 ms, that finds the
// group's committed offsets at the input's end offsets.
func runKStreams(ctx context.Context, env Env, topo string, t Topics, cache bool, brokerPID int) (rate float64, cpu, brokerCPU time.Duration, err error) {
	if env.Java == nil {
		return 0, 0, 0, errors.New("no Java runner")
	}
	dir, err := os.MkdirTemp("", "benchcompare-ks-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	args := []string{"run", "--topology", "bench-" + topo, "--topic-prefix", t.Prefix,
		"--application-id", t.Prefix, "--bootstrap-servers", env.Seeds[0], "--state-dir", dir,
		"--threads", strconv.Itoa(env.Lanes)}
	if !cache {
		args = append(args, "--cache-max-bytes", "0")
	}
	runCtx, cancel := context.WithTimeout(ctx, env.Timeout+time.Minute)
	defer cancel()
	cmd := env.Java.Runner(runCtx, args...)
	var stderr tailBuffer
	w, closeLog := env.stderrOf(t.Prefix, &stderr)
	defer closeLog()
	cmd.Stderr = w
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, fmt.Errorf("kafka streams: start: %w", err)
	}
	running := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "RUNNING" {
				running <- time.Now()
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fail := func(what string, err error) (float64, time.Duration, time.Duration, error) {
		return 0, 0, 0, fmt.Errorf("kafka streams %s: %s: %v: %s", topo, what, err, stderr.Cause())
	}

	var start time.Time
	select {
	case start = <-running:
	case err := <-exited:
		return fail("exited before RUNNING", err)
	}
	jvmMeter, brokerMeter := meterPID(cmd.Process.Pid), meterPID(brokerPID)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Seeds...))
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// The harness decides when the input is consumed, not the runner's
	// --until-consumed: that check's Admin calls never succeed against
	// the embedded broker, and it polls at 250 ms.
	var end time.Time
	timeout := time.After(env.Timeout)
	for end.IsZero() {
		select {
		case err := <-exited:
			return fail("exited before consuming its input", err)
		case <-timeout:
			_ = cmd.Process.Kill()
			<-exited
			return fail("input not consumed", fmt.Errorf("timed out after %v", env.Timeout))
		case <-time.After(50 * time.Millisecond):
		}
		if done, err := consumed(ctx, adm, t.Prefix, t.Inputs(topo)); err == nil && done {
			end = time.Now()
			cpu, _ = jvmMeter.stop()
			brokerCPU, _ = brokerMeter.stop()
		}
	}
	// SIGTERM: the runner's shutdown hook closes Kafka Streams, exit 0.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			return fail("exit", err)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fail("stop", errors.New("did not exit within 60 s of SIGTERM"))
	}
	n := 0
	ends, err := adm.ListEndOffsets(ctx, t.Inputs(topo)...)
	if err != nil {
		return 0, 0, 0, err
	}
	ends.Each(func(o kadm.ListedOffset) { n += int(o.Offset) })
	return float64(n) / end.Sub(start).Seconds(), cpu, brokerCPU, nil
}

// consumed says whether group has committed every partition of topics up
// to its end offset.
func consumed(ctx context.Context, adm *kadm.Client, group string, topics []string) (bool, error) {
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return false, err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, err
	}
	done := true
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(o.Topic, o.Partition)
		if o.Offset > 0 && (!ok || c.At < o.Offset) {
			done = false
		}
	})
	return done, nil
}

// tailBuffer keeps the last 64 KiB written to it: a child's stderr, for
// the error when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 64<<10; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

// Cause is what a failed Kafka Streams run said about why: the runner's
// first "error:" line and the innermost "Caused by:" after it, or the last
// three lines when there are neither.
func (b *tailBuffer) Cause() string {
	b.mu.Lock()
	lines := strings.Split(strings.TrimRight(string(b.buf), "\n"), "\n")
	b.mu.Unlock()
	var first, cause string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if first == "" && strings.HasPrefix(l, "error:") {
			first = l
		}
		if first != "" && strings.HasPrefix(l, "Caused by:") {
			cause = l
		}
	}
	if first == "" {
		return strings.Join(lines[max(0, len(lines)-3):], " / ")
	}
	if cause != "" {
		return first + " (" + cause + ")"
	}
	return first
}

// Tail is the last n lines written.
func (b *tailBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := bytes.Split(bytes.TrimRight(b.buf, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
