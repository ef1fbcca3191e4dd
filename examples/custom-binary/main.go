// Command custom-binary is stoatctl with a topology of its own compiled in:
// a Kafka Streams Processor API application ported to Go, which gets every
// command the stock binary has (run, migrate, replay, watch, topology) by
// registering it and calling cli.Main.
//
//	go build -o orders ./examples/custom-binary
//	./orders topology describe order-totals
//	./orders run -t order-totals
//	./orders migrate --from-application-id order-totals -t order-totals -b kafka:9092 --dry-run
//
// The Kafka Streams application it mirrors reads "orders" (customer id to
// an amount in cents, as text), keeps a total per customer in the store
// "order-totals-store" and writes each new total to "order-totals":
//
//	builder.addSource("orders-source", "orders")
//	       .addProcessor("totals", Totals::new, "orders-source")
//	       .addStateStore(Stores.keyValueStoreBuilder(
//	           Stores.persistentKeyValueStore("order-totals-store"), Serdes.String(), Serdes.Long()), "totals")
//	       .addSink("totals-sink", "order-totals", new StringSerializer(), new LongSerializer(), "totals");
//
// The node and store names are the Java application's, so its changelog
// (order-totals-order-totals-store-changelog) is ours too and migrate maps
// the store without --map.
package main

import (
	"fmt"
	"log"
	"strconv"
	"strings"

	"github.com/stoatflow/stoatctl/cli"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
)

func main() {
	err := cli.Register(cli.Topology{
		Name:        "order-totals",
		Description: "a Processor API application: the running total of each customer's orders",
		Config:      map[string]string{"application.id": "order-totals"},
		Build:       buildOrderTotals,
	})
	if err != nil {
		log.Fatal(err)
	}
	cli.Main()
}

func buildOrderTotals() *topology.Topology {
	str, i64 := serde.String(), serde.Int64()
	return topology.New().
		AddSource("orders-source", topology.ConsumedWith(str, str).Spec(), "orders").
		AddProcessor("totals", processor.Supply(func() processor.Processor[string, string, string, int64] { return &totals{} }), "orders-source").
		AddStateStore(state.KeyValueStoreBuilder("order-totals-store", str, i64, state.Default()), "totals").
		AddSink("totals-sink", topology.ProducedWith(str, i64).Spec("order-totals"), "order-totals", "totals")
}

// totals adds each order's amount to its customer's total and forwards the
// new total. An amount that is not an integer fails the record, so the
// engine's deserialization and processing handlers decide, as they would
// for the Java application's NumberFormatException.
type totals struct {
	processor.Base[string, int64]
	store state.KeyValueStore[string, int64]
}

func (p *totals) Init(ctx processor.Context[string, int64]) error {
	p.Ctx = ctx
	s, err := processor.KeyValueStore[string, int64](ctx, "order-totals-store")
	p.store = s
	return err
}

func (p *totals) Process(r processor.Record[string, string]) error {
	amount, err := strconv.ParseInt(strings.TrimSpace(r.Value), 10, 64)
	if err != nil {
		return fmt.Errorf("totals: amount of customer %q: %w", r.Key, err)
	}
	total, _, err := p.store.Get(r.Key)
	if err != nil {
		return fmt.Errorf("totals: read the total of %q: %w", r.Key, err)
	}
	total += amount
	if err := p.store.Put(r.Key, total); err != nil {
		return fmt.Errorf("totals: write the total of %q: %w", r.Key, err)
	}
	p.Ctx.Forward(processor.WithValue(r, total))
	return nil
}
