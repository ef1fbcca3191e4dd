package testdriver_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// punctuating records the times at which its punctuator fires.
type punctuating struct {
	processor.Base[string, string]
	typ   processor.PunctuationType
	fired *[]int64
}

func (p *punctuating) Init(ctx processor.Context[string, string]) error {
	p.Ctx = ctx
	_, err := ctx.Schedule(10*time.Millisecond, p.typ, func(ts int64) error {
		*p.fired = append(*p.fired, ts)
		return nil
	})
	return err
}

func (p *punctuating) Process(processor.Record[string, string]) error { return nil }

func punctuationTopology(typ processor.PunctuationType, fired *[]int64) *topology.Topology {
	return topology.New().
		AddSource("source", topology.ConsumedWith(serde.String(), serde.String()).Spec(), "input").
		AddProcessor("punctuate", processor.Supply(func() processor.Processor[string, string, string, string] {
			return &punctuating{typ: typ, fired: fired}
		}), "source")
}

// The sequences below are Kafka Streams' published punctuation behaviour.
func TestStreamTimePunctuation(t *testing.T) {
	var fired []int64
	d, err := testdriver.New(punctuationTopology(processor.StreamTime, &fired), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := testdriver.CreateInputTopic(d, "input", serde.String(), serde.String())
	for _, ts := range []int64{42, 42, 51, 52, 61, 65, 71, 72, 95, 101, 102} {
		if err := in.PipeInputAt("k", "v", ts); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{42, 51, 61, 71, 95, 101}; !slices.Equal(fired, want) {
		t.Fatalf("stream-time punctuations at %v, want %v", fired, want)
	}
}

func TestWallClockPunctuation(t *testing.T) {
	var fired []int64
	d, err := testdriver.New(punctuationTopology(processor.WallClockTime, &fired), nil, testdriver.WithWallClock(0))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, ms := range []int64{5, 9, 1, 20, 5} {
		if err := d.AdvanceWallClockTime(time.Duration(ms) * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{14, 35, 40}; !slices.Equal(fired, want) {
		t.Fatalf("wall-clock punctuations at %v, want %v", fired, want)
	}
}
