package topofile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const head = "application-id: t\n"

// Each case compiles a topology, pipes its inputs (string keys, values as
// their bytes) and reads one output topic.
var compileCases = []struct {
	name   string
	yaml   string
	inputs []input
	// advance, when set, moves the watermark after the inputs.
	advance int64
	topic   string
	codec   codec
	want    []out
}{
	{
		name: "split-merge-map",
		yaml: head + `
sources:
  nums: {topic: nums, value-serde: json}
pipelines:
  p:
    from: nums
    steps:
      - split:
          branches:
            - {name: big, when: "value.n >= 10", steps: [{map-values: '{n: value.n, size: "big"}'}]}
            - {name: small, when: "value.n >= 0"}
            - {name: other}
  all:
    from: [p.big, p.small]
    steps:
      - filter-not: value.n == 5
      - map: {key: 'key + "-" + string(value.n)', value: value}
      - to: {topic: out, value-serde: json}
`,
		inputs: []input{{"nums", "a", `{"n":12}`, 1}, {"nums", "b", `{"n":5}`, 2}, {"nums", "c", `{"n":-1}`, 3}, {"nums", "d", `{"n":3}`, 4}},
		topic:  "out", codec: codec{"string", "json"},
		want: []out{{"a-12", `{"n":12,"size":"big"}`, 1}, {"d-3", `{"n":3}`, 4}},
	},
	{
		name: "timestamp-and-headers-in-scope",
		yaml: head + `
sources:
  in: {topic: in, value-serde: string}
pipelines:
  p:
    from: in
    steps:
      - filter: timestamp > 1000
      - map-values: 'value + "@" + string(timestamp) + (headers["trace"] ?? "")'
      - to: {topic: out, value-serde: string}
`,
		inputs: []input{{"in", "a", "x", 500}, {"in", "b", "y", 1500}},
		topic:  "out", codec: codec{"string", "string"},
		want: []out{{"b", "y@1500", 1500}},
	},
	{
		name: "select-key-flat-map-sum",
		yaml: head + `
sources:
  orders: {topic: orders, value-serde: json}
pipelines:
  totals:
    from: orders
    steps:
      - flat-map: 'map(value.items, [#.sku, #.qty])'
      - group-by-key: {value-serde: long}
      - sum: value
      - to-stream
      - to: {topic: out, value-serde: long}
`,
		inputs: []input{
			{"orders", "o1", `{"items":[{"sku":"x","qty":2},{"sku":"y","qty":1}]}`, 1},
			{"orders", "o2", `{"items":[{"sku":"x","qty":3}]}`, 2},
		},
		topic: "out", codec: codec{"string", "long"},
		want: []out{{"x", "2", 1}, {"y", "1", 1}, {"x", "5", 2}},
	},
	{
		name: "min-max-reduce",
		yaml: head + `
sources:
  temps: {topic: temps, value-serde: double}
pipelines:
  lows:
    from: temps
    steps:
      - group-by-key
      - min: value
      - to-stream
      - to: {topic: lows, value-serde: double}
  highs:
    from: temps
    steps:
      - group-by-key
      - reduce: 'agg > value ? agg : value'
      - to-stream
      - map-values: string(value)
      - to: {topic: out, value-serde: string}
`,
		inputs: []input{{"temps", "k", "\x40\x24\x00\x00\x00\x00\x00\x00", 1}, {"temps", "k", "\x40\x34\x00\x00\x00\x00\x00\x00", 2}, {"temps", "k", "\x40\x14\x00\x00\x00\x00\x00\x00", 3}},
		topic:  "out", codec: codec{"string", "string"},
		want: []out{{"k", "10", 1}, {"k", "20", 2}, {"k", "20", 3}},
	},
	{
		name: "hopping-window-count",
		yaml: head + `
sources:
  ev: {topic: ev}
pipelines:
  p:
    from: ev
    steps:
      - group-by-key
      - window: {type: hopping, size: 10s, advance: 5s, emit: on-window-close}
      - count
      - to-stream
      - to: {topic: out, value-serde: long}
`,
		inputs:  []input{{"ev", "k", "1", 1_000}, {"ev", "k", "1", 7_000}},
		advance: 60_000,
		topic:   "out", codec: codec{"windowed", "long"},
		want: []out{{"k@0", "2", 7_000}, {"k@5000", "1", 7_000}},
	},
	{
		name: "sliding-window-aggregate",
		yaml: head + `
sources:
  ev: {topic: ev, value-serde: long}
pipelines:
  p:
    from: ev
    steps:
      - group-by-key
      - window: {type: sliding, difference: 10s, grace: 0s, emit: on-window-close}
      - aggregate: {initializer: "0", adder: "agg + value", value-serde: long}
      - to-stream
      - map-values: 'string(window.start) + ".." + string(window.end) + "=" + string(value)'
      - to: {topic: out, key-serde: string, value-serde: string}
`,
		inputs:  []input{{"ev", "k", "\x00\x00\x00\x00\x00\x00\x00\x02", 20_000}, {"ev", "k", "\x00\x00\x00\x00\x00\x00\x00\x03", 25_000}},
		advance: 100_000,
		topic:   "out", codec: codec{"windowed", "string"},
		want: []out{{"k@10000", "10000..20000=2", 20_000}, {"k@15000", "15000..25000=5", 25_000}, {"k@20001", "20001..30001=3", 25_000}},
	},
	{
		name: "table-group-by-count",
		yaml: head + `
tables:
  users: {topic: users, value-serde: json, store: users}
pipelines:
  per-city:
    from: users
    steps:
      - group-by: {key: value.city, value: value.name}
      - count: {store: per-city}
      - to-stream
      - to: {topic: out, value-serde: long}
`,
		inputs: []input{{"users", "u1", `{"name":"a","city":"Oslo"}`, 1}, {"users", "u2", `{"name":"b","city":"Oslo"}`, 2}, {"users", "u1", `{"name":"a","city":"Rome"}`, 3}},
		topic:  "out", codec: codec{"string", "long"},
		want: []out{{"Oslo", "1", 1}, {"Oslo", "2", 2}, {"Oslo", "1", 3}, {"Rome", "1", 3}},
	},
	{
		name: "table-table-outer-join",
		yaml: head + `
tables:
  a: {topic: a, value-serde: string}
  b: {topic: b, value-serde: string}
pipelines:
  j:
    from: a
    steps:
      - outer-join: {with: b, joiner: '(left ?? "-") + "/" + (right ?? "-")'}
      - filter: value != "x/-"
      - to-stream
      - to: {topic: out, value-serde: string}
`,
		inputs: []input{{"a", "k", "x", 1}, {"b", "k", "y", 2}, {"b", "m", "z", 3}},
		topic:  "out", codec: codec{"string", "string"},
		// A table filter turns what it drops into a delete.
		want: []out{{"k", "null", 1}, {"k", "x/y", 2}, {"m", "-/z", 3}},
	},
	{
		name: "suppress-until-time-limit",
		yaml: head + `
sources:
  ev: {topic: ev}
pipelines:
  p:
    from: ev
    steps:
      - group-by-key
      - count
      - suppress: {until: time-limit, limit: 10s}
      - to-stream
      - to: {topic: out, value-serde: long}
`,
		inputs: []input{{"ev", "k", "1", 1_000}, {"ev", "k", "1", 2_000}, {"ev", "m", "1", 20_000}},
		topic:  "out", codec: codec{"string", "long"},
		want: []out{{"k", "2", 2_000}},
	},
	{
		// Kafka Streams' SuppressScenarioTest.shouldWorkBeforeJoinRight,
		// written as a file: the outer join reads the suppressed right
		// table through its buffer. The inputs are the test's, in order;
		// the output is every record it verifies, in order.
		name: "suppressed-table-join",
		yaml: head + `
tables:
  left: {topic: left, value-serde: string}
  right: {topic: right, value-serde: string}
pipelines:
  held:
    from: right
    steps:
      - suppress: {until: time-limit, limit: 10ms}
  j:
    from: left
    steps:
      - outer-join: {with: held, joiner: '"(" + (left ?? "null") + "," + (right ?? "null") + ")"', value-serde: string}
      - to-stream
      - to: {topic: out, value-serde: string}
`,
		inputs: []input{
			{"right", "B", "1", 0}, {"right", "A", "1", 0}, {"right", "tick", "tick", 10}, {"right", "A", "2", 11},
			{"left", "A", "a", 12}, {"left", "B", "b", 12}, {"left", "A", "b", 13}, {"right", "tick", "tick1", 21},
		},
		topic: "out", codec: codec{"string", "string"},
		want: []out{
			{"A", "(null,1)", 0}, {"B", "(null,1)", 0}, {"A", "(a,1)", 12}, {"B", "(b,1)", 12},
			{"A", "(b,1)", 13}, {"tick", "(null,tick1)", 21}, {"A", "(b,2)", 13},
		},
	},
	{
		// Kafka Streams' KTableKTableForeignKeyJoinIntegrationTest
		// .doJoinFromRightThenDeleteRightEntity (inner join), written as a
		// file, up to the delete (these inputs hold no nulls; the DSL's
		// tests and fixtures/order-customers delete); the output is every
		// record, in order.
		name: "foreign-key-join",
		yaml: head + `
tables:
  left: {topic: left, value-serde: string}
  right: {topic: right, value-serde: string}
pipelines:
  j:
    from: left
    steps:
      - join-foreign-key: {with: right, key: 'split(value, "|")[1]', joiner: '"(" + left + "," + right + ")"', value-serde: string}
      - to-stream
      - to: {topic: out, value-serde: string}
`,
		inputs: []input{
			{"left", "lhs1", "lhsValue1|rhs1", 0}, {"left", "lhs2", "lhsValue2|rhs2", 1}, {"left", "lhs3", "lhsValue3|rhs1", 2},
			{"right", "rhs1", "rhsValue1", 3}, {"right", "rhs2", "rhsValue2", 4}, {"right", "rhs3", "rhsValue3", 5},
		},
		topic: "out", codec: codec{"string", "string"},
		want: []out{
			{"lhs1", "(lhsValue1|rhs1,rhsValue1)", 3}, {"lhs3", "(lhsValue3|rhs1,rhsValue1)", 3},
			{"lhs2", "(lhsValue2|rhs2,rhsValue2)", 4},
		},
	},
	{
		name: "repartition-peek-values-serde-conversion",
		yaml: head + `
sources:
  in: {topic: in, value-serde: string}
pipelines:
  p:
    from: in
    steps:
      - select-key: value
      - repartition: {name: by-value, partitions: 2}
      - peek: key
      - map-values: len(value)
      - to: {topic: out, value-serde: long}
`,
		inputs: []input{{"in", "a", "hello", 1}},
		topic:  "out", codec: codec{"string", "long"},
		want: []out{{"hello", "5", 1}},
	},
}

