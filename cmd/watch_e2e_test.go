package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/tui"
)

// liveStall runs `stoatctl run` of the event-time topology on the
// embedded broker, with records arriving on both partitions every 100 ms:
// on clicks:0 stamped with the wall clock, on clicks:1 with one time ten
// minutes old, so clicks:1 is live (never idle) and pins the watermark,
// which cannot move. It returns once that holds; clear makes clicks:1
// catch up and move on, and returns once the watermark moved.
func liveStall(t *testing.T) (r *e2eRun, clear func()) {
	kafkatest.EmbeddedOnly(t)
	httpAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	args := []string{"run", "-t", "testdata/eventtime-topology.yaml", "--broker-port", "0", "--partitions", "2", "--http", httpAddr,
		"--log-format", "json", "-X", "num.stream.threads=2", "-X", "stoatflow.commit-barrier.interval-ms=100"}
	go func() { done <- RunContext(ctx, args, stdout, stderr) }()
	t.Cleanup(func() { cancel(); <-done })
	r = &e2eRun{t: t, url: "http://" + httpAddr, api: inspect.NewClient("http://" + httpAddr), stderr: stderr}
	r.until(30*time.Second, "two partitions registered", func() bool {
		w, err := r.api.Watermarks(context.Background())
		return err == nil && len(w.Partitions) == 2
	})
	var err error
	r.producer, err = kgo.NewClient(kgo.SeedBrokers(strings.TrimSpace(stdout.String())), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.producer.Close)

	// Records keep arriving on both partitions until the test ends; what
	// they are stamped with is the phase's.
	now := time.Now().UnixMilli()
	var old, fresh atomic.Int64
	old.Store(now - 10*time.Minute.Milliseconds())
	fresh.Store(now)
	stop := make(chan struct{})
	feeding := make(chan struct{})
	go func() {
		defer close(feeding)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			r.produce(0, fresh.Add(100))
			r.produce(1, old.Load())
		}
	}()
	t.Cleanup(func() { close(stop); <-feeding })
	r.until(30*time.Second, "clicks:1 pins the watermark at its old time", func() bool {
		w := r.watermarks()
		return w.GlobalMs == old.Load() && w.Partitions["clicks:1"].WatermarkMs == old.Load() && !w.Partitions["clicks:1"].Idle
	})

	clear = func() {
		// Cleared: clicks:1 catches up and both move on together.
		old.Store(fresh.Load() + 1000)
		r.until(30*time.Second, "the watermark moves past the old time", func() bool {
			return r.watermarks().GlobalMs > now
		})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					old.Add(100)
				}
			}
		}()
	}
	return r, clear
}

// TestWatchAgainstRun is issue 13's end-to-end test: `stoatctl run` on
// the embedded broker (the event-time topology of TestRunServesWatermarks,
// two partitions), and `watch watermarks --once -o json --exit-code`
// against its REST API. While clicks:1 keeps delivering records stamped
// with one old time (live, so never idle) the watermark cannot move: the
// watch exits 1 naming clicks:1 and the old-timestamps branch. Once both
// partitions move forward, it exits 0.
func TestWatchAgainstRun(t *testing.T) {
	r, clear := liveStall(t)
	watch := func() (int, tui.Verdict, string) {
		code, out, errOut := runWatch(t, "--url", r.url, "--once", "-o", "json", "--samples", "4", "--interval", "500ms", "--stall-after", "1s", "--exit-code")
		var v tui.Verdict
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("stdout is not a verdict: %v\n%s\nstderr:\n%s", err, out, errOut)
		}
		return code, v, errOut
	}
	code, v, errOut := watch()
	if code != ExitFailure {
		t.Fatalf("during the stall: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	var stalled *tui.Alert
	for i, a := range v.Alerts {
		if a.Code == tui.AlertStalled {
			stalled = &v.Alerts[i]
		}
	}
	if v.Pinning != "clicks:1" || stalled == nil || stalled.Partition != "clicks:1" || stalled.Branch != tui.BranchOldTimes {
		t.Fatalf("during the stall: pinning %q, alerts %+v; want clicks:1 stalled in branch %s", v.Pinning, v.Alerts, tui.BranchOldTimes)
	}

	clear()
	code, v, errOut = watch()
	if code != 0 {
		t.Fatalf("once cleared: exit %d, want 0; alerts %+v; stderr:\n%s", code, v.Alerts, errOut)
	}
}

// TestWatchTUIInTmuxAgainstRun runs the built binary's full-screen view
// in a real terminal (tmux) against a live `stoatctl run` whose clicks:1
// holds the watermark back with old timestamps: the screen must show the
// stall, the pinning partition and its branch, and q must quit with exit
// 0. The screen is logged.
func TestWatchTUIInTmuxAgainstRun(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; scripts/test.sh installs it (Debian package tmux)")
		}
		t.Skip("tmux is not installed (scripts/test.sh installs it; CI fails without it)")
	}
	bin := filepath.Join(buildBinary(t), "stoatctl")
	r, _ := liveStall(t)
	status := filepath.Join(t.TempDir(), "status")
	script := fmt.Sprintf("%q watch watermarks --url %q --interval 250ms --stall-after 2s; echo $? > %q", bin, r.url, status)
	s := newTmux(t, 80, 24, []string{"TERM=xterm-256color", "NO_COLOR=1"}, "sh", "-c", script)
	screen := s.waitFor("e2e-watermarks", "STALLED", "pinned by ▶ clicks:1", "live but old timestamps")
	t.Logf("the screen at 80x24, against a live engine:\n%s", screen)
	s.run("send-keys", "-t", s.name, "q")
	deadline := time.Now().Add(10 * time.Second)
	for s.alive() {
		if time.Now().After(deadline) {
			t.Fatalf("q did not quit; the screen:\n%s", s.capture(false))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, err := os.ReadFile(status); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("after q the command exited %q (%v), want 0", b, err)
	}
}
