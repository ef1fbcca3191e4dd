package dsl

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/internal/hop"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// Builder builds a topology with the DSL.
type Builder struct {
	t *topology.Topology
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{t: topology.New()} }

// Topology returns the topology built so far; errors recorded by the DSL
// are reported by its Build.
func (b *Builder) Topology() *topology.Topology { return b.t }

// newName returns the user's name or a generated PREFIX-0000000007.
func (b *Builder) newName(prefix string, opts []Named) string {
	if n := named(opts); n != "" {
		return n
	}
	return b.t.GeneratedName(prefix)
}

// newStoreName returns the user's store name or a generated
// PREFIX-STATE-STORE-0000000007, Kafka Streams' scheme.
func (b *Builder) newStoreName(prefix, given string) string {
	if given != "" {
		return given
	}
	return b.t.GeneratedName(prefix + "STATE-STORE-")
}

// Kafka Streams' prefixes for generated names.
const (
	sourcePrefix        = "KSTREAM-SOURCE-"
	sinkPrefix          = "KSTREAM-SINK-"
	filterPrefix        = "KSTREAM-FILTER-"
	mapPrefix           = "KSTREAM-MAP-"
	mapValuesPrefix     = "KSTREAM-MAPVALUES-"
	flatMapPrefix       = "KSTREAM-FLATMAP-"
	flatMapValuesPrefix = "KSTREAM-FLATMAPVALUES-"
	keySelectPrefix     = "KSTREAM-KEY-SELECT-"
	peekPrefix          = "KSTREAM-PEEK-"
	foreachPrefix       = "KSTREAM-FOREACH-"
	branchPrefix        = "KSTREAM-BRANCH-"
	mergePrefix         = "KSTREAM-MERGE-"
	processorPrefix     = "KSTREAM-PROCESSOR-"
	processValuesPrefix = "KSTREAM-PROCESSVALUES-"
	repartitionPrefix   = "KSTREAM-REPARTITION-"
)

// funcProc is the processor behind most DSL operations: a function of the
// context and the record, with types erased. Operations narrow the types
// inside the function, once per record.
type funcProc struct {
	ctx processor.Context[any, any]
	fn  func(ctx processor.Context[any, any], rec processor.Erased) error
	// keeps says the function never changes the key, so that a timer
	// processor behind it still takes its timer key serde from upstream.
	keeps bool
}

// PreservesKey implements processor.KeyPreserving.
func (p *funcProc) PreservesKey() bool { return p.keeps }

func (p *funcProc) Init(ctx processor.Context[any, any]) error { p.ctx = ctx; return nil }
func (p *funcProc) Process(rec processor.Erased) error         { return p.fn(p.ctx, rec) }
func (p *funcProc) Close() error                               { return nil }

func stateless(fn func(ctx processor.Context[any, any], rec processor.Erased) error) processor.Supplier {
	return func() processor.Untyped { return &funcProc{fn: fn} }
}

// keyKeeping is stateless for operations that forward records under the
// key they received.
func keyKeeping(fn func(ctx processor.Context[any, any], rec processor.Erased) error) processor.Supplier {
	return func() processor.Untyped { return &funcProc{fn: fn, keeps: true} }
}

// hopProc is funcProc for an operation that takes records of types K, V
// and computes records of types KR, VR: it offers the source before it an
// entry, and takes a hop to the plain sink after it, when the runtime
// offers one, once, at Init (package hop). body is the operation, run on
// every record whichever way it came; it writes through sink where that
// is set and forwards where it is nil.
type hopProc[K, V, KR, VR any] struct {
	ctx   processor.Context[any, any]
	sink  hop.Sink[KR, VR]
	body  func(ctx processor.Context[any, any], sink hop.Sink[KR, VR], rec typed[K, V]) error
	keeps bool
}

// typed is a record with its key and value typed. null says it has no
// key (key is K's zero value); boxed is the key as the erased path
// carried it, nil where it came through an entry.
type typed[K, V any] struct {
	key       K
	null      bool
	boxed     any
	value     V
	timestamp int64
	headers   processor.Headers
}

// erasedKey is the key as Forward takes it: the erased path's own, or,
// for a record that came through an entry, boxed now.
func (r typed[K, V]) erasedKey() any {
	if r.boxed != nil || r.null {
		return r.boxed
	}
	return r.key
}

// PreservesKey implements processor.KeyPreserving.
func (p *hopProc[K, V, KR, VR]) PreservesKey() bool { return p.keeps }

func (p *hopProc[K, V, KR, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx, p.sink = ctx, hop.ToSink[KR, VR](ctx)
	return nil
}

func (p *hopProc[K, V, KR, VR]) Process(rec processor.Erased) error {
	k, v, err := narrow[K, V](rec)
	if err != nil {
		return err
	}
	return p.body(p.ctx, p.sink, typed[K, V]{key: k, null: rec.Key == nil, boxed: rec.Key, value: v, timestamp: rec.Timestamp, headers: rec.Headers})
}

// Entry implements hop.Taker.
func (p *hopProc[K, V, KR, VR]) Entry(keySerde, valueSerde serde.Any) (hop.Entry, bool) {
	return hop.NewEntry(keySerde, valueSerde, func(k K, null bool, v V, timestamp int64, headers processor.Headers) error {
		return p.body(p.ctx, p.sink, typed[K, V]{key: k, null: null, value: v, timestamp: timestamp, headers: headers})
	})
}

func (p *hopProc[K, V, KR, VR]) Close() error { return nil }

// narrow converts an erased record's key and value to K and V.
func narrow[K, V any](rec processor.Erased) (K, V, error) {
	k, err := processor.As[K](rec.Key)
	if err != nil {
		var v V
		return k, v, fmt.Errorf("record key: %w", err)
	}
	v, err := processor.As[V](rec.Value)
	if err != nil {
		return k, v, fmt.Errorf("record value: %w", err)
	}
	return k, v, nil
}

func eraseSerde[T any](s serde.Serde[T]) serde.Any {
	if s == nil {
		return nil
	}
	return serde.Erase(s)
}

// orSerde returns a if set, else b.
func orSerde[T any](a, b serde.Serde[T]) serde.Serde[T] {
	if a != nil {
		return a
	}
	return b
}
