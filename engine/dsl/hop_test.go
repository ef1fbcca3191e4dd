package dsl_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/testdriver"
)

// tracedSerde is a String serde that refuses "bad" to encode and
// "undecodable" to decode, and counts its calls, and those made through a
// hop or an entry (package engine/internal/hop), so that a test knows
// which path a record took and that a typed edge calls the serde as the
// erased path would have.
type tracedSerde struct{ c *serdeCalls }

type serdeCalls struct{ encode, hopped, decode, entered int }

func (s tracedSerde) Name() string { return "traced" }

func (s tracedSerde) Serialize(_ string, v string) ([]byte, error) {
	s.c.encode++
	if calledFrom("/engine/internal/hop.ToSink") {
		s.c.hopped++
	}
	if v == "bad" {
		return nil, errors.New("bad is not written")
	}
	return []byte(v), nil
}

func (s tracedSerde) Deserialize(_ string, b []byte) (string, error) {
	s.c.decode++
	if calledFrom("/engine/internal/hop.(*entry") {
		s.c.entered++
	}
	if string(b) == "undecodable" {
		return "", errors.New("undecodable is not read")
	}
	return string(b), nil
}

// calledFrom says whether a function whose name contains fn is on the
// caller's stack.
func calledFrom(fn string) bool {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// null stands for a null key or value in the tests' inputs and outputs.
const null = "<null>"

func bytesOf(s string) []byte {
	if s == null {
		return nil
	}
	return []byte(s)
}

// typedEdges says which typed edges a run's topology allows: an entry
// from the source, a hop to the sink.
type typedEdges struct{ entry, hop bool }

func (e typedEdges) String() string { return fmt.Sprintf("entry=%v hop=%v", e.entry, e.hop) }

// TestTypedEdgesMatchErased runs each operation that offers typed edges
// through four topologies that differ only in which edges they allow.
// The entry is refused by a second child of the source (a Foreach that
// does nothing), the hop by a partitioner on the sink that always
// declines. All four must write the same records and fail the same way,
// with the same serde calls, under either processing handler, for keys
// and values that are null, empty, refused by the source's serde or the
// sink's, timestamps the default extractor rejects, and a custom
// extractor or watermark assigner that reads keys and values; with the String serde for keys (which a
// sink writes as they came) or another; the traced serdes prove which
// path each run took.
func TestTypedEdgesMatchErased(t *testing.T) {
	ops := []struct {
		name  string
		build func(s dsl.KStream[string, string], p dsl.Produced[string, string])
	}{
		{"mapValues", func(s dsl.KStream[string, string], p dsl.Produced[string, string]) {
			dsl.MapValues(s, func(k, v string) string { return strings.TrimSuffix(v, "!") }).To("out", p)
		}},
		{"map", func(s dsl.KStream[string, string], p dsl.Produced[string, string]) {
			dsl.Map(s, func(k, v string) (string, string) { return strings.TrimSuffix(v, "!"), k }).To("out", p)
		}},
		{"map keeping the key", func(s dsl.KStream[string, string], p dsl.Produced[string, string]) {
			dsl.Map(s, func(k, v string) (string, string) { return k, v + "." }).To("out", p)
		}},
		{"flatMapValues", func(s dsl.KStream[string, string], p dsl.Produced[string, string]) {
			dsl.FlatMapValues(s, func(k, v string) []string { return strings.Split(v, " ") }).To("out", p)
		}},
	}
	type in struct {
		key, value string
		ts         int64
	}
	inputs := [][]in{
		{{"a", "one", 1}, {"b", "two!", 2}, {"a", "three", 3}},
		{{"a", "x y z", 1}, {"b", "", 2}, {"", "empty key", 3}},
		{{null, "no key", 1}, {"a", null, 2}, {null, null, 3}},
		{{"a", "one", 1}, {"b", "bad", 2}, {"c", "three", 3}},              // a value the sink refuses
		{{"a", "x bad z", 1}, {"b", "two", 2}},                             // refused mid-way through a flat map
		{{"bad", "one", 1}, {"b", "bad!", 2}, {"c", "not bad", 3}},         // a key (or, for map, value) refused
		{{"a", "undecodable", 1}, {"undecodable", "b", 2}, {"c", "ok", 3}}, // the source cannot read
		{{"a", "late", -1}, {"b", "on time", 5}},                           // the extractor skips a negative timestamp
	}
	for _, op := range ops {
		for _, handler := range []string{"fail", "continue"} {
			for _, keys := range []string{"traced", "string"} {
				for _, stamps := range []string{"record", "extracted", "assigned"} {
					for i, rows := range inputs {
						t.Run(fmt.Sprintf("%s/%s/%s-keys/%s/%d", op.name, handler, keys, stamps, i), func(t *testing.T) {
							var base string
							for _, edges := range []typedEdges{{false, false}, {true, false}, {false, true}, {true, true}} {
								var c serdeCalls
								b := dsl.NewBuilder()
								ts := tracedSerde{&c}
								// With the String serde on both sides a key the
								// operation keeps is written as it came (passed).
								var ks serde.Serde[string] = ts
								if keys == "string" {
									ks = serde.String()
								}
								p := dsl.ProducedWith(ks, serde.Serde[string](ts)).WithName("sink")
								if !edges.hop {
									p = p.WithPartitioner(func(string, string, string, int32) (int32, bool) { return 0, false })
								}
								consumed := dsl.ConsumedWith(ks, serde.Serde[string](ts)).WithName("source")
								switch stamps {
								case "extracted":
									consumed = consumed.WithTimestampExtractor(keyValueStamps{})
								case "assigned":
									consumed = consumed.WithWatermarkStrategy(watermark.ForMonotonousTimestamps().WithTimestampAssigner(
										func(key, value any, ts int64) (int64, error) {
											return keyValueStamps{}.Extract(topology.ConsumedRecord{Key: key, Value: value, Timestamp: ts}, 0)
										}))
								}
								src := dsl.Stream(b, consumed, "in")
								if !edges.entry {
									src.Foreach(func(string, string) {})
								}
								op.build(src, p)
								d := run(t, b, map[string]string{"processing.exception.handler": handler, "default.deserialization.exception.handler": handler})
								var got []string
								for _, r := range rows {
									if err := d.PipeRaw("in", testdriver.RawRecord{Key: bytesOf(r.key), Value: bytesOf(r.value), Timestamp: r.ts}); err != nil {
										got = append(got, "error: "+err.Error())
									}
								}
								for _, r := range d.ReadRaw("out") {
									k, v := null, null
									if r.Key != nil {
										k = string(r.Key)
									}
									if r.Value != nil {
										v = string(r.Value)
									}
									got = append(got, fmt.Sprintf("%s=%s@%d", k, v, r.Timestamp))
								}
								if edges.hop != (c.hopped > 0) {
									t.Errorf("%v: %d values were encoded through a hop", edges, c.hopped)
								}
								if edges.entry != (c.entered > 0) {
									t.Errorf("%v: %d keys and values were decoded through an entry", edges, c.entered)
								}
								run := fmt.Sprintf("%q; encoded %d, decoded %d", got, c.encode, c.decode)
								if base == "" {
									base = run
								} else if run != base {
									t.Errorf("%v differs from the erased path:\n got %s\nwant %s", edges, run, base)
								}
							}
						})
					}
				}
			}
		}
	}
}

// keyValueStamps is a timestamp extractor that reads the key and the
// value as the erased path has them: a record without a key is stamped 7,
// one without a value 9, any other its timestamp plus its value's length.
type keyValueStamps struct{}

func (keyValueStamps) Name() string { return "key-value" }

func (keyValueStamps) Extract(rec topology.ConsumedRecord, _ int64) (int64, error) {
	switch {
	case rec.Key == nil:
		return 7, nil
	case rec.Value == nil:
		return 9, nil
	}
	v, ok := rec.Value.(string)
	if !ok {
		return 0, fmt.Errorf("value is a %T", rec.Value)
	}
	return rec.Timestamp + int64(len(v)), nil
}

// TestHopNotTaken lists the sinks a hop must not reach: where a value's
// static type does not say what the sink's serde gets, and where the
// sink needs the record's values.
func TestHopNotTaken(t *testing.T) {
	tests := []struct {
		name  string
		build func(s dsl.KStream[string, string], ts tracedSerde)
	}{
		{"interface value type", func(s dsl.KStream[string, string], ts tracedSerde) {
			dsl.MapValues(s, func(k, v string) any { return v }).To("out", dsl.ProducedWith[string, any](ts, erasedAny{ts}))
		}},
		{"topic chooser", func(s dsl.KStream[string, string], ts tracedSerde) {
			dsl.MapValues(s, func(k, v string) string { return v }).ToChooser(
				func(string, string, topology.RecordContext) string { return "out" }, dsl.ProducedWith[string, string](ts, ts))
		}},
		{"a second child", func(s dsl.KStream[string, string], ts tracedSerde) {
			m := dsl.MapValues(s, func(k, v string) string { return v })
			m.To("out", dsl.ProducedWith[string, string](ts, ts))
			m.Foreach(func(string, string) {})
		}},
		{"no sink", func(s dsl.KStream[string, string], ts tracedSerde) {
			dsl.MapValues(s, func(k, v string) string { return v }).Filter(func(string, string) bool { return true }).
				To("out", dsl.ProducedWith[string, string](ts, ts))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c serdeCalls
			b := dsl.NewBuilder()
			tc.build(dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in"), tracedSerde{&c})
			d := run(t, b, map[string]string{})
			if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}); err != nil {
				t.Fatal(err)
			}
			if got := d.ReadRaw("out"); len(got) != 1 || string(got[0].Value) != "v" {
				t.Fatalf("out = %v, want one record k=v", got)
			}
			if c.hopped != 0 {
				t.Errorf("%d values took a hop", c.hopped)
			}
		})
	}
}

// erasedAny is a Serde[any] over a String serde: values of an interface
// type, which a hop does not take.
type erasedAny struct{ s tracedSerde }

func (e erasedAny) Name() string { return "any" }
func (e erasedAny) Serialize(topic string, v any) ([]byte, error) {
	return e.s.Serialize(topic, v.(string))
}
func (e erasedAny) Deserialize(topic string, b []byte) (any, error) { return e.s.Deserialize(topic, b) }
