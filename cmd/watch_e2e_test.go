package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/tui"
)

// TestWatchAgainstRun is issue 13's end-to-end test: `stoatctl run` on
// the embedded broker (the event-time topology of TestRunServesWatermarks,
// two partitions), and `watch watermarks --once -o json --exit-code`
// against its REST API. While clicks:1 keeps delivering records stamped
// with one old time (live, so never idle) the watermark cannot move: the
// watch exits 1 naming clicks:1 and the old-timestamps branch. Once both
// partitions move forward, it exits 0.
func TestWatchAgainstRun(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	httpAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	args := []string{"run", "-t", "testdata/eventtime-topology.yaml", "--broker-port", "0", "--partitions", "2", "--http", httpAddr,
		"--log-format", "json", "-X", "num.stream.threads=2", "-X", "stoatflow.commit-barrier.interval-ms=100"}
	go func() { done <- RunContext(ctx, args, stdout, stderr) }()
	defer func() { cancel(); <-done }()
	r := &e2eRun{t: t, url: "http://" + httpAddr, api: inspect.NewClient("http://" + httpAddr), stderr: stderr}
	r.until(30*time.Second, "two partitions registered", func() bool {
		w, err := r.api.Watermarks(context.Background())
		return err == nil && len(w.Partitions) == 2
	})
	var err error
	r.producer, err = kgo.NewClient(kgo.SeedBrokers(strings.TrimSpace(stdout.String())), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.producer.Close()

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
	defer func() { close(stop); <-feeding }()
	r.until(30*time.Second, "clicks:1 pins the watermark at its old time", func() bool {
		w := r.watermarks()
		return w.GlobalMs == old.Load() && w.Partitions["clicks:1"].WatermarkMs == old.Load() && !w.Partitions["clicks:1"].Idle
	})

	watch := func() (int, tui.Verdict, string) {
		code, out, errOut := runWatch(t, "--url", r.url, "--once", "-o", "json", "--samples", "3", "--interval", "500ms", "--exit-code")
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
	code, v, errOut = watch()
	if code != 0 {
		t.Fatalf("once cleared: exit %d, want 0; alerts %+v; stderr:\n%s", code, v.Alerts, errOut)
	}
}
