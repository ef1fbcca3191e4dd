package migrate_test

import (
	"context"
	"errors"
	"flag"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/interop"
	"github.com/stoatflow/stoatctl/migrate"
)

var seedFlag = flag.Uint64("seed", 0, "seed of TestKafkaStreamsShadow's inputs (0: a fresh one, printed)")

// shadowSeed is the seed of the shadow runs' inputs: -seed replays one.
func shadowSeed(t *testing.T) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("input seed %d (replay with -args -seed %d)", seed, seed)
	return seed
}

// wordLines are n lines of one to six words of a 500-word vocabulary.
func wordLines(rng *rand.Rand, n int, base int64) []interop.Record {
	recs := make([]interop.Record, n)
	for i := range recs {
		words := make([]string, 1+rng.IntN(6))
		for j := range words {
			words[j] = "w" + strconv.Itoa(rng.IntN(500))
		}
		recs[i] = interop.Record{Topic: "lines", Value: strings.Join(words, " "), Timestamp: base + int64(i)}
	}
	return recs
}

// shuffledClicks are n clicks on 20 pages, 100 ms apart in event time from
// base on, each up to 9 s earlier than that: out of order, within the
// window-close mirror's 10 s of grace. Not later: a record later than the
// grace is dropped by Kafka Streams and may be counted by our live engine,
// which judges lateness by the watermark of the last commit barrier (the
// documented difference "One clock decides lateness", docs/event-time.md),
// a difference the shadow run cannot tell from a wrong grace.
func shuffledClicks(rng *rand.Rand, n int, base int64) []interop.Record {
	recs := make([]interop.Record, n)
	for i := range recs {
		recs[i] = interop.Record{Topic: "clicks", Key: "u" + strconv.Itoa(rng.IntN(50)), Value: "/p" + strconv.Itoa(rng.IntN(20)),
			Timestamp: base + int64(i)*100 - rng.Int64N(9_000)}
	}
	return recs
}

// ksFootprint is what a shadow run must leave of the Kafka Streams
// application as it is: its internal topics, and the producers that wrote
// its changelogs, repartition and output topics.
type ksFootprint struct {
	topics    []string
	producers map[int64]bool
}

// footprint reads app's internal topics and the producer id of every
// record in them and in m's outputs.
func footprint(t *testing.T, addr, app string, m interop.Mirror) ksFootprint {
	t.Helper()
	ctx := context.Background()
	adm := kadm.NewClient(client(t, addr))
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := ksFootprint{producers: map[int64]bool{}}
	for _, name := range listed.Names() {
		if strings.HasPrefix(name, app+"-") {
			f.topics = append(f.topics, name)
		}
	}
	slices.Sort(f.topics)
	read := slices.Clone(f.topics)
	for _, o := range m.Outputs {
		read = append(read, o.Topic)
	}
	for _, topic := range read {
		parts := listed[topic].Partitions
		from := kafka.Positions{}
		for p := range parts {
			from[p] = kafka.LogStart
		}
		if _, err := kafka.ReadToEnd(ctx, []string{addr}, topic, from, func(r *kgo.Record) error {
			f.producers[r.ProducerID] = true
			return nil
		}); err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
	}
	return f
}

