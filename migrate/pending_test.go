package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

// runFile runs topology file f as app on addr until the returned stop.
func runFile(t *testing.T, f *topofile.File, addr, app string) (stop func()) {
	t.Helper()
	return runFileLanes(t, f, addr, app, 1)
}

// runFileLanes is runFile with lanes lanes per task.
func runFileLanes(t *testing.T, f *topofile.File, addr, app string, lanes int) (stop func()) {
	t.Helper()
	cfg := maps.Clone(f.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["application.id"], cfg["bootstrap.servers"], cfg["num.stream.threads"] = app, addr, strconv.Itoa(lanes)
	cfg[engine.BarrierIntervalMs] = "100"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("MIGRATE_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e := engine.New(f.Topology, cfg, engine.WithLogger(log))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("our engine: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

const sessionYAML = `application-id: ours
sources:
  clicks: {topic: clicks, key-serde: string, value-serde: string, watermark: {strategy: monotonous}}
pipelines:
  p:
    from: clicks
    steps:
      - group-by: {key: value, key-serde: string, value-serde: string}
      - window: {type: session, gap: 30s, grace: 10s, emit: on-window-close}
      - count: {store: clicks-per-minute-store}
      - to-stream
      - to: {topic: clicks-per-minute, key-serde: string, value-serde: long}
`

// TestPendingWindowsEmittedOnce: Kafka Streams stopped right after a
// window closed, before it looked for closed windows again (it looks at
// most once a second, and only when a window boundary is crossed): the
// windows it closed since its last look (its processor metadata) are
// pending. After the cutover our engine emits each pending window once,
// and none that Kafka Streams emitted; the plan counts them exactly. For
// each kind of window emitted on close, with Kafka Streams' changelog and
// metadata laid out as it leaves them (the windows a sliding count makes
// of two records, sessions merged), behind a drained repartition topic.
func TestPendingWindowsEmittedOnce(t *testing.T) {
	win := func(start int64) []byte { return state.EncodeWindowKey([]byte("/home"), start, 0) }
	type rec struct {
		key   []byte
		count int64
		ts    int64
	}
	for _, tc := range []struct {
		name      string
		ours      func(t *testing.T) (*topofile.File, string)
		retention int64
		store     []rec
		// meta is Kafka Streams' last emitted window close time, stream
		// its stream time at the cutover.
		meta, stream int64
		frontier     int64
		pending      int64
		// after is the record after the cutover; want what we emit then,
		// by window start.
		after int64
		want  map[int64]int64
	}{
		{name: "tumbling", retention: 70_000,
			// 1 min windows, 10 s grace; emitted up to 2:10; [2:00, 3:00)
			// closed at 3:10, the cutover at 3:11.
			store: []rec{{win(0), 1, 5_000}, {win(minute), 2, minute + 6_000}, {win(2 * minute), 3, 2*minute + 7_000}},
			meta:  2 * minute, stream: 3*minute + 11_000, frontier: 2*minute + 10_000, pending: 1,
			after: 3*minute + 20_000, want: map[int64]int64{2 * minute: 3}},
		{name: "sliding", retention: 130_000,
			ours: func(t *testing.T) (*topofile.File, string) { return nil, slidingYAML },
			// Time difference 1 min, 10 s grace. Records at 0:05 and
			// 1:05 make [0, 60000] (the early window), [5000, 65000]
			// and [5001, 65001]. Emitted: windows ending by 61999;
			// closed at the cutover (1:15.5): the two ending at 65000
			// and 65001 (closing at 75001 and 75002).
			store: []rec{{win(0), 1, 5_000}, {win(5_000), 2, 65_000}, {win(5_001), 1, 65_000}},
			meta:  62_000, stream: 75_500, frontier: 72_000, pending: 2,
			after: 80_000, want: map[int64]int64{5_000: 2, 5_001: 1}},
		{name: "session", retention: 40_000,
			ours: func(t *testing.T) (*topofile.File, string) { return nil, sessionYAML },
			// Gap 30 s, grace 10 s. Sessions [0, 20 s] (closing at 60 s,
			// emitted at stream time 65 s) and [100 s, 110 s] (closing
			// at 150 s); the cutover at 151 s.
			store: []rec{{state.EncodeSessionKey([]byte("/home"), 0, 20_000), 3, 20_000}, {state.EncodeSessionKey([]byte("/home"), 100_000, 110_000), 2, 110_000}},
			meta:  25_000, stream: 151_000, frontier: 64_999, pending: 1,
			after: 160_000, want: map[int64]int64{100_000: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := kafkatest.Start(t, map[string]int32{"clicks": 1, "clicks-per-minute": 1})
			ctx := context.Background()
			adm := kadm.NewClient(client(t, addr))
			topic := "ks-clicks-per-minute-store-changelog"
			kafkatest.CreateTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": ptr(strconv.FormatInt(tc.retention+24*3_600_000, 10))})
			var recs []*kgo.Record
			for _, r := range tc.store {
				recs = append(recs, &kgo.Record{Topic: topic, Key: r.key, Value: long(r.count), Timestamp: time.UnixMilli(r.ts)})
			}
			produceTo(t, addr, recs...)
			// What Kafka Streams read, to its stream time, re-keyed by
			// page through a repartition topic, drained: the aggregation's
			// task commits its offsets there, with the processor metadata.
			var in, re []*kgo.Record
			for _, ts := range []int64{5_000, tc.stream} {
				in = append(in, &kgo.Record{Topic: "clicks", Key: []byte("u1"), Value: []byte("/other"), Timestamp: time.UnixMilli(ts)})
				re = append(re, &kgo.Record{Topic: "ks-KSTREAM-REPARTITION-0000000002-repartition", Key: []byte("/other"), Value: []byte("u1"), Timestamp: time.UnixMilli(ts)})
			}
			produceTo(t, addr, in...)
			kafkatest.CreateTopic(t, adm, re[0].Topic, 1, nil)
			produceTo(t, addr, re...)
			src, _ := kafka.TopicPartitionMetadata{PartitionTime: tc.stream}.Encode()
			md, _ := kafka.TopicPartitionMetadata{PartitionTime: tc.stream, Processor: map[string]int64{"clicks-per-minute-store": tc.meta}}.Encode()
			var offs kadm.Offsets
			offs.Add(kadm.Offset{Topic: "clicks", Partition: 0, At: int64(len(in)), LeaderEpoch: -1, Metadata: src})
			offs.Add(kadm.Offset{Topic: re[0].Topic, Partition: 0, At: int64(len(re)), LeaderEpoch: -1, Metadata: md})
			if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
				t.Fatal(err)
			}
			var f *topofile.File
			var built *topology.Built
			if tc.ours == nil {
				f, built = load(t, "window-close", "ours")
			} else {
				_, yaml := tc.ours(t)
				f, built = loadFile(t, yaml)
			}
			rep, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, EmitFrontier: true})
			if err != nil {
				t.Fatal(err)
			}
			fp := rep.Plan.Stores[0].Frontier
			if fp == nil || fp.Value != tc.frontier || fp.Pending != tc.pending || fp.ReEmittedWithFrontier != 0 {
				t.Errorf("frontier %+v: want %d seeded, %d windows pending, none emitted again", fp, tc.frontier, tc.pending)
			}

			stop := runFile(t, f, addr, "ours")
			// A click after the cutover, for another page.
			produceTo(t, addr, &kgo.Record{Topic: "clicks", Key: []byte("u2"), Value: []byte("/next"), Timestamp: time.UnixMilli(tc.after)})
			got := map[int64]int64{}
			out := client(t, addr, kgo.ConsumeTopics("clicks-per-minute"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			for deadline := time.Now().Add(15 * time.Second); len(got) < len(tc.want) && time.Now().Before(deadline); {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				out.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
					start := int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))
					if _, dup := got[start]; dup {
						t.Errorf("window starting %d emitted twice", start)
					}
					got[start] = int64(binary.BigEndian.Uint64(r.Value))
				})
				cancel()
			}
			// A second emission would show within a few barriers.
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			out.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
				t.Errorf("emitted again: key %x value %x", r.Key, r.Value)
			})
			cancel()
			stop()
			if !maps.Equal(got, tc.want) {
				t.Fatalf("after the cutover we emitted %v (window start: count), want %v", got, tc.want)
			}

			// The way back: the lastEmitWindowCloseTime Kafka Streams
			// resumes with must count as emitted every window emitted
			// (by it before the cutover, by us after) and no other, by
			// Kafka Streams' own rule for the window kind: a time window
			// once its end is at or before it, a sliding window or a
			// session once its end is before it.
			back, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse})
			if err != nil {
				t.Fatal(err)
			}
			if !back.Verify.OK {
				t.Fatalf("the way back: %+v", back.Verify)
			}
			theirs, err := adm.FetchOffsets(ctx, "ks")
			if err != nil {
				t.Fatal(err)
			}
			lastEmit := int64(-1)
			for _, r := range theirs.Sorted() {
				m, err := kafka.DecodeTopicPartitionMetadata(r.Metadata)
				if err != nil {
					t.Fatal(err)
				}
				if v, ok := m.Processor["clicks-per-minute-store"]; ok {
					lastEmit = max(lastEmit, v)
				}
			}
			ksEmitted := func(end, w int64) bool {
				if tc.name == "tumbling" {
					return end <= w
				}
				return end <= w-1
			}
			windows := 0
			if _, err := kafka.ReadToEnd(ctx, []string{addr}, topic, kafka.FromLogStart(0), func(r *kgo.Record) error {
				var start, end int64
				if tc.name == "session" {
					_, s, e, err := state.DecodeSessionKey(r.Key)
					if err != nil {
						return err
					}
					start, end = s, e
				} else {
					_, s, _, err := state.DecodeWindowKey(r.Key)
					if err != nil {
						return err
					}
					start, end = s, s+minute
				}
				windows++
				_, byUs := got[start]
				if emitted := byUs || ksEmitted(end, tc.meta); emitted != ksEmitted(end, lastEmit) {
					t.Errorf("window [%d, %d]: emitted %v, but Kafka Streams resumes with lastEmitWindowCloseTime %d", start, end, emitted, lastEmit)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if windows == 0 || lastEmit < 0 {
				t.Fatalf("the way back left %d windows, lastEmitWindowCloseTime %d", windows, lastEmit)
			}
		})
	}
}

// loadFile builds a topology file written in the test under application
// id ours.
func loadFile(t *testing.T, yaml string) (*topofile.File, *topology.Built) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := topofile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Topology.Build(config.New(map[string]string{config.ApplicationID: "ours"}))
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}
