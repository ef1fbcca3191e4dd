package topofile

import (
	"errors"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// globalJoins looks orders' customers up in one global table by a field
// of the value, and their regions up in another by a header.
const globalJoins = `application-id: global-joins
global-tables:
  customers:
    topic: customers
    key-serde: string
    value-serde: json
    store: customer-store
  regions:
    topic: regions
    key-serde: string
    value-serde: string
    name: regions
sources:
  orders:
    topic: orders
    key-serde: string
    value-serde: json
pipelines:
  paid:
    from: orders
    steps:
      - join-global:
          with: customers
          key: value.customer
          joiner: '{order: key, item: left.item, name: right.name}'
      - to: {topic: enriched, value-serde: json}
  all:
    from: orders
    steps:
      - left-join-global:
          with: customers
          key: value.customer
          joiner: '{order: key, item: left.item, name: right?.name ?? "unknown"}'
      - to: {topic: all-orders, value-serde: json}
  by-region:
    from: orders
    steps:
      - left-join-global:
          with: regions
          key: 'headers.region ?? "none"'
          joiner: '{item: left.item, region: right}'
          name: region-join
      - to: {topic: by-region, value-serde: json}
`

func TestGlobalTableJoins(t *testing.T) {
	f, err := Parse("global.yaml", []byte(globalJoins), ".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build(); err != nil {
		t.Fatal(err)
	}
	desc := f.Topology.Describe().String()
	for _, node := range []string{"region-join-key", "region-join", "regions-source", "KSTREAM-JOIN-", "KSTREAM-LEFTJOIN-"} {
		if !strings.Contains(desc, node) {
			t.Errorf("describe has no node %s:\n%s", node, desc)
		}
	}
	d, err := testdriver.New(f.Topology, f.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	customers := testdriver.CreateInputTopic(d, "customers", serde.String(), serde.String())
	regions := testdriver.CreateInputTopic(d, "regions", serde.String(), serde.String())
	orders := testdriver.CreateInputTopic(d, "orders", serde.String(), serde.String())
	order := func(id, customer, item, region string, ts int64) {
		t.Helper()
		rec := testdriver.TestRecord[string, string]{Key: id, Value: `{"customer":"` + customer + `","item":"` + item + `"}`, Timestamp: ts}
		if region != "" {
			rec.Headers = processor.Headers{}.Add("region", []byte(region))
		}
		if err := orders.PipeRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	pipe := func(in *testdriver.InputTopic[string, string], k, v string, ts int64) {
		t.Helper()
		if err := in.PipeInputAt(k, v, ts); err != nil {
			t.Fatal(err)
		}
	}
	pipe(customers, "c1", `{"name":"Alice"}`, 1_000)
	pipe(regions, "eu", "Europe", 1_000)
	order("o1", "c1", "tea", "eu", 2_000)
	order("o2", "c2", "coffee", "", 3_000) // no such customer, no region header
	// A later version of the customer, and a new one, change later joins
	// only.
	pipe(customers, "c1", `{"name":"Alice Smith"}`, 4_000)
	pipe(customers, "c2", `{"name":"Bob"}`, 4_000)
	order("o3", "c1", "water", "us", 5_000)
	order("o4", "c2", "juice", "eu", 6_000)
	// A deleted customer no longer joins.
	if err := customers.PipeTombstoneAt("c2", 7_000); err != nil {
		t.Fatal(err)
	}
	order("o5", "c2", "milk", "eu", 8_000)

	read := func(topic string) []out {
		t.Helper()
		recs, err := testdriver.CreateOutputTopic(d, topic, serde.String(), serde.String()).ReadRecordsToList()
		if err != nil {
			t.Fatal(err)
		}
		var got []out
		for _, r := range recs {
			got = append(got, out{r.Key, r.Value, r.Timestamp})
		}
		return got
	}
	checkOutputs(t, read("enriched"), []out{
		{"o1", `{"item":"tea","name":"Alice","order":"o1"}`, 2_000},
		{"o3", `{"item":"water","name":"Alice Smith","order":"o3"}`, 5_000},
		{"o4", `{"item":"juice","name":"Bob","order":"o4"}`, 6_000},
	})
	checkOutputs(t, read("all-orders"), []out{
		{"o1", `{"item":"tea","name":"Alice","order":"o1"}`, 2_000},
		{"o2", `{"item":"coffee","name":"unknown","order":"o2"}`, 3_000},
		{"o3", `{"item":"water","name":"Alice Smith","order":"o3"}`, 5_000},
		{"o4", `{"item":"juice","name":"Bob","order":"o4"}`, 6_000},
		{"o5", `{"item":"milk","name":"unknown","order":"o5"}`, 8_000},
	})
	checkOutputs(t, read("by-region"), []out{
		{"o1", `{"item":"tea","region":"Europe"}`, 2_000},
		{"o2", `{"item":"coffee","region":null}`, 3_000},
		{"o3", `{"item":"water","region":null}`, 5_000},
		{"o4", `{"item":"juice","region":"Europe"}`, 6_000},
		{"o5", `{"item":"milk","region":"Europe"}`, 8_000},
	})
}

// A key or joiner expression that fails on a record fails that record,
// naming the expression, whether the key is computed by the join's own
// key selector or by the processor before it.
func TestGlobalJoinEvalErrors(t *testing.T) {
	for _, tc := range []struct {
		name, step, want string
	}{
		{"key", `{with: g, key: "value.n / 0 > 1 ? key : key", joiner: left}`, `join-global) key "value.n / 0 > 1 ? key : key"`},
		{"key-with-timestamp", `{with: g, key: "timestamp / value.n", joiner: left}`, `join-global) key "timestamp / value.n"`},
		{"joiner", `{with: g, key: key, joiner: "left.n * right"}`, `join-global) joiner "left.n * right"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "application-id: e\nglobal-tables:\n  g: {topic: g}\nsources:\n  s: {topic: s}\npipelines:\n  p:\n    from: s\n    steps:\n      - join-global: " + tc.step + "\n      - to: out\n"
			f, err := Parse("e.yaml", []byte(src), ".")
			if err != nil {
				t.Fatal(err)
			}
			d, err := newDriver(f)
			if err != nil {
				t.Fatal(err)
			}
			defer d.close()
			if err := d.pipe("g", "k", `"x"`, 1); err != nil {
				t.Fatal(err)
			}
			err = d.pipe("s", "k", `{"n":"a"}`, 2)
			var ee *EvalError
			if !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an EvalError for %s", err, tc.want)
			}
		})
	}
}
