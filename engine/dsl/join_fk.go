package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// Foreign-key table-table joins (Kafka Streams' KIP-213,
// KTable.join(other, foreignKeyExtractor, joiner)). Terms:
//
//   - The left table (keys K, values V) names a row of the right table
//     (keys KO, values VO) in each value: the foreign key, computed by the
//     extractor. The result is keyed like the left table.
//   - A subscription is what a left change sends to the foreign key's side:
//     an instruction (Kafka Streams' SubscriptionWrapper.Instruction), the
//     hash of the left value that sent it, and the left key.
//   - A response is what the right side sends back to the left key: the
//     hash of the subscription it answers and the right value (nil for
//     none). The resolver joins it with the left value only if the hash
//     still matches the left key's current value: a response to a value
//     since replaced is stale and dropped.
//
// The join spans three sub-topologies, joined by boundaries, so that
// every piece of state lives in the task and lane of the key it is looked
// up by:
//
//	left table ─ send ─┬─ subscription boundary (by foreign key) ─▶ receive ─ join-foreign ─┐
//	                   │                right table ─ foreign-join (prefix scan) ───────────┤
//	                   │                                                                    ▼
//	                   └─ primary boundary (by left key) ─▶ resolver ◀─ response boundary (by left key)
//	                                                            │
//	                                                         result
//
// Kafka Streams routes the subscriptions and responses through two
// internal topics, and its resolver reads the left table's store, in the
// left table's own sub-topology; that is a cycle between sub-topologies,
// which an in-memory boundary cannot carry (a lane would wait on its own
// barrier). Here the resolver's sub-topology keeps its own copy of the left
// values instead (the primary store), fed by the third boundary: every
// left change goes there before its subscriptions leave, so the copy is
// current before any response to the change arrives (the alignment stash
// releases a producer's records in arrival order). A left-join
// subscription with a null foreign key, which Kafka Streams sends through
// the subscription topic with a null key only to have it answered with a
// null, is answered on the primary boundary directly.
//
// Through repartition topics (stoatflow.topology.rekey=topic) the primary
// boundary joins the response boundary's topic (topology.Boundary.Joins):
// the copy and the answers of a left key share a partition, where the copy
// comes first, since an answer is written only after the transaction that
// wrote the copy and its subscriptions has committed. There are then two
// topics, as in Kafka Streams, named as Kafka Streams names them.
//
// Stores, all changelogged: the subscription store (receive's, read by
// foreign-join's prefix scan; key: 4-byte big-endian length of the foreign
// key's bytes, those bytes, then the left key's bytes, Kafka Streams'
// CombinedKeySchema), the primary store and the result store.

// Kafka Streams' prefixes for the nodes and stores of a foreign-key join
// (KTableImpl).
const (
	fkRegistrationPrefix = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"
	fkStorePrefix        = "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-"
	fkProcessorPrefix    = "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"
	fkResponsePrefix     = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-"
	fkResolverPrefix     = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
	fkOutputPrefix       = "KTABLE-FK-JOIN-OUTPUT-"
	tableSinkPrefix      = "KTABLE-SINK-"
)

var errNilForeignKey = errors.New("nil foreign key extractor")

// TableJoinForeignKey joins t with other where other's key is the foreign
// key foreignKey extracts from t's value (an inner join), as Kafka Streams'
// KTable.join(other, foreignKeyExtractor, joiner). The result is keyed
// like t and has a row for each key of t whose foreign key other has a
// value for.
//
//   - A change of t's value joins the new value with other's current value
//     for its foreign key, stamped with the larger of the two timestamps.
//     If the foreign key changed, the old one no longer sees the key; when
//     the new foreign key has no match the key's row is deleted (a
//     tombstone, forwarded even if there was no row: the join cannot know).
//   - A change of other's value updates the row of every key of t that
//     refers to it, stamped with other's record; a delete of it deletes
//     those rows.
//   - A delete of t's key deletes its row.
//   - A value whose foreign key is null (a nil pointer, map, slice or
//     interface) has no row and is dropped, counted as null_key; the row
//     its previous value had is deleted (KAFKA-16407). An update keeping
//     a foreign key that has no match forwards nothing: the previous
//     value had no row either.
//
// The result is always materialized (Kafka Streams keeps it in a store it
// names KTABLE-FK-JOIN-OUTPUT-STATE-STORE-<n>; a Materialized names it),
// so that it carries old values and can be looked up. opts name the join
// (Kafka Streams' TableJoined.as: every node and internal name is then
// "<name>-<role>") and materialize the result; see TableOption.
//
// The join crosses three boundaries (see join_fk.go): in memory, so that
// like every topology with an in-memory boundary it runs as a single
// instance, or through two repartition topics under
// stoatflow.topology.rekey=topic, on any number of instances. t's value
// serde (else default.value.serde) hashes t's values; other's key serde
// (else default.key.serde) serializes foreign keys and must be the serde
// other's topic is partitioned by.
func TableJoinForeignKey[K, V, KO, VO, VR any](t KTable[K, V], other KTable[KO, VO], foreignKey func(V) KO, joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return fkJoin(t, other, valueOnly[K](foreignKey), joiner, false, opts)
}

