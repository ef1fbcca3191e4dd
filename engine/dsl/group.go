package dsl

import (
	"regexp"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// Kafka Streams' prefixes for grouping and aggregation nodes.
const (
	streamAggregatePrefix = "KSTREAM-AGGREGATE-"
	streamReducePrefix    = "KSTREAM-REDUCE-"
	tableSelectPrefix     = "KTABLE-SELECT-"
	tableAggregatePrefix  = "KTABLE-AGGREGATE-"
	tableReducePrefix     = "KTABLE-REDUCE-"
)

// generatedBoundaryBase matches the boundary bases Kafka Streams treats as
// its own (a generated store or node name): their boundary nodes get
// generated names, any other base names them "<base>-repartition-sink" and
// so on (KStreamImpl.createRepartitionedSource).
var generatedBoundaryBase = regexp.MustCompile(`^KSTREAM.*-[0-9]{10}$`)

// KGroupedStream is a stream grouped by key, ready for an aggregation.
// Grouping adds no node of its own: the aggregation inserts the boundary
// when the grouping re-keys, as Kafka Streams does, so that the boundary
// can be named after the aggregation's store.
type KGroupedStream[K, V any] struct {
	s KStream[K, V]
	// Serdes of the grouped records, nil when the defaults apply.
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	// name is Grouped's name, or "".
	name        string
	repartition bool
	// boundary is shared by the copies of a grouping: the aggregations of
	// a named grouping share one boundary, as they would share its topic.
	boundary *sharedBoundary
}

// sharedBoundary is the source node of a boundary once it exists.
type sharedBoundary struct{ source string }

func firstGrouped[K, V any](gs []Grouped[K, V]) Grouped[K, V] {
	if len(gs) == 0 {
		return Grouped[K, V]{}
	}
	return gs[0]
}

// GroupByKey groups the stream by its key. It re-keys only if an earlier
// operation may have changed the key. Serdes not given by grouped are the
// stream's.
func (s KStream[K, V]) GroupByKey(grouped ...Grouped[K, V]) KGroupedStream[K, V] {
	g := firstGrouped(grouped)
	return KGroupedStream[K, V]{
		s:           s,
		keySerde:    orSerde(g.keySerde, s.keySerde),
		valueSerde:  orSerde(g.valueSerde, s.valueSerde),
		name:        g.name,
		repartition: s.rekeyed,
		boundary:    &sharedBoundary{},
	}
}

// GroupBy groups the stream by a key computed from each record, so it
// always re-keys. The selector's node is named by grouped's name when one
// is given, as in Kafka Streams. The value serde defaults to the stream's;
// the key serde, unknown after re-keying, to the configured default.
func GroupBy[K, V, KR any](s KStream[K, V], selector func(K, V) KR, grouped ...Grouped[KR, V]) KGroupedStream[KR, V] {
	g := firstGrouped(grouped)
	var named []Named
	if g.name != "" {
		named = []Named{Name(g.name)}
	}
	node := s.add(keySelectPrefix, named, func(ctx processor.Context[any, any], rec processor.Erased) error {
		k, v, err := narrow[K, V](rec)
		if err != nil {
			return err
		}
		rec.Key = anyOrNil(selector(k, v))
		ctx.Forward(rec)
		return nil
	})
	rekeyed := KStream[KR, V]{b: s.b, node: node, valueSerde: s.valueSerde, rekeyed: true, sources: s.sources}
	return KGroupedStream[KR, V]{
		s:           rekeyed,
		keySerde:    g.keySerde,
		valueSerde:  orSerde(g.valueSerde, s.valueSerde),
		name:        g.name,
		repartition: true,
		boundary:    &sharedBoundary{},
	}
}

// input returns the node an aggregation with store storeName reads from,
// and the sources behind it, inserting the boundary when the grouping
// re-keys. The boundary crosses "<grouped name>-repartition", or
// "<store>-repartition" without a name.
func (g KGroupedStream[K, V]) input(storeName string) (string, []string) {
	if !g.repartition {
		return g.s.node, g.s.sources
	}
	b := g.s.b
	if g.name != "" && g.boundary.source != "" {
		// Kafka Streams generates the boundary's names again even when it
		// reuses the boundary; burn them to keep later names equal.
		for range 3 {
			b.t.NextIndex()
		}
		return g.boundary.source, []string{g.boundary.source}
	}
	base := g.name
	if base == "" {
		base = storeName
	}
	src, _ := b.boundary(g.s.node, base, eraseSerde(g.keySerde), eraseSerde(g.valueSerde), !generatedBoundaryBase.MatchString(base))
	if g.name != "" {
		g.boundary.source = src
	}
	return src, []string{src}
}
