package topofile

import (
	"github.com/expr-lang/expr/types"
	"reflect"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/window"
)

// A flow is what a name in a file stands for, and what a step reads and
// yields: a stream, a table, a grouping, a windowed grouping. Values are
// always typed any in the DSL; keys are any, or window.Windowed[any] after
// a windowed aggregation, which is why the stream and table flows are
// generic in K. Operations that only make sense on plain keys (windowing,
// joins) take the any instantiation and refuse the other with a message.
type flow interface {
	kind() string
	meta() *flowInfo
}

// flowInfo is what the compiler knows about a flow's records: the serdes
// they are written with and the static types expressions check against.
type flowInfo struct {
	// keySerde is the key's serde, the key inside the window for windowed
	// keys. Never nil: unknown serdes are the file's defaults.
	keySerde, valueSerde *dynSerde
	keyType, valueType   types.Type
	// win is set when keys are windowed.
	win *winInfo
}

// winInfo is what the windowed-key serdes need: Kafka Streams writes time
// windows as key and start (the end follows from the size), sessions as
// key, end and start.
type winInfo struct {
	session bool
	size    int64
}

// keySerdeFor returns the serde of keys of type K: the plain key serde, or
// the windowed serde over it. K is always any or window.Windowed[any].
func keySerdeFor[K any](i *flowInfo) serde.Serde[K] {
	var s any = serde.Serde[any](i.keySerde)
	if i.win != nil {
		if i.win.session {
			s = window.SessionWindowedSerde[any](i.keySerde)
		} else {
			s = window.TimeWindowedSerde[any](i.keySerde, i.win.size)
		}
	}
	ks, _ := s.(serde.Serde[K])
	return ks
}

// Record functions: what a step computes from a record. A nil result list
// drops the record.
type (
	valuesFn func(key, value any, ts int64, h processor.Headers) ([]any, error)
	kvFn     func(key, value any, ts int64, h processor.Headers) ([]keyValue, error)
)

type keyValue struct{ key, value any }

// anyStream is a stream flow, whatever its key type.
type anyStream interface {
	flow
	values(name string, fn valuesFn) anyStream
	keyValues(name string, fn kvFn, info flowInfo) *streamFlow[any]
	split(splitter string, children []string, choose func(key, value any, ts int64, h processor.Headers) (int, error)) []anyStream
	merge(other anyStream, name string) (anyStream, bool)
	repartition(name string, partitions int32, info flowInfo) anyStream
	to(topic, name string, key, value *dynSerde)
	groupByKey(name string, info flowInfo) anyGrouped
}

type streamFlow[K any] struct {
	s    dsl.KStream[K, any]
	info flowInfo
}

func (s *streamFlow[K]) kind() string    { return "a stream" }
func (s *streamFlow[K]) meta() *flowInfo { return &s.info }
func (s *streamFlow[K]) derive(ns dsl.KStream[K, any]) *streamFlow[K] {
	return &streamFlow[K]{s: ns, info: s.info}
}

func (s *streamFlow[K]) values(name string, fn valuesFn) anyStream {
	ns := dsl.ProcessValues(s.s, func() processor.FixedKeyProcessor[K, any, any] { return &valuesProc[K]{fn: fn} }, dsl.Name(name))
	return s.derive(ns)
}

func (s *streamFlow[K]) keyValues(name string, fn kvFn, info flowInfo) *streamFlow[any] {
	ns := dsl.Process(s.s, func() processor.Processor[K, any, any, any] { return &kvProc[K]{fn: fn} }, dsl.Name(name))
	return &streamFlow[any]{s: ns, info: info}
}

