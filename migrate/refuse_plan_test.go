package migrate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

const minute = int64(60_000)

// ksWindows leaves what a stopped Kafka Streams windowed count leaves: the
// changelog of store (retention.ms: the store's retention plus a day) with
// one record per window start, each stamped ts(start), and offsets committed
// for input with its partition time.
func ksWindows(t *testing.T, addr, store string, retention int64, starts []int64, ts func(start int64) int64, input string) {
	t.Helper()
	adm := kadm.NewClient(client(t, addr))
	topic := "ks-" + store + "-changelog"
	kafkatest.CreateTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": ptr(strconv.FormatInt(retention+24*3_600_000, 10))})
	var recs []*kgo.Record
	last := int64(0)
	for i, s := range starts {
		recs = append(recs, &kgo.Record{Topic: topic, Key: state.EncodeWindowKey([]byte("/home"), s, 0), Value: long(int64(i + 1)), Timestamp: time.UnixMilli(ts(s))})
		last = max(last, ts(s))
	}
	produceTo(t, addr, recs...)
	commitKS(t, addr, input, last)
}

// commitKS commits Kafka Streams' offset of input[0], past a record put
// there, with partition time pt.
func commitKS(t *testing.T, addr, input string, pt int64) {
	t.Helper()
	produceTo(t, addr, &kgo.Record{Topic: input, Key: []byte("u1"), Value: []byte("/home"), Timestamp: time.UnixMilli(pt)})
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: pt}.Encode()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: input, Partition: 0, At: 1, LeaderEpoch: -1, Metadata: md})
	if _, err := kadm.NewClient(client(t, addr)).CommitOffsets(context.Background(), "ks", offs); err != nil {
		t.Fatal(err)
	}
}

// loadYAML builds a topology written in the test, under application id
// ours.
func loadYAML(t *testing.T, yaml string) *topology.Built {
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
	return b
}

const slidingYAML = `application-id: ours
sources:
  clicks: {topic: clicks, key-serde: string, value-serde: string, watermark: {strategy: monotonous}}
pipelines:
  p:
    from: clicks
    steps:
      - group-by: {key: value, key-serde: string, value-serde: string}
      - window: {type: sliding, difference: 1m, grace: 10s, emit: on-window-close}
      - count: {store: clicks-per-minute-store}
      - to-stream
      - to: {topic: clicks-per-minute, key-serde: string, value-serde: long}
`

const jsonTableYAML = `application-id: ours
tables:
  users: {topic: users, key-serde: string, value-serde: json, store: users-store}
pipelines:
  users-out:
    from: users
    steps:
      - to-stream
      - to: {topic: users-out, key-serde: string, value-serde: json}
`

const hoppingYAML = `application-id: ours
sources:
  clicks: {topic: clicks, key-serde: string, value-serde: string, watermark: {strategy: monotonous}}
pipelines:
  p:
    from: clicks
    steps:
      - group-by: {key: value, key-serde: string, value-serde: string}
      - window: {type: hopping, size: 1m, advance: 30s, grace: 10s, emit: on-window-close}
      - count: {store: clicks-per-minute-store}
      - to-stream
      - to: {topic: clicks-per-minute, key-serde: string, value-serde: long}
`

const fkJoinYAML = `application-id: ours
tables:
  orders: {topic: orders, key-serde: string, value-serde: string, store: orders-store}
  customers: {topic: customers, key-serde: string, value-serde: string, store: customers-store}
pipelines:
  rows:
    from: orders
    steps:
      - join-foreign-key: {with: customers, key: value, store: oc-rows, value-serde: json, name: oc}
      - to-stream
      - to: {topic: order-rows, key-serde: string, value-serde: json}
`

const versionedYAML = `application-id: ours
tables:
  prices: {topic: prices, key-serde: string, value-serde: string, store: {name: prices-store, history-retention: 1h}}
sources:
  orders: {topic: orders, key-serde: string, value-serde: string}
pipelines:
  priced:
    from: orders
    steps:
      - join: {with: prices, grace: 5s, name: priced}
      - to: {topic: priced, key-serde: string, value-serde: json}
`