// TableJoinForeignKeyWithKey is TableJoinForeignKey with an extractor that
// also sees t's key, as Kafka Streams' ForeignKeyExtractor.fromBiFunction
// (KIP-1104).
func TableJoinForeignKeyWithKey[K, V, KO, VO, VR any](t KTable[K, V], other KTable[KO, VO], foreignKey func(K, V) KO, joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return fkJoin(t, other, foreignKey, joiner, false, opts)
}

// TableLeftJoinForeignKeyWithKey is TableLeftJoinForeignKey with an
// extractor that also sees t's key (KIP-1104).
func TableLeftJoinForeignKeyWithKey[K, V, KO, VO, VR any](t KTable[K, V], other KTable[KO, VO], foreignKey func(K, V) KO, joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return fkJoin(t, other, foreignKey, joiner, true, opts)
}

// valueOnly adapts an extractor of the value alone; nil stays nil, for
// Build to report.
func valueOnly[K, V, KO any](f func(V) KO) func(K, V) KO {
	if f == nil {
		return nil
	}
	return func(_ K, v V) KO { return f(v) }
}

// TableLeftJoinForeignKey is TableJoinForeignKey keeping every key of t,
// as Kafka Streams' KTable.leftJoin(other, foreignKeyExtractor, joiner):
// where other has no value for the foreign key, or the foreign key is
// null, the joiner gets VO's zero value (Kafka Streams passes null; use a
// pointer VO to tell the cases apart). A delete of other's value re-joins
// the keys referring to it with the zero value; a delete of t's key
// deletes its row.
func TableLeftJoinForeignKey[K, V, KO, VO, VR any](t KTable[K, V], other KTable[KO, VO], foreignKey func(V) KO, joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return fkJoin(t, other, valueOnly[K](foreignKey), joiner, true, opts)
}

// fkNames are the names of a foreign-key join's nodes, stores and
// boundary topics, in Kafka Streams' scheme.
type fkNames struct {
	regTopic, send, regSink, regSource, store, receive, joinForeign, foreignJoin string
	respTopic, respSink, respSource, resolver, result, resultStore               string
	// The primary boundary and store are this engine's own.
	primTopic, primSink, primSource, primStore string
}

// newFKNames draws the names in Kafka Streams' order
// (KTableImpl.doJoinOnForeignKey), so that generated names after the join
// stay equal to Kafka Streams'.
func newFKNames(b *Builder, name, resultStore string) fkNames {
	gen := func(suffix, prefix string) string {
		if name != "" {
			return name + suffix
		}
		return b.t.GeneratedName(prefix)
	}
	var n fkNames
	n.regTopic = gen("-subscription-registration", fkRegistrationPrefix) + "-topic"
	n.send = gen("-subscription-registration-processor", fkRegistrationPrefix)
	n.regSink = gen("-subscription-registration-sink", tableSinkPrefix)
	n.regSource = gen("-subscription-registration-source", tableSourcePrefix)
	n.store = gen("-subscription-store", fkStorePrefix)
	n.receive = gen("-subscription-receive", fkProcessorPrefix)
	n.joinForeign = gen("-subscription-join-foreign", fkProcessorPrefix)
	n.foreignJoin = gen("-foreign-join-subscription", fkProcessorPrefix)
	n.respTopic = gen("-subscription-response", fkResponsePrefix) + "-topic"
	n.respSink = gen("-subscription-response-sink", tableSinkPrefix)
	n.respSource = gen("-subscription-response-source", tableSourcePrefix)
	n.resolver = gen("-subscription-response-resolver", fkResolverPrefix)
	n.result = gen("-result", fkOutputPrefix)
	n.resultStore = b.newStoreName(fkOutputPrefix, resultStore)
	// Named after the resolver, which uses no index of its own.
	n.primTopic = n.resolver + "-primary-topic"
	n.primSink, n.primSource = n.resolver+"-primary-sink", n.resolver+"-primary-source"
	n.primStore = n.resolver + "-primary-store"
	return n
}

