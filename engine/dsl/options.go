package dsl

import (
	"time"

	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// Consumed and Produced are the topology package's, so that the Processor
// API and the DSL share one way of declaring a source or a sink.
type (
	Consumed[K, V any] = topology.Consumed[K, V]
	Produced[K, V any] = topology.Produced[K, V]
)

// ConsumedWith declares a source's serdes.
func ConsumedWith[K, V any](k serde.Serde[K], v serde.Serde[V]) Consumed[K, V] {
	return topology.ConsumedWith(k, v)
}

// ProducedWith declares a sink's serdes.
func ProducedWith[K, V any](k serde.Serde[K], v serde.Serde[V]) Produced[K, V] {
	return topology.ProducedWith(k, v)
}

// Named names the processor an operation adds.
type Named struct{ name string }

// Name returns a Named.
func Name(name string) Named { return Named{name: name} }

func named(opts []Named) string {
	for _, o := range opts {
		if o.name != "" {
			return o.name
		}
	}
	return ""
}

// Materialized says how an operation's state store is built: its name (and
// so its changelog topic), serdes, backend and logging.
type Materialized[K, V any] struct {
	name       string
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   state.BytesSupplier
	logging    bool
	logConfig  map[string]string
	loggingSet bool
	// retention is how long a window or session store keeps what it holds
	// (WithRetention, in windowed.go); nil for the window definition's
	// default.
	retention *time.Duration
}

// MaterializedAs names the store.
func MaterializedAs[K, V any](name string) Materialized[K, V] {
	return Materialized[K, V]{name: name}
}

// MaterializedWith sets the store's serdes.
func MaterializedWith[K, V any](k serde.Serde[K], v serde.Serde[V]) Materialized[K, V] {
	return Materialized[K, V]{keySerde: k, valueSerde: v}
}

// WithKeySerde sets the key serde.
func (m Materialized[K, V]) WithKeySerde(s serde.Serde[K]) Materialized[K, V] {
	m.keySerde = s
	return m
}

// WithValueSerde sets the value serde.
func (m Materialized[K, V]) WithValueSerde(s serde.Serde[V]) Materialized[K, V] {
	m.valueSerde = s
	return m
}

// WithStoreSupplier picks the backend.
func (m Materialized[K, V]) WithStoreSupplier(s state.BytesSupplier) Materialized[K, V] {
	m.supplier = s
	return m
}

// WithLoggingDisabled turns the changelog off: the store is lost with the
// instance.
func (m Materialized[K, V]) WithLoggingDisabled() Materialized[K, V] {
	m.logging, m.loggingSet = false, true
	return m
}

// WithLoggingEnabled sets the changelog topic's configuration.
func (m Materialized[K, V]) WithLoggingEnabled(cfg map[string]string) Materialized[K, V] {
	m.logging, m.loggingSet, m.logConfig = true, true, cfg
	return m
}

// StoreName is the name given, or "".
func (m Materialized[K, V]) StoreName() string { return m.name }

func firstMaterialized[K, V any](ms []Materialized[K, V]) (Materialized[K, V], bool) {
	if len(ms) == 0 {
		return Materialized[K, V]{}, false
	}
	return ms[0], true
}

// Grouped names a grouping (and so its boundary) and sets its serdes.
type Grouped[K, V any] struct {
	name       string
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
}

// GroupedWith sets a grouping's serdes.
func GroupedWith[K, V any](k serde.Serde[K], v serde.Serde[V]) Grouped[K, V] {
	return Grouped[K, V]{keySerde: k, valueSerde: v}
}

// GroupedAs names a grouping.
func GroupedAs[K, V any](name string) Grouped[K, V] { return Grouped[K, V]{name: name} }

// WithName names the grouping.
func (g Grouped[K, V]) WithName(name string) Grouped[K, V] { g.name = name; return g }

// Repartitioned configures an explicit boundary.
type Repartitioned[K, V any] struct {
	name        string
	keySerde    serde.Serde[K]
	valueSerde  serde.Serde[V]
	partitions  int32
	partitioner topology.StreamPartitioner[K, V]
}

// RepartitionedWith sets the boundary's serdes.
func RepartitionedWith[K, V any](k serde.Serde[K], v serde.Serde[V]) Repartitioned[K, V] {
	return Repartitioned[K, V]{keySerde: k, valueSerde: v}
}

// RepartitionedAs names the boundary.
func RepartitionedAs[K, V any](name string) Repartitioned[K, V] {
	return Repartitioned[K, V]{name: name}
}

// WithName names the boundary.
func (r Repartitioned[K, V]) WithName(name string) Repartitioned[K, V] { r.name = name; return r }

// WithNumberOfPartitions sets the boundary's partition count.
func (r Repartitioned[K, V]) WithNumberOfPartitions(n int32) Repartitioned[K, V] {
	r.partitions = n
	return r
}

// WithStreamPartitioner partitions by a custom function instead of the key
// hash. Joins refuse inputs partitioned this way.
func (r Repartitioned[K, V]) WithStreamPartitioner(p topology.StreamPartitioner[K, V]) Repartitioned[K, V] {
	r.partitioner = p
	return r
}

// Joined configures a stream-table join: serdes and a name.
type Joined[K, V, VO any] struct {
	name            string
	keySerde        serde.Serde[K]
	valueSerde      serde.Serde[V]
	otherValueSerde serde.Serde[VO]
	gracePeriod     time.Duration
	graceSet        bool
}

// JoinedWith sets the serdes of a join's inputs.
func JoinedWith[K, V, VO any](k serde.Serde[K], v serde.Serde[V], vo serde.Serde[VO]) Joined[K, V, VO] {
	return Joined[K, V, VO]{keySerde: k, valueSerde: v, otherValueSerde: vo}
}

// WithName names the join.
func (j Joined[K, V, VO]) WithName(name string) Joined[K, V, VO] { j.name = name; return j }

// WithGracePeriod holds each stream record of a stream-table join back
// until event time has passed its timestamp by d, then joins it with the
// table as of its timestamp, in timestamp order (KIP-923; see
// join_grace.go). The table must be versioned (Build refuses it
// otherwise, as Kafka Streams does); a zero d still orders records. The
// records held are in a store "<join name>-Buffer" with a changelog. A
// stream-stream join takes its grace from JoinWindows instead.
func (j Joined[K, V, VO]) WithGracePeriod(d time.Duration) Joined[K, V, VO] {
	j.gracePeriod, j.graceSet = d, true
	return j
}

// GracePeriod returns what WithGracePeriod stored.
func (j Joined[K, V, VO]) GracePeriod() time.Duration { return j.gracePeriod }