func (s *streamFlow[K]) split(splitter string, children []string, choose func(key, value any, ts int64, h processor.Headers) (int, error)) []anyStream {
	sp := dsl.ProcessValues(s.s, func() processor.FixedKeyProcessor[K, any, any] {
		return &splitProc[K]{children: children, choose: choose}
	}, dsl.Name(splitter))
	out := make([]anyStream, len(children))
	for i, child := range children {
		ns := dsl.ProcessValues(sp, func() processor.FixedKeyProcessor[K, any, any] {
			return &valuesProc[K]{fn: func(_, v any, _ int64, _ processor.Headers) ([]any, error) { return []any{v}, nil }}
		}, dsl.Name(child))
		out[i] = s.derive(ns)
	}
	return out
}

func (s *streamFlow[K]) merge(other anyStream, name string) (anyStream, bool) {
	o, ok := other.(*streamFlow[K])
	if !ok {
		return nil, false
	}
	out := s.derive(s.s.Merge(o.s, named(name)...))
	if o.info.valueSerde.Name() != s.info.valueSerde.Name() {
		out.info.valueType = types.Any
	}
	return out, true
}

func (s *streamFlow[K]) repartition(name string, partitions int32, info flowInfo) anyStream {
	r := dsl.RepartitionedWith(keySerdeFor[K](&info), serde.Serde[any](info.valueSerde)).WithName(name).WithNumberOfPartitions(partitions)
	return &streamFlow[K]{s: s.s.Repartition(r), info: info}
}

func (s *streamFlow[K]) to(topic, name string, key, value *dynSerde) {
	info := s.info
	info.keySerde, info.valueSerde = key, value
	s.s.To(topic, dsl.ProducedWith(keySerdeFor[K](&info), serde.Serde[any](value)).WithName(name))
}

func (s *streamFlow[K]) groupByKey(name string, info flowInfo) anyGrouped {
	g := dsl.GroupedWith(keySerdeFor[K](&info), serde.Serde[any](info.valueSerde)).WithName(name)
	return &groupedFlow[K]{g: s.s.GroupByKey(g), info: info}
}

// anyGrouped is a grouped stream flow, whatever its key type.
type anyGrouped interface {
	flow
	aggregate(init func() any, adder func(key, value, agg any) any, store storeSpec, values *dynSerde) anyTable
	reduce(reducer func(agg, value any) any, store storeSpec, values *dynSerde) anyTable
}

type groupedFlow[K any] struct {
	g    dsl.KGroupedStream[K, any]
	info flowInfo
}

func (g *groupedFlow[K]) kind() string    { return "a grouped stream" }
func (g *groupedFlow[K]) meta() *flowInfo { return &g.info }

// valueTypeOf is the type expressions see for values an aggregation's
// serde holds: what the serde reads (int64 for a count's long), or any
// for serdes of dynamic shapes. The input's value type no longer applies:
// a filter after a count compares numbers, not the strings counted.
func valueTypeOf(values *dynSerde) types.Type {
	if values != nil && values.goType != nil {
		return types.TypeOf(reflect.Zero(values.goType).Interface())
	}
	return types.Any
}

func materialized[K any](info *flowInfo, store storeSpec, values *dynSerde) dsl.Materialized[K, any] {
	return materializedAs[K](store).WithKeySerde(keySerdeFor[K](info)).WithValueSerde(values)
}

func (g *groupedFlow[K]) aggregate(init func() any, adder func(key, value, agg any) any, store storeSpec, values *dynSerde) anyTable {
	t := dsl.Aggregate(g.g, init, func(k K, v, agg any) any { return adder(k, v, agg) }, materialized[K](&g.info, store, values))
	info := g.info
	info.valueSerde, info.valueType = values, valueTypeOf(values)
	return &tableFlow[K]{t: t, info: info}
}

func (g *groupedFlow[K]) reduce(reducer func(agg, value any) any, store storeSpec, values *dynSerde) anyTable {
	t := g.g.Reduce(reducer, materialized[K](&g.info, store, values))
	info := g.info
	info.valueSerde, info.valueType = values, valueTypeOf(values)
	return &tableFlow[K]{t: t, info: info}
}