func fkJoin[K, V, KO, VO, VR any](t KTable[K, V], other KTable[KO, VO], foreignKey func(K, V) KO, joiner func(V, VO) VR, left bool, opts []TableOption) KTable[K, VR] {
	b := t.b
	o := collectTableOptions(opts)
	m, _, merr := materializedAs[K, VR](o)
	n := newFKNames(b, o.name, m.name)
	for _, err := range []error{merr, nilErr(foreignKey == nil, errNilForeignKey), nilErr(joiner == nil, errNilJoiner)} {
		if err != nil {
			b.t.Fail(n.result, err)
		}
	}
	if other.b != b {
		b.t.Fail(n.result, fmt.Errorf("table %s %w", other.node, errOtherBuilder))
	}
	keys := serdeOrConfig(t.keySerde, true)
	values := serdeOrConfig(t.valueSerde, false)
	foreignKeys := serdeOrConfig(other.keySerde, true)
	foreignValues := serdeOrConfig(other.valueSerde, false)
	ks, vs := orSerde(m.keySerde, t.keySerde), m.valueSerde
	resultKeys, resultValues := serdeOrConfig(ks, true), serdeOrConfig(vs, false)
	c := &fkConfig[K, V, KO, VO, VR]{
		names: n, left: left, foreignKey: foreignKey, joiner: joiner,
		keys: keys, values: values, foreignKeys: foreignKeys,
		serdes: []any{keys, values, foreignKeys, foreignValues, resultKeys, resultValues},
		other:  other.meta,
	}

	// The left table's side.
	b.t.AddProcessor(n.send, func() processor.Untyped { return &fkSend[K, V, KO, VO, VR]{c: c} }, t.node)
	// The left table's copy must reach the resolver before the answers
	// to the subscriptions sent after it. Lane to lane it does (a lane
	// takes each producer's records in order); through topics
	// (stoatflow.topology.rekey=topic) the copy travels in the response
	// topic, in the partition of its key, where every answer to the
	// change comes after it: the answers are written only once the
	// transaction that wrote the copy and the subscription committed.
	answers := fkAnswerSerde{values: serde.Erase(values), foreignValues: serde.Erase(foreignValues)}
	b.t.AddBoundary(n.primSink, n.primSource, n.primTopic, serde.Erase(keys), answers, n.send).Joins = n.respTopic
	b.t.AddBoundary(n.regSink, n.regSource, n.regTopic, serde.Erase(foreignKeys), fkSubscriptionSerde{}, n.send)

	// The right table's side.
	b.t.AddProcessor(n.receive, func() processor.Untyped { return &fkReceive[K, V, KO, VO, VR]{c: c} }, n.regSource)
	b.t.AddProcessor(n.joinForeign, func() processor.Untyped { return &fkJoinForeign[K, V, KO, VO, VR]{c: c} }, n.receive)
	b.t.AddProcessor(n.foreignJoin, func() processor.Untyped { return &fkForeignJoin[K, V, KO, VO, VR]{c: c} }, other.node)
	// A migration fills the primary store from the left table's store
	// and translates Kafka Streams' subscriptions by its values: only a
	// table kept in a store of its own (latest values, not versions) has
	// them as Kafka Streams keeps them.
	leftStore := t.meta.store
	if t.meta.versioned {
		leftStore = ""
	}
	b.t.AddStateStore(fkSubscriptionStore{KeyValueBuilder: state.KeyValueStoreBuilder(n.store, serde.Bytes(), serde.Bytes(), state.Default()), left: leftStore, c: c}, n.receive, n.foreignJoin)
	connectLookup(n.joinForeign, other)
	b.t.AddBoundary(n.respSink, n.respSource, n.respTopic, serde.Erase(keys), answers, n.joinForeign, n.foreignJoin)
	b.t.Copartition(n.joinForeign, append([]string{n.regSource}, other.sources...)...)

	// The resolver's side, keyed like the left table.
	meta := &tableMeta{store: n.resultStore}
	b.t.AddProcessor(n.resolver, func() processor.Untyped { return &fkResolve[K, V, KO, VO, VR]{c: c} }, n.respSource, n.primSource)
	b.t.AddStateStore(fkPrimaryStore[K, V]{TimestampedKeyValueBuilder: state.TimestampedKeyValueStoreBuilder(n.primStore, keys, values, state.Default()), left: leftStore}, n.resolver)
	b.t.AddProcessor(n.result, func() processor.Untyped {
		return &fkResult[K, VR]{meta: meta, serdes: []any{resultKeys, resultValues}}
	}, n.resolver)
	b.t.AddStateStore(timestampedStore(n.resultStore, resultKeys, resultValues, m), n.result)
	b.t.Copartition(n.resolver, n.respSource, n.primSource)
	return KTable[K, VR]{b: b, node: n.result, keySerde: ks, valueSerde: vs, meta: meta, sources: []string{n.respSource, n.primSource}}
}

