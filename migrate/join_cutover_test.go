package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/internal/golden"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

const joinYAML = `application-id: ours
sources:
  orders: {topic: orders, key-serde: string, value-serde: string, watermark: {strategy: monotonous}}
  payments: {topic: payments, key-serde: string, value-serde: string, watermark: {strategy: monotonous}}
pipelines:
  p:
    from: orders
    steps:
      - JOIN: {with: payments, window: 10s, grace: 5s, joiner: '(left ?? "null") + "+" + (right ?? "null")', store: pairs}
      - to: {topic: paired, key-serde: string, value-serde: string}
`

// ksJoinRecord is one record of a Kafka Streams join store's changelog.
type ksJoinRecord struct {
	store      string
	key, value []byte
	ts         int64
}

// ksWindowKey lays out a join side's window store key as Kafka Streams'
// WindowKeySchema.toStoreKeyBinary: key, timestamp, sequence number.
func ksWindowKey(key string, ts int64, seq int32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte(key), uint64(ts)), uint32(seq))
}

// ksSide is the side byte of Kafka Streams' TimestampedKeyAndJoinSide and
// LeftOrRightValue.
func ksSide(left bool) byte {
	if left {
		return 1
	}
	return 0
}

// ksOuterKey lays out a TimestampedKeyAndJoinSide.
func ksOuterKey(key string, ts int64, left bool) []byte {
	return append(append(binary.BigEndian.AppendUint64(nil, uint64(ts)), ksSide(left)), key...)
}

// ksOuterValue lays out ListValueStore's list of one LeftOrRightValue.
func ksOuterValue(v string, left bool) []byte {
	b := binary.BigEndian.AppendUint32([]byte{1}, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(1+len(v)))
	return append(append(b, ksSide(left)), v...)
}

