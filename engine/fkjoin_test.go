package engine_test

import (
	"fmt"
	"strings"
	"testing"

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
	ex := fkJoinExample(true)
	ex.Name = "fk-join-rapid"
	ex.Config = map[string]string{"application.id": ex.Name, "default.key.serde": "string", "default.value.serde": "string"}
	ex.Inputs = nil
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