// ForeignKeyJoinStore is implemented by the store builders of a
// foreign-key join's own state (topology.StoreInfo.Builder), for tools
// that copy state from elsewhere. Kafka Streams' subscription store has
// another value layout (its SubscriptionWrapper, hashed with Murmur3), so
// a migration translates it (ForeignKeyJoinSubscriptions); its resolver
// keeps no copy of the left table, so a migration fills the primary store
// from the left table's store, whose copy it is. The join's result store
// is an ordinary table store and does not implement it.
type ForeignKeyJoinStore interface {
	// ForeignKeyJoinRole is "subscription" or "primary".
	ForeignKeyJoinRole() string
	// ForeignKeyJoinLeftStore is the store of the join's left table, the
	// latest values the primary store copies and the subscriptions were
	// sent by; "" when the table has no store of its own (a view computed
	// from the tables it derives from) or keeps versions.
	ForeignKeyJoinLeftStore() string
}

// ForeignKeyJoinSubscriptions is implemented by a foreign-key join's
// subscription store builder.
type ForeignKeyJoinSubscriptions interface {
	// SubscriptionValue is the value the subscription store holds for a
	// subscription sent by the left value whose bytes (as the left
	// table's value serde writes them) are given: the value read back
	// and hashed as the join hashes it.
	SubscriptionValue(leftValue []byte) ([]byte, error)
}

type fkSubscriptionStore struct {
	*state.KeyValueBuilder[[]byte, []byte]
	left string
	c    interface{ subscriptionValue([]byte) ([]byte, error) }
}

func (fkSubscriptionStore) ForeignKeyJoinRole() string        { return "subscription" }
func (s fkSubscriptionStore) ForeignKeyJoinLeftStore() string { return s.left }

func (s fkSubscriptionStore) SubscriptionValue(leftValue []byte) ([]byte, error) {
	return s.c.subscriptionValue(leftValue)
}

type fkPrimaryStore[K, V any] struct {
	*state.TimestampedKeyValueBuilder[K, V]
	left string
}

func (fkPrimaryStore[K, V]) ForeignKeyJoinRole() string        { return "primary" }
func (s fkPrimaryStore[K, V]) ForeignKeyJoinLeftStore() string { return s.left }

// nilErr is err when cond holds.
func nilErr(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}

// fkConfig is what a foreign-key join's processors share; it is never
// written after the build, except that Init resolves the serdes.
type fkConfig[K, V, KO, VO, VR any] struct {
	names       fkNames
	left        bool
	foreignKey  func(K, V) KO
	joiner      func(V, VO) VR
	keys        serde.Serde[K]
	values      serde.Serde[V]
	foreignKeys serde.Serde[KO]
	// serdes are every serde of the join, some left to the configuration.
	serdes []any
	other  *tableMeta
}

func (c *fkConfig[K, V, KO, VO, VR]) init(ctx processor.Context[any, any]) error {
	if err := configureSerdes(ctx, c.serdes); err != nil {
		return fmt.Errorf("serdes of foreign-key join %s: %w", c.names.result, err)
	}
	return nil
}

// hash is the hash of a left value, nil for a null: Kafka Streams hashes
// the serialized value with Murmur3's 128 bits; the hash here (FNV-1a, 128
// bits) never leaves the process but through the subscription store's
// changelog, which no Kafka Streams application reads.
func (c *fkConfig[K, V, KO, VO, VR]) hash(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	tv, err := processor.As[V](v)
	if err != nil {
		return nil, fmt.Errorf("left value: %w", err)
	}
	data, err := c.values.Serialize(c.names.regTopic+"-vh", tv)
	if err != nil {
		return nil, fmt.Errorf("hash left value with serde %s: %w", c.values.Name(), err)
	}
	h := fnv.New128a()
	h.Write(data)
	return h.Sum(nil), nil
}

// subscriptionValue is the subscription store's value for the left value
// whose bytes are data: read with the left value serde, hashed as hash
// does. A serde left to the configuration is not known outside a running
// topology, and fails.
func (c *fkConfig[K, V, KO, VO, VR]) subscriptionValue(data []byte) ([]byte, error) {
	v, err := c.values.Deserialize(c.names.regTopic+"-vh", data)
	if err != nil {
		return nil, fmt.Errorf("deserialize left value with serde %s: %w", c.values.Name(), err)
	}
	h, err := c.hash(v)
	if err != nil {
		return nil, err
	}
	return encodeFKStored(h), nil
}

