package testdriver

import (
	"fmt"
	"reflect"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/task"
)

// TestRecord is a record piped in or read out. KeyNull and ValueNull mark
// nulls, which a non-nillable K or V cannot hold: a tombstone read as a
// string value is "" with ValueNull set.
type TestRecord[K, V any] struct {
	Key       K
	Value     V
	Timestamp int64
	Headers   processor.Headers
	KeyNull   bool
	ValueNull bool
}

// KeyValue is a key and a value.
type KeyValue[K, V any] = state.KeyValue[K, V]

// InputTopic pipes typed records into a topic.
type InputTopic[K, V any] struct {
	d           *Driver
	topic       string
	keySerde    serde.Any
	valueSerde  serde.Any
	current     int64
	autoAdvance int64
}

// InputOption configures an input topic.
type InputOption func(*inputOptions)

type inputOptions struct {
	start       *int64
	autoAdvance time.Duration
}

// StartAt sets the timestamp given to records piped without one.
func StartAt(ms int64) InputOption { return func(o *inputOptions) { o.start = &ms } }

// AutoAdvance moves the topic's time by d after every record piped without
// a timestamp.
func AutoAdvance(d time.Duration) InputOption { return func(o *inputOptions) { o.autoAdvance = d } }

// CreateInputTopic returns a typed handle for piping into topic. Records
// piped without a timestamp get the topic's current time, which starts at
// the driver's wall clock (or StartAt) and moves by AutoAdvance.
func CreateInputTopic[K, V any](d *Driver, topic string, keySerde serde.Serde[K], valueSerde serde.Serde[V], opts ...InputOption) *InputTopic[K, V] {
	o := inputOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	start := d.wall
	if o.start != nil {
		start = *o.start
	}
	return &InputTopic[K, V]{d: d, topic: topic, keySerde: serde.Erase(keySerde), valueSerde: serde.Erase(valueSerde),
		current: start, autoAdvance: o.autoAdvance.Milliseconds()}
}

// AdvanceTime moves the topic's current time.
func (in *InputTopic[K, V]) AdvanceTime(d time.Duration) { in.current += d.Milliseconds() }

func (in *InputTopic[K, V]) nextTime() int64 {
	ts := in.current
	in.current += in.autoAdvance
	return ts
}

// PipeInput pipes a key and value at the topic's current time.
func (in *InputTopic[K, V]) PipeInput(key K, value V) error {
	return in.PipeRecord(TestRecord[K, V]{Key: key, Value: value, Timestamp: in.nextTime()})
}

// PipeInputAt pipes a key and value with a timestamp (epoch ms).
func (in *InputTopic[K, V]) PipeInputAt(key K, value V, ts int64) error {
	return in.PipeRecord(TestRecord[K, V]{Key: key, Value: value, Timestamp: ts})
}

// PipeValue pipes a value with a null key.
func (in *InputTopic[K, V]) PipeValue(value V) error {
	return in.PipeRecord(TestRecord[K, V]{Value: value, KeyNull: true, Timestamp: in.nextTime()})
}

// PipeTombstone pipes a null value for key at the topic's current time.
func (in *InputTopic[K, V]) PipeTombstone(key K) error {
	return in.PipeRecord(TestRecord[K, V]{Key: key, ValueNull: true, Timestamp: in.nextTime()})
}

// PipeTombstoneAt pipes a null value for key with a timestamp.
func (in *InputTopic[K, V]) PipeTombstoneAt(key K, ts int64) error {
	return in.PipeRecord(TestRecord[K, V]{Key: key, ValueNull: true, Timestamp: ts})
}

// PipeRecord pipes a record as given (its timestamp is used as is).
func (in *InputTopic[K, V]) PipeRecord(r TestRecord[K, V]) error {
	var k, v []byte
	var err error
	if !r.KeyNull && !isNil(r.Key) {
		if k, err = in.keySerde.SerializeAny(in.topic, any(r.Key)); err != nil {
			return fmt.Errorf("pipe into %s: serialize key with serde %s: %w", in.topic, in.keySerde.Name(), err)
		}
	}
	if !r.ValueNull && !isNil(r.Value) {
		if v, err = in.valueSerde.SerializeAny(in.topic, any(r.Value)); err != nil {
			return fmt.Errorf("pipe into %s: serialize value with serde %s: %w", in.topic, in.valueSerde.Name(), err)
		}
	}
	return in.d.pipe(task.Input{Topic: in.topic, Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers})
}

