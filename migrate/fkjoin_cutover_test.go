package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"maps"
	"slices"
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

// ksMurmur3Hex are Kafka Streams' Murmur3.hash128 of the order values
// below (the customer ids), as its SubscriptionSendProcessorSupplier
// hashes a left value: printed by Kafka Streams 4.4's jar (see
// TestKSMurmur3 for more).
var ksMurmur3Of = map[string][]byte{
	"c1": unhex("cba4559fa47bb26026d4404b37fda042"),
}

func unhex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b
}

// combinedKey is Kafka Streams' CombinedKeySchema.toBytes: the foreign
// key's length (4 bytes, big-endian), the foreign key, the left key.
func combinedKey(fk, pk string) []byte {
	return append(append(binary.BigEndian.AppendUint32(nil, uint32(len(fk))), fk...), pk...)
}

// subscriptionWrapper is SubscriptionWrapperSerde.serializeV1: version 1,
// the instruction, the 16-byte Murmur3 hash of the left value, the left
// key, the left key's partition (4 bytes).
func subscriptionWrapper(instruction byte, hash []byte, pk string) []byte {
	return binary.BigEndian.AppendUint32(append(append([]byte{1, instruction}, hash...), pk...), 0)
}

// ksFKJoin leaves what a stopped Kafka Streams with fkJoinYAML's join
// (orders' values name customers) leaves, as it writes it: the two
// tables' changelogs, the subscription store's changelog (a subscription
// put per order, o2's first one deleted when o2 moved from c2 to c3), the
// result store's, the subscription and response topics read to their
// ends, and offsets committed for both inputs. stale, when set, is a
// subscription of o3 sent by a value that is not its current one.
func ksFKJoin(t *testing.T, addr string, stale bool) {
	t.Helper()
	ksFKJoinOn(t, addr, stale, 1, 1)
}

// ksFKJoinOn is ksFKJoin with orders in left partitions and customers in
// right: Kafka Streams keeps the orders' store and the join's result in
// the orders' tasks, the customers' store and the subscriptions (its
// subscription topic has the customers' partition count) in the
// customers', each record in its key's murmur2 partition (the foreign
// key's for a subscription).
func ksFKJoinOn(t *testing.T, addr string, stale bool, left, right int32) {
	t.Helper()
	adm := kadm.NewClient(client(t, addr))
	compact := map[string]*string{"cleanup.policy": ptr("compact")}
	parts := map[string]int32{"ks-orders-store-changelog": left, "ks-customers-store-changelog": right, "ks-oc-subscription-store-changelog": right, "ks-oc-rows-changelog": left}
	for topic, n := range parts {
		kafkatest.CreateTopic(t, adm, topic, n, compact)
	}
	rec := func(topic, key string, value []byte, ts int64) *kgo.Record {
		by := []byte(key)
		if topic == "ks-oc-subscription-store-changelog" {
			by = by[4 : 4+binary.BigEndian.Uint32(by)]
		}
		return &kgo.Record{Topic: topic, Partition: int32(lane.For(by, int(parts[topic]))), Key: []byte(key), Value: value, Timestamp: time.UnixMilli(ts)}
	}
	orders, customers, subs, rows := "ks-orders-store-changelog", "ks-customers-store-changelog", "ks-oc-subscription-store-changelog", "ks-oc-rows-changelog"
	h := func(v string) []byte {
		if m, ok := ksMurmur3Of[v]; ok {
			return m
		}
		t.Fatalf("no Murmur3 of %q", v)
		return nil
	}
	o3 := h("c1")
	if stale {
		o3 = unhex("00000000000000000000000000000001")
	}
	produceTo(t, addr,
		rec(customers, "c1", []byte("Ann"), 500), rec(customers, "c2", []byte("Bob"), 600), rec(customers, "c3", []byte("Cid"), 700),
		rec(orders, "o1", []byte("c1"), 1000), rec(orders, "o2", []byte("c2"), 2000), rec(orders, "o3", []byte("c1"), 3000), rec(orders, "o2", []byte("c3"), 4000),
		// PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE (3): an inner join's.
		rec(subs, string(combinedKey("c1", "o1")), subscriptionWrapper(3, h("c1"), "o1"), 1000),
		rec(subs, string(combinedKey("c2", "o2")), subscriptionWrapper(3, ksMurmur3Of2(t, "c2"), "o2"), 2000),
		rec(subs, string(combinedKey("c1", "o3")), subscriptionWrapper(3, o3, "o3"), 3000),
		rec(subs, string(combinedKey("c2", "o2")), nil, 4000),
		rec(subs, string(combinedKey("c3", "o2")), subscriptionWrapper(3, ksMurmur3Of2(t, "c3"), "o2"), 4000),
		rec(rows, "o1", []byte(`{"left":"c1","right":"Ann"}`), 1000), rec(rows, "o2", []byte(`{"left":"c3","right":"Cid"}`), 4000),
		rec(rows, "o3", []byte(`{"left":"c1","right":"Ann"}`), 3000),
	)
	for _, topic := range []string{"ks-oc-subscription-registration-topic", "ks-oc-subscription-response-topic"} {
		kafkatest.CreateTopic(t, adm, topic, 1, nil)
	}
	if right > 1 {
		// A customers' partition with no record: nothing committed.
		produceTo(t, addr, &kgo.Record{Topic: "customers", Partition: 1, Key: []byte("c0"), Value: []byte("Zed"), Timestamp: time.UnixMilli(100)})
		md, _ := kafka.TopicPartitionMetadata{PartitionTime: 100}.Encode()
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: "customers", Partition: 1, At: 1, LeaderEpoch: -1, Metadata: md})
		if _, err := adm.CommitOffsets(context.Background(), "ks", offs); err != nil {
			t.Fatal(err)
		}
	}
	commitKS(t, addr, "orders", 4000)
	commitKS(t, addr, "customers", 4000)
	commitKS(t, addr, "ks-oc-subscription-registration-topic", 4000)
	commitKS(t, addr, "ks-oc-subscription-response-topic", 4000)
}