// foreignKeyOf extracts the foreign key of a left key and value, nil for
// a null.
func (c *fkConfig[K, V, KO, VO, VR]) foreignKeyOf(k K, v any) (any, error) {
	tv, err := processor.As[V](v)
	if err != nil {
		return nil, fmt.Errorf("left value: %w", err)
	}
	return orNull(c.foreignKey(k, tv)), nil
}

func (c *fkConfig[K, V, KO, VO, VR]) serializeForeignKey(fk any) ([]byte, error) {
	k, err := processor.As[KO](fk)
	if err != nil {
		return nil, fmt.Errorf("foreign key: %w", err)
	}
	data, err := c.foreignKeys.Serialize(c.names.regTopic+"-fk", k)
	if err != nil {
		return nil, fmt.Errorf("serialize foreign key with serde %s: %w", c.foreignKeys.Name(), err)
	}
	return data, nil
}

// fkInstruction is Kafka Streams' SubscriptionWrapper.Instruction, with its
// byte values.
type fkInstruction byte

const (
	// fkDeleteNoPropagate unsubscribes and answers nothing.
	fkDeleteNoPropagate fkInstruction = 0
	// fkDeleteAndPropagate unsubscribes and answers a null.
	fkDeleteAndPropagate fkInstruction = 1
	// fkPropagateNull subscribes and answers the right value, or a null.
	fkPropagateNull fkInstruction = 2
	// fkPropagateOnlyIfFound subscribes and answers only a right value.
	fkPropagateOnlyIfFound fkInstruction = 3
)

// fkSubscription is the value crossing the subscription boundary, keyed by
// the foreign key.
type fkSubscription struct {
	instruction fkInstruction
	// hash is the hash of the left value that sent it, nil for a delete.
	hash []byte
	// primaryKey is the left key, serialized by the left key serde.
	primaryKey []byte
}

// fkResponse is the value crossing the response boundary, keyed by the
// left key.
type fkResponse struct {
	hash []byte
	// foreign is the right value, nil for none.
	foreign any
	// clears marks the answer to a subscription Kafka Streams answers
	// only on a match (fkPropagateOnlyIfFound) when there is none: it
	// deletes the row the key may still have and otherwise forwards
	// nothing. Kafka Streams sends no answer, and so keeps the row of
	// an earlier value whose own answer (a null) this value overtook and
	// made stale: the value's subscription assumed that answer had
	// already deleted the row. Where the answers keep pace (the test
	// driver, Kafka Streams' own tests) the row is gone already and the
	// output is Kafka Streams'.
	clears bool
}

// fkPrimary is the value crossing the primary boundary, keyed by the left
// key: the left table's new value, and whether it must be answered with a
// null at once (a left join's subscription with a null foreign key).
type fkPrimary struct {
	value      any
	answerNull bool
}

// fkClear is what the resolver forwards to the result for a response
// that only clears (fkResponse.clears): delete the key's row if it
// still has one.
type fkClear struct{}

// fkSend is the left table's side (Kafka Streams'
// SubscriptionSendProcessorSupplier): for each change it sends the new
// value to the resolver, then the subscriptions the change calls for.
type fkSend[K, V, KO, VO, VR any] struct {
	c   *fkConfig[K, V, KO, VO, VR]
	ctx processor.Context[any, any]
}