// TestJoinCutover lays out the state Kafka Streams leaves of an inner, a
// left and an outer join (orders with payments, 10 s windows, 5 s grace,
// StreamJoined.withStoreName("pairs")) stopped mid-window, migrates it,
// and runs our engine over what follows. Before the cutover Kafka Streams
// paired o1 with p1 and emitted o2's null-join (both gone from the shared
// store); o4's window closed at its stream time (40 s) before it looked
// again, so its null-join is pending; o3, o7 and o10 wait, and p8 waits
// on the other side. After the cutover p3 pairs with o3 (and o31-o33
// with theirs) and o8 with p8 (pairs straddling the cutover), on an
// engine of three lanes, and time moves on to 70 s: every
// result Kafka Streams left running would give after the cutover comes
// once, and none it gave before.
func TestJoinCutover(t *testing.T) {
	for _, tc := range []struct {
		op, this, other, shared string
		// waiting and pending are the plan's null-join counts.
		waiting, pending int64
		want             map[string]string
	}{
		{op: "join", this: "pairs-this-join-store", other: "pairs-other-join-store",
			want: map[string]string{"o3": "o3-a+p3", "o31": "o31-a+p31", "o32": "o32-a+p32", "o33": "o33-a+p33", "o8": "o8-a+p8"}},
		{op: "left-join", this: "pairs-this-join-store", other: "pairs-outer-other-join-store", shared: "pairs-left-shared-join-store",
			waiting: 7, pending: 1,
			want: map[string]string{"o3": "o3-a+p3", "o31": "o31-a+p31", "o32": "o32-a+p32", "o33": "o33-a+p33", "o8": "o8-a+p8", "o4": "o4-a+null", "o7": "o7-a+null", "o10": "o10-a+null"}},
		// The outer join also keeps the unmatched payments (right side):
		// p8, matched by o8 after the cutover, and pz, which never is.
		{op: "outer-join", this: "pairs-outer-this-join-store", other: "pairs-outer-other-join-store", shared: "pairs-outer-shared-join-store",
			waiting: 9, pending: 1,
			want: map[string]string{"o3": "o3-a+p3", "o31": "o31-a+p31", "o32": "o32-a+p32", "o33": "o33-a+p33", "o8": "o8-a+p8", "o4": "o4-a+null", "o7": "o7-a+null", "o10": "o10-a+null", "zz": "null+pz"}},
	} {
		t.Run(tc.op, func(t *testing.T) {
			addr := kafkatest.Start(t, map[string]int32{"orders": 1, "payments": 1, "paired": 1})
			ctx := context.Background()
			layKSJoin(t, addr, tc.this, tc.other, tc.shared, tc.op == "outer-join")
			f, built := loadFile(t, replaceOp(joinYAML, tc.op))
			opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
			// The plan as --dry-run prints it: the stores and the
			// null-joins waiting and pending.
			p, err := migrate.MakePlan(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := p.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "./migrate", "testdata/"+tc.op+"-plan.golden", b.String())
			rep, err := migrate.Run(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			var np *migrate.NullJoinPlan
			for _, sp := range rep.Plan.Stores {
				if sp.NullJoins != nil {
					np = sp.NullJoins
				}
			}
			switch {
			case tc.shared == "" && np != nil:
				t.Errorf("an inner join counts null-joins: %+v", np)
			case tc.shared != "" && (np == nil || np.Waiting != tc.waiting || np.Pending != tc.pending):
				t.Errorf("null-joins %+v: want %d waiting, %d pending", np, tc.waiting, tc.pending)
			}
			var stores []string
			for _, sp := range rep.Plan.Stores {
				stores = append(stores, sp.Source)
			}
			want := slices.Sorted(slices.Values(slices.DeleteFunc([]string{tc.this, tc.other, tc.shared}, func(s string) bool { return s == "" })))
			if slices.Sort(stores); !slices.Equal(stores, want) {
				t.Errorf("stores translated %v, want %v", stores, want)
			}

			// Three lanes: a record of the restored stores in a lane
			// that does not own its key would miss its partner there
			// (a pair lost), or, unmatched in the shared store, be
			// emitted as a null-join beside its pair.
			stop := runFileLanes(t, f, addr, "ours", 3)
			// p3 is out of order (38 s, behind the payments' 39 s) and
			// still within o3's window, which the restored store holds.
			produceTo(t, addr,
				&kgo.Record{Topic: "payments", Key: []byte("o3"), Value: []byte("p3"), Timestamp: time.UnixMilli(38_000)},
				&kgo.Record{Topic: "payments", Key: []byte("o31"), Value: []byte("p31"), Timestamp: time.UnixMilli(38_000)},
				&kgo.Record{Topic: "payments", Key: []byte("o32"), Value: []byte("p32"), Timestamp: time.UnixMilli(38_500)},
				&kgo.Record{Topic: "payments", Key: []byte("o33"), Value: []byte("p33"), Timestamp: time.UnixMilli(39_000)},
				&kgo.Record{Topic: "orders", Key: []byte("o8"), Value: []byte("o8-a"), Timestamp: time.UnixMilli(41_000)},
				&kgo.Record{Topic: "orders", Key: []byte("o9"), Value: []byte("o9-a"), Timestamp: time.UnixMilli(70_000)},
				&kgo.Record{Topic: "payments", Key: []byte("zz"), Value: []byte("pz2"), Timestamp: time.UnixMilli(70_000)},
			)
			got := map[string]string{}
			out := client(t, addr, kgo.ConsumeTopics("paired"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			poll := func(d time.Duration) {
				pctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				out.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
					if prev, dup := got[string(r.Key)]; dup {
						t.Errorf("%s emitted again: %q, before %q", r.Key, r.Value, prev)
					}
					got[string(r.Key)] = string(r.Value)
				})
			}
			for deadline := time.Now().Add(20 * time.Second); len(got) < len(tc.want) && time.Now().Before(deadline); {
				poll(time.Second)
			}
			// A second emission would show within a few barriers.
			poll(time.Second)
			stop()
			if !maps.Equal(got, tc.want) {
				t.Fatalf("after the cutover we emitted %v, want %v", got, tc.want)
			}

			// The way back, Kafka Streams' changelogs gone: they are
			// created with ours' cleanup policy and retention, and hold
			// our join's state key by key (the side stores' records and
			// the shared store's lists of those still unmatched: o9,
			// and pz2 for the outer join), which the verification reads
			// back and compares.
			deleteChangelogs(t, addr, "ks")
			opts.Direction = migrate.Reverse
			back, err := migrate.Run(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Plan.Stores) != len(want) || !back.Verify.OK || back.Translated == 0 {
				t.Fatalf("the way back: %d stores, translated %d, verify %+v", len(back.Plan.Stores), back.Translated, back.Verify)
			}
			adm := kadm.NewClient(client(t, addr))
			for _, sp := range back.Plan.Stores {
				theirs, err := adm.DescribeTopicConfigs(ctx, sp.SourceTopic, sp.Topic)
				if err != nil {
					t.Fatal(err)
				}
				policy := map[string]string{}
				for _, rc := range theirs {
					for _, c := range rc.Configs {
						if c.Key == "cleanup.policy" && c.Value != nil {
							policy[rc.Name] = *c.Value
						}
					}
				}
				if policy[sp.SourceTopic] == "" || policy[sp.SourceTopic] != policy[sp.Topic] {
					t.Errorf("%s created with cleanup.policy %q, ours %q", sp.SourceTopic, policy[sp.SourceTopic], policy[sp.Topic])
				}
			}
		})
	}
}

// Kafka Streams' input to the join before the cutover (ksOrders: key and
// time, valued key+"-a"; ksPayments).
var ksOrders = []struct {
	key string
	ts  int64
}{{"o1", 1_000}, {"o2", 2_000}, {"o4", 24_000}, {"o3", 30_000}, {"o31", 30_000}, {"o32", 30_500}, {"o33", 31_000}, {"o7", 32_000}, {"o10", 40_000}}

var ksPayments = []struct {
	key, value string
	ts         int64
}{{"o1", "p1", 3_000}, {"o8", "p8", 36_000}, {"zz", "pz", 39_000}}

// layKSJoin lays out what Kafka Streams leaves of the join of ksOrders
// with ksPayments (TestJoinCutover says what): its stores' changelogs
// (this, other, and shared unless ""; in it the unmatched payments too
// when rightOuter), its input, and its committed offsets with the
// partition times.
func layKSJoin(t *testing.T, addr, this, other, shared string, rightOuter bool) {
	t.Helper()
	ctx := context.Background()
	adm := kadm.NewClient(client(t, addr))
	// Kafka Streams' changelogs, in the order it wrote them.
	var ks []ksJoinRecord
	for i, o := range ksOrders {
		ks = append(ks, ksJoinRecord{this, ksWindowKey(o.key, o.ts, int32(i+1)), []byte(o.key + "-a"), o.ts})
	}
	for i, p := range ksPayments {
		ks = append(ks, ksJoinRecord{other, ksWindowKey(p.key, p.ts, int32(i+1)), []byte(p.value), p.ts})
	}
	if shared != "" {
		for _, o := range ksOrders {
			ks = append(ks, ksJoinRecord{shared, ksOuterKey(o.key, o.ts, true), ksOuterValue(o.key+"-a", true), o.ts})
		}
		if rightOuter {
			// p1 found o1 when it came; p8 and pz wait.
			for _, p := range ksPayments[1:] {
				ks = append(ks, ksJoinRecord{shared, ksOuterKey(p.key, p.ts, false), ksOuterValue(p.value, false), p.ts})
			}
		}
		// o1 matched by p1 at 3 s, o2 emitted at 24 s: deleted.
		ks = append(ks, ksJoinRecord{shared, ksOuterKey("o1", 1_000, true), nil, 3_000},
			ksJoinRecord{shared, ksOuterKey("o2", 2_000, true), nil, 24_000})
	}
	for _, store := range []string{this, other} {
		kafkatest.CreateTopic(t, adm, "ks-"+store+"-changelog", 1, map[string]*string{"cleanup.policy": ptr("compact,delete"), "retention.ms": ptr(strconv.Itoa(25_000 + 24*3_600_000))})
	}
	if shared != "" {
		kafkatest.CreateTopic(t, adm, "ks-"+shared+"-changelog", 1, map[string]*string{"cleanup.policy": ptr("compact")})
	}
	var recs []*kgo.Record
	for _, r := range ks {
		recs = append(recs, &kgo.Record{Topic: "ks-" + r.store + "-changelog", Key: r.key, Value: r.value, Timestamp: time.UnixMilli(r.ts)})
	}
	produceTo(t, addr, recs...)

	// What Kafka Streams read, and its committed offsets with the
	// partition times.
	var in []*kgo.Record
	for _, o := range ksOrders {
		in = append(in, &kgo.Record{Topic: "orders", Key: []byte(o.key), Value: []byte(o.key + "-a"), Timestamp: time.UnixMilli(o.ts)})
	}
	for _, p := range ksPayments {
		in = append(in, &kgo.Record{Topic: "payments", Key: []byte(p.key), Value: []byte(p.value), Timestamp: time.UnixMilli(p.ts)})
	}
	produceTo(t, addr, in...)
	var offs kadm.Offsets
	for topic, at := range map[string]struct{ n, pt int64 }{"orders": {int64(len(ksOrders)), 40_000}, "payments": {int64(len(ksPayments)), 39_000}} {
		md, _ := kafka.TopicPartitionMetadata{PartitionTime: at.pt}.Encode()
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at.n, LeaderEpoch: -1, Metadata: md})
	}
	if _, err := adm.CommitOffsets(ctx, "ks", offs); err != nil {
		t.Fatal(err)
	}
}

