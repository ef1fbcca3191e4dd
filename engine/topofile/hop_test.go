package topofile

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/testdriver"
)

// TestSinkHopMatchesForward runs each case three ways: with the step's
// result read by the sink alone, which the step then writes to itself
// (sinkHop), taking its records from the source through an entry where it
// can (stringEntry); with the source read by a second pipeline, which
// takes the entry away; and with the step's result read by a second
// pipeline too, which makes the step forward to the sink node. All must
// write the same records and fail the same records with the same errors,
// under both processing handlers.
func TestSinkHopMatchesForward(t *testing.T) {
	type rec struct {
		key, value []byte
		ts         int64
		headers    processor.Headers
	}
	h := processor.Headers{{Key: "h", Value: []byte("1")}}
	inputs := []rec{
		{[]byte("a"), []byte("x"), 1, h},
		{nil, []byte("y"), 2, nil},            // a null key
		{[]byte("b"), nil, 3, nil},            // a null value
		{[]byte("c"), []byte("half"), 4, nil}, // a value the long serde refuses
		{[]byte("d"), []byte(""), 5, h},       // an empty value
		{[]byte("e"), []byte("zz"), 6, nil},   // after a failure
	}
	for _, tc := range []struct{ name, steps, key, value string }{
		{"upper", `[{map-values: {expr: 'upper(value ?? "none")', value-serde: string}}]`, "string", "string"},
		// A fast path of string result, written unboxed (sendString).
		{"upper-fast", `[{map-values: {expr: 'key + ":" + upper(value)', value-serde: string}}]`, "string", "string"},
		{"long", `[{map-values: {expr: 'value == "half" ? 0.5 : len(value ?? "")', value-serde: long}}]`, "string", "long"},
		{"filter", `[{filter: 'value != "y"'}]`, "string", "string"},
		{"flat", `[{flat-map-values: {expr: '[value, value + "!"]', value-serde: string}}]`, "string", "string"},
		// The step's sink is a repartition's boundary.
		{"repartition", `[{map-values: {expr: 'upper(value)', value-serde: string}}, {repartition: {key-serde: string, value-serde: string}}]`, "string", "string"},
		{"bytes-key", `[{map-values: {expr: 'value', value-serde: bytes}}]`, "bytes", "bytes"},
	} {
		for _, handler := range []string{"fail", "continue"} {
			t.Run(tc.name+"/"+handler, func(t *testing.T) {
				run := func(other string) (outs []testdriver.TestRecord[[]byte, []byte], errs []string) {
					if other != "" {
						other = "\n  other: {from: " + other + ", steps: [{filter: 'false'}]}"
					}
					src := fmt.Sprintf(`application-id: hop
config: {processing.exception.handler: %s}
sources:
  in: {topic: in, key-serde: %s, value-serde: string}
pipelines:
  p: {from: in, steps: %s}
  w: {from: p, steps: [{to: {topic: out, key-serde: %s, value-serde: %s}}]}%s
`, handler, tc.key, tc.steps, tc.key, tc.value, other)
					f, err := Parse("hop.yaml", []byte(src), ".")
					if err != nil {
						t.Fatal(err)
					}
					d, err := testdriver.New(f.Topology, f.Config)
					if err != nil {
						t.Fatal(err)
					}
					defer d.Close()
					in := testdriver.CreateInputTopic(d, "in", serde.Bytes(), serde.Bytes())
					for _, r := range inputs {
						err := in.PipeRecord(testdriver.TestRecord[[]byte, []byte]{Key: r.key, Value: r.value, Timestamp: r.ts, Headers: r.headers, KeyNull: r.key == nil, ValueNull: r.value == nil})
						errs = append(errs, fmt.Sprint(err))
					}
					outs, err = testdriver.CreateOutputTopic(d, "out", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
					if err != nil {
						t.Fatal(err)
					}
					return outs, errs
				}
				hopOuts, hopErrs := run("")
				if len(hopOuts) == 0 {
					t.Fatal("no output")
				}
				for _, other := range []string{"in", "p"} {
					outs, errs := run(other)
					if !reflect.DeepEqual(hopOuts, outs) {
						t.Errorf("outputs differ (second reader of %s):\nhop   %v\nother %v", other, hopOuts, outs)
					}
					if !reflect.DeepEqual(hopErrs, errs) {
						t.Errorf("errors differ (second reader of %s):\nhop   %q\nother %q", other, hopErrs, errs)
					}
				}
			})
		}
	}
}
