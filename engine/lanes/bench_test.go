package lanes_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/lanes"
	"github.com/stoatflow/stoatctl/engine/task"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// BenchmarkLane runs make bench's topologies through one lane, with
// nothing of Kafka around it: records already fetched and decoded into
// task.Inputs, a committer that takes the reports and recycles them, and
// a barrier every 200 000 records (an epoch of the live engine at about
// 400 000 records/s and its 500 ms interval; the changelog coalescer
// drains at each). What it measures is the engine's own work per record,
// processing, the store, the changelog and the hand-off to the
// committer, without the broker's noise: the part of the map and window
// targets of issue 17 the engine controls.
func BenchmarkLane(b *testing.B) {
	const in, out = "in", "out"
	n, keys, epoch := 1_000_000, 10_000, 200_000
	if testing.Short() {
		n, epoch = 20_000, 5_000
	}
	// The input: 100-byte values, keys recurring every 10 000 records,
	// from four partitions taken in turn (as the dispatcher's merge by
	// timestamp hands a poll's partitions over, nearly record by record),
	// stamped as make bench's input is, by a producer writing about
	// 300 000 records/s (the run spans about 3 s of event time: one or
	// two one-minute windows a key).
	// Keys come hashed, as the dispatcher hands them over.
	inputs := make([]task.Input, n)
	for i := range inputs {
		key := fmt.Appendf(nil, "key-%05d", i%keys)
		inputs[i] = task.Input{Topic: in, Partition: int32(i % 4), Offset: int64(i),
			Key: key, KeyHash: lane.Murmur2(key), KeyHashed: true, Value: bytes.Repeat([]byte{'a' + byte(i%26)}, 100),
			Timestamp: 1_700_000_000_000 + int64(i/300)}
	}
	for _, tp := range benchbase.Topologies {
		if tp.Name == "count-store" {
			continue // the count's lane work without the sink: nothing new here
		}
		b.Run(tp.Name, func(b *testing.B) {
			b.ReportAllocs()
			var elapsed time.Duration
			for range b.N {
				elapsed += runLane(b, tp.Build(in, out), inputs, epoch)
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*n), "ns/rec")
		})
	}
}

// runLane feeds inputs to a fresh lane in batches, with a barrier every
// epoch records and a final one, and returns how long the lane took from
// the first batch to its last report.
func runLane(b *testing.B, topo *topology.Topology, inputs []task.Input, epoch int) time.Duration {
	b.Helper()
	b.StopTimer()
	built, err := topo.Build(config.New(map[string]string{config.ApplicationID: "bench"}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	group := lanes.NewGroup(4)
	sink := &lanes.Sink{Reports: make(chan lanes.Report, 64), Held: lanes.NewCredit(1 << 20)}
	env := testEnv(ctx, sink, func(string) *lanes.Group { return group })
	st := built.Subtopologies[0]
	l := lanes.New(group, lanes.Config{Floor: task.Unknown, CoalesceBytes: 64 << 20}, env)
	defer giveTask(b, built, st, l, 2).Close()
	group.Open(1000)
	epochs := int64((len(inputs) + epoch - 1) / epoch)
	// The committer: takes every report, counts the final ones, and gives
	// the outputs' arrays back as the live committer does once produced.
	finals := make(chan int64, 1)
	go func() {
		var done, outs int64
		for done < epochs {
			r := <-sink.Reports
			outs += int64(len(r.Outs))
			lanes.RecycleOuts(r.Outs)
			if r.Credit > 0 {
				sink.Held.Give(r.Credit)
			}
			if r.Final {
				done++
				sink.Committed.Store(r.Epoch)
			}
		}
		finals <- outs
	}()
	runtime.GC()
	b.StartTimer()
	start := time.Now()
	laneDone := make(chan error, 1)
	go func() { laneDone <- l.Run(ctx) }()
	batch := lanes.NewBatch()
	for i := range inputs {
		batch = append(batch, lanes.SourceRecord(inputs[i]))
		last := i == len(inputs)-1
		if len(batch) == lanes.BatchSize || (i+1)%epoch == 0 || last {
			if err := l.Deliver(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = lanes.NewBatch()
		}
		if (i+1)%epoch == 0 || last {
			e := int64((i + epoch) / epoch)
			if err := l.Mark(ctx, &barrier.Barrier{Epoch: e, Stamp: e, Final: last}); err != nil {
				b.Fatal(err)
			}
		}
	}
	outs := <-finals
	elapsed := time.Since(start)
	b.StopTimer()
	if err := <-laneDone; err != nil {
		b.Fatal(err)
	}
	if outs < int64(len(inputs)) {
		b.Fatalf("%d records out of %d inputs", outs, len(inputs))
	}
	b.StartTimer()
	return elapsed
}
