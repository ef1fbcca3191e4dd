package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

// versionedJoinYAML joins orders with the prices valid at each order's
// time: a versioned table (an hour of history) and a stream-table join
// without grace, so no grace buffer (whose layout is ours) is involved.
const versionedJoinYAML = `application-id: ours
tables:
  prices: {topic: prices, key-serde: string, value-serde: string, store: {name: prices-store, history-retention: 1h}}
sources:
  orders: {topic: orders, key-serde: string, value-serde: string}
pipelines:
  priced:
    from: orders
    steps:
      - left-join: {with: prices, joiner: 'left + "@" + (right ?? "?")'}
      - to: {topic: priced, key-serde: string, value-serde: string}
`

// hourOfHistory is min.compaction.lag.ms of a versioned store's changelog
// with an hour of history retention, as Kafka Streams'
// VersionedChangelogTopicConfig sets it: the retention plus a day.
const hourOfHistory = 3_600_000 + 24*3_600_000

// ksVersion is a record of a versioned store's changelog as Kafka
// Streams' ChangeLoggingVersionedKeyValueBytesStore logs a put or a
// delete: the serialized key, the plain serialized value (null for a
// delete) and the version's timestamp (validFrom) as the record's.
type ksVersion struct {
	key   string
	value *string
	ts    int64
}

// ksVersioned leaves what a stopped Kafka Streams with a versioned table
// leaves: the store's changelog, compacted with min.compaction.lag.ms lag
// (0: none set, a plain store's), holding versions, and offsets of prices
// and orders committed with partition time pt.
func ksVersioned(t *testing.T, addr string, lag int64, versions []ksVersion, pt int64) {
	t.Helper()
	adm := kadm.NewClient(client(t, addr))
	cfg := map[string]*string{"cleanup.policy": ptr("compact")}
	if lag > 0 {
		cfg["min.compaction.lag.ms"] = ptr(strconv.FormatInt(lag, 10))
	}
	kafkatest.CreateTopic(t, adm, "ks-prices-store-changelog", 1, cfg)
	var recs []*kgo.Record
	for _, v := range versions {
		r := &kgo.Record{Topic: "ks-prices-store-changelog", Key: []byte(v.key), Timestamp: time.UnixMilli(v.ts)}
		if v.value != nil {
			r.Value = []byte(*v.value)
		}
		recs = append(recs, r)
	}
	produceTo(t, addr, recs...)
	commitKS(t, addr, "prices", pt)
	commitKS(t, addr, "orders", pt)
}

// outOfOrder is a versioned table's history with what a changelog of
// latest values cannot say: p1's last record (11 at 3 s) is not its
// latest version (12 at 5 s), p2 was deleted at 4 s, and p3's version at
// 1 s was replaced by a put at the same timestamp.
var outOfOrder = []ksVersion{
	{"p1", ptr("10"), 1000}, {"p1", ptr("12"), 5000}, {"p1", ptr("11"), 3000},
	{"p2", ptr("20"), 2000}, {"p2", nil, 4000},
	{"p3", ptr("30"), 1000}, {"p3", ptr("31"), 1000},
}