func (p *fkSend[K, V, KO, VO, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	return p.c.init(ctx)
}

func (p *fkSend[K, V, KO, VO, VR]) Close() error { return nil }

func (p *fkSend[K, V, KO, VO, VR]) Process(rec processor.Erased) error {
	ch, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	if ch.stale {
		// An out-of-order update of a versioned left table subscribes to
		// nothing (Kafka Streams' SubscriptionSendProcessorSupplier under
		// versioned semantics, KIP-914).
		return nil
	}
	if rec.Key == nil {
		droppedNullKey(p.ctx)
		return nil
	}
	if ch.New == nil && ch.Old == nil {
		return nil
	}
	k, err := processor.As[K](rec.Key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	pk, err := p.c.keys.Serialize(p.c.names.regTopic+"-pk", k)
	if err != nil {
		return fmt.Errorf("serialize key with serde %s: %w", p.c.keys.Name(), err)
	}
	hash, err := p.c.hash(ch.New)
	if err != nil {
		return err
	}
	var oldFK, newFK any
	if ch.Old != nil {
		if oldFK, err = p.c.foreignKeyOf(k, ch.Old); err != nil {
			return err
		}
	}
	if ch.New != nil {
		if newFK, err = p.c.foreignKeyOf(k, ch.New); err != nil {
			return err
		}
	}
	if newFK != nil {
		// A foreign key that does not serialize fails the record before
		// anything leaves for the resolver.
		if _, err := p.c.serializeForeignKey(newFK); err != nil {
			return err
		}
	}
	subs, answerNull, dropped, err := p.instructions(oldFK, newFK, ch.New != nil)
	if err != nil {
		return err
	}
	if dropped {
		droppedNullKey(p.ctx)
	}
	// The resolver's copy of the left value goes first, so that it is
	// current before any response to this change.
	p.ctx.ForwardTo(processor.Erased{Key: rec.Key, Value: fkPrimary{value: ch.New, answerNull: answerNull}, Timestamp: rec.Timestamp, Headers: rec.Headers}, p.c.names.primSink)
	for _, s := range subs {
		p.ctx.ForwardTo(processor.Erased{Key: s.fk, Value: fkSubscription{instruction: s.instruction, hash: hash, primaryKey: pk}, Timestamp: rec.Timestamp, Headers: rec.Headers}, p.c.names.regSink)
	}
	return nil
}

type fkSub struct {
	fk          any
	instruction fkInstruction
}

// instructions are the subscriptions a change sends, as Kafka Streams'
// leftJoinInstructions and defaultJoinInstructions decide them (as they
// read since apache/kafka#20605, after KAFKA-16407: a key moving off a
// foreign key is answered once, by the new one); answerNull stands for a
// left join's subscription with a null foreign key (a delete, or a value
// naming none); dropped says an inner join skipped a value with a null
// foreign key.
func (p *fkSend[K, V, KO, VO, VR]) instructions(oldFK, newFK any, hasNew bool) (subs []fkSub, answerNull, dropped bool, err error) {
	// moved reports that the key leaves oldFK (non-null) for newFK.
	moved := func() (bool, error) {
		if newFK == nil {
			return true, nil
		}
		ob, err := p.c.serializeForeignKey(oldFK)
		if err != nil {
			return false, err
		}
		nb, err := p.c.serializeForeignKey(newFK)
		if err != nil {
			return false, err
		}
		return !bytes.Equal(ob, nb), nil
	}
	if p.c.left {
		if oldFK != nil {
			m, err := moved()
			if err != nil {
				return nil, false, false, err
			}
			if m {
				subs = append(subs, fkSub{oldFK, fkDeleteNoPropagate})
			}
		}
		if newFK == nil {
			return subs, true, false, nil
		}
		return append(subs, fkSub{newFK, fkPropagateNull}), false, false, nil
	}
	switch {
	case !hasNew && oldFK != nil:
		return []fkSub{{oldFK, fkDeleteAndPropagate}}, false, false, nil
	case !hasNew:
		return nil, false, false, nil
	case newFK == nil && oldFK != nil:
		// The old row, if any, is deleted; the new value has none.
		return []fkSub{{oldFK, fkDeleteAndPropagate}}, false, true, nil
	case newFK == nil:
		return nil, false, true, nil
	case oldFK == nil:
		return []fkSub{{newFK, fkPropagateOnlyIfFound}}, false, false, nil
	}
	m, err := moved()
	if err != nil {
		return nil, false, false, err
	}
	if !m {
		// Same foreign key: without a match the old value had no row
		// either, so there is nothing to delete.
		return []fkSub{{newFK, fkPropagateOnlyIfFound}}, false, false, nil
	}
	return []fkSub{{oldFK, fkDeleteNoPropagate}, {newFK, fkPropagateNull}}, false, false, nil
}

// fkCombinedKey is the subscription store's key: the foreign key's length
// (4 bytes, big-endian) and bytes, then the left key's bytes.
func fkCombinedKey(fk, pk []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(fk)+len(pk)), uint32(len(fk)))
	return append(append(out, fk...), pk...)
}

// fkPrefix is the subscription store's prefix of a foreign key's keys.
func fkPrefix(fk []byte) []byte { return fkCombinedKey(fk, nil) }

// fkReceive keeps the subscription store (Kafka Streams'
// SubscriptionReceiveProcessorSupplier) and passes each subscription on.
type fkReceive[K, V, KO, VO, VR any] struct {
	c     *fkConfig[K, V, KO, VO, VR]
	ctx   processor.Context[any, any]
	store state.KeyValueStore[[]byte, []byte]
}