// ksMurmur3Of2 is the Murmur3 hash Kafka Streams gives the other order
// values, computed by the migration's own implementation of it, which
// TestKSMurmur3 holds to Kafka Streams' jar.
func ksMurmur3Of2(t *testing.T, v string) []byte {
	t.Helper()
	return migrate.KSMurmur3([]byte(v))
}

// ourSubscription is our join's subscription store value for a left
// value: a version byte (1), then the FNV-1a 128-bit hash of the value's
// bytes (engine/dsl: join_fk.go).
func ourSubscription(v string) string {
	h := fnv.New128a()
	h.Write([]byte(v))
	return string(append([]byte{1}, h.Sum(nil)...))
}

// TestForeignKeyJoinCutover: a foreign-key join's state as Kafka Streams
// leaves it is rebuilt exactly: each subscription with our hash of the
// left value Kafka Streams' hash is of, o2's deleted one gone, and our
// resolver's copy of the orders (the primary store) filled from Kafka
// Streams' orders store. After the cutover a customer's change answers
// the orders subscribed to it before the cutover (o1 and o3 join Ann's
// new name) and not o2, which moved away from c2; before this, the plan
// refused the subscription store and found nothing to fill the primary
// store from.
func TestForeignKeyJoinCutover(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"orders": 1, "customers": 1, "order-rows": 1})
	ksFKJoin(t, addr, false)
	f, built := loadFile(t, fkJoinYAML)
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()
	rep, err := migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, sp := range rep.Plan.Stores {
		kinds[sp.Store] = sp.Source + " " + string(sp.Kind)
	}
	want := map[string]string{"orders-store": "orders-store key-value", "customers-store": "customers-store key-value",
		"oc-subscription-store": "oc-subscription-store fk-subscription", "oc-rows": "oc-rows key-value",
		"oc-subscription-response-resolver-primary-store": "orders-store key-value"}
	if !maps.Equal(kinds, want) || !rep.Verify.OK {
		t.Fatalf("stores %v, want %v; verify %+v", kinds, want, rep.Verify)
	}
	// Our subscription store: Kafka Streams' keys, our hashes.
	subs := map[string]string{}
	if _, err := kafka.ReadToEnd(ctx, []string{addr}, "ours-oc-subscription-store-changelog", kafka.FromLogStart(0), func(r *kgo.Record) error {
		if r.Value == nil {
			delete(subs, string(r.Key))
		} else {
			subs[string(r.Key)] = string(r.Value)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantSubs := map[string]string{string(combinedKey("c1", "o1")): ourSubscription("c1"), string(combinedKey("c1", "o3")): ourSubscription("c1"),
		string(combinedKey("c3", "o2")): ourSubscription("c3")}
	if !maps.Equal(subs, wantSubs) {
		t.Errorf("our subscriptions %q, want %q", subs, wantSubs)
	}

	// Four lanes: a subscription restored to a lane that does not own its
	// foreign key would not be found by the customer's change.
	stop := runFileLanes(t, f, addr, "ours", 4)
	defer stop()
	produceTo(t, addr, &kgo.Record{Topic: "customers", Key: []byte("c1"), Value: []byte("Ann2"), Timestamp: time.UnixMilli(6000)},
		&kgo.Record{Topic: "customers", Key: []byte("c2"), Value: []byte("Bob2"), Timestamp: time.UnixMilli(6001)},
		&kgo.Record{Topic: "orders", Key: []byte("o4"), Value: []byte("c3"), Timestamp: time.UnixMilli(6002)})
	out := client(t, addr, kgo.ConsumeTopics("order-rows"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for deadline := time.Now().Add(20 * time.Second); len(got) < 3 && time.Now().Before(deadline); {
		pctx, pc := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+" "+string(r.Value)) })
		pc()
	}
	// A moment more, for a row that should not come (o2 joining Bob2).
	pctx, pc := context.WithTimeout(ctx, 2*time.Second)
	out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+" "+string(r.Value)) })
	pc()
	slices.Sort(got)
	wantRows := []string{`o1 {"left":"c1","right":"Ann2"}`, `o3 {"left":"c1","right":"Ann2"}`, `o4 {"left":"c3","right":"Cid"}`}
	if !slices.Equal(got, wantRows) {
		t.Errorf("rows after the cutover %q, want %q", got, wantRows)
	}
	// The lane hash the migration gave each subscription is the one our
	// engine gives those it writes (o4's): the foreign key's.
	stop()
	hashes := map[string]bool{}
	if _, err := kafka.ReadToEnd(ctx, []string{addr}, "ours-oc-subscription-store-changelog", kafka.FromLogStart(0), func(r *kgo.Record) error {
		fk := r.Key[4 : 4+binary.BigEndian.Uint32(r.Key)]
		for _, h := range r.Headers {
			if h.Key == lane.HashHeader {
				hashes[string(r.Key[4+len(fk):])] = int32(binary.BigEndian.Uint32(h.Value)) == lane.Murmur2(fk)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"o1": true, "o2": true, "o3": true, "o4": true}; !maps.Equal(hashes, want) {
		t.Errorf("subscriptions stamped with their foreign key's hash: %v, want %v", hashes, want)
	}
}

// TestForeignKeyJoinCutoverPartitions: orders in one partition, customers
// in two. Kafka Streams keeps the join's result in the orders' task, all
// in partition 0; our engine keeps it, and the resolver's copy of the
// orders, in the resolver's sub-topology, which boundaries feed by the
// key's murmur2 over two partitions: the migration writes each record
// there, and a customer's change after the cutover updates every row, in
// either partition, once. Written to the partitions Kafka Streams had
// them in, half the rows' old values and copies would be where our
// engine does not look.
func TestForeignKeyJoinCutoverPartitions(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"orders": 1, "customers": 2, "order-rows": 1})
	ksFKJoinOn(t, addr, false, 1, 2)
	_, built := loadFile(t, fkJoinYAML)
	f, _ := loadFile(t, fkJoinYAML)
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()
	rep, err := migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verify.OK {
		t.Fatalf("verify %+v", rep.Verify)
	}
	// Where the resolver's copy of each order is: its key's partition.
	where := map[string]int32{}
	if _, err := kafka.ReadToEnd(ctx, []string{addr}, "ours-oc-subscription-response-resolver-primary-store-changelog", kafka.FromLogStart(0, 1), func(r *kgo.Record) error {
		where[string(r.Key)] = r.Partition
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	split := map[int32]bool{}
	for k, part := range where {
		split[part] = true
		if want := int32(lane.For([]byte(k), 2)); part != want {
			t.Errorf("our copy of %s is in partition %d, our engine keeps it in %d", k, part, want)
		}
	}
	if len(split) != 2 {
		t.Fatalf("the orders' copies are in partitions %v: the test places nothing elsewhere than Kafka Streams did", where)
	}
	stop := runFileLanes(t, f, addr, "ours", 2)
	defer stop()
	produceTo(t, addr, &kgo.Record{Topic: "customers", Partition: int32(lane.For([]byte("c1"), 2)), Key: []byte("c1"), Value: []byte("Ann2"), Timestamp: time.UnixMilli(6000)},
		&kgo.Record{Topic: "customers", Partition: int32(lane.For([]byte("c3"), 2)), Key: []byte("c3"), Value: []byte("Cid2"), Timestamp: time.UnixMilli(6001)})
	out := client(t, addr, kgo.ConsumeTopics("order-rows"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for deadline := time.Now().Add(20 * time.Second); len(got) < 3 && time.Now().Before(deadline); {
		pctx, pc := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+" "+string(r.Value)) })
		pc()
	}
	slices.Sort(got)
	want := []string{`o1 {"left":"c1","right":"Ann2"}`, `o2 {"left":"c3","right":"Cid2"}`, `o3 {"left":"c1","right":"Ann2"}`}
	if !slices.Equal(got, want) {
		t.Errorf("rows after the cutover %q, want %q", got, want)
	}
}

// TestForeignKeyJoinRefusals: a subscription of Kafka Streams sent by a
// value that is not its left key's current one (the join had not settled)
// is refused, naming it, as is a subscription topic holding records Kafka
// Streams has not processed; nothing is written.
func TestForeignKeyJoinRefusals(t *testing.T) {
	t.Run("stale subscription", func(t *testing.T) {
		addr := kafkatest.Start(t, map[string]int32{"orders": 1, "customers": 1, "order-rows": 1})
		ksFKJoin(t, addr, true)
		_, built := loadFile(t, fkJoinYAML)
		_, err := migrate.Run(context.Background(), migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}})
		var refusal *migrate.RefusalError
		if !errors.As(err, &refusal) || !errors.Is(err, migrate.ErrFKSubscription) {
			t.Fatalf("err = %v, want a refusal of the subscription", err)
		}
		if !strings.Contains(err.Error(), `left key "o3"'s subscription to foreign key "c1" was sent by another value than its current one in ks-orders-store-changelog`) {
			t.Errorf("the refusal does not name o3's subscription: %v", err)
		}
		assertNothingWritten(t, kadm.NewClient(client(t, addr)))
	})
	t.Run("subscription topic not drained", func(t *testing.T) {
		addr := kafkatest.Start(t, map[string]int32{"orders": 1, "customers": 1, "order-rows": 1})
		ksFKJoin(t, addr, false)
		produceTo(t, addr, &kgo.Record{Topic: "ks-oc-subscription-registration-topic", Key: []byte("c1"), Value: []byte{1}})
		_, built := loadFile(t, fkJoinYAML)
		_, err := migrate.Run(context.Background(), migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}})
		if err == nil || !strings.Contains(err.Error(), "ks-oc-subscription-registration-topic[0] holds 1 records ks has not processed") {
			t.Fatalf("err = %v, want the subscription topic named", err)
		}
		assertNothingWritten(t, kadm.NewClient(client(t, addr)))
	})
}
