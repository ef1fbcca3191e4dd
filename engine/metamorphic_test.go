package engine_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/replay"
)

// The child process of the metamorphic test: it runs one case's topology
// until SIGTERM (a clean stop) or SIGKILL (a crash).
const (
	metaChildEnv  = "STOATFLOW_META_CHILD" // the broker address
	metaCaseEnv   = "STOATFLOW_META_CASE"  // example:NAME or fixture:PATH
	metaAppEnv    = "STOATFLOW_META_APP"
	metaConfigEnv = "STOATFLOW_META_CONFIG" // key=value;key=value
)

// metaConfig is one configuration of the metamorphic matrix.
type metaConfig struct {
	lanes   int
	barrier string // "50ms", "500ms" or "adaptive"
	kills   int
}

var (
	metaLanes    = []int{1, 4, 16}
	metaBarriers = []string{"50ms", "500ms", "adaptive"}
	metaKills    = []int{0, 1, 3}
)

func (c metaConfig) String() string {
	return fmt.Sprintf("lanes=%d,barrier=%s,kills=%d", c.lanes, c.barrier, c.kills)
}

// settings are the engine keys of the configuration: a fixed barrier
// interval pins min, max and interval and turns the adaptive factor off.
func (c metaConfig) settings() map[string]string {
	s := map[string]string{"num.stream.threads": strconv.Itoa(c.lanes)}
	switch c.barrier {
	case "50ms", "500ms":
		ms := strings.TrimSuffix(c.barrier, "ms")
		for _, k := range []string{engine.BarrierIntervalMs, engine.BarrierMinIntervalMs, engine.BarrierMaxIntervalMs} {
			s[k] = ms
		}
		s[engine.BarrierIntervalFactor] = "0"
	}
	return s
}

// TestMetamorphic runs every Go example and every fixture under fixtures/
// on the live engine under one configuration each, drawn by the seed from
// lanes {1, 4, 16} x barrier interval {50 ms, 500 ms, adaptive} x crashes
// {0, 1, 3 SIGKILLs}, and requires the committed output after the final
// flush to be the test driver's, per key and in order. Every configuration
// must give the same output, so each run of the suite checks another
// corner of the matrix; the seed is logged and -seed N replays the same
// draw. Fixtures that move time by hand (advance-watermark,
// advance-wall-clock) or write a global table's topic run step by step
// under an engine.EventTime, settled after every step, with the watermark
// driven the same way in every configuration: the driver's
// (metamorphic_time_test.go).
func TestMetamorphic(t *testing.T) {
	kafkatest.Parallel(t)
	if testing.Short() {
		t.Skip("runs the engine once per example and fixture; skipped with -short")
	}
	rng := rand.New(rand.NewPCG(crashSeed(t), 11))
	type metaCase struct {
		ref string
		ex  examples.Example
	}
	var cases []metaCase
	for _, ex := range examples.All() {
		cases = append(cases, metaCase{ref: "example:" + ex.Name, ex: ex})
	}
	paths, err := replay.Expand([]string{"../fixtures"})
	if err != nil {
		t.Fatal(err)
	}
	var timed []timedCase
	for _, path := range paths {
		tc, skip, err := fixtureCase(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case skip != "":
			t.Logf("%s: %s", path, skip)
		case tc.settled():
			timed = append(timed, tc)
		default:
			cases = append(cases, metaCase{ref: "fixture:" + path, ex: tc.ex})
		}
	}
	for _, c := range cases {
		mc := metaConfig{lanes: metaLanes[rng.IntN(3)], barrier: metaBarriers[rng.IntN(3)], kills: metaKills[rng.IntN(3)]}
		t.Run(c.ex.Name+"/"+mc.String(), func(t *testing.T) {
			want := driverOutput(t, c.ex)
			got := metamorphicRun(t, c.ref, c.ex, mc, rng, total(want))
			comparePerKey(t, want, got)
		})
	}
	// Fixtures that move time by hand run step by step under an
	// engine.EventTime, which holds the watermark to the driver's in
	// every configuration: their output must be the driver's too.
	for _, tc := range timed {
		mc := metaConfig{lanes: metaLanes[rng.IntN(3)], barrier: metaBarriers[rng.IntN(3)], kills: metaKills[rng.IntN(3)]}
		t.Run(tc.ex.Name+"/"+mc.String(), func(t *testing.T) {
			want := driverTimedOutput(t, tc)
			got := metamorphicTimedRun(t, "fixture:"+tc.f.Path, tc, mc, rng, total(want))
			comparePerKey(t, want, got)
		})
	}
}

