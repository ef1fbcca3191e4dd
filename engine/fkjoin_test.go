package engine_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/fixtures/examples"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// fkJoinExample is a foreign-key left join of orders (keyed by order id,
// value "item|customer") with customers (keyed by customer id), the
// scenario of Kafka Streams' KTableKTableForeignKeyJoinIntegrationTest
// (doJoinFromLeftThenDeleteLeftEntity, doJoinFromRightThenDeleteRightEntity,
// shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated) spread over keys that
// land on different lanes: orders move between customers, customers are
// updated and deleted, orders are deleted. Each run of same-topic records
// holds a key once, so no response goes stale between runs.
func fkJoinExample(left bool) examples.Example {
	name := "fk-join-inner"
	if left {
		name = "fk-join-left"
	}
	build := func() *topology.Topology {
		str := serde.String()
		ptr := serde.Pointer(str)
		b := dsl.NewBuilder()
		orders := dsl.Table(b, "orders", dsl.ConsumedWith(str, str))
		customers := dsl.Table(b, "customers", dsl.ConsumedWith(str, ptr))
		customer := func(v string) string { return strings.Split(v, "|")[1] }
		joiner := func(o string, c *string) string {
			if c == nil {
				return o + "+null"
			}
			return o + "+" + *c
		}
		var j dsl.KTable[string, string]
		if left {
			j = dsl.TableLeftJoinForeignKey(orders, customers, customer, joiner)
		} else {
			j = dsl.TableJoinForeignKey(orders, customers, customer, joiner)
		}
		j.ToStream().To("orders-enriched", dsl.ProducedWith(str, str))
		return b.Topology()
	}
	var in []examples.Input
	ts := int64(0)
	add := func(topic string, kvs ...string) {
		for i := 0; i+1 < len(kvs); i += 2 {
			ts++
			in = append(in, examples.Input{Topic: topic, Key: kvs[i], Value: kvs[i+1], Timestamp: ts})
		}
	}
	var customers, orders []string
	for c := range 6 {
		customers = append(customers, fmt.Sprintf("c%d", c), fmt.Sprintf("customer-%d", c))
	}
	for o := range 12 {
		orders = append(orders, fmt.Sprintf("o%02d", o), fmt.Sprintf("item-%d|c%d", o, o%8))
	}
	add("customers", customers...)
	add("orders", orders...)
	// Customers change; c6 and c7 appear, completing the orders naming
	// them.
	add("customers", "c1", "customer-1b", "c6", "customer-6", "c7", "customer-7")
	// Orders move to other customers, one to a customer that does not
	// exist.
	add("orders", "o01", "item-1|c2", "o02", "item-2b|c3", "o05", "item-5|c9", "o09", "item-9|c0")
	// c2's update reaches o01 (moved there) and not its old customer's.
	add("customers", "c2", "customer-2b", "c1", "customer-1c")
	return examples.Example{
		Name:    name,
		Config:  map[string]string{"application.id": name, "default.key.serde": "string", "default.value.serde": "string"},
		Build:   build,
		Inputs:  in,
		Outputs: []examples.Output{{Topic: "orders-enriched"}},
	}
}

// fkJoinNamed is fkJoinExample under another name and application id,
// with no inputs.
func fkJoinNamed(left bool, name string) examples.Example {
	ex := fkJoinExample(left)
	ex.Name, ex.Inputs = name, nil
	ex.Config = map[string]string{"application.id": name, "default.key.serde": "string", "default.value.serde": "string"}
	return ex
}

// addInputs appends ins to ex's inputs, marking the tombstones.
func addInputs(ex *examples.Example, ins ...rawInput) {
	for _, in := range ins {
		if in.NullValue {
			markNull(ex.Name, len(ex.Inputs))
		}
		ex.Inputs = append(ex.Inputs, examples.Input{Topic: in.Topic, Key: in.Key, Value: in.Value, Timestamp: in.Timestamp})
	}
}

// fkJoinDeletes are the tombstones of the example, appended after its
// inputs: a customer deleted, an order deleted.
var fkJoinDeletes = []rawInput{
	{Topic: "customers", kv: kv{Key: "c3", Timestamp: 100, NullValue: true}},
	{Topic: "orders", kv: kv{Key: "o04", Timestamp: 101, NullValue: true}},
}