// TestVersionedCutover: a versioned table's changelog, as Kafka Streams
// writes it, is carried record for record (key, plain value, the
// version's timestamp, each stamped with its lane hash) and verified
// version by version, and our join after the cutover reads the price as
// of each order's time from the carried history. Before versioned stores
// were carried, the plan refused this store.
func TestVersionedCutover(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"prices": 1, "orders": 1, "priced": 1})
	ksVersioned(t, addr, hourOfHistory, outOfOrder, 5000)
	f, built := loadFile(t, versionedJoinYAML)
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()
	rep, err := migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Plan.Stores) != 1 || rep.Plan.Stores[0].Kind != migrate.Versioned || rep.Translated != int64(len(outOfOrder)) || !rep.Verify.OK {
		t.Fatalf("report: %+v, plan %+v", rep, rep.Plan.Stores)
	}
	if k := rep.Verify.Stores[0].Keys; k != 6 {
		t.Errorf("verified %d versions, want 6 (p3's two puts at 1 s are one)", k)
	}

	// Our changelog is Kafka Streams', record for record.
	var got []ksVersion
	if _, err := kafka.ReadToEnd(ctx, []string{addr}, "ours-prices-store-changelog", kafka.FromLogStart(0), func(r *kgo.Record) error {
		h := r.Headers
		if len(h) != 1 || h[0].Key != lane.HashHeader || int32(binary.BigEndian.Uint32(h[0].Value)) != lane.Murmur2(r.Key) {
			t.Errorf("offset %d: headers %v, want the lane hash of %q", r.Offset, h, r.Key)
		}
		v := ksVersion{key: string(r.Key), ts: r.Timestamp.UnixMilli()}
		if r.Value != nil {
			v.value = ptr(string(r.Value))
		}
		got = append(got, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	same := func(a, b ksVersion) bool {
		return a.key == b.key && a.ts == b.ts && (a.value == nil) == (b.value == nil) && (a.value == nil || *a.value == *b.value)
	}
	if !slices.EqualFunc(got, outOfOrder, same) {
		t.Errorf("our changelog %v, want Kafka Streams' %v", got, outOfOrder)
	}

	// Our join reads the carried history as of each order's time.
	stop := runFile(t, f, addr, "ours")
	defer stop()
	orders := []struct {
		key  string
		ts   int64
		want string
	}{
		{"p1", 4000, "o1@11"}, {"p1", 6000, "o2@12"}, {"p1", 2000, "o3@10"},
		{"p2", 3000, "o4@20"}, {"p2", 4500, "o5@?"}, {"p3", 1500, "o6@31"},
	}
	var in []*kgo.Record
	for i, o := range orders {
		in = append(in, &kgo.Record{Topic: "orders", Key: []byte(o.key), Value: []byte("o" + strconv.Itoa(i+1)), Timestamp: time.UnixMilli(o.ts)})
	}
	produceTo(t, addr, in...)
	out := client(t, addr, kgo.ConsumeTopics("priced"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var joined []string
	for deadline := time.Now().Add(30 * time.Second); len(joined) < len(orders) && time.Now().Before(deadline); {
		pctx, pc := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { joined = append(joined, string(r.Value)) })
		pc()
	}
	var want []string
	for _, o := range orders {
		want = append(want, o.want)
	}
	if !slices.Equal(joined, want) {
		t.Errorf("joined after the cutover %v, want %v", joined, want)
	}
}

// TestVersionedVerifyFindsDifferences: a version our changelog lacks, or
// holds with another value, fails the verification, naming the key and
// the version's time; a later record of a key does not hide an earlier
// version as it would for a plain store.
func TestVersionedVerifyFindsDifferences(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"prices": 1, "orders": 1, "priced": 1})
	ksVersioned(t, addr, hourOfHistory, outOfOrder, 5000)
	_, built := loadFile(t, versionedJoinYAML)
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()
	if rep, err := migrate.Run(ctx, opts); err != nil || !rep.Verify.OK {
		t.Fatalf("run: %v, %+v", err, rep)
	}
	// Another value for p1's version at 3 s, and a version at 7 s that
	// Kafka Streams never had: p1's latest record is not what differs.
	k := []byte("p1")
	hash := binary.BigEndian.AppendUint32(nil, uint32(lane.Murmur2(k)))
	produceTo(t, addr,
		&kgo.Record{Topic: "ours-prices-store-changelog", Key: k, Value: []byte("99"), Timestamp: time.UnixMilli(3000), Headers: []kgo.RecordHeader{{Key: lane.HashHeader, Value: hash}}},
		&kgo.Record{Topic: "ours-prices-store-changelog", Key: k, Value: []byte("12"), Timestamp: time.UnixMilli(7000), Headers: []kgo.RecordHeader{{Key: lane.HashHeader, Value: hash}}})
	kafkatest.AwaitStable(t, addr, "ours-prices-store-changelog")
	rep, err := migrate.VerifyOnly(ctx, opts)
	if err == nil || rep.Verify.OK {
		t.Fatalf("verify-only after tampering: %v, %+v", err, rep)
	}
	sv := rep.Verify.Stores[0]
	if sv.Differences != 2 {
		t.Fatalf("verify: %+v, want 2 differences", sv)
	}
	for _, want := range []string{`partition 0 key "p1" version at 3000: source 3131 at 3000, ours 3939 at 3000 (present true)`, `partition 0 key "p1" version at 7000: ours only`} {
		if !slices.Contains(sv.Examples, want) {
			t.Errorf("no example %q: %q", want, sv.Examples)
		}
	}
}

// TestVersionedRefusals: a versioned store whose history would not
// arrive as ours reads it is refused before anything is written: Kafka
// Streams' store plain (its changelog has each key's latest value only),
// Kafka Streams' store versioned and ours plain (its last record of a key
// is not the latest version), and the history retentions different.
func TestVersionedRefusals(t *testing.T) {
	plainYAML := strings.Replace(versionedJoinYAML, "{name: prices-store, history-retention: 1h}", "prices-store", 1)
	for _, tc := range []struct {
		name string
		lag  int64
		yaml string
		code string
		says string
	}{
		{"ks plain, ours versioned", 0, versionedJoinYAML, migrate.ProblemStoreKind,
			"store prices-store: ks-prices-store-changelog has no min.compaction.lag.ms, so Kafka Streams' store is not versioned, and our store prices-store is a versioned store (history retention 1h0m0s)"},
		{"ks versioned, ours plain", hourOfHistory, plainYAML, migrate.ProblemStoreKind,
			"store prices-store: ks-prices-store-changelog's min.compaction.lag.ms 90000000 says Kafka Streams' store is versioned (history retention 3600000 ms), and our store prices-store is a timestamped-key-value store"},
		{"history retention", 2*3_600_000 + 24*3_600_000, versionedJoinYAML, migrate.ProblemHistoryRetention,
			"store prices-store: history retention mismatch: ks-prices-store-changelog's min.compaction.lag.ms 93600000 is a history retention of 7200000 ms, ours (prices-store) keeps 3600000 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := kafkatest.Start(t, map[string]int32{"prices": 1, "orders": 1, "priced": 1})
			ksVersioned(t, addr, tc.lag, outOfOrder, 5000)
			_, built := loadFile(t, tc.yaml)
			_, err := migrate.Run(context.Background(), migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}})
			var refusal *migrate.RefusalError
			if !errors.As(err, &refusal) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if len(refusal.Problems) != 1 || refusal.Problems[0].Code != tc.code || !strings.Contains(refusal.Problems[0].Message, tc.says) {
				t.Errorf("problems %+v, want one %s saying %q", refusal.Problems, tc.code, tc.says)
			}
			assertNothingWritten(t, kadm.NewClient(client(t, addr)))
		})
	}
}