// metamorphicRun feeds ex's inputs to child engines, one run of same-topic
// records at a time (each committed before the next, as in
// TestDifferentialDriverVsEngine), killing the child mc.kills times at
// random moments while a run is in flight, and returns the committed
// output after a clean stop.
func metamorphicRun(t *testing.T, ref string, ex examples.Example, mc metaConfig, rng *rand.Rand, want int) map[string]perKey {
	addr := startBroker(t, exampleTopics(ex))
	app := "meta-" + ex.Name
	var settings []string
	for k, v := range mc.settings() {
		settings = append(settings, k+"="+v)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), metaChildEnv+"="+addr, metaCaseEnv+"="+ref, metaAppEnv+"="+app, metaConfigEnv+"="+strings.Join(settings, ";"))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the child handles SIGTERM: one sent earlier would
		// kill it (a crash the test did not mean), not stop it cleanly.
		ready := make(chan struct{})
		go func() {
			var b [6]byte
			if n, _ := io.ReadFull(out, b[:]); n == 6 && string(b[:]) == "ready\n" {
				close(ready)
			}
			_, _ = io.Copy(io.Discard, out)
		}()
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatal("the child did not start within 30s")
		}
		return cmd
	}
	inputs := rawInputs(ex)
	var runs [][]rawInput
	for i := 0; i < len(inputs); {
		j := i
		for j < len(inputs) && inputs[j].Topic == inputs[i].Topic {
			j++
		}
		runs = append(runs, inputs[i:j])
		i = j
	}
	killsAt := map[int]int{}
	for range mc.kills {
		killsAt[rng.IntN(len(runs))]++
	}
	child := start()
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	adm := kafkatest.Admin(t, addr)
	for i, run := range runs {
		var recs []kv
		for _, r := range run {
			recs = append(recs, r.kv)
		}
		before := committedSum(adm, app, run[0].Topic)
		produce(t, addr, run[0].Topic, recs)
		for range killsAt[i] {
			// The crash point, drawn by the seed: once the group has
			// committed that many of the run's records (or after a few
			// seconds, if the child is still restarting).
			at := before + int64(rng.IntN(len(recs)+1))
			waitUntil(5*time.Second, func() bool { return committedSum(adm, app, run[0].Topic) >= at })
			_ = child.Process.Kill()
			_ = child.Wait()
			child = start()
		}
		kafkatest.AwaitCommitted(t, addr, app, run[0].Topic)
	}
	_ = child.Process.Signal(syscall.SIGTERM)
	if err := child.Wait(); err != nil {
		t.Fatalf("last run: %v", err)
	}
	return readOutputs(t, addr, ex, want)
}

// runMetaChild is the child process: it runs the case until SIGTERM.
func runMetaChild(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if os.Getenv(metaControlEnv) == "" {
		os.Stdout.WriteString("ready\n")
	}
	ref := os.Getenv(metaCaseEnv)
	var ex examples.Example
	switch kind, name, _ := strings.Cut(ref, ":"); kind {
	case "example":
		var ok bool
		if ex, ok = examples.Lookup(name); !ok {
			fmt.Fprintf(os.Stderr, "meta child: no example %s\n", name)
			return 1
		}
	case "fixture":
		tc, _, err := fixtureCase(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "meta child: %v\n", err)
			return 1
		}
		ex = tc.ex
	}
	c := cfg(addr, os.Getenv(metaAppEnv), "group.instance.id", "meta-1", "session.timeout.ms", "6000")
	for k, v := range ex.Config {
		if k != "application.id" {
			c[k] = v
		}
	}
	for _, setting := range strings.Split(os.Getenv(metaConfigEnv), ";") {
		if k, v, ok := strings.Cut(setting, "="); ok {
			c[k] = v
		}
	}
	if w := os.Getenv(metaControlEnv); w != "" {
		var wall atomic.Int64
		ms, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "meta child: %s: %v\n", metaControlEnv, err)
			return 1
		}
		wall.Store(ms)
		et := engine.NewEventTime()
		return runControlled(ctx, func() *engine.Engine {
			return engine.New(ex.Build(), c, engine.WithLogger(testLogger(nil)), engine.WithEventTime(et), engine.WithWallClock(wall.Load))
		}, et, &wall)
	}
	if err := engine.New(ex.Build(), c, engine.WithLogger(testLogger(nil))).Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "meta child: %v\n", err)
		return 1
	}
	return 0
}

// committedSum is the sum of group's committed offsets on topic's
// partitions: how many of its records the group has committed past, when
// the topic was empty at the start. Errors count as nothing committed.
func committedSum(adm *kadm.Client, group, topic string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0
	}
	var sum int64
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At > 0 {
			sum += o.At
		}
	})
	return sum
}