// TestForeignKeyJoinEngine runs a foreign-key join, inner and left,
// through the test driver and through the live engine on the embedded
// broker with 1 and 4 lanes, and requires the same committed output per
// key, in the same order: subscriptions reach the lane and task of their
// foreign key, responses the lane of their order, whatever the lane count.
func TestForeignKeyJoinEngine(t *testing.T) {
	kafkatest.Parallel(t)
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	for _, left := range []bool{true, false} {
		ex := fkJoinExample(left)
		for _, d := range fkJoinDeletes {
			markNull(ex.Name, len(ex.Inputs))
			ex.Inputs = append(ex.Inputs, examples.Input{Topic: d.Topic, Key: d.Key, Timestamp: d.Timestamp})
		}
		want := driverOutput(t, ex)
		if total(want) == 0 {
			t.Fatalf("%s: the driver wrote nothing", ex.Name)
		}
		for _, lanes := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/lanes=%d", ex.Name, lanes), func(t *testing.T) {
				comparePerKey(t, want, engineOutput(t, ex, lanes, total(want)))
			})
		}
	}
}

// TestForeignKeyJoinEngineRapidMoves moves 40 orders between customers
// six times within one run of records, so that on four lanes the answers
// to an order's earlier values are still on their way when its later
// values arrive: the resolver must drop them as stale (their hash is not
// the current value's), or an order would end joined with a customer it
// no longer names. Intermediate rows may differ from the driver's, which
// answers every value before the next; the last row of every order must
// not.
func TestForeignKeyJoinEngineRapidMoves(t *testing.T) {
	kafkatest.Parallel(t)
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	ex := fkJoinNamed(true, "fk-join-rapid")
	ts := int64(0)
	for c := range 10 {
		ts++
		ex.Inputs = append(ex.Inputs, examples.Input{Topic: "customers", Key: fmt.Sprintf("c%d", c), Value: fmt.Sprintf("customer-%d", c), Timestamp: ts})
	}
	for round := range 6 {
		for o := range 40 {
			ts++
			ex.Inputs = append(ex.Inputs, examples.Input{Topic: "orders", Key: fmt.Sprintf("o%02d", o), Value: fmt.Sprintf("item-%d-%d|c%d", o, round, (o+3*round)%11), Timestamp: ts})
		}
	}
	want := driverOutput(t, ex)
	got := engineOutput(t, ex, 4, 0)
	// The engine may drop stale answers the driver never had: wait for
	// the last row of every order instead of a record count.
	last := func(vs []string) string { return vs[len(vs)-1] }
	for k, vs := range want["orders-enriched"] {
		g := got["orders-enriched"][k]
		if len(g) == 0 || last(g) != last(vs) {
			t.Errorf("order %s: engine ends with %q, driver with %q", k, g, last(vs))
		}
	}
}

