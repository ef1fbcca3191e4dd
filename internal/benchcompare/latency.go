package benchcompare

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/benchbase"
)

// Shares are the offered rates of the latency runs, as shares of each
// system's measured maximum rate on the map topology.
var Shares = []float64{0.25, 0.5, 0.75}

// SharedShare is the offered rate of the latency runs that offer every
// system the same load, as a share of the slowest system's maximum rate:
// the comparison at one offered rate, which the per-system shares cannot
// give when one system's lowest share is above another's highest.
const SharedShare = 0.5

// warmup is how long load is offered before latencies count: the
// producer's and the system's connections, the first transaction.
const warmup = time.Second

// latencies measures the map topology's end-to-end latency on every
// system that has a maximum rate, at every share of it.
func latencies(ctx context.Context, b *brokerHandle, env Env, o Options, br string, rep *Report, progress func(string, ...any)) []LatencySample {
	var out []LatencySample
	for _, sys := range systemsFor(TopoMap, o.KStreams) {
		top := maxRate(rep, br, sys)
		for _, share := range Shares {
			l := LatencySample{Broker: br, System: sys, Share: share, Offered: share * top}
			if math.IsNaN(top) {
				l.Offered = 0
				l.Failed = "no maximum rate measured"
			} else if err := latencyRun(ctx, b, env, o, sys, &l); err != nil {
				l.Failed = err.Error()
			}
			if l.Failed != "" {
				progress("%s latency %s at %.0f%%: failed: %s", br, sys, share*100, firstLine(l.Failed))
			} else {
				progress("%s latency %s at %.0f%% (%.0f records/s): p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms",
					br, sys, share*100, l.Offered, l.P50, l.P99, l.P999)
			}
			out = append(out, l)
		}
	}
	slowest := math.NaN()
	for _, sys := range systemsFor(TopoMap, o.KStreams) {
		if top := maxRate(rep, br, sys); !math.IsNaN(top) && (math.IsNaN(slowest) || top < slowest) {
			slowest = top
		}
	}
	if math.IsNaN(slowest) {
		return out
	}
	for _, sys := range systemsFor(TopoMap, o.KStreams) {
		l := LatencySample{Broker: br, System: sys, Share: SharedShare, Offered: SharedShare * slowest, Shared: true}
		if err := latencyRun(ctx, b, env, o, sys, &l); err != nil {
			l.Failed = err.Error()
			progress("%s latency %s at the shared %.0f records/s: failed: %s", br, sys, l.Offered, firstLine(l.Failed))
		} else {
			progress("%s latency %s at the shared %.0f records/s: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms", br, sys, l.Offered, l.P50, l.P99, l.P999)
		}
		out = append(out, l)
	}
	return out
}

// stamped is a latency run's value: 'T', the send time in Unix
// nanoseconds in 19 digits (upper-casing leaves them be), padded to size
// by benchbase.Value's letters.
func stamped(i, size int, at time.Time) []byte {
	v := fmt.Appendf(make([]byte, 0, max(size, 20)), "T%019d", at.UnixNano())
	if size > len(v) {
		v = append(v, benchbase.Value(i, size)[len(v):]...)
	}
	return v
}

