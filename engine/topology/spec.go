package topology

import (
	"fmt"
	"regexp"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// OffsetReset is where a source starts when its group has no committed
// offset.
type OffsetReset string

const (
	ResetDefault  OffsetReset = ""
	ResetEarliest OffsetReset = "earliest"
	ResetLatest   OffsetReset = "latest"
	ResetNone     OffsetReset = "none"
)

// ConsumedRecord is a record as a timestamp extractor sees it: deserialized,
// with its position and the timestamp the broker gave it.
type ConsumedRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       any
	Value     any
	Timestamp int64
	Headers   processor.Headers
}

// TimestampExtractor picks a record's event time. partitionTime is the
// largest timestamp seen on the record's partition so far (-1 before the
// first). A negative result with a nil error means: skip the record.
type TimestampExtractor interface {
	Name() string
	Extract(rec ConsumedRecord, partitionTime int64) (int64, error)
}

// SourceSpec is the erased configuration of a source node.
type SourceSpec struct {
	Topics  []string
	Pattern *regexp.Regexp
	// KeySerde and ValueSerde are nil when the default serdes apply.
	KeySerde   serde.Any
	ValueSerde serde.Any
	// KeyDeserializerOnly marks a KeySerde given as a deserializer only
	// (ConsumedWithDeserializers): it reads the topic's keys but declares
	// nothing about the bytes a key is written as, so the timer key serde
	// does not come from it.
	KeyDeserializerOnly bool
	Extractor           TimestampExtractor
	Reset               OffsetReset
	// Watermark is the source's declared event-time strategy, or nil for
	// the configured default (stoatflow.watermark.*). Its assigner, when
	// set, replaces the timestamp extractor.
	Watermark *watermark.Strategy
	// Table marks the source of a table (dsl.Table) beside streams: its
	// records update state and are not the application's event time, so
	// its partitions neither hold the watermark back nor move it (a quiet
	// or empty table would otherwise hold every window open, and a table
	// update stamped ahead would make the stream's records late). Kafka
	// Streams' windows likewise see only the records that reach them.
	// Build clears it when the topology reads nothing but tables: their
	// records are then the only time there is (a suppressed table lets
	// results through on it).
	Table bool
}

// SinkSpec is the erased configuration of a sink node.
type SinkSpec struct {
	Topic       string
	Chooser     TopicChooser
	KeySerde    serde.Any
	ValueSerde  serde.Any
	Partitioner Partitioner
}

// TopicChooser picks a sink's topic per record.
type TopicChooser func(key, value any, rec RecordContext) string

// RecordContext is what a topic chooser knows about the record.
type RecordContext struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
	Headers   processor.Headers
}

// Partitioner picks a partition for a record; false leaves it to the
// producer's default (the hash of the key bytes).
type Partitioner func(topic string, key, value any, numPartitions int32) (int32, bool)

// StreamPartitioner is the typed form of Partitioner.
type StreamPartitioner[K, V any] func(topic string, key K, value V, numPartitions int32) (int32, bool)

// Consumed says how a source reads its topics: serdes, event time and where
// to start. The zero value uses the configured defaults.
type Consumed[K, V any] struct {
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	extractor  TimestampExtractor
	reset      OffsetReset
	name       string
	watermark  *watermark.Strategy
	// keyDeserializerOnly: keySerde wraps a deserializer and declares no
	// key bytes (ConsumedWithDeserializers).
	keyDeserializerOnly bool
}

// ConsumedWith returns a Consumed with the given serdes.
func ConsumedWith[K, V any](keySerde serde.Serde[K], valueSerde serde.Serde[V]) Consumed[K, V] {
	return Consumed[K, V]{keySerde: keySerde, valueSerde: valueSerde}
}

// WithTimestampExtractor sets how event time is read from records.
func (c Consumed[K, V]) WithTimestampExtractor(e TimestampExtractor) Consumed[K, V] {
	c.extractor = e
	return c
}

// WithWatermarkStrategy declares the source's event time: its timestamp
// assigner (which overrides the timestamp extractor), its watermark
// generator, idleness and alignment group.
func (c Consumed[K, V]) WithWatermarkStrategy(s watermark.Strategy) Consumed[K, V] {
	c.watermark = &s
	return c
}

// WithOffsetReset sets where the source starts without a committed offset.
func (c Consumed[K, V]) WithOffsetReset(r OffsetReset) Consumed[K, V] {
	c.reset = r
	return c
}

// WithName names the source node.
func (c Consumed[K, V]) WithName(name string) Consumed[K, V] {
	c.name = name
	return c
}

// Name is the node name set by WithName, or "".
func (c Consumed[K, V]) Name() string { return c.name }

// KeySerde is the declared key serde, or nil.
func (c Consumed[K, V]) KeySerde() serde.Serde[K] { return c.keySerde }

// ValueSerde is the declared value serde, or nil.
func (c Consumed[K, V]) ValueSerde() serde.Serde[V] { return c.valueSerde }

