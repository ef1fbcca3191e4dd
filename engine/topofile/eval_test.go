package topofile

import (
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// TestEvaluatorReuse runs steps whose processors evaluate record after
// record with one evaluator each (a VM and an environment refilled in
// place, holding only the names the step's programs read): every record
// must see its own values, whatever the names read, a failed record
// before it, or several programs sharing the environment.
func TestEvaluatorReuse(t *testing.T) {
	in := []input{
		{"in", "a", "1", 1_000},
		{"in", "b", "x", 2_000},
		{"in", "c", "3", 61_000},
		{"in", "a", "4", 62_000},
	}
	for _, tc := range []struct {
		name   string
		config string
		steps  string
		cd     codec
		want   []out
	}{{
		// $env is the environment whole: it must hold every name, though
		// no identifier names one.
		name:  "env-whole",
		steps: `[{map-values: {expr: '$env.key + "/" + $env.value + "/" + string($env.timestamp)', value-serde: string}}]`,
		cd:    codec{"string", "string"},
		want:  []out{{"a", "a/1/1000", 1_000}, {"b", "b/x/2000", 2_000}, {"c", "c/3/61000", 61_000}, {"a", "a/4/62000", 62_000}},
	}, {
		// A record that fails leaves the evaluator as it found it.
		name:   "after-a-failure",
		config: "config: {processing.exception.handler: continue}",
		steps:  `[{map-values: {expr: 'int(value) * 2', value-serde: long}}]`,
		cd:     codec{"string", "long"},
		want:   []out{{"a", "2", 1_000}, {"c", "6", 61_000}, {"a", "8", 62_000}},
	}, {
		// The key and the value program share one environment: it holds
		// what either reads.
		name:  "map-reads-both",
		steps: `[{map: {key: value, value: 'key + string(timestamp)', key-serde: string, value-serde: string}}]`,
		cd:    codec{"string", "string"},
		want:  []out{{"1", "a1000", 1_000}, {"x", "b2000", 2_000}, {"3", "c61000", 61_000}, {"4", "a62000", 62_000}},
	}, {
		// Split's predicates share one environment; each branch reads
		// another name.
		name: "split",
		steps: `
      - split:
          branches:
            - {name: by-key, when: 'key == "b"', steps: [{map-values: {expr: '"key " + value', value-serde: string}}, {to: {topic: out, value-serde: string}}]}
            - {name: by-time, when: 'timestamp > 60000', steps: [{map-values: {expr: '"late " + value', value-serde: string}}, {to: {topic: out, value-serde: string}}]}
            - {steps: [{to: {topic: out, value-serde: string}}]}`,
		cd:   codec{"string", "string"},
		want: []out{{"a", "1", 1_000}, {"b", "key x", 2_000}, {"c", "late 3", 61_000}, {"a", "late 4", 62_000}},
	}, {
		// A windowed key's window is a fresh map every record.
		name: "window",
		steps: `
      - group-by-key
      - window: {type: tumbling, size: 1m}
      - count
      - to-stream
      - map: {key: 'key + "@" + string(window.start)', value: 'window', key-serde: string, value-serde: json}
      - to: {topic: out}`,
		cd:   codec{"string", "string"},
		want: []out{{"a@0", `{"end":60000,"start":0}`, 1_000}, {"b@0", `{"end":60000,"start":0}`, 2_000}, {"c@60000", `{"end":120000,"start":60000}`, 61_000}, {"a@60000", `{"end":120000,"start":60000}`, 62_000}},
	}, {
		// A program that reads the window but not the key.
		name: "window-only",
		steps: `
      - group-by-key
      - window: {type: tumbling, size: 1m}
      - count
      - to-stream
      - map-values: {expr: 'window.end', value-serde: long}
      - to: {topic: out}`,
		cd:   codec{"windowed", "long"},
		want: []out{{"a@0", "60000", 1_000}, {"b@0", "60000", 2_000}, {"c@60000", "120000", 61_000}, {"a@60000", "120000", 62_000}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			steps := tc.steps
			if steps[0] == '[' {
				steps = " " + steps[:len(steps)-1] + ", {to: {topic: out}}]"
			}
			src := "application-id: eval\n" + tc.config + `
sources:
  in: {topic: in, key-serde: string, value-serde: string}
pipelines:
  p:
    from: in
    steps:` + steps + "\n"
			f, err := Parse("eval.yaml", []byte(src), ".")
			if err != nil {
				t.Fatal(err)
			}
			checkOutputs(t, runFile(t, f, in, 0, "out", tc.cd), tc.want)
		})
	}
}

// TestStringSerdeIsString: a file's string serde lets the sink write a
// source's String key as the bytes it came with; no other serde does.
func TestStringSerdeIsString(t *testing.T) {
	for name, want := range map[string]bool{"string": true, "uuid": false, "bytes": false, "long": false, "json": false} {
		info, err := namedSerde(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := serde.IsString(info.serde); got != want {
			t.Errorf("serde.IsString(%s) = %v, want %v", name, got, want)
		}
	}
}
