package lanes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/lanes"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
)

type pass struct{ processor.Base[any, any] }

func (p *pass) Process(r processor.Record[any, any]) error { p.Ctx.Forward(r); return nil }

// twoGroups runs, with one lane per sub-topology, "in" -> boundary ->
// merge <- "side", merge -> "out": the second sub-topology's lane has two
// producers, the dispatcher (slot 0, the side topic) and the first
// sub-topology's lane (slot 1).
type twoGroups struct {
	up, down *lanes.Lane
	// upID and downID are the lanes' global indices, which reports name.
	upID, downID int
	sink         *lanes.Sink
	ctx          context.Context
}

func newTwoGroups(t *testing.T) *twoGroups {
	t.Helper()
	str := serde.String()
	topo := topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "in").
		AddSource("side", topology.ConsumedWith(str, str).Spec(), "side")
	topo.AddBoundary("to-merge", "from-up", "rekey", serde.Erase(str), serde.Erase(str), "src")
	topo.AddProcessor("merge", func() processor.Untyped { return &pass{} }, "from-up", "side").
		AddSink("out", topology.ProducedWith(str, str).Spec("out"), "out", "merge")
	built, err := topo.Build(config.New(map[string]string{config.ApplicationID: "app"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(built.Subtopologies) != 2 {
		t.Fatalf("%d sub-topologies, want 2", len(built.Subtopologies))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	groups := []*lanes.Group{lanes.NewGroup(1), lanes.NewGroup(1)}
	sink := &lanes.Sink{Reports: make(chan lanes.Report, 16), Held: lanes.NewCredit(1 << 10)}
	env := testEnv(ctx, sink, func(node string) *lanes.Group {
		return groups[built.Nodes[node].Subtopology]
	})
	var ls []*lanes.Lane
	for i, st := range built.Subtopologies {
		l := lanes.New(groups[st.ID], lanes.Config{Sub: st.ID, Global: i, Floor: task.Unknown}, env)
		tk := giveTask(t, built, st, l, 1)
		t.Cleanup(func() { tk.Close() })
		ls = append(ls, l)
	}
	bd := built.Boundaries["rekey"]
	up, down := built.Nodes[bd.SinkNode].Subtopology, built.Nodes[bd.SourceNode].Subtopology
	groups[up].Feed(groups[down])
	for _, g := range groups {
		g.Open(8)
	}
	return &twoGroups{up: ls[up], down: ls[down], upID: up, downID: down, sink: sink, ctx: ctx}
}

// testEnv is the lanes' environment in these tests: no watermark, wall
// clock 0, and the dispatcher's batch size as what a lane gives back.
func testEnv(ctx context.Context, sink *lanes.Sink, downstream func(node string) *lanes.Group) *lanes.Env {
	return &lanes.Env{
		Ctx:        ctx,
		Watermark:  func() int64 { return task.Unknown },
		Wall:       func() int64 { return 0 },
		Outputs:    new(atomic.Int64),
		Sink:       sink,
		Downstream: downstream,
		GiveBack:   lanes.BatchSize,
	}
}

// giveTask makes lane l's task of sub-topology st, with its stores open
// and its processors initialised, and gives it to l; the caller closes it.
func giveTask(tb testing.TB, built *topology.Built, st *topology.Subtopology, l *lanes.Lane, laneCount int) *task.Task {
	tb.Helper()
	tk, err := task.New(built, st, task.Options{ID: fmt.Sprintf("%d_lane0", st.ID), Collector: l.Collector(), Time: l.Clock(), Lanes: laneCount})
	if err != nil {
		tb.Fatal(err)
	}
	if err := tk.OpenStores(); err != nil {
		tb.Fatal(err)
	}
	if err := tk.Init(); err != nil {
		tb.Fatal(err)
	}
	l.SetTask(tk)
	return tk
}

func record(topic string, off int64, v string) []lanes.Item {
	return []lanes.Item{lanes.SourceRecord(task.Input{Topic: topic, Offset: off, Key: []byte("k"), Value: []byte(v), Timestamp: 100})}
}

// run runs l until it crosses the final barrier.
func run(ctx context.Context, l *lanes.Lane) chan error {
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return done
}

// finals gathers the records of each lane's final reports of each epoch.
func finals(t *testing.T, sink *lanes.Sink, want int) map[string]string {
	t.Helper()
	got := map[string]string{}
	pending := map[string][]string{}
	deadline := time.After(10 * time.Second)
	for n := 0; n < want; {
		select {
		case r := <-sink.Reports:
			k := fmt.Sprintf("lane %d epoch %d", r.Lane, r.Epoch)
			for _, o := range r.Outs {
				pending[k] = append(pending[k], o.Topic+":"+string(o.Value))
			}
			if r.Credit > 0 {
				sink.Held.Give(r.Credit)
			}
			if r.Final {
				got[k] = strings.Join(pending[k], " ")
				n++
			}
		case <-deadline:
			t.Fatalf("%d final reports of %d after 10s: %v", n, want, got)
		}
	}
	return got
}

// TestLaneAlignsTwoProducers: the downstream lane takes the dispatcher's
// marker of barrier 1 and the side record behind it while the upstream
// lane has not run yet: the record belongs to epoch 2 and waits in the
// stash. Once the upstream lane's records and marker arrive, the lane
// crosses barrier 1 with the forwarded record in epoch 1, then processes
// the stashed one in epoch 2; the final barrier ends both lanes.
func TestLaneAlignsTwoProducers(t *testing.T) {
	g := newTwoGroups(t)
	b1 := &barrier.Barrier{Epoch: 1, Stamp: 1}
	b2 := &barrier.Barrier{Epoch: 2, Stamp: 2, Final: true}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.up.Deliver(g.ctx, record("in", 0, "a1")))
	must(g.up.Mark(g.ctx, b1))
	must(g.down.Deliver(g.ctx, record("side", 0, "s1")))
	must(g.down.Mark(g.ctx, b1))
	must(g.down.Deliver(g.ctx, record("side", 1, "s2")))
	must(g.down.Mark(g.ctx, b2))

	downDone := run(g.ctx, g.down)
	deadline := time.Now().Add(10 * time.Second)
	for g.down.StashPeak() < 2 {
		// s2 and the final marker wait for the upstream lane's marker.
		if time.Now().After(deadline) {
			t.Fatalf("stash peak %d after 10s, want 2", g.down.StashPeak())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-g.sink.Reports:
		t.Fatalf("a report before the lane aligned: %+v", r)
	default:
	}

	must(g.up.Mark(g.ctx, b2))
	upDone := run(g.ctx, g.up)
	got := finals(t, g.sink, 4)
	for _, done := range []chan error{upDone, downDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	up, down := g.upID, g.downID
	want := map[string]string{
		fmt.Sprintf("lane %d epoch 1", up):   "",
		fmt.Sprintf("lane %d epoch 2", up):   "",
		fmt.Sprintf("lane %d epoch 1", down): "out:s1 out:a1",
		fmt.Sprintf("lane %d epoch 2", down): "out:s2",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
}

// TestLaneProducerOverBound: an item from a producer past the barrier
// with its stash at the bound is an error: the credit that should have
// held it back failed.
func TestLaneProducerOverBound(t *testing.T) {
	g := newTwoGroups(t)
	b1 := &barrier.Barrier{Epoch: 1, Stamp: 1}
	if err := g.down.Mark(g.ctx, b1); err != nil {
		t.Fatal(err)
	}
	// Past the marker, a batch larger than the budget: Deliver takes the
	// 8 records of credit there are, and the stash, bounded at 8 records
	// and the marker, refuses the tenth.
	batch := make([]lanes.Item, 0, 10)
	for i := range 10 {
		batch = append(batch, record("side", int64(i), "s")...)
	}
	if err := g.down.Deliver(g.ctx, batch); err != nil {
		t.Fatal(err)
	}
	err := <-run(g.ctx, g.down)
	if !errors.Is(err, barrier.ErrOverBound) {
		t.Fatalf("run: %v, want %v", err, barrier.ErrOverBound)
	}
}

// TestLaneReportWaitsForHeldCredit: a report of an epoch after the one
// being produced (epoch 2 while nothing is committed) takes the
// committer's budget of held records first, and waits while it is spent;
// a report of the epoch being produced (epoch 1) never does.
func TestLaneReportWaitsForHeldCredit(t *testing.T) {
	g := newTwoGroups(t)
	// The committer's budget is spent: the test holds all of it.
	if n, err := g.sink.Held.Take(g.ctx, 1<<10); err != nil || n != 1<<10 {
		t.Fatalf("take the budget: %d, %v", n, err)
	}
	b1 := &barrier.Barrier{Epoch: 1, Stamp: 1}
	b2 := &barrier.Barrier{Epoch: 2, Stamp: 2, Final: true}
	for _, step := range []func() error{
		func() error { return g.down.Deliver(g.ctx, record("side", 0, "s1")) },
		func() error { return g.down.Mark(g.ctx, b1) },
		func() error { return g.up.Mark(g.ctx, b1) },
		func() error { return g.down.Deliver(g.ctx, record("side", 1, "s2")) },
		func() error { return g.down.Mark(g.ctx, b2) },
		func() error { return g.up.Mark(g.ctx, b2) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	upDone, downDone := run(g.ctx, g.up), run(g.ctx, g.down)
	deadline := time.Now().Add(10 * time.Second)
	for g.sink.Held.Waits() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no report waited for the held-records budget after 10s")
		}
		time.Sleep(time.Millisecond)
	}
	// The lane waits in its epoch-2 report: what arrived is epoch 1's.
	var early []lanes.Report
	for len(g.sink.Reports) > 0 {
		early = append(early, <-g.sink.Reports)
	}
	for _, r := range early {
		if r.Lane == g.downID && r.Epoch != 1 {
			t.Fatalf("report of epoch %d from the waiting lane before credit came back: %+v", r.Epoch, r)
		}
		if r.Credit != 0 {
			t.Fatalf("a report took %d credit with the budget spent: %+v", r.Credit, r)
		}
	}
	g.sink.Held.Give(1 << 10)
	if err := <-upDone; err != nil {
		t.Fatal(err)
	}
	if err := <-downDone; err != nil {
		t.Fatal(err)
	}
	close(g.sink.Reports)
	var last lanes.Report
	for r := range g.sink.Reports {
		if r.Lane == g.downID && r.Epoch == 2 {
			last = r
		}
	}
	if !last.Final || last.Credit != 1 || len(last.Outs) != 1 || string(last.Outs[0].Value) != "s2" {
		t.Fatalf("epoch 2's final report of the downstream lane: %+v, want s2 with 1 record's credit", last)
	}
}

// TestAppendSource: the dispatcher's append, filled in, makes the item
// SourceRecord makes, behind what the batch held, in a recycled batch too.
func TestAppendSource(t *testing.T) {
	in := task.Input{Topic: "in", Partition: 3, Offset: 7, Key: []byte("k"), Value: []byte("v"), Timestamp: 100, KeyHash: 42, KeyHashed: true}
	first := task.Input{Topic: "in", Offset: 6}
	batch, slot := lanes.AppendSource(lanes.NewBatch())
	*slot = first
	batch, slot = lanes.AppendSource(batch)
	*slot = in
	if len(batch) != 2 {
		t.Fatalf("%d items, want 2", len(batch))
	}
	for i, want := range []task.Input{first, in} {
		if got, want := fmt.Sprintf("%+v", batch[i]), fmt.Sprintf("%+v", lanes.SourceRecord(want)); got != want {
			t.Errorf("item %d: %s, want %s", i, got, want)
		}
	}
}