// sentAt reads the send time back from a stamped value.
func sentAt(v []byte) (time.Time, bool) {
	if len(v) < 20 || (v[0] != 'T' && v[0] != 't') {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(string(v[1:20]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// pace produces total records to topic at rate records/s through cl,
// each made by mk, and returns when all are acknowledged.
func pace(ctx context.Context, cl *kgo.Client, topic string, rate float64, total int, mk func(i int, now time.Time) *kgo.Record) error {
	var mu sync.Mutex
	var first error
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = fmt.Errorf("produce to %s: %w", topic, err)
			}
		}
	}
	start := time.Now()
	sent := 0
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent < total {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		due := min(total, int(rate*time.Since(start).Seconds()))
		for ; sent < due; sent++ {
			r := mk(sent, time.Now())
			r.Topic = topic
			cl.Produce(ctx, r, promise)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

// started is a system running in the background over a latency run's
// topics: stop ends it and returns its error.
type started struct {
	stop func() error
}

// startSystem starts sys over t's map topics and returns once it is ready
// to process: stoatctl with partitions assigned, Kafka Streams RUNNING, the
// bare loop (which has no such signal) two seconds after its start. n is
// how many records the bare loop is to commit before it returns.
func startSystem(ctx context.Context, env Env, sys, topo string, t Topics, n int) (*started, error) {
	switch sys {
	case SystemBareLoop:
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := runBareLoop(runCtx, env, t, n); done <- err }()
		time.Sleep(2 * time.Second)
		return &started{stop: func() error {
			select {
			case err := <-done:
				cancel()
				return err
			case <-time.After(30 * time.Second):
				cancel()
				<-done
				return errors.New("bare loop did not commit every record within 30 s of the last")
			}
		}}, nil
	case SystemStoat:
		e := engine.New(Build(topo, t, latencyWindow), stoatConfig(env, t), engine.WithLogger(env.Logger))
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- e.Run(runCtx) }()
		deadline := time.Now().Add(env.Timeout)
		for len(e.Assignment()) == 0 || e.State() != engine.Running {
			select {
			case err := <-done:
				cancel()
				return nil, fmt.Errorf("stoatctl stopped before running: %w", err)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				cancel()
				<-done
				return nil, errors.New("stoatctl did not get its partitions in time")
			}
		}
		return &started{stop: func() error {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		}}, nil
	case SystemKStreams, SystemKStreamsNoCache:
		dir, err := os.MkdirTemp("", "benchcompare-ks-")
		if err != nil {
			return nil, err
		}
		args := []string{"run", "--topology", "bench-" + topo, "--topic-prefix", t.Prefix,
			"--application-id", t.Prefix, "--bootstrap-servers", env.Seeds[0], "--state-dir", dir,
			"--threads", strconv.Itoa(env.Lanes)}
		if sys == SystemKStreamsNoCache {
			args = append(args, "--cache-max-bytes", "0")
		}
		cmd := env.Java.Runner(ctx, args...)
		var stderr tailBuffer
		w, closeLog := env.stderrOf(t.Prefix, &stderr)
		cmd.Stderr = w
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			closeLog()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		running := make(chan struct{})
		go func() {
			buf := make([]byte, 4096)
			var once sync.Once
			acc := ""
			for {
				k, err := stdout.Read(buf)
				acc += string(buf[:k])
				if len(acc) >= len("RUNNING") && containsLine(acc, "RUNNING") {
					once.Do(func() { close(running) })
				}
				if err != nil {
					return
				}
			}
		}()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-running:
		case err := <-exited:
			closeLog()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("kafka streams exited before RUNNING: %v: %s", err, stderr.Cause())
		}
		return &started{stop: func() error {
			defer closeLog()
			defer os.RemoveAll(dir)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					return fmt.Errorf("kafka streams: %v: %s", err, stderr.Cause())
				}
				return nil
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				return errors.New("kafka streams did not stop within 60 s of SIGTERM")
			}
		}}, nil
	}
	return nil, fmt.Errorf("unknown system %s", sys)
}

func containsLine(s, line string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if s[:i] == line {
			return true
		}
		if i == len(s) {
			return false
		}
		s = s[i+1:]
	}
	return false
}

// latencyRun offers l.Offered records/s to sys on the map topology for
// o.LatencyFor after a warm-up, and fills l's percentiles from the
// records sent after the warm-up.
func latencyRun(ctx context.Context, b *brokerHandle, env Env, o Options, sys string, l *LatencySample) error {
	t := Topics{Prefix: fmt.Sprintf("lat-%s-%d-%d", sys, int(l.Share*100), time.Now().UnixNano()%1_000_000)}
	seeds, _, release, err := b.fresh(ctx)
	if err != nil {
		return err
	}
	defer release(t.Prefix)
	env.Seeds = seeds
	if err := load(ctx, seeds, TopoMap, t, Input{Records: 0, Keys: o.Input.Keys, ValueBytes: o.Input.ValueBytes, Partitions: o.Input.Partitions}, time.Now()); err != nil {
		return err
	}
	total := int(l.Offered * (warmup + o.LatencyFor).Seconds())
	if total < 10 {
		return fmt.Errorf("offered rate %.0f records/s is too low to measure", l.Offered)
	}
	sysRun, err := startSystem(ctx, env, sys, TopoMap, t, total)
	if err != nil {
		return err
	}
	hist := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	measureFrom := time.Now().Add(warmup)
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	read := make(chan int, 1)
	go func() {
		read <- readOutput(readCtx, seeds, t.Out(), total, func(r *kgo.Record, now time.Time) {
			if at, ok := sentAt(r.Value); ok && !at.Before(measureFrom) {
				_ = hist.RecordValue(max(1, now.Sub(at).Microseconds()))
			}
		})
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	perr := pace(ctx, cl, t.In(), l.Offered, total, func(i int, now time.Time) *kgo.Record {
		return &kgo.Record{Key: []byte("key-" + strconv.Itoa(i%o.Input.Keys)), Value: stamped(i, o.Input.ValueBytes, now)}
	})
	var got int
	select {
	case got = <-read:
	case <-time.After(60 * time.Second):
		stopRead()
		got = <-read
	}
	serr := sysRun.stop()
	if perr != nil {
		return perr
	}
	if got < total {
		return fmt.Errorf("read %d of %d records from %s (system stop: %v)", got, total, t.Out(), serr)
	}
	if serr != nil {
		return serr
	}
	l.Records = int(hist.TotalCount())
	l.P50 = float64(hist.ValueAtQuantile(50)) / 1000
	l.P99 = float64(hist.ValueAtQuantile(99)) / 1000
	l.P999 = float64(hist.ValueAtQuantile(99.9)) / 1000
	return nil
}

// readOutput reads topic read_committed from the start until n records
// were read or ctx ends, calling fn with each and the time it was read;
// it returns how many it read.
func readOutput(ctx context.Context, seeds []string, topic string, n int, fn func(*kgo.Record, time.Time)) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return 0
	}
	defer cl.Close()
	got := 0
	for got < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			got++
			fn(r, now)
		})
	}
	return got
}

