package state

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/serde"
)

// TimestampedKeyValueBuilder builds timestamped key-value stores. Logging is
// enabled by default, as in Kafka Streams.
type TimestampedKeyValueBuilder[K, V any] struct {
	builderBase
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	supplier   BytesSupplier
}

// TimestampedKeyValueStoreBuilder describes a timestamped key-value store
// named name whose bytes live in a store from supplier. valueSerde
// serializes the plain value; the store adds the timestamp.
func TimestampedKeyValueStoreBuilder[K, V any](name string, keySerde serde.Serde[K], valueSerde serde.Serde[V], supplier BytesSupplier) *TimestampedKeyValueBuilder[K, V] {
	return &TimestampedKeyValueBuilder[K, V]{
		builderBase: newBuilderBase(name, KindTimestampedKeyValue, keySerde, valueSerde, supplier),
		keySerde:    keySerde,
		valueSerde:  valueSerde,
		supplier:    supplier,
	}
}

// WithLoggingEnabled turns the changelog on with cfg as its topic config.
func (b *TimestampedKeyValueBuilder[K, V]) WithLoggingEnabled(cfg map[string]string) *TimestampedKeyValueBuilder[K, V] {
	b.enableLogging(cfg)
	return b
}

func (b *TimestampedKeyValueBuilder[K, V]) WithLoggingDisabled() *TimestampedKeyValueBuilder[K, V] {
	b.disableLogging()
	return b
}

// Build returns a store that implements TimestampedKeyValueStore[K, V],
// Restorer and BytesBacked.
func (b *TimestampedKeyValueBuilder[K, V]) Build() (Store, error) {
	inner, err := checkBuild(b.name, b.keySerde, b.valueSerde, b.supplier)
	if err != nil {
		return nil, err
	}
	return &keyValueStore[K, ValueAndTimestamp[V]]{
		name:     b.name,
		inner:    inner,
		keySerde: b.keySerde,
		codec:    timestampedCodec[V]{serde: b.valueSerde, null: nullCheckFor[V]()},
		logging:  b.logging,
	}, nil
}

// timestampedCodec keeps Kafka Streams' layouts: the byte store holds the
// timestamp followed by the serialized value; the changelog holds the plain
// serialized value with the timestamp as the record timestamp.
type timestampedCodec[V any] struct {
	serde serde.Serde[V]
	null  func(V) bool
}

// encode treats a null inner value as a delete, because Kafka Streams'
// ValueAndTimestamp.make(null, ts) is null. The tombstone then carries the
// current record's timestamp, there being no value timestamp to use.
func (c timestampedCodec[V]) encode(topic string, v ValueAndTimestamp[V], ctx Context) ([]byte, []byte, int64, error) {
	if c.null(v.Value) {
		return nil, nil, ctx.RecordTimestamp(), nil
	}
	if a, ok := c.serde.(serde.Appending[V]); ok {
		// One slice for both: the stored bytes are the timestamp and
		// the value, the logged ones the value, and neither is written
		// again. Its room fits an int64 count, a windowed count's
		// value, without growing.
		b := appendTimestamp(make([]byte, 0, timestampSize+8), v.Timestamp)
		b, err := a.AppendSerialize(b, topic, v.Value)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("serialize value: %w", err)
		}
		return b, b[timestampSize:], v.Timestamp, nil
	}
	b, err := c.serde.Serialize(topic, v.Value)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("serialize value: %w", err)
	}
	if b == nil {
		return nil, nil, ctx.RecordTimestamp(), nil
	}
	return EncodeValueAndTimestamp(b, v.Timestamp), b, v.Timestamp, nil
}

func (c timestampedCodec[V]) decode(topic string, stored []byte) (ValueAndTimestamp[V], error) {
	raw, ts, err := DecodeValueAndTimestamp(stored)
	if err != nil {
		return ValueAndTimestamp[V]{}, err
	}
	v, err := c.serde.Deserialize(topic, raw)
	if err != nil {
		return ValueAndTimestamp[V]{}, fmt.Errorf("deserialize value: %w", err)
	}
	return ValueAndTimestamp[V]{Value: v, Timestamp: ts}, nil
}

func (timestampedCodec[V]) fromChangelog(value []byte, ts int64) []byte {
	return EncodeValueAndTimestamp(value, ts)
}
