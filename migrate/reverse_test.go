package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/internal/golden"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

// TestReverseWindowClose is the way there and back for a tumbling count
// emitted on close (the window mirror: one-minute windows, 10 s grace,
// re-keyed by page): Kafka Streams' state laid out as it leaves it, one
// window pending, is migrated to ours; ours runs on more input, emitting
// the pending window and one more, and is stopped; the reverse then gives
// Kafka Streams' changelog our state (with a tombstone for a key only its
// changelog held), its group our offsets with our partition times, its
// drained repartition topic's offset with its partition time raised to
// our floor, and the processor metadata (lastEmitWindowCloseTime) past
// every window we emitted and before every one we did not: Kafka Streams
// resumes with no window emitted twice and none lost. The result is
// compared with testdata/reverse-window-close.golden (-update).
func TestReverseWindowClose(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"clicks": 1, "clicks-per-minute": 1})
	ctx := context.Background()
	adm := kadm.NewClient(client(t, addr))
	const store = "clicks-per-minute-store"
	topic := "ks-" + store + "-changelog"
	repartition := "ks-KSTREAM-REPARTITION-0000000002-repartition"
	win := func(page string, start int64) []byte { return state.EncodeWindowKey([]byte(page), start, 0) }
	kafkatest.CreateTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": ptr(strconv.FormatInt(70_000+24*3_600_000, 10))})
	// Kafka Streams' windows of /home: emitted up to 2:10 (its metadata:
	// windows ending by 2:00), [2:00, 3:00) closed at 3:10 and pending at
	// its stream time 3:11.
	produceTo(t, addr,
		&kgo.Record{Topic: topic, Key: win("/home", 0), Value: long(1), Timestamp: time.UnixMilli(5_000)},
		&kgo.Record{Topic: topic, Key: win("/home", minute), Value: long(2), Timestamp: time.UnixMilli(minute + 6_000)},
		&kgo.Record{Topic: topic, Key: win("/home", 2*minute), Value: long(3), Timestamp: time.UnixMilli(2*minute + 7_000)})
	var in, re []*kgo.Record
	for _, ts := range []int64{5_000, 3*minute + 11_000} {
		in = append(in, &kgo.Record{Topic: "clicks", Key: []byte("u1"), Value: []byte("/other"), Timestamp: time.UnixMilli(ts)})
		re = append(re, &kgo.Record{Topic: repartition, Key: []byte("/other"), Value: []byte("u1"), Timestamp: time.UnixMilli(ts)})
	}
	produceTo(t, addr, in...)
	kafkatest.CreateTopic(t, adm, repartition, 1, nil)
	produceTo(t, addr, re...)
	src, _ := kafka.TopicPartitionMetadata{PartitionTime: 3*minute + 11_000}.Encode()
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 3*minute + 11_000, Processor: map[string]int64{store: 2 * minute}}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "clicks", Partition: 0, At: int64(len(in)), LeaderEpoch: -1, Metadata: src})
	offs.Add(kadm.Offset{Topic: repartition, Partition: 0, At: int64(len(re)), LeaderEpoch: -1, Metadata: md})
	if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
		t.Fatal(err)
	}
	f, built := load(t, "window-close", "ours")
	if _, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, EmitFrontier: true}); err != nil {
		t.Fatal(err)
	}
	// A key only Kafka Streams' changelog holds (a window ours has since
	// dropped, or one written there after the cutover): the reverse must
	// delete it, or Kafka Streams would restore it.
	produceTo(t, addr, &kgo.Record{Topic: topic, Key: win("/stale", 0), Value: long(9), Timestamp: time.UnixMilli(1_000)})

	stop := runFile(t, f, addr, "ours")
	// /next in [3:00, 4:00), then /home at 4:30: [3:00, 4:00) closes at
	// 4:10 and is emitted, [4:00, 5:00) stays open.
	produceTo(t, addr,
		&kgo.Record{Topic: "clicks", Key: []byte("u2"), Value: []byte("/next"), Timestamp: time.UnixMilli(3*minute + 20_000)},
		&kgo.Record{Topic: "clicks", Key: []byte("u3"), Value: []byte("/home"), Timestamp: time.UnixMilli(4*minute + 30_000)})
	type window struct {
		page  string
		start int64
	}
	emitted := map[window]int64{}
	want := map[window]int64{{"/home", 2 * minute}: 3, {"/next", 3 * minute}: 1}
	out := client(t, addr, kgo.ConsumeTopics("clicks-per-minute"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for deadline := time.Now().Add(20 * time.Second); len(emitted) < len(want) && time.Now().Before(deadline); {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			w := window{string(r.Key[:len(r.Key)-8]), int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))}
			if _, dup := emitted[w]; dup {
				t.Errorf("window %v emitted twice", w)
			}
			emitted[w] = int64(binary.BigEndian.Uint64(r.Value))
		})
		cancel()
	}
	if !maps.Equal(emitted, want) {
		t.Fatalf("ours emitted %v, want %v", emitted, want)
	}

	// Ours still running: the way back is refused, nothing written.
	_, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse})
	if !errors.Is(err, migrate.ErrActiveMembers) {
		t.Fatalf("reverse while ours runs: %v, want %v", err, migrate.ErrActiveMembers)
	}
	if got := restoreKS(t, addr, topic); got[string(win("/stale", 0))] == "" {
		t.Fatalf("the refused reverse wrote to %s: %v", topic, got)
	}
	stop()

	rep, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse, WaitForGroups: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verify.OK {
		t.Fatalf("verification: %+v", rep.Verify)
	}
	if n := rep.Plan.Stores[0].Partitions[0].Tombstones; n != 1 {
		t.Errorf("plan: %d tombstones, want 1 (/stale)", n)
	}

	// What Kafka Streams resumes from.
	var b strings.Builder
	got := restoreKS(t, addr, topic)
	fmt.Fprintf(&b, "%s (latest per key)\n", topic)
	for _, k := range slices.Sorted(maps.Keys(got)) {
		fmt.Fprintf(&b, "  %s\n", got[k])
	}
	theirs, err := adm.FetchOffsets(ctx, "ks")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(&b, "group ks")
	var lastEmit int64 = -1
	for _, r := range theirs.Sorted() {
		m, err := kafka.DecodeTopicPartitionMetadata(r.Metadata)
		if err != nil {
			t.Fatalf("%s[%d]: %v", r.Topic, r.Partition, err)
		}
		fmt.Fprintf(&b, "  %s[%d] at %d: partition time %d, processor metadata %v\n", r.Topic, r.Partition, r.At, m.PartitionTime, m.Processor)
		if v, ok := m.Processor[store]; ok {
			lastEmit = max(lastEmit, v)
		}
	}
	golden.Check(t, "./migrate", "testdata/reverse-window-close.golden", b.String())

	// Run again, the way back writes the same; once Kafka Streams has
	// processed past our offsets, it is refused.
	if _, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse}); err != nil {
		t.Fatalf("the way back again: %v", err)
	}
	var ahead kadm.Offsets
	ahead.Add(kadm.Offset{Topic: "clicks", Partition: 0, At: 5, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "ks", ahead); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse}); !errors.Is(err, migrate.ErrKafkaStreamsAhead) {
		t.Fatalf("the way back after Kafka Streams ran: %v, want %v", err, migrate.ErrKafkaStreamsAhead)
	}

	// Kafka Streams emits a window once its end passes the metadata's
	// lastEmitWindowCloseTime: every window emitted (by it before the
	// cutover, ending by 2:00, or by us) must end by it, every other
	// window in its store after it.
	for _, k := range slices.Sorted(maps.Keys(got)) {
		page, start, _, err := state.DecodeWindowKey([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		_, byUs := emitted[window{string(page), start}]
		end := start + minute
		if wasEmitted := byUs || end <= 2*minute; wasEmitted != (end <= lastEmit) {
			t.Errorf("window %s@%d (end %d): emitted %v, Kafka Streams' lastEmitWindowCloseTime %d", page, start, end, wasEmitted, lastEmit)
		}
	}
}

// restoreKS is a changelog of one partition as Kafka Streams restores it:
// the latest record of each key, printed.
func restoreKS(t *testing.T, addr, topic string) map[string]string {
	t.Helper()
	got := map[string]string{}
	if _, err := kafka.ReadToEnd(context.Background(), []string{addr}, topic, kafka.FromLogStart(0), func(r *kgo.Record) error {
		if r.Value == nil {
			delete(got, string(r.Key))
			return nil
		}
		page, start, seq, err := state.DecodeWindowKey(r.Key)
		if err != nil {
			return err
		}
		got[string(r.Key)] = fmt.Sprintf("%s@%d#%d = %d (timestamp %d)", page, start, seq, int64(binary.BigEndian.Uint64(r.Value)), r.Timestamp.UnixMilli())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReverseSuppressBuffer: Kafka Streams' suppress buffer (V3, as its
// changelog holds it) migrated to ours and straight back: Kafka Streams'
// changelog then holds, for each key, a V3 record (header v = 3) with the
// same buffer time, latest timestamp, prior and new value (the old value
// the prior, as ours emits it), and ours and its offsets are untouched
// by the way back.
func TestReverseSuppressBuffer(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"logins": 1, "login-counts": 1})
	ctx := context.Background()
	_, built := load(t, "suppress", "ours")
	var buffer string
	for name, info := range built.Stores {
		if _, ok := info.Builder.(interface{ SuppressKeySuffix() (int, bool) }); ok {
			buffer = name
		}
	}
	const size, grace = 300_000, 30_000
	w := int64(100 * size)
	adm := kadm.NewClient(client(t, addr))
	counts, buf := "ks-failed-logins-changelog", "ks-"+buffer+"-changelog"
	kafkatest.CreateTopic(t, adm, counts, 1, map[string]*string{"cleanup.policy": ptr("compact,delete"),
		"retention.ms": ptr(strconv.Itoa(size + grace + 24*3600*1000))})
	kafkatest.CreateTopic(t, adm, buf, 1, map[string]*string{"cleanup.policy": ptr("compact")})
	var recs []*kgo.Record
	type entry struct{ prior, newValue, ts int64 }
	want := map[string]entry{}
	for i := range 3 {
		user := "u" + strconv.Itoa(i)
		n := int64(i + 1)
		recs = append(recs, &kgo.Record{Topic: counts, Key: append(append([]byte(user), long(w)...), 0, 0, 0, 0), Value: long(n), Timestamp: time.UnixMilli(w + 1000)})
		var old []byte
		if n > 1 {
			old = long(n - 1)
		}
		key := append([]byte(user), long(w)...)
		recs = append(recs, &kgo.Record{Topic: buf, Key: key, Value: v3Value(w+1000*n, n, 0, old, n, w+size),
			Headers: []kgo.RecordHeader{{Key: "v", Value: []byte{3}}}, Timestamp: time.UnixMilli(w + 1000*n)})
		want[string(key)] = entry{0, n, w + 1000*n} // the fixture's prior is null
	}
	produceTo(t, addr, recs...)
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: w + 200_000}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "logins", Partition: 0, At: 3, LeaderEpoch: -1, Metadata: md})
	if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}); err != nil {
		t.Fatal(err)
	}
	rep, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verify.OK || rep.Translated != 6 {
		t.Fatalf("report: translated %d, verify %+v", rep.Translated, rep.Verify)
	}
	latest := map[string]*kgo.Record{}
	if _, err := kafka.ReadToEnd(ctx, []string{addr}, buf, kafka.FromLogStart(0), func(r *kgo.Record) error {
		latest[string(r.Key)] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(latest) != len(want) {
		t.Fatalf("%s holds %d keys, want %d", buf, len(latest), len(want))
	}
	for k, e := range want {
		r := latest[k]
		if len(r.Headers) != 1 || r.Headers[0].Key != "v" || string(r.Headers[0].Value) != "\x03" {
			t.Errorf("key %q: headers %v, want v=3", k, r.Headers)
		}
		got, err := migrate.DecodeSuppressV3(r.Value)
		if err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		var prior []byte
		if e.prior > 0 {
			prior = long(e.prior)
		}
		if got.BufferTime != w+size || got.Timestamp != e.ts || string(got.Prior) != string(prior) || (got.Prior == nil) != (prior == nil) ||
			string(got.Old) != string(prior) || string(got.New) != string(long(e.newValue)) || got.Offset != -1 {
			t.Errorf("key %q: Kafka Streams reads %+v, want buffer time %d, timestamp %d, prior %x, new %d", k, got, w+size, e.ts, prior, e.newValue)
		}
	}
	theirs, err := adm.FetchOffsets(ctx, "ks")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := theirs.Lookup("logins", 0); r.At != 3 {
		t.Errorf("group ks: logins[0] at %d, want 3", r.At)
	} else if m, err := kafka.DecodeTopicPartitionMetadata(r.Metadata); err != nil || m.PartitionTime != w+200_000 {
		t.Errorf("group ks: logins[0] metadata %+v (%v), want partition time %d", m, err, w+200_000)
	}
}

// TestReverseRefused: the way back refuses, listing every problem before
// writing anything, what Kafka Streams has no layout for (a foreign-key
// join's subscription store and its resolver's copy of the left table)
// and a Kafka Streams changelog with another partition count than ours;
// and refuses an application of ours that never committed an offset.
func TestReverseRefused(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"orders": 1, "customers": 1, "order-rows": 1})
	ctx := context.Background()
	built := loadYAML(t, fkJoinYAML)
	adm := kadm.NewClient(client(t, addr))
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse}
	if _, err := migrate.MakePlan(ctx, opts); !errors.Is(err, migrate.ErrNotStarted) {
		t.Fatalf("ours never committed: %v, want %v", err, migrate.ErrNotStarted)
	}
	kafkatest.CreateTopic(t, adm, "ks-customers-store-changelog", 2, map[string]*string{"cleanup.policy": ptr("compact")})
	produceTo(t, addr, &kgo.Record{Topic: "orders", Key: []byte("o1"), Value: []byte("c1")})
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 1000}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1, Metadata: md})
	if _, err := adm.CommitOffsets(ctx, "ours", offs); err != nil {
		t.Fatal(err)
	}
	before, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = migrate.Run(ctx, opts)
	var refusal *migrate.RefusalError
	if !errors.As(err, &refusal) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	type problem struct{ code, subject string }
	var got []problem
	for _, p := range refusal.Problems {
		got = append(got, problem{p.Code, p.Subject})
	}
	want := []problem{{migrate.ProblemStoreKind, "customers-store"}, {migrate.ProblemStoreKind, "oc-subscription-response-resolver-primary-store"}, {migrate.ProblemStoreKind, "oc-subscription-store"}}
	if !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v\n%v", got, want, err)
	}
	for _, s := range []string{
		"store customers-store: Kafka Streams' changelog ks-customers-store-changelog has 2 partitions, our changelog 1",
		"our store oc-subscription-store is a foreign-key join's subscription store, which the way back does not carry yet",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal does not say %q:\n%v", s, err)
		}
	}
	after, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after))) {
		t.Errorf("the refused way back created topics: %v, before %v", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
	}
	if theirs, err := adm.FetchOffsets(ctx, "ks"); err == nil && len(theirs.Sorted()) > 0 {
		t.Errorf("the refused way back committed offsets to ks: %v", theirs.Sorted())
	}
}