// TestRefusedBeforeWriting: each case a migration that would lose or
// misplace state (issue 42's measured ones among them) is refused with
// one error listing every problem, naming the flag that accepts each, and
// nothing is written: no topic of ours, no offset of our group.
func TestRefusedBeforeWriting(t *testing.T) {
	type problem struct{ code, subject string }
	for _, tc := range []struct {
		name   string
		topics map[string]int32
		setup  func(t *testing.T, addr string)
		ours   func(t *testing.T) *topology.Built
		opts   migrate.Overrides
		want   []problem
		says   []string
	}{
		{name: "store name typo", topics: map[string]int32{"clicks": 1, "clicks-per-minute": 1},
			setup: func(t *testing.T, addr string) {
				ksWindows(t, addr, "clicks-per-minute-stores", 70_000, []int64{0, minute, 2 * minute}, func(s int64) int64 { return s + 5_000 }, "clicks")
			},
			want: []problem{{migrate.ProblemStoreUnmapped, "clicks-per-minute-stores"}, {migrate.ProblemStoreUnfed, "clicks-per-minute-store"}},
			says: []string{"our topology has no store clicks-per-minute-stores; map it with --map clicks-per-minute-stores=OUR_STORE [--skip-store clicks-per-minute-stores accepts it",
				"our store clicks-per-minute-store (timestamped-window) has no Kafka Streams store to come from; Kafka Streams' stores mapped to none of ours: clicks-per-minute-stores (--map KS_STORE=clicks-per-minute-store) [--new-store clicks-per-minute-store accepts it: our store clicks-per-minute-store starts empty]"}},
		{name: "wrong topology", topics: map[string]int32{"clicks": 1, "clicks-per-minute": 1, "lines": 1, "word-counts": 1},
			setup: func(t *testing.T, addr string) {
				ksWindows(t, addr, "clicks-per-minute-store", 70_000, []int64{0, minute}, func(s int64) int64 { return s + 5_000 }, "clicks")
				produceTo(t, addr, &kgo.Record{Topic: "lines", Value: []byte("a b")})
			},
			ours: func(t *testing.T) *topology.Built { _, b := load(t, "word-count", "ours"); return b },
			want: []problem{{migrate.ProblemInputNotRead, "clicks"}, {migrate.ProblemInputNotCommitted, "lines"},
				{migrate.ProblemStoreUnmapped, "clicks-per-minute-store"}, {migrate.ProblemStoreUnfed, "counts"}},
			says: []string{"input topic clicks: ks committed offsets for 1 partitions of it, and our topology does not read it [--skip-input clicks",
				"input topic lines of our topology: ks committed no offset for it, and it holds 1 records [--new-input lines"}},
		{name: "hopping onto tumbling", topics: map[string]int32{"clicks": 1, "clicks-per-minute": 1},
			// Hopping 1m/30s with 10 s of grace: retention 70 s, as ours.
			setup: func(t *testing.T, addr string) {
				ksWindows(t, addr, "clicks-per-minute-store", 70_000, []int64{0, 30_000, minute, 90_000}, func(s int64) int64 { return s + 40_000 }, "clicks")
			},
			want: []problem{{migrate.ProblemWindowGrid, "clicks-per-minute-store"}},
			says: []string{"store clicks-per-minute-store: 2 records contradict our store clicks-per-minute-store's tumbling windows (size 60000 ms, grace 10000 ms): first ks-clicks-per-minute-store-changelog[0] offset 1: key \"/home\": window starting 30000 is not on our grid (our tumbling windows start every 60000 ms)"}},
		{name: "longer window, no grace", topics: map[string]int32{"clicks": 1, "clicks-per-minute": 1},
			// 70 s with no grace: retention 70 s, as ours (60 s + 10 s).
			setup: func(t *testing.T, addr string) {
				ksWindows(t, addr, "clicks-per-minute-store", 70_000, []int64{0, 70_000, 140_000}, func(s int64) int64 { return s + 65_000 }, "clicks")
			},
			want: []problem{{migrate.ProblemWindowGrid, "clicks-per-minute-store"}, {migrate.ProblemWindowTimestamp, "clicks-per-minute-store"}},
			says: []string{"window starting 0 holds a record at 65000, outside our tumbling window [0, 60000)"}},
		{name: "tumbling onto hopping", topics: map[string]int32{"clicks": 1, "clicks-per-minute": 1},
			ours: func(t *testing.T) *topology.Built { return loadYAML(t, hoppingYAML) },
			// Tumbling 1 min, 10 s of grace: retention 70 s, as ours
			// (hopping 1 min by 30 s): every start is on our grid too,
			// but the record at 2:45 is not in the window [2:30, 3:30),
			// open at the stream time 2:45, where ours puts it.
			setup: func(t *testing.T, addr string) {
				ksWindows(t, addr, "clicks-per-minute-store", 70_000, []int64{0, minute, 2 * minute}, func(s int64) int64 { return s + 45_000 }, "clicks")
			},
			want: []problem{{migrate.ProblemWindowHop, "clicks-per-minute-store"}},
			says: []string{"key \"/home\": window starting 120000 holds a record at 165000, and the window starting 150000, open at stream time 165000, which ours also gives it, is not there"}},
		{name: "tumbling onto sliding", topics: map[string]int32{"clicks": 1, "clicks-per-minute": 1},
			ours: func(t *testing.T) *topology.Built { return loadYAML(t, slidingYAML) },
			// Sliding 1m, grace 10 s: retention 2 min + 10 s.
			setup: func(t *testing.T, addr string) {
				ksWindows(t, addr, "clicks-per-minute-store", 130_000, []int64{0, 2 * minute}, func(s int64) int64 { return s + 61_000 }, "clicks")
			},
			want: []problem{{migrate.ProblemWindowTimestamp, "clicks-per-minute-store"}},
			says: []string{"outside our sliding window [0, 60000]"}},
		{name: "sessions within our gap", topics: map[string]int32{"page-views": 1, "session-counts": 1},
			ours: func(t *testing.T) *topology.Built { _, b := load(t, "session-count", "ours"); return b },
			setup: func(t *testing.T, addr string) {
				adm := kadm.NewClient(client(t, addr))
				topic := "ks-sessions-store-changelog"
				kafkatest.CreateTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": ptr(strconv.FormatInt(330_000+24*3_600_000, 10))})
				// A gap of two minutes made these two sessions; ours (five)
				// would have merged them.
				produceTo(t, addr,
					&kgo.Record{Topic: topic, Key: state.EncodeSessionKey([]byte("alice"), 0, 60_000), Value: long(2), Timestamp: time.UnixMilli(60_000)},
					&kgo.Record{Topic: topic, Key: state.EncodeSessionKey([]byte("alice"), 240_000, 250_000), Value: long(2), Timestamp: time.UnixMilli(250_000)},
					&kgo.Record{Topic: topic, Key: state.EncodeSessionKey([]byte("bob"), 0, 10_000), Value: long(1), Timestamp: time.UnixMilli(10_000)})
				commitKS(t, addr, "page-views", 250_000)
			},
			want: []problem{{migrate.ProblemSessionGap, "sessions-store"}},
			says: []string{"key \"alice\": sessions [0, 60000] and [240000, 250000] are 180000 ms apart, within our inactivity gap of 300000 ms"}},
		{name: "value serde", topics: map[string]int32{"users": 1, "users-out": 1},
			ours: func(t *testing.T) *topology.Built { return loadYAML(t, jsonTableYAML) },
			// Kafka Streams' table held strings; ours reads JSON.
			setup: func(t *testing.T, addr string) {
				kafkatest.CreateTopic(t, kadm.NewClient(client(t, addr)), "ks-users-store-changelog", 1, map[string]*string{"cleanup.policy": ptr("compact")})
				produceTo(t, addr, &kgo.Record{Topic: "ks-users-store-changelog", Key: []byte("u1"), Value: []byte(`"Ann"`)},
					&kgo.Record{Topic: "ks-users-store-changelog", Key: []byte("u2"), Value: []byte("Bob")})
				commitKS(t, addr, "users", 1000)
			},
			want: []problem{{migrate.ProblemRecord, "users-store"}},
			says: []string{"store users-store: ks-users-store-changelog[0] offset 1 (store users-store): value: our serde json cannot read it"}},
		{name: "foreign-key join", topics: map[string]int32{"orders": 1, "customers": 1, "order-rows": 1},
			ours: func(t *testing.T) *topology.Built { return loadYAML(t, fkJoinYAML) },
			// Kafka Streams' subscription store is translated into ours
			// (TestForeignKeyJoinCutover); a record that is not a
			// CombinedKey and a SubscriptionWrapper refuses it. The
			// primary store is filled from orders-store.
			setup: func(t *testing.T, addr string) {
				adm := kadm.NewClient(client(t, addr))
				for _, store := range []string{"orders-store", "customers-store", "oc-subscription-store", "oc-rows"} {
					topic := "ks-" + store + "-changelog"
					kafkatest.CreateTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": ptr("compact")})
					produceTo(t, addr, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(`"v"`)})
				}
				commitKS(t, addr, "orders", 1000)
				commitKS(t, addr, "customers", 1000)
			},
			want: []problem{{migrate.ProblemRecord, "oc-subscription-store"}},
			says: []string{"store oc-subscription-store: ks-oc-subscription-store-changelog[0] offset 0 (store oc-subscription-store): subscription key of 1 bytes: a CombinedKey starts with the foreign key's length (4 bytes)"}},
		{name: "versioned table and grace buffer", topics: map[string]int32{"orders": 1, "prices": 1, "priced": 1},
			ours: func(t *testing.T) *topology.Built { return loadYAML(t, versionedYAML) },
			// Kafka Streams' prices-store is not versioned (its
			// changelog sets no min.compaction.lag.ms): it holds each
			// key's latest value, not the history ours reads as of a
			// time; the grace buffer's record is no BufferValue keyed by
			// time, key and sequence number.
			setup: func(t *testing.T, addr string) {
				adm := kadm.NewClient(client(t, addr))
				for _, store := range []string{"prices-store", "priced-Buffer"} {
					topic := "ks-" + store + "-changelog"
					kafkatest.CreateTopic(t, adm, topic, 1, map[string]*string{"cleanup.policy": ptr("compact")})
					produceTo(t, addr, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte("v")})
				}
				commitKS(t, addr, "orders", 1000)
				commitKS(t, addr, "prices", 1000)
			},
			want: []problem{{migrate.ProblemRecord, "priced-Buffer"}, {migrate.ProblemStoreKind, "prices-store"}},
			says: []string{"store prices-store: ks-prices-store-changelog has no min.compaction.lag.ms, so Kafka Streams' store is not versioned, and our store prices-store is a versioned store (history retention 1h0m0s)",
				"store priced-Buffer: ks-priced-Buffer-changelog[0] offset 0 (store priced-Buffer): join buffer key does not start with TimeFirstWindowKeySchema's prefix 0"}},
		{name: "override naming nothing", topics: map[string]int32{"lines": 2, "word-counts": 2},
			ours:  func(t *testing.T) *topology.Built { _, b := load(t, "word-count", "ours"); return b },
			setup: func(t *testing.T, addr string) { fakeWordCount(t, addr, 10) },
			opts:  migrate.Overrides{SkipStores: []string{"count"}},
			want:  []problem{{migrate.ProblemOverrideUnused, "count"}},
			says:  []string{"--skip-store count: nothing named count has a problem it would accept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := kafkatest.Start(t, tc.topics)
			tc.setup(t, addr)
			var built *topology.Built
			if tc.ours != nil {
				built = tc.ours(t)
			} else {
				_, built = load(t, "window-close", "ours")
			}
			opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, EmitFrontier: true, Overrides: tc.opts}
			_, err := migrate.Run(context.Background(), opts)
			var refusal *migrate.RefusalError
			if !errors.As(err, &refusal) || !errors.Is(err, migrate.ErrRefused) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			t.Log(err)
			var got []problem
			for _, p := range refusal.Problems {
				got = append(got, problem{p.Code, p.Subject})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems %v, want %v\n%v", got, tc.want, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal does not say %q:\n%v", s, err)
				}
			}
			assertNothingWritten(t, kadm.NewClient(client(t, addr)))
			// The dry run refuses alike.
			if _, err := migrate.MakePlan(context.Background(), opts); !errors.Is(err, migrate.ErrRefused) {
				t.Errorf("the plan: %v, want the refusal", err)
			}
		})
	}
}

