package migrate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
	"github.com/stoatflow/stoatctl/migrate"
)

// roundTrip is the way there and back on a real broker with real Kafka
// Streams: Kafka Streams over the first part of the input, stopped,
// migrated to ours; ours over the second, stopped, migrated back
// (--reverse); the same Kafka Streams application (its id, its state
// directory) over the third. It returns what was written over the whole
// input, and what Kafka Streams left running over all three wrote.
func roundTrip(t *testing.T, j *interop.Java, m interop.Mirror, parts [3][]interop.Record, emitFrontier bool) (all, reference []interop.Record, back *migrate.Report) {
	t.Helper()
	zero := func() map[string]kafka.Positions {
		z := map[string]kafka.Positions{}
		for _, o := range m.Outputs {
			z[o.Topic] = kafka.FromLogStart(0, 1)
		}
		return z
	}
	{
		addr := kafkatest.Start(t, topicsFor(m))
		app := "ks-rt-ref-" + m.Name
		ks := startKS(t, j, addr, m, app, "", how{})
		for _, p := range parts {
			interop.Produce(t, addr, p)
			interop.AwaitConsumed(t, addr, app, m.Topics(), ks.Out)
		}
		ks.Stop(t)
		reference = readFrom(t, addr, m, zero())
	}

	addr := kafkatest.Start(t, topicsFor(m))
	from, ours := "ks-rt-"+m.Name, "stoat-rt-"+m.Name
	stateDir := t.TempDir()
	ks := startKS(t, j, addr, m, from, stateDir, how{})
	interop.Produce(t, addr, parts[0])
	interop.AwaitConsumed(t, addr, from, m.Topics(), ks.Out)
	ks.Stop(t)

	_, built := loadMirror(t, m, ours)
	opts := migrate.Options{From: from, To: ours, Built: built, Seeds: []string{addr}, EmitFrontier: emitFrontier, WaitForGroups: 90 * time.Second}
	if _, err := migrate.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	stop := runOurs(t, addr, m, ours)
	interop.Produce(t, addr, parts[1])
	interop.AwaitConsumed(t, addr, ours, m.Topics(), &interop.Lines{})
	settle(t, addr, m, 2*time.Second)
	stop()

	opts.Direction = migrate.Reverse
	p, err := migrate.MakePlan(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = p.WriteText(&b)
	t.Logf("the way back:\n%s", b.String())
	if back, err = migrate.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	ks = startKS(t, j, addr, m, from, stateDir, how{})
	interop.Produce(t, addr, parts[2])
	interop.AwaitConsumed(t, addr, from, m.Topics(), ks.Out)
	settle(t, addr, m, 2*time.Second)
	ks.Stop(t)
	return readFrom(t, addr, m, zero()), reference, back
}

// TestKafkaStreamsReverse: migrated to ours, run, migrated back, Kafka
// Streams resumes; what was written over the whole input, across both
// cutovers, is per key what Kafka Streams left running over it wrote: for
// the word count (every update), the window emitted on close (each window
// once: none emitted twice across the way back) and the suppress (the
// windows buffered at the way back released by Kafka Streams, once).
func TestKafkaStreamsReverse(t *testing.T) {
	j := kafkaStreams(t)
	for _, tc := range []struct {
		name         string
		input        func(t *testing.T) [3][]interop.Record
		emitFrontier bool
	}{
		{name: "word-count", input: func(t *testing.T) [3][]interop.Record { return thirds(t, j, "word-count") }},
		{name: "window-close", emitFrontier: true, input: func(t *testing.T) [3][]interop.Record {
			first, second := clicks(inputHour)
			return [3][]interop.Record{first, second[:len(second)/2], second[len(second)/2:]}
		}},
		{name: "suppress", input: func(t *testing.T) [3][]interop.Record { return thirds(t, j, "suppress") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mirror(t, tc.name)
			all, reference, back := roundTrip(t, j, m, tc.input(t), tc.emitFrontier)
			if !back.Verify.OK {
				t.Fatalf("the way back: %+v", back.Verify)
			}
			samePerKey(t, reference, all)
		})
	}
}

// thirds splits a mirror's input file in three.
func thirds(t *testing.T, j *interop.Java, name string) [3][]interop.Record {
	t.Helper()
	in, err := interop.ReadFile(j.Path("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	in = shift(in)
	n := len(in) / 3
	return [3][]interop.Record{in[:n], in[n : 2*n], in[2*n:]}
}