// untouched checks, once Kafka Streams has processed every input record,
// that the shadow run left it as it was: the same internal topics, every
// record in them and in its outputs written by its own producers (the
// ones that wrote before the shadow run began), its group's members its
// own, and its group's offsets only on its input and repartition topics,
// each at its end.
func untouched(t *testing.T, addr, app string, m interop.Mirror, before ksFootprint) {
	t.Helper()
	after := footprint(t, addr, app, m)
	if !slices.Equal(before.topics, after.topics) {
		t.Errorf("Kafka Streams' topics: %v before the shadow run, %v after", before.topics, after.topics)
	}
	for p := range after.producers {
		if !before.producers[p] {
			t.Errorf("a record in Kafka Streams' topics was written by producer %d, not one of its own (%v)", p, slices.Sorted(maps.Keys(before.producers)))
		}
	}
	ctx := context.Background()
	adm := kadm.NewClient(client(t, addr))
	groups, err := adm.DescribeGroups(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	for _, mem := range groups[app].Members {
		if !strings.HasPrefix(mem.ClientID, app+"-") {
			t.Errorf("group %s has a member not of Kafka Streams: %s (%s)", app, mem.MemberID, mem.ClientID)
		}
	}
	done, committed, err := kafkatest.CommittedToEnd(ctx, adm, app, m.Topics()...)
	if err != nil || !done {
		t.Errorf("group %s: committed %v, not every input at its end (%v)", app, committed.Sorted(), err)
	}
	offs, err := adm.FetchOffsets(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	for topic := range offs {
		if !slices.Contains(m.Topics(), topic) && !(strings.HasPrefix(topic, app+"-") && strings.HasSuffix(topic, "-repartition")) {
			t.Errorf("group %s has an offset on %s, neither its input nor its repartition topic", app, topic)
		}
	}
}

// shadowCase is one shadow run beside a running Kafka Streams application.
type shadowCase struct {
	mirror string
	app    string
	// yaml, when set, is our topology in place of the mirror's.
	yaml      string
	overrides migrate.Overrides
	// first goes to Kafka Streams before the shadow run starts, second
	// while it runs.
	first, second []interop.Record
}

// runShadow starts Kafka Streams, gives it the first input, runs a shadow
// beside it and gives it the second input while it runs, then checks that
// Kafka Streams was left untouched.
func runShadow(t *testing.T, j *interop.Java, c shadowCase) (*migrate.ShadowReport, error) {
	t.Helper()
	m := mirror(t, c.mirror)
	addr := kafkatest.Start(t, topicsFor(m))
	ks := startKS(t, j, addr, m, c.app, "", how{})
	defer ks.Stop(t)
	interop.Produce(t, addr, c.first)
	interop.AwaitConsumed(t, addr, c.app, m.Topics(), ks.Out)
	before := footprint(t, addr, c.app, m)

	shadowID := "shadow-" + c.app
	f, err := topofile.Resolve(m.Ours, "../interop")
	if err != nil {
		t.Fatal(err)
	}
	if c.yaml != "" {
		path := filepath.Join(t.TempDir(), "topology.yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if f, err = topofile.Load(path); err != nil {
			t.Fatal(err)
		}
	}
	built, err := f.Topology.Build(config.New(map[string]string{config.ApplicationID: shadowID}))
	if err != nil {
		t.Fatal(err)
	}
	cfg := maps.Clone(f.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg[engine.BarrierIntervalMs] = "100"
	started := make(chan struct{})
	points := 0
	opts := migrate.ShadowOptions{
		Options:  migrate.Options{From: c.app, To: shadowID, Built: built, Seeds: []string{addr}, Overrides: c.overrides},
		Topology: f.Topology, EngineConfig: cfg,
		Records: int64(len(c.second)), Interval: 500 * time.Millisecond, Settle: 2 * time.Minute, Examples: -1,
		Point: func(p migrate.ShadowPoint) {
			points++
			if points == 1 {
				close(started)
			}
			if points%10 == 1 {
				t.Logf("point %d: %d records, %+v", p.Point, p.Records, p.Comparison)
			}
		},
	}
	type result struct {
		rep *migrate.ShadowReport
		err error
	}
	done := make(chan result, 1)
	begin := time.Now()
	go func() {
		rep, err := migrate.Shadow(context.Background(), opts)
		done <- result{rep, err}
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the shadow run ended before its first point: %v", r.err)
	}
	for chunk := range slices.Chunk(c.second, 5_000) {
		interop.Produce(t, addr, chunk)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Minute):
		t.Fatal("the shadow run did not end within 10 minutes")
	}
	t.Logf("shadow run: %s, %v", time.Since(begin).Round(time.Millisecond), r.err)
	if r.rep != nil {
		t.Logf("report: %d points, %d records, %+v, transient %d", r.rep.Points, r.rep.Records, r.rep.Comparison, r.rep.Transient)
		for _, d := range r.rep.Differences[:min(5, len(r.rep.Differences))] {
			t.Logf("difference %s %s: Kafka Streams %+v, ours %+v", d.Verdict, d.Key, d.KafkaStreams, d.Ours)
		}
	}
	interop.AwaitConsumed(t, addr, c.app, m.Topics(), ks.Out)
	untouched(t, addr, c.app, m, before)
	return r.rep, r.err
}

// TestKafkaStreamsShadow is the shadow run's acceptance: beside a running
// Kafka Streams 4.4 word count and windowed count (on close), over 50 000
// input records produced while it runs, no unexpected difference; with our
// topology made wrong (a filter added, a grace changed) the differences
// are reported with their records and the run fails; and Kafka Streams'
// topics, producers and group are as they were (untouched).
func TestKafkaStreamsShadow(t *testing.T) {
	j := kafkaStreams(t)
	seed := shadowSeed(t)
	const n = 50_000
	mirrorYAML := func(t *testing.T, name, old, new string) string {
		b, err := os.ReadFile("../interop/topologies/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s.yaml has no %q", name, old)
		}
		return strings.Replace(string(b), old, new, 1)
	}

	t.Run("word-count", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 1))
		rep, err := runShadow(t, j, shadowCase{mirror: "word-count", app: "ks-shadow-wc",
			first: wordLines(rng, 2_000, inputHour), second: wordLines(rng, n, inputHour+2_000)})
		if err != nil || !rep.OK || rep.Unexpected != 0 || rep.Records != n || rep.Compared < 400 {
			t.Fatalf("shadow: %v, %+v", err, rep)
		}
	})
	t.Run("word-count-filtered", func(t *testing.T) {
		// Ours drops w7: Kafka Streams writes it, we do not.
		rng := rand.New(rand.NewPCG(seed, 2))
		yaml := mirrorYAML(t, "word-count", "      - group-by:", "      - filter: 'value != \"w7\"'\n      - group-by:")
		rep, err := runShadow(t, j, shadowCase{mirror: "word-count", app: "ks-shadow-wc-filter", yaml: yaml,
			first: wordLines(rng, 2_000, inputHour), second: wordLines(rng, 10_000, inputHour+2_000)})
		if !errors.Is(err, migrate.ErrUnexpectedDifferences) || rep == nil || rep.OK || rep.Unexpected != 1 || len(rep.Differences) != 1 {
			t.Fatalf("shadow: %v, %+v", err, rep)
		}
		d := rep.Differences[0]
		if d.Key != "w7" || d.Verdict != migrate.OnlyKafkaStreams || d.KafkaStreams == nil || d.Ours != nil || d.KafkaStreams.Topic != "word-counts" {
			t.Fatalf("difference: %+v, Kafka Streams' record %+v", d, d.KafkaStreams)
		}
	})
	t.Run("window-close", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 3))
		rep, err := runShadow(t, j, shadowCase{mirror: "window-close", app: "ks-shadow-win",
			first: shuffledClicks(rng, 2_000, inputHour), second: shuffledClicks(rng, n, inputHour+200_000)})
		if err != nil || !rep.OK || rep.Unexpected != 0 || rep.Records != n || rep.Compared < 1_000 {
			t.Fatalf("shadow: %v, %+v", err, rep)
		}
		if len(rep.Outputs) != 1 || rep.Outputs[0].WindowSuffix != 8 {
			t.Errorf("outputs: %+v, want clicks-per-minute with its keys' 8-byte window start", rep.Outputs)
		}
	})
	t.Run("window-close-more-grace", func(t *testing.T) {
		// Ours closes each window 5 min after its end, not 10 s: the
		// last five windows of every page, which Kafka Streams emits,
		// we do not. The store's retention then differs from Kafka
		// Streams' (the seed refuses it, window-retention); accepted,
		// ours starts empty. (A shorter grace shows little: our live
		// engine judges lateness by the watermark of its last commit
		// barrier, which lags behind a fast input, docs/event-time.md.)
		rng := rand.New(rand.NewPCG(seed, 4))
		yaml := mirrorYAML(t, "window-close", "grace: 10s", "grace: 5m")
		rep, err := runShadow(t, j, shadowCase{mirror: "window-close", app: "ks-shadow-win-grace", yaml: yaml,
			overrides: migrate.Overrides{SkipStores: []string{"clicks-per-minute-store"}},
			first:     shuffledClicks(rng, 2_000, inputHour), second: shuffledClicks(rng, 10_000, inputHour+200_000)})
		// 10 000 clicks over about 17 windows of 20 pages: the last five
		// windows of each page differ, not only those open at the seed.
		if !errors.Is(err, migrate.ErrUnexpectedDifferences) || rep == nil || rep.OK || rep.Unexpected < 80 {
			t.Fatalf("shadow: %v, %+v", err, rep)
		}
		onlyKS := 0
		for _, d := range rep.Differences {
			if d.Verdict == migrate.OnlyKafkaStreams && d.KafkaStreams != nil && d.Ours == nil {
				onlyKS++
			}
		}
		if onlyKS < 80 {
			t.Errorf("%d windows only Kafka Streams emitted, want the last five of 20 pages at least", onlyKS)
		}
		for _, d := range rep.Differences {
			if d.KafkaStreams == nil && d.Ours == nil {
				t.Fatalf("difference without records: %+v", d)
			}
		}
		d := rep.Differences[0]
		t.Logf("first difference: %s %s, Kafka Streams %+v, ours %+v", d.Verdict, d.Key, d.KafkaStreams, d.Ours)
	})
}
