package testdriver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// clockWatcher logs what the runtime tells it about event time.
type clockWatcher struct {
	processor.Base[string, string]
	log *[]string
}

func (p *clockWatcher) Process(r processor.Record[string, string]) error {
	*p.log = append(*p.log, fmt.Sprintf("process ts=%d floor=%d wm=%d late=%v", r.Timestamp, p.Ctx.Floor(), p.Ctx.Watermark(), p.Ctx.IsLate()))
	return nil
}

func (p *clockWatcher) OnWatermark(frontier int64) error {
	*p.log = append(*p.log, fmt.Sprintf("watermark %d floor=%d", frontier, p.Ctx.Floor()))
	return nil
}

func (p *clockWatcher) OnBarrier() error {
	*p.log = append(*p.log, fmt.Sprintf("barrier floor=%d", p.Ctx.Floor()))
	return nil
}

func watcherTopology(log *[]string) *topology.Topology {
	return topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddProcessor("watch", processor.Supply(func() processor.Processor[string, string, string, string] {
			return &clockWatcher{log: log}
		}), "src")
}

func TestDriverTimeSurface(t *testing.T) {
	var log []string
	d, err := testdriver.New(watcherTopology(&log), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "x", 10)
	in.PipeInputAt("a", "x", 5) // behind the watermark: late, but judged by its window
	if err := d.AdvanceWatermark(30); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWatermark(20); err != nil { // lenient: a no-op
		t.Fatal(err)
	}
	want := []string{
		"process ts=10 floor=10 wm=10 late=false",
		"watermark 10 floor=-1",
		"barrier floor=-1",
		"process ts=5 floor=10 wm=10 late=true",
		"barrier floor=10",
		"watermark 30 floor=10",
		"barrier floor=10",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if d.Watermark() != 30 {
		t.Fatalf("watermark %d", d.Watermark())
	}
}

func TestManualCommitMode(t *testing.T) {
	var log []string
	d, err := testdriver.New(watcherTopology(&log), map[string]string{"test.driver.commit-per-pipe": "false"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "in", str, str)
	in.PipeInputAt("a", "x", 10)
	in.PipeInputAt("a", "x", 11)
	if err := d.CommitBarrier(); err != nil {
		t.Fatal(err)
	}
	if err := d.AdvanceWatermark(5); !errors.Is(err, testdriver.ErrWatermarkBackwards) {
		t.Fatalf("backward advance in manual mode: %v", err)
	}
	barriers := 0
	for _, l := range log {
		if strings.HasPrefix(l, "barrier") {
			barriers++
		}
	}
	if barriers != 1 {
		t.Fatalf("%d barriers, want 1:\n%s", barriers, strings.Join(log, "\n"))
	}
}
