package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

func globalEnrich() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	customers := dsl.GlobalTable(b, "customers", dsl.ConsumedWith(str, str))
	orders := dsl.Stream(b, dsl.ConsumedWith(str, str), "orders")
	// Orders are keyed by order id; the value names the customer.
	dsl.JoinGlobal(orders, customers, func(_, customer string) string { return customer },
		func(order, customer, name string) string { return order + " for " + name }).
		To("enriched", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestGlobalTableJoin: the global table is read to its end before any
// order is processed, and updates made while the engine runs reach the
// lanes.
func TestGlobalTableJoin(t *testing.T) {
	addr := startBroker(t, map[string]int32{"customers": 3, "orders": 2, "enriched": 2})
	produce(t, addr, "customers", []kv{{Key: "c1", Value: "Alice"}, {Key: "c2", Value: "Bob"}})
	produce(t, addr, "orders", []kv{{Key: "o1", Value: "c1"}, {Key: "o2", Value: "c2"}, {Key: "o3", Value: "c9"}})
	e, stop := runEngine(t, globalEnrich(), cfg(addr, "global"))
	if got := readCommitted(t, addr, "enriched", 2, 20*time.Second); len(got) != 2 {
		t.Fatalf("before the update: %v, want o1 and o2 enriched", got)
	}
	produce(t, addr, "customers", []kv{{Key: "c1", Value: "Alice Smith"}})
	// The update must be in the global store before o4 is produced.
	eventually(t, 20*time.Second, func() string {
		return fmt.Sprintf("the global store applied %d records, want 3", e.Stats().GlobalRecords)
	},
		func() bool { return e.Stats().GlobalRecords >= 3 })
	produce(t, addr, "orders", []kv{{Key: "o4", Value: "c1"}})
	eventually(t, 20*time.Second, func() string { return fmt.Sprintf("the engine processed %d of the 4 orders", e.Stats().Records) },
		func() bool { return e.Stats().Records >= 4 })
	got := readCommitted(t, addr, "enriched", 3, 20*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Key+"="+r.Value)
	}
	slices.Sort(lines)
	want := []string{"o1=o1 for Alice", "o2=o2 for Bob", "o4=o4 for Alice Smith"}
	if !slices.Equal(lines, want) {
		t.Fatalf("enriched:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
