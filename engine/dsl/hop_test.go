package dsl_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/testdriver"
)

// tracedSerde is a String serde that refuses "bad" (as a key or a
// value) and counts its calls, and those made from a hop (package
// engine/internal/hop), so that a test knows which path wrote a record
// and that a hop encodes no more than the sink would have.
type tracedSerde struct{ calls, hopped *int }

func (s tracedSerde) Name() string { return "traced" }

func (s tracedSerde) Serialize(_ string, v string) ([]byte, error) {
	*s.calls++
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "/engine/internal/hop.ToSink") {
			*s.hopped++
			break
		}
		if !more {
			break
		}
	}
	if v == "bad" {
		return nil, errors.New("bad is not written")
	}
	return []byte(v), nil
}

func (s tracedSerde) Deserialize(_ string, b []byte) (string, error) { return string(b), nil }

// TestHopMatchesForward runs each operation that writes through a hop
// twice: to a plain sink, which its records take the hop to, and to the
// same sink with a partitioner that always declines, which makes the sink
// not plain and the records forwarded. Both must write the same records
// and fail the same way, under either processing handler; the traced
// serde proves which path each run took.
func TestHopMatchesForward(t *testing.T) {
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
		{"flatMapValues", func(s dsl.KStream[string, string], p dsl.Produced[string, string]) {
			dsl.FlatMapValues(s, func(k, v string) []string { return strings.Split(v, " ") }).To("out", p)
		}},
	}
	inputs := [][]kv{
		{{"a", "one"}, {"b", "two!"}, {"a", "three"}},
		{{"a", "x y z"}, {"b", ""}},
		{{"a", "one"}, {"b", "bad"}, {"c", "three"}},      // a value the serde refuses
		{{"a", "x bad z"}, {"b", "two"}},                  // refused mid-way through a flat map
		{{"bad", "one"}, {"b", "bad!"}, {"c", "not bad"}}, // a refused key (or, for map, value)
		{{"a", ""}, {"", "empty key"}, {"b", "bad bad"}},  // empty strings
	}
	for _, op := range ops {
		for _, handler := range []string{"fail", "continue"} {
			for i, in := range inputs {
				t.Run(fmt.Sprintf("%s/%s/%d", op.name, handler, i), func(t *testing.T) {
					hopOut, hopErrs, hopCalls, hopped := runTraced(t, op.build, false, handler, in)
					fwdOut, fwdErrs, fwdCalls, forwardedHopped := runTraced(t, op.build, true, handler, in)
					if hopped == 0 {
						t.Errorf("no record took the hop to the plain sink")
					}
					if forwardedHopped != 0 {
						t.Errorf("%d records took a hop to a sink with a partitioner", forwardedHopped)
					}
					if !slices.Equal(hopOut, fwdOut) {
						t.Errorf("outputs differ:\nhop:     %q\nforward: %q", hopOut, fwdOut)
					}
					if hopCalls != fwdCalls {
						t.Errorf("the serde was called %d times through the hop, %d when forwarded", hopCalls, fwdCalls)
					}
					if !slices.Equal(hopErrs, fwdErrs) {
						t.Errorf("errors differ:\nhop:     %q\nforward: %q", hopErrs, fwdErrs)
					}
				})
			}
		}
	}
}

// runTraced pipes in through op's topology and returns what out holds
// (key=value@timestamp), the pipe errors, how many keys and values the
// sink's serde encoded and how many of those values a hop encoded.
// declining adds the partitioner that declines every record.
func runTraced(t *testing.T, op func(dsl.KStream[string, string], dsl.Produced[string, string]), declining bool, handler string, in []kv) (out, errs []string, calls, hopped int) {
	t.Helper()
	ts := tracedSerde{calls: &calls, hopped: &hopped}
	b := dsl.NewBuilder()
	p := dsl.ProducedWith[string, string](ts, ts).WithName("sink")
	if declining {
		p = p.WithPartitioner(func(string, string, string, int32) (int32, bool) { return 0, false })
	}
	op(dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in"), p)
	d := run(t, b, map[string]string{"processing.exception.handler": handler})
	for i, r := range in {
		if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte(r.Key), Value: []byte(r.Value), Timestamp: int64(100 + i)}); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, r := range d.ReadRaw("out") {
		out = append(out, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	return out, errs, calls, hopped
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
			var calls, hopped int
			b := dsl.NewBuilder()
			tc.build(dsl.Stream(b, dsl.ConsumedWith(serde.String(), serde.String()), "in"), tracedSerde{calls: &calls, hopped: &hopped})
			d := run(t, b, map[string]string{})
			if err := d.PipeRaw("in", testdriver.RawRecord{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}); err != nil {
				t.Fatal(err)
			}
			if got := d.ReadRaw("out"); len(got) != 1 || string(got[0].Value) != "v" {
				t.Fatalf("out = %v, want one record k=v", got)
			}
			if hopped != 0 {
				t.Errorf("%d values took a hop", hopped)
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