// latencyWindow is the window of the final-result latency run: short, so
// that a run of seconds closes many windows.
const latencyWindow = time.Second

// closeLatency measures the final-result latency of stoatctl's
// emit-on-close windowed count: records are offered with their send time
// as event time, so a window's close (its end; no grace, no
// out-of-orderness) is passed on a partition when the first record at or
// after it is sent there, and on every partition at the latest of those.
// Each committed result read counts from that moment, in commit-barrier
// intervals (the default, 500 ms).
func closeLatency(ctx context.Context, b *brokerHandle, env Env, o Options, br string, progress func(string, ...any)) CloseLatency {
	c := CloseLatency{Broker: br, System: SystemStoat, CommitIntervalMs: 500}
	if err := closeLatencyRun(ctx, b, env, o, &c); err != nil {
		c.Failed = err.Error()
		progress("%s window-close latency: failed: %s", br, firstLine(c.Failed))
	} else {
		progress("%s window-close latency: %d results, p50 %.2f, p99 %.2f commit intervals", br, c.Windows, c.P50, c.P99)
	}
	return c
}

func closeLatencyRun(ctx context.Context, b *brokerHandle, env Env, o Options, c *CloseLatency) error {
	t := Topics{Prefix: fmt.Sprintf("close-%d", time.Now().UnixNano()%1_000_000)}
	seeds, _, release, err := b.fresh(ctx)
	if err != nil {
		return err
	}
	defer release(t.Prefix)
	env.Seeds = seeds
	if err := load(ctx, seeds, TopoWindowClose, t, Input{Keys: o.Input.Keys, ValueBytes: o.Input.ValueBytes, Partitions: o.Input.Partitions}, time.Now()); err != nil {
		return err
	}
	// A modest rate: this is about when results come, not how many.
	const rate = 2000.0
	keys := min(o.Input.Keys, 100)
	total := int(rate * (warmup + o.LatencyFor).Seconds())
	sysRun, err := startSystem(ctx, env, SystemStoat, TopoWindowClose, t, total)
	if err != nil {
		return err
	}
	defer func() { _ = sysRun.stop() }()
	measureFrom := time.Now().Add(warmup).Truncate(latencyWindow).Add(latencyWindow)

	// Per partition, the event times sent there, in order.
	var mu sync.Mutex
	sent := map[int32][]int64{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	type result struct {
		start int64
		at    time.Time
	}
	var results []result
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readOutput(readCtx, seeds, t.Out(), math.MaxInt, func(r *kgo.Record, now time.Time) {
			if len(r.Key) < 8 {
				return
			}
			start := int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))
			results = append(results, result{start, now})
		})
	}()
	var perr error
	func() {
		// Promises record where each record went; pace's own promise
		// reports errors.
		var wg sync.WaitGroup
		start := time.Now()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; i < total; {
			<-tick.C
			due := min(total, int(rate*time.Since(start).Seconds()))
			for ; i < due; i++ {
				now := time.Now()
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: t.In(), Key: []byte("key-" + strconv.Itoa(i%keys)),
					Value: benchbase.Value(i, o.Input.ValueBytes), Timestamp: now}, func(r *kgo.Record, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						perr = err
						return
					}
					sent[r.Partition] = append(sent[r.Partition], r.Timestamp.UnixMilli())
				})
			}
		}
		wg.Wait()
	}()
	if perr != nil {
		return perr
	}
	// The last windows close only with later input; wait for what closed.
	time.Sleep(3 * time.Second)
	stopRead()
	<-readDone

	mu.Lock()
	defer mu.Unlock()
	for p := range sent {
		slices.Sort(sent[p])
	}
	// passed is when the close at end was passed on every partition, or
	// false when some partition never got that far.
	passed := func(end int64) (int64, bool) {
		var last int64
		for p := range o.Input.Partitions {
			ts := sent[p]
			i, _ := slices.BinarySearch(ts, end)
			if i == len(ts) {
				return 0, false
			}
			last = max(last, ts[i])
		}
		return last, true
	}
	hist := hdrhistogram.New(1, int64(5*time.Minute/time.Microsecond), 3)
	for _, r := range results {
		if r.start < measureFrom.UnixMilli() {
			continue
		}
		at, ok := passed(r.start + latencyWindow.Milliseconds())
		if !ok {
			continue
		}
		_ = hist.RecordValue(max(1, r.at.Sub(time.UnixMilli(at)).Microseconds()))
	}
	if hist.TotalCount() == 0 {
		return fmt.Errorf("no window closed after the warm-up was read (%d results in all)", len(results))
	}
	unit := c.CommitIntervalMs * 1000
	c.Windows = int(hist.TotalCount())
	c.P50 = float64(hist.ValueAtQuantile(50)) / unit
	c.P99 = float64(hist.ValueAtQuantile(99)) / unit
	return nil
}
