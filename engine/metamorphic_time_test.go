package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
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
	"github.com/stoatflow/stoatctl/testdriver"
)

// metaControlEnv, set to the fixture's starting wall clock, makes the
// metamorphic child run its engine under an engine.EventTime and a manual
// wall clock, which the parent moves with lines on the child's stdin:
//
//	advance MS      raise the watermark to MS
//	wall MS         set the wall clock to MS
//	settle T/P/END  wait until the records before END in partition P of
//	                topic T (any number of them) are dispatched and what
//	                they and the watermark made due committed
//
// The child answers each line with "ok" or "error: ...".
const metaControlEnv = "STOATFLOW_META_CONTROL"

// timedCase is a fixture as the engine tests run it: an example (its
// inputs are the record steps) and every step in order.
type timedCase struct {
	f     *replay.Fixture
	ex    examples.Example
	steps []timedStep
	// global is a global table's topic the fixture writes, "" for none.
	global string
}

// timedStep is one step. A record step names its input in ex.Inputs; an
// advance-watermark step its time. wall is the driver's wall clock after
// the step.
type timedStep struct {
	kind  replay.StepKind
	input int
	ts    int64
	wall  int64
}

// settled says the fixture must run step by step, settled after every
// step: it moves time by hand, or writes a global table's topic, which the
// engine reads apart from its dispatcher, so that only a settle orders a
// table update before the stream records of the steps after it.
func (tc timedCase) settled() bool { return tc.movesTime() || tc.global != "" }

// movesTime says the fixture moves time by hand.
func (tc timedCase) movesTime() bool {
	for _, s := range tc.steps {
		if s.kind == replay.StepAdvanceWatermark || s.kind == replay.StepAdvanceWallClock {
			return true
		}
	}
	return false
}

// driverTimedOutput runs tc's steps through the test driver.
func driverTimedOutput(t *testing.T, tc timedCase) map[string]perKey {
	opts := []testdriver.Option{testdriver.WithWallClock(tc.f.Driver.WallClock)}
	if tc.f.Driver.Lanes > 0 {
		opts = append(opts, testdriver.WithNumberOfLanes(tc.f.Driver.Lanes))
	}
	d, err := testdriver.New(tc.ex.Build(), tc.ex.Config, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	inputs := rawInputs(tc.ex)
	for _, s := range tc.steps {
		switch s.kind {
		case replay.StepRecord:
			in := inputs[s.input]
			err = d.PipeRaw(in.Topic, testdriver.RawRecord{Key: []byte(in.Key), Value: nilIf(in.Value, in.NullValue), Timestamp: in.Timestamp})
		case replay.StepAdvanceWatermark:
			err = d.AdvanceWatermark(s.ts)
		case replay.StepAdvanceWallClock:
			err = d.AdvanceWallClockTime(time.Duration(s.wall-d.WallClock()) * time.Millisecond)
		case replay.StepCommitBarrier:
			err = d.CommitBarrier()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]perKey{}
	for _, o := range tc.ex.Outputs {
		pk := perKey{}
		for _, r := range d.ReadRaw(o.Topic) {
			pk[string(r.Key)] = append(pk[string(r.Key)], string(r.Value))
		}
		out[o.Topic] = pk
	}
	return out
}

// metaChild is a running child under control.
type metaChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

func (c *metaChild) do(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, line); err != nil {
		t.Fatalf("child: send %q: %v", line, err)
	}
	if !c.lines.Scan() {
		t.Fatalf("child: no answer to %q: %v", line, c.lines.Err())
	}
	if got := c.lines.Text(); got != "ok" {
		t.Fatalf("child: %q: %s", line, got)
	}
}

// metamorphicTimedRun runs tc on a child engine under an EventTime, step
// by step: each step's records are produced (or its watermark or wall
// clock moved) and the engine is settled before the next. The child is
// killed mc.kills times, at random moments of random steps, and the step
// is settled again on a new child (given the watermark and wall clock
// again), so its records are reprocessed from the committed offsets.
func metamorphicTimedRun(t *testing.T, ref string, tc timedCase, mc metaConfig, rng *rand.Rand, want int) map[string]perKey {
	addr := startBroker(t, exampleTopics(tc.ex))
	app := "meta-" + tc.ex.Name
	var settings []string
	for k, v := range mc.settings() {
		settings = append(settings, k+"="+v)
	}
	wm, wall := int64(-1), tc.f.Driver.WallClock
	start := func() *metaChild {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), metaChildEnv+"="+addr, metaCaseEnv+"="+ref, metaAppEnv+"="+app,
			metaConfigEnv+"="+strings.Join(settings, ";"), metaControlEnv+"="+strconv.FormatInt(wall, 10))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &metaChild{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
		if !c.lines.Scan() || c.lines.Text() != "ready" {
			t.Fatalf("the child did not start: %q %v", c.lines.Text(), c.lines.Err())
		}
		if wm >= 0 {
			c.do(t, "advance "+strconv.FormatInt(wm, 10))
		}
		return c
	}
	killsAt := map[int]int{}
	for range mc.kills {
		killsAt[rng.IntN(len(tc.steps))]++
	}
	child := start()
	t.Cleanup(func() { _ = child.cmd.Process.Kill(); _ = child.cmd.Wait() })
	adm := kafkatest.Admin(t, addr)
	inputs := rawInputs(tc.ex)
	sources := tc.ex.InputTopics()
	for i, s := range tc.steps {
		switch s.kind {
		case replay.StepRecord:
			in := inputs[s.input]
			produce(t, addr, in.Topic, []kv{in.kv})
		case replay.StepAdvanceWatermark:
			wm = max(wm, s.ts)
			child.do(t, "advance "+strconv.FormatInt(s.ts, 10))
		case replay.StepAdvanceWallClock:
			wall = s.wall
			child.do(t, "wall "+strconv.FormatInt(wall, 10))
		}
		ends, err := adm.ListEndOffsets(context.Background(), sources...)
		if err != nil {
			t.Fatal(err)
		}
		settle := "settle"
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 {
				settle += fmt.Sprintf(" %s/%d/%d", o.Topic, o.Partition, o.Offset)
			}
		})
		for range killsAt[i] {
			// The crash point: a random moment while the step is in
			// flight.
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			_ = child.cmd.Process.Kill()
			_ = child.cmd.Wait()
			child = start() // with the watermark and wall clock of now
		}
		child.do(t, settle)
	}
	_ = child.cmd.Process.Signal(syscall.SIGTERM)
	if err := child.cmd.Wait(); err != nil {
		t.Fatalf("last run: %v", err)
	}
	return readOutputs(t, addr, tc.ex, want)
}