func (p *fkReceive[K, V, KO, VO, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := p.c.init(ctx); err != nil {
		return err
	}
	s, err := processor.KeyValueStore[[]byte, []byte](ctx, p.c.names.store)
	p.store = s
	return err
}

func (p *fkReceive[K, V, KO, VO, VR]) Close() error { return nil }

func (p *fkReceive[K, V, KO, VO, VR]) Process(rec processor.Erased) error {
	s, ok := rec.Value.(fkSubscription)
	if !ok {
		return fmt.Errorf("foreign-key join %s: got a %T, want a subscription", p.c.names.result, rec.Value)
	}
	fk, err := p.c.serializeForeignKey(rec.Key)
	if err != nil {
		return err
	}
	key := fkCombinedKey(fk, s.primaryKey)
	switch s.instruction {
	case fkDeleteAndPropagate, fkDeleteNoPropagate:
		_, _, err = p.store.Delete(key)
	default:
		err = p.store.Put(key, encodeFKStored(s.hash))
	}
	if err != nil {
		return fmt.Errorf("subscription store %s: %w", p.c.names.store, err)
	}
	p.ctx.Forward(rec)
	return nil
}

// The subscription store's value: a version byte (1), then the hash of
// the subscribing left value (empty for none).
const fkStoredV1 byte = 1

func encodeFKStored(hash []byte) []byte { return append([]byte{fkStoredV1}, hash...) }

func decodeFKStored(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != fkStoredV1 {
		return nil, fmt.Errorf("malformed subscription entry of %d bytes", len(b))
	}
	if len(b) == 1 {
		return nil, nil
	}
	return slices.Clone(b[1:]), nil
}

// fkJoinForeign answers each subscription with the right table's value
// (Kafka Streams' SubscriptionJoinProcessorSupplier), stamped with the
// larger of the subscription's and the right value's timestamps.
type fkJoinForeign[K, V, KO, VO, VR any] struct {
	c   *fkConfig[K, V, KO, VO, VR]
	ctx processor.Context[any, any]
	get lookup
}

func (p *fkJoinForeign[K, V, KO, VO, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := p.c.init(ctx); err != nil {
		return err
	}
	get, err := openLookup[KO, VO](ctx, p.c.other)
	if err != nil {
		return fmt.Errorf("open table lookup: %w", err)
	}
	p.get = get
	return nil
}

func (p *fkJoinForeign[K, V, KO, VO, VR]) Close() error { return nil }

func (p *fkJoinForeign[K, V, KO, VO, VR]) Process(rec processor.Erased) error {
	s, _ := rec.Value.(fkSubscription)
	fv, fts, err := p.get(rec.Key)
	if err != nil {
		return fmt.Errorf("look up right table: %w", err)
	}
	ts := rec.Timestamp
	if fv != nil {
		ts = max(ts, fts)
	}
	resp := fkResponse{hash: s.hash, foreign: fv}
	switch s.instruction {
	case fkDeleteNoPropagate:
		return nil
	case fkDeleteAndPropagate:
		resp.foreign = nil
	case fkPropagateOnlyIfFound:
		resp.clears = fv == nil
	}
	pk, err := p.c.keys.Deserialize(p.c.names.regTopic+"-pk", s.primaryKey)
	if err != nil {
		return fmt.Errorf("deserialize key with serde %s: %w", p.c.keys.Name(), err)
	}
	p.ctx.Forward(processor.Erased{Key: pk, Value: resp, Timestamp: ts, Headers: rec.Headers})
	return nil
}

// fkForeignJoin answers a change of the right table to every subscription
// of its key (Kafka Streams' ForeignTableJoinProcessorSupplier), stamped
// with the right record.
type fkForeignJoin[K, V, KO, VO, VR any] struct {
	c     *fkConfig[K, V, KO, VO, VR]
	ctx   processor.Context[any, any]
	store state.KeyValueStore[[]byte, []byte]
}

func (p *fkForeignJoin[K, V, KO, VO, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := p.c.init(ctx); err != nil {
		return err
	}
	s, err := processor.KeyValueStore[[]byte, []byte](ctx, p.c.names.store)
	p.store = s
	return err
}

func (p *fkForeignJoin[K, V, KO, VO, VR]) Close() error { return nil }

func (p *fkForeignJoin[K, V, KO, VO, VR]) Process(rec processor.Erased) error {
	ch, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	if ch.stale {
		// An out-of-order update of a versioned right table answers no
		// subscription (Kafka Streams' ForeignTableJoinProcessorSupplier
		// under versioned semantics).
		return nil
	}
	if rec.Key == nil {
		droppedNullKey(p.ctx)
		return nil
	}
	fk, err := p.c.serializeForeignKey(rec.Key)
	if err != nil {
		return err
	}
	prefix := fkPrefix(fk)
	it, err := p.store.PrefixScan(prefix)
	if err != nil {
		return fmt.Errorf("subscription store %s: %w", p.c.names.store, err)
	}
	defer it.Close()
	// Each answer leaves as it is read, so that a foreign key named by
	// many keys holds nothing in memory; the answers cross a boundary and
	// never write this store.
	for it.Next() {
		hash, err := decodeFKStored(it.Value())
		if err != nil {
			return fmt.Errorf("subscription store %s: key %x: %w", p.c.names.store, it.Key(), err)
		}
		pk, err := p.c.keys.Deserialize(p.c.names.regTopic+"-pk", slices.Clone(it.Key()[len(prefix):]))
		if err != nil {
			return fmt.Errorf("deserialize key with serde %s: %w", p.c.keys.Name(), err)
		}
		p.ctx.Forward(processor.Erased{Key: pk, Value: fkResponse{hash: hash, foreign: ch.New}, Timestamp: rec.Timestamp, Headers: rec.Headers})
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("subscription store %s: %w", p.c.names.store, err)
	}
	return nil
}

// fkResolve keeps the copy of the left values (the primary store) and
// joins each response that answers the current one (Kafka Streams'
// ResponseJoinProcessorSupplier).
type fkResolve[K, V, KO, VO, VR any] struct {
	c     *fkConfig[K, V, KO, VO, VR]
	ctx   processor.Context[any, any]
	store state.TimestampedKeyValueStore[K, V]
}

func (p *fkResolve[K, V, KO, VO, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := p.c.init(ctx); err != nil {
		return err
	}
	s, err := processor.TimestampedKeyValueStore[K, V](ctx, p.c.names.primStore)
	p.store = s
	return err
}

func (p *fkResolve[K, V, KO, VO, VR]) Close() error { return nil }

func (p *fkResolve[K, V, KO, VO, VR]) Process(rec processor.Erased) error {
	k, err := processor.As[K](rec.Key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	switch v := rec.Value.(type) {
	case fkPrimary:
		if _, err := materialize(p.store, k, v.value, rec.Timestamp); err != nil {
			return fmt.Errorf("primary store %s: %w", p.c.names.primStore, err)
		}
		if !v.answerNull {
			return nil
		}
		return p.resolve(rec, v.value, nil)
	case fkResponse:
		cur, found, err := p.store.Get(k)
		if err != nil {
			return fmt.Errorf("primary store %s: %w", p.c.names.primStore, err)
		}
		var current any
		if found {
			current = cur.Value
		}
		hash, err := p.c.hash(current)
		if err != nil {
			return err
		}
		if !bytes.Equal(hash, v.hash) {
			// An answer to a left value since replaced: the answer to
			// the current one is on its way, or has come.
			return nil
		}
		if v.clears {
			rec.Value = fkClear{}
			p.ctx.Forward(rec)
			return nil
		}
		return p.resolve(rec, current, v.foreign)
	}
	return fmt.Errorf("foreign-key join %s: got a %T, want a response", p.c.names.result, rec.Value)
}

// resolve forwards the row of the left value current and the right value
// foreign: a delete when the right value is missing, unless a left join
// has a left value.
func (p *fkResolve[K, V, KO, VO, VR]) resolve(rec processor.Erased, current, foreign any) error {
	var result any
	if foreign != nil || (p.c.left && current != nil) {
		var err error
		if result, err = joinValues(p.c.joiner, current, foreign); err != nil {
			return err
		}
	}
	rec.Value = result
	p.ctx.Forward(rec)
	return nil
}

// fkResult materializes the join's rows and forwards them as changes, as
// Kafka Streams' KTableSource under the join does. A delete is forwarded
// even when the key had no row.
type fkResult[K, VR any] struct {
	meta   *tableMeta
	serdes []any
	ctx    processor.Context[any, any]
	store  state.TimestampedKeyValueStore[K, VR]
}

func (p *fkResult[K, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	s, err := openResultStore[K, VR](ctx, p.meta, p.serdes)
	p.store = s
	return err
}

func (p *fkResult[K, VR]) Close() error { return nil }

func (p *fkResult[K, VR]) Process(rec processor.Erased) error {
	k, err := processor.As[K](rec.Key)
	if err != nil {
		return fmt.Errorf("record key: %w", err)
	}
	if _, ok := rec.Value.(fkClear); ok {
		_, found, err := p.store.Get(k)
		if err != nil || !found {
			return err
		}
		rec.Value = nil
	}
	old, err := materialize(p.store, k, rec.Value, rec.Timestamp)
	if err != nil {
		return err
	}
	rec.Value = change{New: rec.Value, Old: old}
	p.ctx.Forward(rec)
	return nil
}
