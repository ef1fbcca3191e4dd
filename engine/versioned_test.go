package engine_test

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/testdriver"
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

// versionedChecker is Kafka Streams' VersionedStoreContentCheckerProcessor
// (VersionedKeyValueStoreIntegrationTest): it writes each record to the
// versioned store ("delete" deletes, a null value puts a tombstone), keeps
// what it wrote in memory, and forwards how many of the store's answers
// disagree with that record: every key as of every timestamp written, and
// its latest.
type versionedChecker struct {
	processor.Base[string, int64]
	store state.VersionedKeyValueStore[string, *string]
	data  map[string]map[int64]*string
}

func (p *versionedChecker) Init(ctx processor.Context[string, int64]) error {
	p.Ctx, p.data = ctx, map[string]map[int64]*string{}
	s, err := processor.VersionedKeyValueStore[string, *string](ctx, "versioned-store")
	p.store = s
	return err
}

func (p *versionedChecker) Process(r processor.Record[string, *string]) error {
	var err error
	if r.Value != nil && *r.Value == "delete" {
		_, _, err = p.store.Delete(r.Key, r.Timestamp)
		r.Value = nil
	} else {
		_, err = p.store.Put(r.Key, r.Value, r.Timestamp)
	}
	if err != nil {
		return err
	}
	if p.data[r.Key] == nil {
		p.data[r.Key] = map[int64]*string{}
	}
	p.data[r.Key][r.Timestamp] = r.Value
	failed := int64(0)
	matches := func(got state.VersionedRecord[*string], found bool, want *string, ts int64) bool {
		if want == nil {
			return !found
		}
		return found && got.Value != nil && *got.Value == *want && got.Timestamp == ts
	}
	for k, byTime := range p.data {
		maxTS, latest := int64(-1), (*string)(nil)
		for ts, v := range byTime {
			if ts > maxTS {
				maxTS, latest = ts, v
			}
			got, found, err := p.store.GetAsOf(k, ts)
			if err != nil {
				return err
			}
			if !matches(got, found, v, ts) {
				failed++
			}
		}
		got, found, err := p.store.Get(k)
		if err != nil {
			return err
		}
		if !matches(got, found, latest, maxTS) {
			failed++
		}
	}
	p.Ctx.Forward(processor.WithValue(r, failed))
	return nil
}

// checkerTopology reads "in" into versionedChecker over a versioned store
// (history retention a day) in default.dsl.store's backend, and writes the
// failed-check counts to "out".
func checkerTopology() *topology.Topology {
	str := serde.String()
	return topology.New().
		AddSource("src", topology.ConsumedWith(str, serde.Pointer(str)).Spec(), "in").
		AddProcessor("check", processor.Supply(func() processor.Processor[string, *string, string, int64] { return &versionedChecker{} }), "src").
		AddStateStore(state.VersionedKeyValueStoreBuilder("versioned-store", str, serde.Pointer(str), state.VersionedKeyValueStoreOver(state.Default(), 24*time.Hour)), "check").
		AddSink("sink", topology.ProducedWith(str, serde.Int64()).Spec("out"), "out", "check")
}

// checkerInput is shouldPutGetAndDelete's input: out-of-order data,
// replaced versions, tombstones put, and deletes.
func checkerInput() []kv {
	const base = 1_000
	var in []kv
	for _, batch := range []struct {
		ts   int64
		vals [3]string // "" for a null value
	}{
		{base, [3]string{"a0", "b0", ""}},
		{base + 5, [3]string{"a5", "", "c5"}},
		{base + 2, [3]string{"a2", "b2", ""}},
		{base + 5, [3]string{"a5_new", "b5", ""}},
		{base + 7, [3]string{"delete", "delete", "delete"}},
	} {
		for i, v := range batch.vals {
			in = append(in, kv{Key: strconv.Itoa(i + 1), Value: v, Timestamp: batch.ts, NullValue: v == ""})
		}
	}
	return in
}

// TestVersionedStorePutGetAndDelete is Kafka Streams'
// VersionedKeyValueStoreIntegrationTest.shouldPutGetAndDelete, through the
// test driver and through the live engine on the embedded broker (in
// memory and in RocksDB): after every record, every version written reads
// back as of its timestamp, and every key's latest is its newest.
func TestVersionedStorePutGetAndDelete(t *testing.T) {
	in := checkerInput()
	t.Run("driver", func(t *testing.T) {
		d, err := testdriver.New(checkerTopology(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for _, r := range in {
			if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte(r.Key), Value: nilIf(r.Value, r.NullValue), Timestamp: r.Timestamp}); err != nil {
				t.Fatal(err)
			}
		}
		out := d.ReadRaw("out")
		if len(out) != len(in) {
			t.Fatalf("%d results, want %d", len(out), len(in))
		}
		for i, r := range out {
			if n := int64(binary.BigEndian.Uint64(r.Value)); n != 0 {
				t.Errorf("record %d (key %s): %d failed checks", i, r.Key, n)
			}
		}
	})
	for _, store := range []string{"in_memory", "rocksDB"} {
		t.Run("engine/"+store, func(t *testing.T) {
			if store == "rocksDB" {
				needRocks(t)
			}
			addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
			produce(t, addr, "in", in)
			_, stop := runEngine(t, checkerTopology(), storeCfg(addr, "checker-"+store, store, t.TempDir(), "num.stream.threads", "2"))
			got := readCommitted(t, addr, "out", len(in), 30*time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(in) {
				t.Fatalf("%d results, want %d", len(got), len(in))
			}
			for i, r := range got {
				if n := int64(binary.BigEndian.Uint64([]byte(r.Value))); n != 0 {
					t.Errorf("record %d (key %s): %d failed checks", i, r.Key, n)
				}
			}
		})
	}
}