// PipeKeyValueList pipes each pair at the topic's current time.
func (in *InputTopic[K, V]) PipeKeyValueList(kvs []KeyValue[K, V]) error {
	for _, kv := range kvs {
		if err := in.PipeInput(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// PipeValueList pipes each value with a null key.
func (in *InputTopic[K, V]) PipeValueList(values []V) error {
	for _, v := range values {
		if err := in.PipeValue(v); err != nil {
			return err
		}
	}
	return nil
}

// PipeRecordList pipes each record.
func (in *InputTopic[K, V]) PipeRecordList(rs []TestRecord[K, V]) error {
	for _, r := range rs {
		if err := in.PipeRecord(r); err != nil {
			return err
		}
	}
	return nil
}

func isNil[T any](v T) bool {
	rv := reflect.ValueOf(any(v))
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// OutputTopic reads typed records a topology wrote. Reading consumes.
type OutputTopic[K, V any] struct {
	d          *Driver
	topic      string
	keySerde   serde.Any
	valueSerde serde.Any
}

// CreateOutputTopic returns a typed handle for reading topic.
func CreateOutputTopic[K, V any](d *Driver, topic string, keySerde serde.Serde[K], valueSerde serde.Serde[V]) *OutputTopic[K, V] {
	return &OutputTopic[K, V]{d: d, topic: topic, keySerde: serde.Erase(keySerde), valueSerde: serde.Erase(valueSerde)}
}

// QueueSize is the number of unread records.
func (out *OutputTopic[K, V]) QueueSize() int { return len(out.d.outputs[out.topic]) }

// IsEmpty reports whether every record has been read.
func (out *OutputTopic[K, V]) IsEmpty() bool { return out.QueueSize() == 0 }

// ReadRecord reads and consumes the next record.
func (out *OutputTopic[K, V]) ReadRecord() (TestRecord[K, V], error) {
	q := out.d.outputs[out.topic]
	if len(q) == 0 {
		return TestRecord[K, V]{}, fmt.Errorf("read %s: %w", out.topic, ErrNoRecord)
	}
	o := q[0]
	out.d.outputs[out.topic] = q[1:]
	r := TestRecord[K, V]{Timestamp: o.Timestamp, Headers: o.Headers, KeyNull: o.Key == nil, ValueNull: o.Value == nil}
	k, err := out.keySerde.DeserializeAny(out.topic, o.Key)
	if err != nil {
		return r, fmt.Errorf("read %s: key: %w", out.topic, err)
	}
	v, err := out.valueSerde.DeserializeAny(out.topic, o.Value)
	if err != nil {
		return r, fmt.Errorf("read %s: value: %w", out.topic, err)
	}
	if r.Key, err = processor.As[K](k); err != nil {
		return r, fmt.Errorf("read %s: key: %w", out.topic, err)
	}
	if r.Value, err = processor.As[V](v); err != nil {
		return r, fmt.Errorf("read %s: value: %w", out.topic, err)
	}
	return r, nil
}

// ReadValue reads the next record's value.
func (out *OutputTopic[K, V]) ReadValue() (V, error) {
	r, err := out.ReadRecord()
	return r.Value, err
}

// ReadKeyValue reads the next record's key and value.
func (out *OutputTopic[K, V]) ReadKeyValue() (KeyValue[K, V], error) {
	r, err := out.ReadRecord()
	return KeyValue[K, V]{Key: r.Key, Value: r.Value}, err
}

// ReadRecordsToList reads every remaining record.
func (out *OutputTopic[K, V]) ReadRecordsToList() ([]TestRecord[K, V], error) {
	var rs []TestRecord[K, V]
	for !out.IsEmpty() {
		r, err := out.ReadRecord()
		if err != nil {
			return rs, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// ReadValuesToList reads every remaining value.
func (out *OutputTopic[K, V]) ReadValuesToList() ([]V, error) {
	rs, err := out.ReadRecordsToList()
	vs := make([]V, len(rs))
	for i, r := range rs {
		vs[i] = r.Value
	}
	return vs, err
}

// ReadKeyValuesToList reads every remaining key and value.
func (out *OutputTopic[K, V]) ReadKeyValuesToList() ([]KeyValue[K, V], error) {
	rs, err := out.ReadRecordsToList()
	kvs := make([]KeyValue[K, V], len(rs))
	for i, r := range rs {
		kvs[i] = KeyValue[K, V]{Key: r.Key, Value: r.Value}
	}
	return kvs, err
}

// ReadKeyValuesToMap reads every remaining record into a map holding the
// latest value per key; a tombstone removes its key.
func ReadKeyValuesToMap[K comparable, V any](out *OutputTopic[K, V]) (map[K]V, error) {
	rs, err := out.ReadRecordsToList()
	m := map[K]V{}
	for _, r := range rs {
		if r.ValueNull {
			delete(m, r.Key)
			continue
		}
		m[r.Key] = r.Value
	}
	return m, err
}

// KeyValueStore returns the typed key-value store called name.
func KeyValueStore[K, V any](d *Driver, name string) (state.KeyValueStore[K, V], error) {
	return storeAs[state.KeyValueStore[K, V]](d, name)
}

// TimestampedKeyValueStore returns the typed timestamped store called name.
func TimestampedKeyValueStore[K, V any](d *Driver, name string) (state.TimestampedKeyValueStore[K, V], error) {
	return storeAs[state.TimestampedKeyValueStore[K, V]](d, name)
}

func storeAs[S any](d *Driver, name string) (S, error) {
	var zero S
	s, ok := d.StateStore(name)
	if !ok {
		return zero, fmt.Errorf("state store %s does not exist", name)
	}
	typed, ok := s.(S)
	if !ok {
		return zero, fmt.Errorf("state store %s is a %T, not a %s", name, s, reflect.TypeFor[S]())
	}
	return typed, nil
}

// Skip consumes every unread record without decoding it and returns how
// many there were; benchmarks and long tests use it to keep memory flat.
func (out *OutputTopic[K, V]) Skip() int {
	q := out.d.outputs[out.topic]
	clear(q)
	out.d.outputs[out.topic] = q[:0]
	return len(q)
}