// windowedFlow is a grouped stream with windows, plain keys only.
type windowedFlow struct {
	time    *dsl.TimeWindowedKStream[any, any]
	session *dsl.SessionWindowedKStream[any, any]
	win     winInfo
	info    flowInfo
}

func (w *windowedFlow) kind() string    { return "a windowed grouped stream" }
func (w *windowedFlow) meta() *flowInfo { return &w.info }

// aggregate folds a windowed grouping; merger is for sessions.
func (w *windowedFlow) aggregate(init func() any, adder func(key, value, agg any) any, merger func(key, agg, other any) any, store storeSpec, values *dynSerde) anyTable {
	m := materialized[any](&w.info, store, values)
	var t dsl.KTable[window.Windowed[any], any]
	if w.session != nil {
		t = dsl.AggregateSession(*w.session, init, adder, merger, m)
	} else {
		t = dsl.AggregateWindowed(*w.time, init, adder, m)
	}
	return w.result(t, values)
}

func (w *windowedFlow) reduce(reducer func(agg, value any) any, store storeSpec, values *dynSerde) anyTable {
	m := materialized[any](&w.info, store, values)
	var t dsl.KTable[window.Windowed[any], any]
	if w.session != nil {
		t = dsl.ReduceSession(*w.session, reducer, m)
	} else {
		t = dsl.ReduceWindowed(*w.time, reducer, m)
	}
	return w.result(t, values)
}

func (w *windowedFlow) result(t dsl.KTable[window.Windowed[any], any], values *dynSerde) anyTable {
	info := w.info
	info.valueSerde, info.valueType = values, valueTypeOf(values)
	win := w.win
	info.win = &win
	return &tableFlow[window.Windowed[any]]{t: t, info: info}
}

// groupedTableFlow is a table grouped by a new key, plain keys only.
type groupedTableFlow struct {
	g    dsl.KGroupedTable[any, any]
	info flowInfo
}

func (g *groupedTableFlow) kind() string    { return "a grouped table" }
func (g *groupedTableFlow) meta() *flowInfo { return &g.info }

func (g *groupedTableFlow) aggregate(init func() any, adder, subtractor func(key, value, agg any) any, store storeSpec, values *dynSerde) anyTable {
	t := dsl.AggregateTable(g.g, init, adder, subtractor, materialized[any](&g.info, store, values))
	info := g.info
	info.valueSerde, info.valueType = values, valueTypeOf(values)
	return &tableFlow[any]{t: t, info: info}
}

func (g *groupedTableFlow) reduce(adder, subtractor func(agg, value any) any, store storeSpec, values *dynSerde) anyTable {
	t := g.g.Reduce(adder, subtractor, materialized[any](&g.info, store, values))
	info := g.info
	info.valueSerde, info.valueType = values, valueTypeOf(values)
	return &tableFlow[any]{t: t, info: info}
}

// anyTable is a table flow, whatever its key type.
type anyTable interface {
	flow
	filter(name string, pred func(key, value any) bool, not bool) anyTable
	mapValues(name string, fn func(key, value any) any, info flowInfo) anyTable
	toStream(name string) anyStream
	suppress(s dsl.Suppressed, name, at string, barrier bool) anyTable
}

type tableFlow[K any] struct {
	t    dsl.KTable[K, any]
	info flowInfo
	// noLookup, when set, is the step that makes the table impossible to
	// look up, so to join: a suppress until the barrier, whose buffer
	// lives in memory only. Filter and map-values carry it on.
	noLookup string
}

func (t *tableFlow[K]) kind() string    { return "a table" }
func (t *tableFlow[K]) meta() *flowInfo { return &t.info }

// named and tableOpts are the options naming a node, none for "": the
// DSL then generates the name.
func named(name string) []dsl.Named {
	if name == "" {
		return nil
	}
	return []dsl.Named{dsl.Name(name)}
}

func tableOpts(name string) []dsl.TableOption {
	if name == "" {
		return nil
	}
	return []dsl.TableOption{dsl.Name(name)}
}

