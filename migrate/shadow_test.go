package migrate_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

// handWordCount plays a Kafka Streams word count (application id ks) by
// hand on the broker: its input lines, its counts changelog in Kafka
// Streams' placement and layout, its output and its committed offsets,
// each step as Kafka Streams leaves them once it has processed the lines.
type handWordCount struct {
	t      *testing.T
	cl     *kgo.Client
	adm    *kadm.Client
	counts map[string]int64
	// wrong, when set, is a word whose output Kafka Streams gets wrong by
	// one: the shadow run must find it.
	wrong string
}

func newHandWordCount(t *testing.T, addr string) *handWordCount {
	h := &handWordCount{t: t, cl: client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner())), adm: kadm.NewClient(client(t, addr)), counts: map[string]int64{}}
	kafkatest.CreateTopic(t, h.adm, "ks-counts-changelog", 2, map[string]*string{"cleanup.policy": ptr("compact")})
	return h
}

// process produces lines to partition 0 and 1 alternately, counts them as
// Kafka Streams would, writes the changed counts to the changelog (with
// changelog set) and the output, then commits the input offsets: the
// output and the offsets of one commit.
func (h *handWordCount) process(lines []string, changelog bool) {
	h.t.Helper()
	ctx := context.Background()
	var in, out []*kgo.Record
	changed := map[string]bool{}
	for i, l := range lines {
		in = append(in, &kgo.Record{Topic: "lines", Partition: int32(i % 2), Value: []byte(l)})
		for _, w := range strings.Fields(strings.ToLower(l)) {
			h.counts[w]++
			changed[w] = true
		}
	}
	if err := h.cl.ProduceSync(ctx, in...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
	for w := range changed {
		v := h.counts[w]
		if w == h.wrong {
			v++
		}
		part := int32(lane.For([]byte(w), 2))
		if changelog {
			out = append(out, &kgo.Record{Topic: "ks-counts-changelog", Partition: part, Key: []byte(w), Value: long(v)})
		}
		out = append(out, &kgo.Record{Topic: "word-counts", Partition: part, Key: []byte(w), Value: long(v)})
	}
	if err := h.cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
	ends, err := h.adm.ListEndOffsets(ctx, "lines")
	if err != nil {
		h.t.Fatal(err)
	}
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 5000}.Encode()
	var offs kadm.Offsets
	ends.Each(func(l kadm.ListedOffset) {
		offs.Add(kadm.Offset{Topic: l.Topic, Partition: l.Partition, At: l.Offset, LeaderEpoch: -1, Metadata: md})
	})
	if resp, err := h.adm.CommitOffsets(ctx, "ks", offs); err != nil || resp.Error() != nil {
		h.t.Fatal(err, resp.Error())
	}
}