func TestCompileAndRun(t *testing.T) {
	for _, tc := range compileCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.name+".yaml", []byte(tc.yaml), ".")
			if err != nil {
				t.Fatal(err)
			}
			got := runFile(t, f, tc.inputs, tc.advance, tc.topic, tc.codec)
			checkOutputs(t, got, tc.want)
		})
	}
}

// An expression that compiles but fails on a record fails the record,
// naming the expression and its position, instead of crashing or being
// dropped silently.
func TestEvalErrorFailsRecord(t *testing.T) {
	for _, steps := range []string{
		"- map-values: value.n / value.d\n      - to: out",
		"- group-by-key\n      - aggregate: {initializer: '0', adder: 'agg + value.n.m'}\n      - to-stream\n      - to: out",
	} {
		src := head + "sources:\n  in: {topic: in, value-serde: json}\npipelines:\n  p:\n    from: in\n    steps:\n      " + steps + "\n"
		f, err := Parse("eval.yaml", []byte(src), ".")
		if err != nil {
			t.Fatal(err)
		}
		d, err := newDriver(f)
		if err != nil {
			t.Fatal(err)
		}
		err = d.pipe("in", "k", `{"n":"x","d":0}`, 1)
		if err == nil || !strings.Contains(err.Error(), "eval.yaml:") {
			t.Errorf("steps %q: error %v, want one positioned in eval.yaml", steps, err)
		}
		d.close()
	}
}