// replaceOp puts the join operation into joinYAML.
func replaceOp(yaml, op string) string {
	for i := 0; i+4 <= len(yaml); i++ {
		if yaml[i:i+4] == "JOIN" {
			return yaml[:i] + op + yaml[i+4:]
		}
	}
	return yaml
}

// TestJoinStoresRefused: a join's stores mapped onto stores of ours of
// another role, or holding a record that is not Kafka Streams' layout, are
// refused before anything is written, each naming its store (and the
// record by topic, partition and offset).
func TestJoinStoresRefused(t *testing.T) {
	type problem struct{ code, subject string }
	for _, tc := range []struct {
		name          string
		other, shared string
		op            string
		mapping       map[string]string
		corrupt       bool
		want          []problem
		says          string
	}{
		{name: "side store onto our shared store", other: "pairs-other-join-store", op: "left-join",
			mapping: map[string]string{"pairs-other-join-store": "pairs-left-shared-join-store"},
			want:    []problem{{migrate.ProblemStoreKind, "pairs-other-join-store"}, {migrate.ProblemStoreUnfed, "pairs-outer-other-join-store"}},
			says:    "store pairs-other-join-store: our store pairs-left-shared-join-store holds a left/outer join's unmatched records, and Kafka Streams' store pairs-other-join-store is not such a store (by its name)"},
		{name: "shared store onto a side store", other: "pairs-outer-other-join-store", shared: "pairs-left-shared-join-store", op: "join",
			mapping: map[string]string{"pairs-left-shared-join-store": "pairs-other-join-store"},
			want:    []problem{{migrate.ProblemStoreKind, "pairs-left-shared-join-store"}, {migrate.ProblemStoreUnmapped, "pairs-outer-other-join-store"}},
			says:    "store pairs-left-shared-join-store: a left/outer join's store of unmatched records, and our store pairs-other-join-store is not one (a window store)"},
		{name: "a record not in the shared store's layout", other: "pairs-outer-other-join-store", shared: "pairs-left-shared-join-store", op: "left-join",
			corrupt: true,
			want:    []problem{{migrate.ProblemRecord, "pairs-left-shared-join-store"}},
			says:    "store pairs-left-shared-join-store: ks-pairs-left-shared-join-store-changelog[0] offset 11 (store pairs-left-shared-join-store): not a left/outer join's unmatched record: list strategy flag 111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := kafkatest.Start(t, map[string]int32{"orders": 1, "payments": 1, "paired": 1})
			layKSJoin(t, addr, "pairs-this-join-store", tc.other, tc.shared, false)
			if tc.corrupt {
				// A plain value where the list should be.
				produceTo(t, addr, &kgo.Record{Topic: "ks-" + tc.shared + "-changelog", Key: ksOuterKey("o9", 41_000, true), Value: []byte("o9-a, plain"), Timestamp: time.UnixMilli(41_000)})
			}
			_, built := loadFile(t, replaceOp(joinYAML, tc.op))
			_, err := migrate.Run(context.Background(), migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, Map: tc.mapping})
			var refusal *migrate.RefusalError
			if !errors.As(err, &refusal) {
				t.Fatalf("got %v, want a refusal", err)
			}
			var got []problem
			for _, p := range refusal.Problems {
				got = append(got, problem{p.Code, p.Subject})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems %v, want %v", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("refusal %q does not say %q", err, tc.says)
			}
			assertNothingWritten(t, kadm.NewClient(client(t, addr)))
		})
	}
}