// TestForeignKeyJoinOnTwoInstances runs a foreign-key join, left and
// inner, through repartition topics (stoatflow.topology.rekey=topic) on
// two instances: the second joins while orders and customers change and
// leaves again, so that the left table's tasks, the subscriptions' and
// the resolver's move between them. Every order's last row must be the
// driver's over the same input (rows in between may differ: an answer to
// a value since replaced is dropped as stale, or arrives before it is
// replaced). The customers' topic has fewer partitions than the orders':
// the subscription topic takes the customers' count, with which the join
// of subscriptions and customers is co-partitioned, as in Kafka Streams.
func TestForeignKeyJoinOnTwoInstances(t *testing.T) {
	kafkatest.Parallel(t)
	if testing.Short() {
		t.Skip("runs two engines; skipped with -short")
	}
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("STOATFLOW_TEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (STOATFLOW_TEST_SEED repeats it)", seed)
	for _, left := range []bool{true, false} {
		name := "fk-inner-split"
		if left {
			name = "fk-left-split"
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 0))
			// The null marks are kept by example name: one per seed.
			ex := fkJoinNamed(left, fmt.Sprintf("%s-%d", name, seed))
			ex.Config["application.id"] = name
			ts := int64(0)
			var rounds [4][]rawInput
			for r := range rounds {
				for range 12 {
					ts++
					c := fmt.Sprintf("c%d", rng.IntN(30))
					in := rawInput{Topic: "customers", kv: kv{Key: c, Value: fmt.Sprintf("customer-%s-%d", c, r), Timestamp: ts}}
					in.NullValue = r > 0 && rng.IntN(6) == 0
					rounds[r] = append(rounds[r], in)
				}
				for range 150 {
					ts++
					o := fmt.Sprintf("o%03d", rng.IntN(240))
					// c30 to c33 name no customer.
					in := rawInput{Topic: "orders", kv: kv{Key: o, Value: fmt.Sprintf("item-%s-%d|c%d", o, r, rng.IntN(34)), Timestamp: ts}}
					in.NullValue = r > 0 && rng.IntN(10) == 0
					rounds[r] = append(rounds[r], in)
				}
			}
			for _, round := range rounds {
				addInputs(&ex, round...)
			}
			driven := driverOutput(t, ex)["orders-enriched"]
			want := lastRows(driven)

			addr := startKafka(t, map[string]int32{"orders": 4, "customers": 2, "orders-enriched": 4})
			c := func(id string) map[string]string {
				m := cfg(addr, name, "stoatflow.instance.id", id, "session.timeout.ms", "10000", "num.stream.threads", "2",
					config.TopologyRekey, config.RekeyTopic, config.RepartitionPurgeIntervalMs, "3600000")
				maps.Copy(m, map[string]string{"default.key.serde": "string", "default.value.serde": "string"})
				return m
			}
			// A round's customers, then its orders: the last rows depend
			// only on the tables' last values.
			send := func(r int) {
				for _, topic := range []string{"customers", "orders"} {
					var recs []kv
					for _, in := range rounds[r] {
						if in.Topic == topic {
							recs = append(recs, in.kv)
						}
					}
					produce(t, addr, topic, recs)
				}
			}
			a, stopA := runEngine(t, ex.Build(), c("a"))
			eventually(t, 60*time.Second, func() string { return fmt.Sprintf("instance a runs %v", a.Assignment()) },
				func() bool { return len(a.Assignment()["orders"]) == 4 })
			send(0)
			b, stopB := runEngine(t, ex.Build(), c("b"))
			send(1)
			// b runs some of the left table's tasks and some of the
			// resolver's (the assignor balances the tasks in all, so the
			// subscriptions' two may both stay on a).
			eventually(t, 60*time.Second, func() string { return fmt.Sprintf("instance b runs %v, a %v", b.Assignment(), a.Assignment()) }, func() bool {
				as := b.Assignment()
				resp := false
				for topic, ps := range as {
					resp = resp || strings.HasSuffix(topic, "-SUBSCRIPTION-RESPONSE-0000000014-topic") && len(ps) > 0
				}
				return len(as["orders"]) > 0 && resp
			})
			send(2)
			if err := stopB(); err != nil {
				t.Fatalf("instance b: %v", err)
			}
			send(3)

			cl := committedReader(t, addr, "orders-enriched")
			defer cl.Close()
			got := perKey{}
			settled := func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Key)] = append(got[string(r.Key)], string(r.Value)) })
				cancel()
				return maps.Equal(lastRows(got), want)
			}
			// On a failure: the first few keys that differ, with their
			// inputs and what crossed the two topics for them (the purge
			// is held off for this).
			explain := func() string {
				d := rowDiff(lastRows(got), want)
				shown := 0
				for _, k := range slices.Sorted(maps.Keys(got)) {
					if lastRows(perKey{k: got[k]})[k] == want[k] || shown == 3 {
						continue
					}
					shown++
					t.Logf("%s: engine wrote %q, driver %q; its inputs %v", k, got[k], driven[k], inputsOf(ex, k))
					for _, topic := range []string{name + "-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic", name + "-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"} {
						for _, r := range readCommittedRecords(t, addr, topic, 1<<30, 3*time.Second) {
							if string(r.Key) == k || strings.HasSuffix(string(r.Value), k) {
								t.Logf("  %s[%d]@%d ts %d: %q = %q", topic[len(name)+1:], r.Partition, r.Offset, r.Timestamp.UnixMilli(), r.Key, r.Value)
							}
						}
					}
				}
				return d
			}
			eventually(t, 90*time.Second, explain, settled)
			if err := stopA(); err != nil {
				t.Fatalf("instance a: %v", err)
			}
			// Nothing after the last rows changes them.
			settled()
			if !settled() {
				t.Fatal(explain())
			}
			adm := kadm.NewClient(cl)
			topics, err := adm.ListTopics(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, td := range topics {
				if strings.HasSuffix(td.Topic, "-SUBSCRIPTION-REGISTRATION-0000000006-topic") && len(td.Partitions) != 2 {
					t.Errorf("subscription topic %s has %d partitions, want the customers' 2", td.Topic, len(td.Partitions))
				}
			}
		})
	}
}

