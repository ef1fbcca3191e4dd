package engine_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// pricedOrders left-joins orders with a versioned prices table (an hour
// of history, in default.dsl.store's backend): each order gets the price
// as of its timestamp.
func pricedOrders() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	prices := dsl.Table(b, "prices", dsl.ConsumedWith(str, str),
		dsl.MaterializedAs[string, string]("prices-store").WithStoreSupplier(state.VersionedKeyValueStoreOver(state.Default(), time.Hour)))
	orders := dsl.Stream(b, dsl.ConsumedWith(str, str), "orders")
	dsl.LeftJoinTable(orders, prices, func(_, order, price string) string { return order + "@" + price }).
		To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestVersionedTableRestore writes a key's versions out of order in one
// run of the live engine on the embedded broker, then starts it again over
// a fresh state directory (in memory, or RocksDB restored in bulk), so
// that the versioned store is rebuilt from its changelog: orders stamped
// between the versions must still find each version. A changelog that
// kept only each key's last write of an epoch would have restored one
// version. The changelog topic carries Kafka Streams' compaction lag:
// history retention plus a day.
func TestVersionedTableRestore(t *testing.T) {
	for _, store := range []string{"in_memory", "rocksDB"} {
		t.Run(store, func(t *testing.T) {
			if store == "rocksDB" {
				needRocks(t)
			}
			addr := startBroker(t, map[string]int32{"prices": 2, "orders": 2, "out": 2})
			app := "versioned-" + store
			versions := []kv{
				{Key: "p", Value: "v100", Timestamp: 100}, {Key: "p", Value: "v300", Timestamp: 300},
				{Key: "p", Value: "v200", Timestamp: 200}, {Key: "p", Value: "v250", Timestamp: 250},
				{Key: "q", Value: "w100", Timestamp: 100}, {Key: "q", Timestamp: 180, NullValue: true},
			}
			produce(t, addr, "prices", versions)
			e, stop := runEngine(t, pricedOrders(), storeCfg(addr, app, store, t.TempDir(), "num.stream.threads", "2"))
			eventually(t, 30*time.Second, func() string { return "the first run did not process the prices" }, func() bool {
				return e.Stats().Records >= int64(len(versions))
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}

			changelog := app + "-prices-store-changelog"
			cfgs, err := kafkatest.Admin(t, addr).DescribeTopicConfigs(context.Background(), changelog)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := cfgs.On(changelog, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := strconv.FormatInt((time.Hour + 24*time.Hour).Milliseconds(), 10)
			var lag string
			for _, c := range rc.Configs {
				if c.Key == state.MinCompactionLagConfig && c.Value != nil {
					lag = *c.Value
				}
			}
			if lag != want {
				t.Errorf("%s %s = %q, want %s", changelog, state.MinCompactionLagConfig, lag, want)
			}

			orders := []kv{
				{Key: "p", Value: "o150", Timestamp: 150}, {Key: "p", Value: "o220", Timestamp: 220},
				{Key: "p", Value: "o260", Timestamp: 260}, {Key: "p", Value: "o400", Timestamp: 400},
				{Key: "p", Value: "o50", Timestamp: 50},
				{Key: "q", Value: "o150", Timestamp: 150}, {Key: "q", Value: "o200", Timestamp: 200},
			}
			produce(t, addr, "orders", orders)
			e, stop = runEngine(t, pricedOrders(), storeCfg(addr, app, store, t.TempDir(), "num.stream.threads", "3"))
			got := readCommitted(t, addr, "out", len(orders), 30*time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if r := e.Stats().Restored; r < int64(len(versions)) {
				t.Errorf("restored %d changelog records, want every version (%d)", r, len(versions))
			}
			var vals []string
			for _, r := range got {
				vals = append(vals, r.Key+":"+r.Value)
			}
			slices.Sort(vals)
			wantVals := []string{"p:o150@v100", "p:o220@v200", "p:o260@v250", "p:o400@v300", "p:o50@", "q:o150@w100", "q:o200@"}
			if !slices.Equal(vals, wantVals) {
				t.Errorf("joined %v, want %v", vals, wantVals)
			}
		})
	}
}