// runControlled is the child's engine under an EventTime, moved by the
// lines on stdin (metaControlEnv).
func runControlled(ctx context.Context, topo func() *engine.Engine, et *engine.EventTime, wall *atomic.Int64) int {
	e := topo()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	os.Stdout.WriteString("ready\n")
	go func() {
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			cmd, arg, _ := strings.Cut(lines.Text(), " ")
			var err error
			switch cmd {
			case "advance":
				var ts int64
				if ts, err = strconv.ParseInt(arg, 10, 64); err == nil {
					et.Advance(ts)
				}
			case "wall":
				var ms int64
				if ms, err = strconv.ParseInt(arg, 10, 64); err == nil {
					wall.Store(ms)
				}
			case "settle":
				err = settleChild(ctx, et, arg)
			default:
				err = fmt.Errorf("unknown command %q", cmd)
			}
			if err != nil {
				fmt.Fprintf(os.Stdout, "error: %v\n", err)
				continue
			}
			os.Stdout.WriteString("ok\n")
		}
	}()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "meta child: %v\n", err)
		return 1
	}
	return 0
}

func settleChild(ctx context.Context, et *engine.EventTime, arg string) error {
	ends := map[string]map[int32]int64{}
	for _, f := range strings.Fields(arg) {
		parts := strings.Split(f, "/")
		if len(parts) != 3 {
			return fmt.Errorf("settle: bad end %q", f)
		}
		p, err1 := strconv.ParseInt(parts[1], 10, 32)
		end, err2 := strconv.ParseInt(parts[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("settle: bad end %q: %w", f, err)
		}
		if ends[parts[0]] == nil {
			ends[parts[0]] = map[int32]int64{}
		}
		ends[parts[0]][int32(p)] = end
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := et.Settle(sctx, ends)
		if !errors.Is(err, engine.ErrNotRunning) || sctx.Err() != nil {
			return err
		}
		// Not yet attached: the engine is still starting.
		time.Sleep(10 * time.Millisecond)
	}
}