func (t *tableFlow[K]) filter(name string, pred func(key, value any) bool, not bool) anyTable {
	p := func(k K, v any) bool { return pred(k, v) }
	if not {
		return &tableFlow[K]{t: t.t.FilterNot(p, tableOpts(name)...), info: t.info, noLookup: t.noLookup}
	}
	return &tableFlow[K]{t: t.t.Filter(p, tableOpts(name)...), info: t.info, noLookup: t.noLookup}
}

func (t *tableFlow[K]) mapValues(name string, fn func(key, value any) any, info flowInfo) anyTable {
	nt := dsl.MapTableValues(t.t, func(k K, v any) any { return fn(k, v) }, tableOpts(name)...)
	return &tableFlow[K]{t: nt, info: info, noLookup: t.noLookup}
}

func (t *tableFlow[K]) toStream(name string) anyStream {
	return &streamFlow[K]{s: t.t.ToStream(named(name)...), info: t.info}
}

// suppress suppresses the table; at names the step, for a join that
// cannot read a table suppressed until the barrier.
func (t *tableFlow[K]) suppress(s dsl.Suppressed, name, at string, barrier bool) anyTable {
	out := &tableFlow[K]{t: t.t.Suppress(s, named(name)...), info: t.info, noLookup: t.noLookup}
	if barrier {
		out.noLookup = at
	}
	return out
}

// The processors behind the stream steps. They run the step's function
// with the whole record in hand, so expressions see timestamp and headers,
// and an expression that fails on a record fails that record through the
// processing error handler.

type valuesProc[K any] struct {
	ctx processor.FixedKeyContext[K, any]
	fn  valuesFn
}

func (p *valuesProc[K]) Init(ctx processor.FixedKeyContext[K, any]) error { p.ctx = ctx; return nil }
func (p *valuesProc[K]) Close() error                                     { return nil }

func (p *valuesProc[K]) Process(rec processor.Record[K, any]) error {
	if err := failed(rec.Value); err != nil {
		return err
	}
	outs, err := p.fn(rec.Key, rec.Value, rec.Timestamp, rec.Headers)
	if err != nil {
		return err
	}
	for _, v := range outs {
		out := rec
		out.Value = v
		p.ctx.Forward(out)
	}
	return nil
}

type kvProc[K any] struct {
	ctx processor.Context[any, any]
	fn  kvFn
}

func (p *kvProc[K]) Init(ctx processor.Context[any, any]) error { p.ctx = ctx; return nil }
func (p *kvProc[K]) Close() error                               { return nil }

func (p *kvProc[K]) Process(rec processor.Record[K, any]) error {
	if err := failed(rec.Value); err != nil {
		return err
	}
	outs, err := p.fn(rec.Key, rec.Value, rec.Timestamp, rec.Headers)
	if err != nil {
		return err
	}
	for _, kv := range outs {
		p.ctx.Forward(processor.Record[any, any]{Key: kv.key, Value: kv.value, Timestamp: rec.Timestamp, Headers: rec.Headers})
	}
	return nil
}

// splitProc hands each record to the first branch that takes it, as the
// DSL's Split does; choose returns -1 when none does.
type splitProc[K any] struct {
	ctx      processor.FixedKeyContext[K, any]
	children []string
	choose   func(key, value any, ts int64, h processor.Headers) (int, error)
}

func (p *splitProc[K]) Init(ctx processor.FixedKeyContext[K, any]) error { p.ctx = ctx; return nil }
func (p *splitProc[K]) Close() error                                     { return nil }

func (p *splitProc[K]) Process(rec processor.Record[K, any]) error {
	if err := failed(rec.Value); err != nil {
		return err
	}
	i, err := p.choose(rec.Key, rec.Value, rec.Timestamp, rec.Headers)
	if err != nil || i < 0 {
		return err
	}
	p.ctx.ForwardTo(rec, p.children[i])
	return nil
}