// Spec erases c for a source node reading topics.
func (c Consumed[K, V]) Spec(topics ...string) SourceSpec {
	return SourceSpec{
		Topics:              topics,
		KeySerde:            eraseOrNil(c.keySerde),
		ValueSerde:          eraseOrNil(c.valueSerde),
		KeyDeserializerOnly: c.keyDeserializerOnly,
		Extractor:           c.extractor,
		Reset:               c.reset,
		Watermark:           c.watermark,
	}
}

// Produced says how a sink writes: serdes and partitioning. The zero value
// uses the configured default serdes and the producer's partitioner.
type Produced[K, V any] struct {
	keySerde    serde.Serde[K]
	valueSerde  serde.Serde[V]
	partitioner StreamPartitioner[K, V]
	name        string
}

// ProducedWith returns a Produced with the given serdes.
func ProducedWith[K, V any](keySerde serde.Serde[K], valueSerde serde.Serde[V]) Produced[K, V] {
	return Produced[K, V]{keySerde: keySerde, valueSerde: valueSerde}
}

// WithPartitioner sets a custom partitioner.
func (p Produced[K, V]) WithPartitioner(f StreamPartitioner[K, V]) Produced[K, V] {
	p.partitioner = f
	return p
}

// WithName names the sink node.
func (p Produced[K, V]) WithName(name string) Produced[K, V] {
	p.name = name
	return p
}

// Name is the node name set by WithName, or "".
func (p Produced[K, V]) Name() string { return p.name }

// KeySerde is the declared key serde, or nil.
func (p Produced[K, V]) KeySerde() serde.Serde[K] { return p.keySerde }

// ValueSerde is the declared value serde, or nil.
func (p Produced[K, V]) ValueSerde() serde.Serde[V] { return p.valueSerde }

// Spec erases p for a sink node writing topic.
func (p Produced[K, V]) Spec(topic string) SinkSpec {
	s := SinkSpec{Topic: topic, KeySerde: eraseOrNil(p.keySerde), ValueSerde: eraseOrNil(p.valueSerde)}
	if p.partitioner != nil {
		f := p.partitioner
		s.Partitioner = func(topic string, key, value any, n int32) (int32, bool) {
			k, err := processor.As[K](key)
			if err != nil {
				return 0, false
			}
			v, err := processor.As[V](value)
			if err != nil {
				return 0, false
			}
			return f(topic, k, v, n)
		}
	}
	return s
}

func eraseOrNil[T any](s serde.Serde[T]) serde.Any {
	if s == nil {
		return nil
	}
	return serde.Erase(s)
}

// Built-in timestamp extractors.
var (
	// RecordTimestamp uses the record's own timestamp and fails on a
	// negative one (Kafka Streams' FailOnInvalidTimestamp).
	RecordTimestamp TimestampExtractor = recordTimestamp{}
	// LogAndSkipOnInvalidTimestamp skips records with a negative timestamp.
	LogAndSkipOnInvalidTimestamp TimestampExtractor = skipInvalid{}
	// UsePartitionTimeOnInvalidTimestamp replaces a negative timestamp by
	// the partition time, and fails when there is none yet.
	UsePartitionTimeOnInvalidTimestamp TimestampExtractor = partitionTimeOnInvalid{}
)

// ErrInvalidTimestamp is returned for a record whose timestamp is negative.
var ErrInvalidTimestamp = fmt.Errorf("invalid (negative) timestamp")

type recordTimestamp struct{}

func (recordTimestamp) Name() string { return "record" }
func (recordTimestamp) Extract(r ConsumedRecord, _ int64) (int64, error) {
	if r.Timestamp < 0 {
		return 0, fmt.Errorf("%w %d", ErrInvalidTimestamp, r.Timestamp)
	}
	return r.Timestamp, nil
}

type skipInvalid struct{}

func (skipInvalid) Name() string { return "log-and-skip" }
func (skipInvalid) Extract(r ConsumedRecord, _ int64) (int64, error) {
	return r.Timestamp, nil
}

type partitionTimeOnInvalid struct{}

func (partitionTimeOnInvalid) Name() string { return "use-partition-time" }
func (partitionTimeOnInvalid) Extract(r ConsumedRecord, pt int64) (int64, error) {
	if r.Timestamp >= 0 {
		return r.Timestamp, nil
	}
	if pt < 0 {
		return 0, fmt.Errorf("%w %d and no partition time yet", ErrInvalidTimestamp, r.Timestamp)
	}
	return pt, nil
}

// ExtractorByName resolves default.timestamp.extractor values, accepting
// Kafka Streams' class names too.
func ExtractorByName(name string) (TimestampExtractor, error) {
	switch name {
	case "", "record", "org.apache.kafka.streams.processor.FailOnInvalidTimestamp":
		return RecordTimestamp, nil
	case "log-and-skip", "org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp":
		return LogAndSkipOnInvalidTimestamp, nil
	case "use-partition-time", "org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp":
		return UsePartitionTimeOnInvalidTimestamp, nil
	}
	return nil, fmt.Errorf("unknown timestamp extractor %q (known: record, log-and-skip, use-partition-time)", name)
}
