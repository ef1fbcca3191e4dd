package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/internal/syncbuf"
	"github.com/stoatflow/stoatctl/migrate"
)

func long(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// load builds one of the interop mirrors of ours under application id app.
func load(t testing.TB, name, app string) (*topofile.File, *topology.Built) {
	t.Helper()
	f, err := topofile.Load("../interop/topologies/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Topology.Build(config.New(map[string]string{config.ApplicationID: app}))
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

func client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// fakeWordCount leaves on the broker what a stopped Kafka Streams
// word-count (application id ks) leaves: its counts changelog in Kafka
// Streams' placement (the task's partition) and layout, and committed
// offsets with TopicPartitionMetadata. n words w0..w(n-1), word wi counted
// i%5+1 times, over two partitions.
func fakeWordCount(t testing.TB, addr string, n int) {
	t.Helper()
	ctx := context.Background()
	adm := kadm.NewClient(client(t, addr))
	kafkatest.CreateTopic(t, adm, "ks-counts-changelog", 2, map[string]*string{"cleanup.policy": ptr("compact")})
	cl := client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	var recs []*kgo.Record
	for i := range n {
		for c := range i%5 + 1 {
			// The task partition of the word: the one Kafka Streams'
			// repartition topic gave it (murmur2 of the word).
			w := []byte("w" + strconv.Itoa(i))
			recs = append(recs, &kgo.Record{Topic: "ks-counts-changelog", Partition: int32(lane.For(w, 2)), Key: w,
				Value: long(int64(c + 1)), Timestamp: time.UnixMilli(int64(1000 + i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 5000}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "lines", Partition: 0, At: 10, LeaderEpoch: -1, Metadata: md})
	offs.Add(kadm.Offset{Topic: "lines", Partition: 1, At: 7, LeaderEpoch: -1, Metadata: md})
	if resp, err := adm.CommitOffsets(ctx, "ks", offs); err != nil || resp.Error() != nil {
		t.Fatal(err, resp.Error())
	}
}

func ptr(s string) *string { return &s }

func TestWordCountCutover(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
	const words = 100
	fakeWordCount(t, addr, words)
	f, built := load(t, "word-count", "ours")
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()

	p, err := migrate.MakePlan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Stores) != 1 || p.Stores[0].Store != "counts" || p.Stores[0].Records() != 300 {
		t.Fatalf("plan: %+v", p.Stores)
	}
	if len(p.Offsets) != 2 || p.Offsets[0].Offset != 10 || p.Offsets[0].PartitionTime != 5000 {
		t.Fatalf("offsets: %+v", p.Offsets)
	}
	rep, err := migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Translated != 300 || !rep.Verify.OK {
		t.Fatalf("report: %+v", rep)
	}
	// Again: every partition is marked done, nothing is written.
	rep, err = migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Translated != 0 || rep.Skipped != 2 {
		t.Fatalf("re-run: translated %d, skipped %d", rep.Translated, rep.Skipped)
	}

	// Our engine picks up: one more line of w3 (counted 4 times by Kafka
	// Streams) after the copied offsets.
	cl := client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var in []*kgo.Record
	for range 10 {
		in = append(in, &kgo.Record{Topic: "lines", Partition: 0, Value: []byte("old")})
	}
	in = append(in, &kgo.Record{Topic: "lines", Partition: 0, Value: []byte("w3 w98")})
	if err := cl.ProduceSync(ctx, in...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{}
	for k, v := range f.Config {
		cfg[k] = v
	}
	cfg["application.id"], cfg["bootstrap.servers"], cfg["num.stream.threads"] = "ours", addr, "3"
	cfg[engine.BarrierIntervalMs] = "100"
	e := engine.New(f.Topology, cfg, engine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	got := map[string]int64{}
	out := client(t, addr, kgo.ConsumeTopics("word-counts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		pctx, pc := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value)) })
		pc()
	}
	if got["w3"] != 5 || got["w98"] != 5 || len(got) != 2 {
		t.Fatalf("after cutover: %v, want w3=5 w98=5 (and no 'old')", got)
	}
}

// TestInterruptedRunFinishes: a run stopped in the middle of a partition
// (its context cancelled after a batch) is finished by running it again:
// the completed partition is skipped, the interrupted one written again
// from its start, and the verification passes.
func TestInterruptedRunFinishes(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
	fakeWordCount(t, addr, 100)
	_, built := load(t, "word-count", "ours")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []migrate.Progress
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, BatchRecords: 40,
		Progress: func(p migrate.Progress) {
			seen = append(seen, p)
			if p.Partition == 1 && p.Done >= 80 {
				cancel()
			}
		}}
	rep, err := migrate.Run(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v (report %+v, progress %v)", err, rep, seen)
	}
	// The second run's progress counts over what it copies: partition 1
	// only, from nothing to all of it.
	seen = nil
	opts.Progress = func(p migrate.Progress) { seen = append(seen, p) }
	rep, err = migrate.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range seen {
		if p.ToCopy != rep.Translated || p.Copied > p.ToCopy || (i > 0 && p.Copied <= seen[i-1].Copied) {
			t.Fatalf("progress %d of the second run: %+v (all %+v), want Copied rising to ToCopy = %d", i, p, seen, rep.Translated)
		}
	}
	if len(seen) == 0 || seen[len(seen)-1].Copied != rep.Translated {
		t.Fatalf("the second run's progress %+v does not end at %d records copied", seen, rep.Translated)
	}
	// The interrupted partition 1 is written again whole.
	want := 0
	for i := range 100 {
		if lane.For([]byte("w"+strconv.Itoa(i)), 2) == 1 {
			want += i%5 + 1
		}
	}
	if rep.Skipped != 1 || rep.Translated != int64(want) || !rep.Verify.OK {
		t.Fatalf("second run: skipped %d, translated %d (want %d), verify %+v", rep.Skipped, rep.Translated, want, rep.Verify)
	}
}

// TestEmitFrontierSources: where the emit frontier of an on-window-close
// store comes from, and how many windows the plan says would be emitted
// again without it. Windows of one minute, ten seconds of grace: a window
// starting at s closes at s+70 s.
func TestEmitFrontierSources(t *testing.T) {
	const minute = 60_000
	for _, tc := range []struct {
		name      string
		metadata  *kafka.TopicPartitionMetadata
		wantValue int64
		wantFrom  string
		wantAgain int64
	}{
		{name: "processor metadata", wantValue: 3*minute + 10_000, wantFrom: "processor metadata", wantAgain: 3,
			metadata: &kafka.TopicPartitionMetadata{PartitionTime: 4*minute + 30_000, Processor: map[string]int64{"clicks-per-minute-store": 3 * minute}}},
		{name: "partition time", wantValue: 4*minute + 30_000, wantFrom: "partition time", wantAgain: 4,
			metadata: &kafka.TopicPartitionMetadata{PartitionTime: 4*minute + 30_000}},
		// No offsets: the largest changelog timestamp, 5:05.
		{name: "max changelog timestamp", wantValue: 5*minute + 5_000, wantFrom: "max changelog timestamp", wantAgain: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := kafkatest.Start(t, map[string]int32{"clicks": 1, "clicks-per-minute": 1})
			ctx := context.Background()
			adm := kadm.NewClient(client(t, addr))
			kafkatest.CreateTopic(t, adm, "ks-clicks-per-minute-store-changelog", 1, map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": ptr("86470000")})
			// Windows [0,1), [1,2), ... [5,6) minutes of /home, each last
			// updated five seconds into it.
			var recs []*kgo.Record
			for m := range int64(6) {
				key := append([]byte("/home"), append(long(m*minute), 0, 0, 0, 0)...)
				recs = append(recs, &kgo.Record{Topic: "ks-clicks-per-minute-store-changelog", Key: key, Value: long(m + 1), Timestamp: time.UnixMilli(m*minute + 5_000)})
			}
			produceTo(t, addr, recs...)
			if tc.metadata != nil {
				md, _ := tc.metadata.Encode()
				var offs kadm.Offsets
				offs.Add(kadm.Offset{Topic: "clicks", Partition: 0, At: 6, LeaderEpoch: -1, Metadata: md})
				if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
					t.Fatal(err)
				}
			}
			_, built := load(t, "window-close", "ours")
			p, err := migrate.MakePlan(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, EmitFrontier: true})
			if err != nil {
				t.Fatal(err)
			}
			f := p.Stores[0].Frontier
			if f == nil || f.Value != tc.wantValue || f.From != tc.wantFrom || f.ReEmitted != tc.wantAgain || f.ReEmittedWithFrontier != 0 {
				t.Fatalf("frontier %+v, want %d from %s, %d emitted again", f, tc.wantValue, tc.wantFrom, tc.wantAgain)
			}
			// The run seeds it, and the verification reads it back. The
			// clients' log is kept for a failure: once in CI the seeded
			// frontier was not there to read back.
			var clientLog syncBuffer
			logOpt := kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, nil))
			rep, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, EmitFrontier: true, ClientOpts: []kgo.Opt{logOpt}})
			if err != nil {
				t.Fatalf("%v\nclient log:\n%s", err, clientLog.String())
			}
			if !rep.Verify.OK || rep.Translated != 6 {
				t.Fatalf("report %+v", rep)
			}
			// A frontier behind the seeded one fails the verification.
			produceTo(t, addr, &kgo.Record{Topic: "ours-clicks-per-minute-store-emitfrontier-changelog", Key: []byte("clicks-per-minute-store"), Value: long(0)})
			// Apache Kafka writes the run's commit markers after it
			// answers EndTxn: until they are in, read_committed stops
			// short of the stale record (seen once in CI's real tier).
			kafkatest.AwaitStable(t, addr, "ours-clicks-per-minute-store-emitfrontier-changelog")
			_, err = migrate.VerifyOnly(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, EmitFrontier: true})
			want := fmt.Sprintf("migrate: verification failed: time: emit frontier of clicks-per-minute-store in ours-clicks-per-minute-store-emitfrontier-changelog: want %d, found 0 (present true)", tc.wantValue)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// TestRefusesOnceOursHasRun: after our application has processed input
// (its committed offsets moved past Kafka Streams'), a migration would
// rewind it; it is refused before anything is written.
func TestRefusesOnceOursHasRun(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
	fakeWordCount(t, addr, 10)
	_, built := load(t, "word-count", "ours")
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	if _, err := migrate.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "lines", Partition: 0, At: 12, LeaderEpoch: -1})
	if _, err := kadm.NewClient(client(t, addr)).CommitOffsets(context.Background(), "ours", offs); err != nil {
		t.Fatal(err)
	}
	_, err := migrate.Run(context.Background(), opts)
	want := "migrate: group ours has committed lines[0] at 12, ks at 10: our application has run since it was migrated; migrating again would rewind it"
	if !errors.Is(err, migrate.ErrAlreadyRunning) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// syncBuffer is a log clients write from several goroutines.
type syncBuffer = syncbuf.Buffer

// TestVerifyFindsDifferences: after a migration, values changed in our
// changelog behind its back are counted, and the examples name the first
// keys in order, with both values.
func TestVerifyFindsDifferences(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"lines": 2, "word-counts": 2})
	fakeWordCount(t, addr, 20)
	_, built := load(t, "word-count", "ours")
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()
	if rep, err := migrate.Run(ctx, opts); err != nil || !rep.Verify.OK {
		t.Fatalf("run: %v, %+v", err, rep)
	}
	cl := client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for _, w := range []string{"w7", "w12", "w3"} {
		k := []byte(w)
		hash := binary.BigEndian.AppendUint32(nil, uint32(lane.Murmur2(k)))
		recs = append(recs, &kgo.Record{Topic: "ours-counts-changelog", Partition: int32(lane.For(k, 2)), Key: k, Value: long(99),
			Timestamp: time.UnixMilli(1000), Headers: []kgo.RecordHeader{{Key: lane.HashHeader, Value: hash}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rep, err := migrate.VerifyOnly(ctx, opts)
	if err == nil || rep.Verify.OK {
		t.Fatalf("verify-only after tampering: %v, %+v", err, rep)
	}
	sv := rep.Verify.Stores[0]
	if sv.Differences != 3 || len(sv.Examples) != 3 {
		t.Fatalf("verify: %+v, want 3 differences with 3 examples", sv)
	}
	if !slices.IsSorted(sv.Examples) {
		t.Errorf("examples not in key order: %q", sv.Examples)
	}
	for _, w := range []string{"w12", "w3", "w7"} {
		if !slices.ContainsFunc(sv.Examples, func(e string) bool {
			return strings.Contains(e, fmt.Sprintf("key %q: source ", w)) && strings.Contains(e, "ours 0000000000000063")
		}) {
			t.Errorf("no example names key %s with our value 99: %q", w, sv.Examples)
		}
	}
}
