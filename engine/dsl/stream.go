package dsl

import (
	"regexp"
	"slices"

	"github.com/stoatflow/stoatctl/engine/internal/hop"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// KStream is a stream of records: every record is an independent event.
// A KStream is a handle on the node whose output it is; operations add
// nodes after it.
type KStream[K, V any] struct {
	b    *Builder
	node string
	// Serdes known for the stream's records, nil when the defaults apply.
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	// rekeyed is set when an operation may have changed the key: the next
	// key-dependent operation inserts a boundary first.
	rekeyed bool
	// sources are the source nodes (or boundary sources) the stream's
	// records come from, for co-partitioning checks.
	sources []string
}

// Node is the name of the node whose output the stream is.
func (s KStream[K, V]) Node() string { return s.node }

// Builder is the builder the stream belongs to.
func (s KStream[K, V]) Builder() *Builder { return s.b }

// Stream reads topics as a stream.
func Stream[K, V any](b *Builder, consumed Consumed[K, V], topics ...string) KStream[K, V] {
	name := consumed.Name()
	if name == "" {
		name = b.t.GeneratedName(sourcePrefix)
	}
	b.t.AddSource(name, consumed.Spec(topics...))
	return KStream[K, V]{b: b, node: name, keySerde: consumed.KeySerde(), valueSerde: consumed.ValueSerde(), sources: []string{name}}
}

// StreamPattern reads every topic matching pattern as a stream.
func StreamPattern[K, V any](b *Builder, consumed Consumed[K, V], pattern *regexp.Regexp) KStream[K, V] {
	name := consumed.Name()
	if name == "" {
		name = b.t.GeneratedName(sourcePrefix)
	}
	b.t.AddSourcePattern(name, consumed.Spec(), pattern)
	return KStream[K, V]{b: b, node: name, keySerde: consumed.KeySerde(), valueSerde: consumed.ValueSerde(), sources: []string{name}}
}

// derive returns a stream of the same types after node.
func (s KStream[K, V]) derive(node string) KStream[K, V] {
	s.node = node
	return s
}

func (s KStream[K, V]) add(prefix string, opts []Named, fn func(processor.Context[any, any], processor.Erased) error) string {
	supplier := stateless(fn)
	if keepsKey(prefix) {
		supplier = keyKeeping(fn)
	}
	return s.addSupplier(prefix, opts, supplier)
}

func (s KStream[K, V]) addSupplier(prefix string, opts []Named, supplier processor.Supplier) string {
	name := s.b.newName(prefix, opts)
	s.b.t.AddProcessor(name, supplier, s.node)
	return name
}

// keepsKey says the operation of prefix forwards records under the key
// it received.
func keepsKey(prefix string) bool {
	switch prefix {
	case filterPrefix, peekPrefix, foreachPrefix, mapValuesPrefix, flatMapValuesPrefix:
		return true
	}
	return false
}

// addHopping adds an operation that takes records of types K, V and
// computes records of types KR, VR, through the typed edges of package
// hop where the runtime offers them (hopProc).
func addHopping[K, V, KR, VR any](s KStream[K, V], prefix string, opts []Named, body func(processor.Context[any, any], hop.Sink[KR, VR], typed[K, V]) error) string {
	keeps := keepsKey(prefix)
	return s.addSupplier(prefix, opts, func() processor.Untyped { return &hopProc[K, V, KR, VR]{body: body, keeps: keeps} })
}

// Filter keeps the records pred accepts.
func (s KStream[K, V]) Filter(pred func(K, V) bool, named ...Named) KStream[K, V] {
	return s.derive(s.add(filterPrefix, named, filterFunc(pred, false)))
}

// FilterNot drops the records pred accepts.
func (s KStream[K, V]) FilterNot(pred func(K, V) bool, named ...Named) KStream[K, V] {
	return s.derive(s.add(filterPrefix, named, filterFunc(pred, true)))
}

func filterFunc[K, V any](pred func(K, V) bool, not bool) func(processor.Context[any, any], processor.Erased) error {
	return func(ctx processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		if pred(k, v) != not {
			ctx.Forward(rec)
		}
		return nil
	}
}

// Peek calls fn for every record and forwards it unchanged.
func (s KStream[K, V]) Peek(fn func(K, V), named ...Named) KStream[K, V] {
	return s.derive(s.add(peekPrefix, named, func(ctx processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		fn(k, v)
		ctx.Forward(rec)
		return nil
	}))
}

// Foreach calls fn for every record; nothing follows it.
func (s KStream[K, V]) Foreach(fn func(K, V), named ...Named) {
	s.add(foreachPrefix, named, func(_ processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		fn(k, v)
		return nil
	})
}

// Merge interleaves s and other into one stream, in processing order.
func (s KStream[K, V]) Merge(other KStream[K, V], named ...Named) KStream[K, V] {
	name := s.b.newName(mergePrefix, named)
	s.b.t.AddProcessor(name, keyKeeping(func(ctx processor.Context[any, any], rec processor.Erased) error {
		ctx.Forward(rec)
		return nil
	}), s.node, other.node)
	out := s.derive(name)
	out.rekeyed = s.rekeyed || other.rekeyed
	out.keySerde = sameOrNil(s.keySerde, other.keySerde)
	out.valueSerde = sameOrNil(s.valueSerde, other.valueSerde)
	out.sources = mergeSources(s.sources, other.sources)
	return out
}

func sameOrNil[T any](a, b serde.Serde[T]) serde.Serde[T] {
	if a != nil && b != nil && a.Name() == b.Name() {
		return a
	}
	return nil
}

func mergeSources(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// To writes the stream to topic. Without Produced the stream's known serdes
// are used, else the configured defaults.
func (s KStream[K, V]) To(topic string, produced ...Produced[K, V]) {
	p := s.produced(produced)
	name := p.Name()
	if name == "" {
		name = s.b.t.GeneratedName(sinkPrefix)
	}
	s.b.t.AddSink(name, p.Spec(topic), topic, s.node)
}

// ToChooser writes each record to the topic chooser picks.
func (s KStream[K, V]) ToChooser(chooser func(key K, value V, rc topology.RecordContext) string, produced ...Produced[K, V]) {
	p := s.produced(produced)
	name := p.Name()
	if name == "" {
		name = s.b.t.GeneratedName(sinkPrefix)
	}
	s.b.t.AddSinkChooser(name, p.Spec(""), func(key, value any, rc topology.RecordContext) string {
		k, err := processor.As[K](key)
		if err != nil {
			return ""
		}
		v, err := processor.As[V](value)
		if err != nil {
			return ""
		}
		return chooser(k, v, rc)
	}, s.node)
}

func (s KStream[K, V]) produced(ps []Produced[K, V]) Produced[K, V] {
	var p Produced[K, V]
	if len(ps) > 0 {
		p = ps[0]
	}
	if p.KeySerde() == nil && p.ValueSerde() == nil {
		np := ProducedWith(s.keySerde, s.valueSerde).WithName(p.Name())
		return np
	}
	if p.KeySerde() == nil || p.ValueSerde() == nil {
		np := ProducedWith(orSerde(p.KeySerde(), s.keySerde), orSerde(p.ValueSerde(), s.valueSerde)).WithName(p.Name())
		return np
	}
	return p
}

// Map replaces each record's key and value. The key may change, so the next
// key-dependent operation re-keys.
func Map[K, V, KR, VR any](s KStream[K, V], fn func(K, V) (KR, VR), named ...Named) KStream[KR, VR] {
	name := addHopping(s, mapPrefix, named, func(ctx processor.Context[any, any], sink hop.Sink[KR, VR], rec typed[K, V]) error {
		nk, nv := fn(rec.key, rec.value)
		if sink != nil {
			sink(nk, false, nv, rec.timestamp, rec.headers)
			return nil
		}
		ctx.Forward(processor.Erased{Key: nk, Value: nv, Timestamp: rec.timestamp, Headers: rec.headers})
		return nil
	})
	return KStream[KR, VR]{b: s.b, node: name, rekeyed: true, sources: s.sources}
}

// MapValues replaces each record's value; the key, and so the partitioning,
// stays.
func MapValues[K, V, VR any](s KStream[K, V], fn func(K, V) VR, named ...Named) KStream[K, VR] {
	name := addHopping(s, mapValuesPrefix, named, func(ctx processor.Context[any, any], sink hop.Sink[K, VR], rec typed[K, V]) error {
		nv := fn(rec.key, rec.value)
		if sink != nil {
			sink(rec.key, rec.null, nv, rec.timestamp, rec.headers)
			return nil
		}
		ctx.Forward(processor.Erased{Key: rec.erasedKey(), Value: nv, Timestamp: rec.timestamp, Headers: rec.headers})
		return nil
	})
	return KStream[K, VR]{b: s.b, node: name, keySerde: s.keySerde, rekeyed: s.rekeyed, sources: s.sources}
}

// SelectKey gives each record a new key computed from it.
func SelectKey[K, V, KR any](s KStream[K, V], fn func(K, V) KR, named ...Named) KStream[KR, V] {
	name := s.add(keySelectPrefix, named, func(ctx processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		rec.Key = fn(k, v)
		ctx.Forward(rec)
		return nil
	})
	return KStream[KR, V]{b: s.b, node: name, valueSerde: s.valueSerde, rekeyed: true, sources: s.sources}
}

// FlatMap turns each record into zero or more records with new keys.
func FlatMap[K, V, KR, VR any](s KStream[K, V], fn func(K, V) []KeyValue[KR, VR], named ...Named) KStream[KR, VR] {
	name := s.add(flatMapPrefix, named, func(ctx processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		for _, kv := range fn(k, v) {
			ctx.Forward(processor.Erased{Key: kv.Key, Value: kv.Value, Timestamp: rec.Timestamp, Headers: rec.Headers})
		}
		return nil
	})
	return KStream[KR, VR]{b: s.b, node: name, rekeyed: true, sources: s.sources}
}

// FlatMapValues turns each record into zero or more records with its key.
func FlatMapValues[K, V, VR any](s KStream[K, V], fn func(K, V) []VR, named ...Named) KStream[K, VR] {
	name := addHopping(s, flatMapValuesPrefix, named, func(ctx processor.Context[any, any], sink hop.Sink[K, VR], rec typed[K, V]) error {
		var key any
		for i, nv := range fn(rec.key, rec.value) {
			if sink != nil {
				sink(rec.key, rec.null, nv, rec.timestamp, rec.headers)
				continue
			}
			if i == 0 {
				key = rec.erasedKey() // boxed once for all the values
			}
			ctx.Forward(processor.Erased{Key: key, Value: nv, Timestamp: rec.timestamp, Headers: rec.headers})
		}
		return nil
	})
	return KStream[K, VR]{b: s.b, node: name, keySerde: s.keySerde, rekeyed: s.rekeyed, sources: s.sources}
}

// Process runs a Processor API processor on the stream. It may change keys,
// so the next key-dependent operation re-keys. stores names stores (added
// with Builder.AddStateStore) the processor may use.
func Process[K, V, KR, VR any](s KStream[K, V], supplier func() processor.Processor[K, V, KR, VR], named Named, stores ...string) KStream[KR, VR] {
	name := s.b.newName(processorPrefix, []Named{named})
	s.b.t.AddProcessor(name, processor.Supply(supplier), s.node)
	s.b.t.ConnectProcessorAndStateStores(name, stores...)
	return KStream[KR, VR]{b: s.b, node: name, rekeyed: true, sources: s.sources}
}

// ProcessValues runs a fixed-key processor: values may change, keys may
// not, so no re-keying follows.
func ProcessValues[K, V, VR any](s KStream[K, V], supplier func() processor.FixedKeyProcessor[K, V, VR], named Named, stores ...string) KStream[K, VR] {
	name := s.b.newName(processValuesPrefix, []Named{named})
	s.b.t.AddProcessor(name, processor.SupplyFixedKey(supplier), s.node)
	s.b.t.ConnectProcessorAndStateStores(name, stores...)
	return KStream[K, VR]{b: s.b, node: name, keySerde: s.keySerde, rekeyed: s.rekeyed, sources: s.sources}
}

// Repartition inserts an explicit boundary: records cross to the lane of
// their key's bytes under the given serdes.
func (s KStream[K, V]) Repartition(r ...Repartitioned[K, V]) KStream[K, V] {
	var rp Repartitioned[K, V]
	if len(r) > 0 {
		rp = r[0]
	}
	base := rp.name
	if base == "" {
		base = s.b.t.GeneratedName(repartitionPrefix)
	}
	ks, vs := orSerde(rp.keySerde, s.keySerde), orSerde(rp.valueSerde, s.valueSerde)
	src, bd := s.b.boundary(s.node, base, eraseSerde(ks), eraseSerde(vs), rp.name != "")
	bd.Partitions = rp.partitions
	if rp.partitioner != nil {
		bd.Partitioner = topology.ProducedWith(ks, vs).WithPartitioner(rp.partitioner).Spec("").Partitioner
	}
	return KStream[K, V]{b: s.b, node: src, keySerde: ks, valueSerde: vs, sources: []string{src}}
}

// boundary inserts, after parent, a filter that drops null keys (a record
// without a key cannot be laned by it; the drop is counted), a boundary
// sink and a boundary source reading "<base>-repartition". User-named
// boundaries name their nodes "<base>-repartition-filter|sink|source", as
// Kafka Streams does. Kafka Streams generates the sink, filter and source
// names in that order, user-named or not, so later indexes stay equal.
func (b *Builder) boundary(parent, base string, keySerde, valueSerde serde.Any, userNamed bool) (string, *topology.Boundary) {
	topic := base + "-repartition"
	sink := b.t.GeneratedName(sinkPrefix)
	filter := b.t.GeneratedName(filterPrefix)
	source := b.t.GeneratedName(sourcePrefix)
	if userNamed {
		filter, sink, source = topic+"-filter", topic+"-sink", topic+"-source"
	}
	b.t.AddProcessor(filter, stateless(func(ctx processor.Context[any, any], rec processor.Erased) error {
		if rec.Key == nil {
			droppedNullKey(ctx)
			return nil
		}
		ctx.Forward(rec)
		return nil
	}), parent)
	bd := b.t.AddBoundary(sink, source, topic, keySerde, valueSerde, filter)
	return source, bd
}

// KeyValue is a key and a value, as FlatMap returns them.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// KV makes a KeyValue.
func KV[K, V any](k K, v V) KeyValue[K, V] { return KeyValue[K, V]{Key: k, Value: v} }