// TestShadowWordCount runs a shadow beside a word count played by hand:
// seeded from its state, it processes the lines Kafka Streams processes
// after the seed, and every word matches; with Kafka Streams' count of
// one word wrong, that word is the one unexpected difference, with both
// records. Kafka Streams' group, changelog and output are not written.
func TestShadowWordCount(t *testing.T) {
	for _, wrong := range []string{"", "fox"} {
		name := "match"
		if wrong != "" {
			name = "wrong-" + wrong
		}
		t.Run(name, func(t *testing.T) {
			addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
			h := newHandWordCount(t, addr)
			before := []string{"the quick brown fox", "jumps over", "the lazy dog", "the end"}
			h.process(before, true)
			// What Kafka Streams' topics hold, and who wrote them,
			// before the shadow run: untouched checks it after.
			was := footprint(t, addr, "ks", mirror(t, "word-count"))
			f, built := load(t, "word-count", "shadow")
			after := []string{"the fox again", "a dog", "quick quick", "over the moon", "the end again", "fox"}

			started := make(chan struct{})
			var once bool
			opts := migrate.ShadowOptions{
				Options:  migrate.Options{From: "ks", To: "shadow", Built: built, Seeds: []string{addr}},
				Topology: f.Topology, EngineConfig: maps.Clone(f.Config),
				EngineOptions: []engine.Option{engine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
				Records:       int64(len(after)), Interval: 50 * time.Millisecond, Settle: 30 * time.Second,
				Point: func(migrate.ShadowPoint) {
					if !once {
						once = true
						close(started)
					}
				},
			}
			opts.EngineConfig[engine.BarrierIntervalMs] = "100"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			type result struct {
				rep *migrate.ShadowReport
				err error
			}
			done := make(chan result, 1)
			go func() {
				rep, err := migrate.Shadow(ctx, opts)
				done <- result{rep, err}
			}()
			select {
			case <-started:
			case r := <-done:
				t.Fatalf("shadow ended before its first point: %v", r.err)
			}
			// Kafka Streams goes on: processed after the seed, in two
			// commits.
			h.wrong = wrong
			h.process(after[:3], false)
			h.process(after[3:], false)
			r := <-done
			if r.rep == nil {
				t.Fatal(r.err)
			}
			rep := r.rep
			t.Logf("points %d, records %d, %+v, differences %+v, seed verified %v", rep.Points, rep.Records, rep.Comparison, rep.Differences, rep.Seed.Verify.OK)
			if rep.Records != int64(len(after)) {
				t.Fatalf("input records compared: %d, want %d (report %+v)", rep.Records, len(after), rep)
			}
			// Words written after the seed: the, fox, again, a, dog, quick,
			// over, moon, end.
			if rep.Compared != 9 {
				t.Fatalf("keys compared: %d, want 9: %+v", rep.Compared, rep.Comparison)
			}
			if wrong == "" {
				if r.err != nil || !rep.OK || rep.Matched != 9 || rep.Unexpected != 0 {
					t.Fatalf("shadow: %v, %+v", r.err, rep)
				}
			} else {
				if !errors.Is(r.err, migrate.ErrUnexpectedDifferences) || rep.OK || rep.Unexpected != 1 || len(rep.Differences) != 1 {
					t.Fatalf("shadow: %v, %+v", r.err, rep)
				}
				d := rep.Differences[0]
				if d.Key != wrong || d.Verdict != migrate.ValueDiffers || d.KafkaStreams == nil || d.Ours == nil ||
					!strings.HasSuffix(d.KafkaStreams.ValueText, "(4)") || !strings.HasSuffix(d.Ours.ValueText, "(3)") ||
					d.KafkaStreams.Topic != "word-counts" || d.Ours.Topic != migrate.ShadowOutputTopic("shadow", "word-counts") {
					t.Fatalf("difference: %+v (ks %+v, ours %+v)", d, d.KafkaStreams, d.Ours)
				}
			}
			untouched(t, addr, "ks", mirror(t, "word-count"), was)
		})
	}
}

// TestShadowInterrupted: with no bound, the end of ctx ends the run with a
// last aligned point, which compares what Kafka Streams processed before
// it; with Abort done as well, the last point is abandoned.
func TestShadowInterrupted(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
	h := newHandWordCount(t, addr)
	h.process([]string{"a b", "b c"}, true)
	f, built := load(t, "word-count", "shadow")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	points := 0
	opts := migrate.ShadowOptions{
		Options:  migrate.Options{From: "ks", To: "shadow", Built: built, Seeds: []string{addr}},
		Topology: f.Topology, EngineConfig: map[string]string{engine.BarrierIntervalMs: "100"},
		EngineOptions: []engine.Option{engine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		Interval:      50 * time.Millisecond, Settle: 30 * time.Second,
		Point: func(migrate.ShadowPoint) {
			if points++; points == 1 {
				// Kafka Streams processes a line, then the run is
				// interrupted: the last point still compares it.
				h.process([]string{"c d"}, false)
				cancel()
			}
		},
	}
	rep, err := migrate.Shadow(ctx, opts)
	if err != nil || !rep.OK || rep.Records != 1 || rep.Compared != 2 || rep.Matched != 2 {
		t.Fatalf("interrupted: %v, %+v", err, rep)
	}

	abort, abortNow := context.WithCancel(context.Background())
	abortNow()
	f2, b2 := load(t, "word-count", "shadow-2")
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	opts.To, opts.Topology, opts.Built, opts.Abort = "shadow-2", f2.Topology, b2, abort
	opts.Point = func(migrate.ShadowPoint) { cancel() }
	if _, err := migrate.Shadow(ctx, opts); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "last aligned point") {
		t.Fatalf("aborted: %v, want the last point abandoned", err)
	}
}

// TestShadowSeedNotQuiet: Kafka Streams commits while the seed reads its
// state, so its state and offsets are not of one moment: the run stops
// before comparing anything, and says so.
func TestShadowSeedNotQuiet(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
	h := newHandWordCount(t, addr)
	h.process([]string{"a b", "b c"}, true)
	f, built := load(t, "word-count", "shadow")
	committed := false
	opts := migrate.ShadowOptions{
		Options: migrate.Options{From: "ks", To: "shadow", Built: built, Seeds: []string{addr},
			Progress: func(migrate.Progress) {
				if !committed {
					committed = true
					h.process([]string{"c d"}, true)
				}
			}},
		Topology: f.Topology, EngineConfig: map[string]string{engine.BarrierIntervalMs: "100"},
		EngineOptions: []engine.Option{engine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		For:           time.Second,
	}
	rep, err := migrate.Shadow(context.Background(), opts)
	if !errors.Is(err, migrate.ErrNotQuiet) || !committed || rep == nil || rep.OK || rep.Points != 0 {
		t.Fatalf("seed while Kafka Streams commits: %v, %+v", err, rep)
	}
}