func TestAvroSerde(t *testing.T) {
	dir := t.TempDir()
	schema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}`
	if err := os.WriteFile(filepath.Join(dir, "order.avsc"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	src := head + `
sources:
  in: {topic: in, value-serde: json}
pipelines:
  p:
    from: in
    steps:
      - to: {topic: out, value-serde: {type: avro, schema: order.avsc, schema-id: 7}}
`
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(filepath.Join(dir, "t.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := runFile(t, f, []input{{"in", "k", `{"id":"o1","amount":2.5}`, 1}}, 0, "out", codec{"string", "string"})
	if len(got) != 1 || !strings.HasPrefix(got[0].value, "\x00\x00\x00\x00\x07") {
		t.Fatalf("got %+v, want a record in the Confluent wire format with schema id 7", got)
	}
}

func TestResolve(t *testing.T) {
	f, err := Resolve("word-count", "")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Example || f.ApplicationID != "word-count" {
		t.Errorf("Resolve(word-count) = %+v, want the Go example", f)
	}
	f, err = Resolve("fixtures/word-count/topology.yaml", filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if f.Example {
		t.Error("Resolve of a .yaml path gave the Go example")
	}
	if _, err := Resolve("no-such-example", ""); err == nil {
		t.Error("Resolve of an unknown name succeeded")
	}
}