// TestVersionedReverseRefused: the way back, which writes each key's
// latest value, refuses a versioned store of ours, naming it, before
// writing anything.
func TestVersionedReverseRefused(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"prices": 1, "orders": 1, "priced": 1})
	ctx := context.Background()
	_, built := loadFile(t, versionedJoinYAML)
	adm := kadm.NewClient(client(t, addr))
	produceTo(t, addr, &kgo.Record{Topic: "orders", Key: []byte("p1"), Value: []byte("o1")})
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: 1000}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1, Metadata: md})
	if _, err := adm.CommitOffsets(ctx, "ours", offs); err != nil {
		t.Fatal(err)
	}
	_, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Direction: migrate.Reverse})
	var refusal *migrate.RefusalError
	if !errors.As(err, &refusal) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if len(refusal.Problems) != 1 || refusal.Problems[0].Code != migrate.ProblemStoreKind ||
		!strings.Contains(refusal.Problems[0].Message, "store prices-store: our store prices-store is a versioned store, which the way back does not carry yet") {
		t.Errorf("problems %+v, want prices-store refused as versioned", refusal.Problems)
	}
	if theirs, err := adm.FetchOffsets(ctx, "ks"); err == nil && len(theirs.Sorted()) > 0 {
		t.Errorf("the refused way back committed offsets to ks: %v", theirs.Sorted())
	}
}