// TestOverridesSayWhatTheyLose: the typo accepted by naming both sides
// (--skip-store, --new-store): the plan lists each with what it loses,
// the run translates nothing of the skipped store, and the verification
// checks that our store starts empty, failing once its changelog holds
// something. The same typo fixed with --map migrates.
func TestOverridesSayWhatTheyLose(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"clicks": 1, "clicks-per-minute": 1})
	ksWindows(t, addr, "clicks-per-minute-stores", 70_000, []int64{0, minute, 2 * minute}, func(s int64) int64 { return s + 5_000 }, "clicks")
	_, built := load(t, "window-close", "ours")
	ctx := context.Background()
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr},
		Overrides: migrate.Overrides{SkipStores: []string{"clicks-per-minute-stores"}, NewStores: []string{"clicks-per-minute-store"}}}
	p, err := migrate.MakePlan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--skip-store clicks-per-minute-stores  store clicks-per-minute-stores (ks-clicks-per-minute-stores-changelog): our topology has no store clicks-per-minute-stores; map it with --map clicks-per-minute-stores=OUR_STORE",
		"the state of Kafka Streams' store clicks-per-minute-stores\n",
		"our store clicks-per-minute-store starts empty (verified: ours-clicks-per-minute-store-changelog holds nothing)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the plan does not say %q:\n%s", want, b.String())
		}
	}
	rep, err := migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Translated != 0 || !rep.Verify.OK || len(rep.Plan.Offsets) != 1 {
		t.Fatalf("report %+v", rep)
	}
	// Something in the store that should start empty fails the
	// verification, naming it.
	produceTo(t, addr, &kgo.Record{Topic: "ours-clicks-per-minute-store-changelog", Key: state.EncodeWindowKey([]byte("/home"), 0, 0), Value: long(1)})
	kafkatest.AwaitStable(t, addr, "ours-clicks-per-minute-store-changelog")
	_, err = migrate.VerifyOnly(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), "store clicks-per-minute-store: 1 differences") || !strings.Contains(err.Error(), "a store that starts empty") {
		t.Fatalf("verify: %v", err)
	}

	// The same typo mapped: migrated, nothing accepted.
	addr = kafkatest.Start(t, map[string]int32{"clicks": 1, "clicks-per-minute": 1})
	ksWindows(t, addr, "clicks-per-minute-stores", 70_000, []int64{0, minute, 2 * minute}, func(s int64) int64 { return s + 5_000 }, "clicks")
	rep, err = migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Map: map[string]string{"clicks-per-minute-stores": "clicks-per-minute-store"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Translated != 3 || !rep.Verify.OK || len(rep.Plan.Accepted) != 0 {
		t.Fatalf("report %+v", rep)
	}
}