// inputsOf are the inputs of ex with key k, and of the customers they name.
func inputsOf(ex examples.Example, k string) []string {
	var out []string
	named := map[string]bool{}
	for _, in := range ex.Inputs {
		if in.Key == k {
			out = append(out, fmt.Sprintf("%s@%d", in.Value, in.Timestamp))
			if _, c, ok := strings.Cut(in.Value, "|"); ok {
				named[c] = true
			}
		}
	}
	for _, in := range ex.Inputs {
		if in.Topic == "customers" && named[in.Key] {
			out = append(out, fmt.Sprintf("%s=%s@%d", in.Key, in.Value, in.Timestamp))
		}
	}
	return out
}

// lastRows is each key's last value; a key whose last record is a
// tombstone, or that has none, has no row.
func lastRows(pk perKey) map[string]string {
	out := map[string]string{}
	for k, vs := range pk {
		if v := vs[len(vs)-1]; v != "" {
			out[k] = v
		}
	}
	return out
}

// rowDiff says how got's rows differ from want's, "" when they do not.
func rowDiff(got, want map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			d = append(d, fmt.Sprintf("%s: got %q, want %q", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s: got %q, want no row", k, got[k]))
		}
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprintf("%d rows differ: %s", len(d), strings.Join(d[:min(len(d), 20)], "; "))
}

// TestForeignKeyJoinAnswerOvertaken makes a value overtake the answer to
// its predecessor, as answers crossing a topic are overtaken whenever a key
// changes twice within an epoch: o1 is deleted and written again naming a
// customer that does not exist, o2 moves to such a customer and changes
// again keeping it. The predecessor's answer (a null, which deletes the
// row) arrives after the second value and is dropped as stale; the second
// value's subscription, which assumes the row is gone, is one Kafka
// Streams answers only on a match. Kafka Streams then keeps o1's and o2's
// old rows; here the answer without a match clears them, and every
// order's last row is the test driver's.
func TestForeignKeyJoinAnswerOvertaken(t *testing.T) {
	kafkatest.Parallel(t)
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	ex := fkJoinNamed(false, "fk-overtaken")
	first := []rawInput{
		{Topic: "customers", kv: kv{Key: "c1", Value: "customer-1", Timestamp: 1}},
		{Topic: "orders", kv: kv{Key: "o1", Value: "item-1|c1", Timestamp: 2}},
		{Topic: "orders", kv: kv{Key: "o2", Value: "item-2|c1", Timestamp: 3}},
		{Topic: "orders", kv: kv{Key: "o3", Value: "item-3|c1", Timestamp: 4}},
	}
	// One produce, so one poll and one epoch.
	then := []rawInput{
		{Topic: "orders", kv: kv{Key: "o1", Timestamp: 5, NullValue: true}},
		{Topic: "orders", kv: kv{Key: "o2", Value: "item-2|c8", Timestamp: 6}},
		{Topic: "orders", kv: kv{Key: "o1", Value: "item-1b|c9", Timestamp: 7}},
		{Topic: "orders", kv: kv{Key: "o2", Value: "item-2b|c8", Timestamp: 8}},
		{Topic: "orders", kv: kv{Key: "o3", Value: "item-3b|c1", Timestamp: 9}},
	}
	addInputs(&ex, first...)
	addInputs(&ex, then...)
	want := lastRows(driverOutput(t, ex)["orders-enriched"])
	if len(want) != 1 {
		t.Fatalf("the driver's rows %v, want o3's alone", want)
	}

	addr := startKafka(t, map[string]int32{"orders": 1, "customers": 1, "orders-enriched": 1})
	c := cfg(addr, ex.Name, "num.stream.threads", "1", config.TopologyRekey, config.RekeyTopic, engine.BarrierIntervalMs, "1000")
	maps.Copy(c, ex.Config)
	_, stop := runEngine(t, ex.Build(), c)
	cl := committedReader(t, addr, "orders-enriched")
	defer cl.Close()
	got := perKey{}
	read := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Key)] = append(got[string(r.Key)], string(r.Value)) })
		cancel()
	}
	for _, in := range first {
		produce(t, addr, in.Topic, []kv{in.kv})
	}
	eventually(t, 60*time.Second, func() string { return fmt.Sprintf("rows %v, want o1, o2 and o3 joined", got) }, func() bool {
		read()
		return len(lastRows(got)) == 3
	})
	var orders []kv
	for _, in := range then {
		orders = append(orders, in.kv)
	}
	produce(t, addr, "orders", orders)
	eventually(t, 60*time.Second, func() string { return rowDiff(lastRows(got), want) + fmt.Sprintf(" (all rows %v)", got) }, func() bool {
		read()
		return maps.Equal(lastRows(got), want)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
