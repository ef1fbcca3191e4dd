package migrate

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/state"
)

// Kind is a store's byte layout, as a changelog holds it.
type Kind string

const (
	// KeyValue is a plain or timestamped key-value store: the changelog
	// key is the serialized key, the value the serialized value (a
	// timestamped store's timestamp is the record's timestamp, not a
	// prefix: Kafka Streams' change-logging layer strips it).
	KeyValue Kind = "key-value"
	// Window is a window store: key, start (8 bytes), sequence number (4).
	Window Kind = "window"
	// Session is a session store: key, end (8 bytes), start (8 bytes).
	Session Kind = "session"
	// Versioned is a versioned key-value store (Kafka Streams'
	// ChangeLoggingVersionedKeyValueBytesStore): the key-value layout, but
	// every record is a version, valid from the record's timestamp, not
	// a replacement of the key's value. Its changelog is copied record for
	// record and verified version by version; a key's last record is not
	// its latest version when versions came out of order.
	Versioned Kind = "versioned"
	// SuppressBuffer is a suppress operator's buffer: Kafka Streams' V3
	// layout (see SuppressV3), translated into ours by DecodeSuppress.
	SuppressBuffer Kind = "suppress-buffer"
)

// kindOf maps our store kinds to layouts.
func kindOf(k state.Kind) (Kind, bool) {
	switch k {
	case state.KindKeyValue, state.KindTimestampedKeyValue:
		return KeyValue, true
	case state.KindWindow, state.KindTimestampedWindow:
		return Window, true
	case state.KindSession:
		return Session, true
	case state.KindVersionedKeyValue:
		return Versioned, true
	}
	return "", false
}

// ErrCorrupt is the class of every record that does not decode; errors.Is
// finds it in a *RecordError.
var ErrCorrupt = errors.New("corrupt changelog record")

// RecordError is a changelog record that does not decode, with where it is.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Store     string
	Err       error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s[%d] offset %d (store %s): %v", e.Topic, e.Partition, e.Offset, e.Store, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

func (e *RecordError) Is(target error) bool { return target == ErrCorrupt }

// Entry is one decoded changelog record.
type Entry struct {
	// Key is the changelog key, the same bytes in Kafka Streams' layout
	// and ours.
	Key []byte
	// LaneKey is the serialized record key inside it: the whole key of a
	// key-value store, the key before the window suffix otherwise. Its
	// murmur2 hash is the lane hash header.
	LaneKey []byte
	// Value is nil for a tombstone.
	Value     []byte
	Timestamp int64
	// Start and End of a window or session; End is -1 for a window,
	// whose size the store knows, not the key. For a JoinOuter record
	// Start is the unmatched record's timestamp.
	Start, End int64
	// Left is, for a JoinOuter record, whether the unmatched records are
	// the left (first) input's; Waiting is how many wait under the key
	// (0 for a tombstone).
	Left    bool
	Waiting int
}

// Decode reads one changelog record of a store of kind k. valueCheck, when
// not nil, is asked about every value that is not a tombstone (see
// serdeCheck). It copies nothing: the entry aliases key and value.
func Decode(k Kind, key, value []byte, ts int64, valueCheck func([]byte) error) (Entry, error) {
	e := Entry{Key: key, Value: value, Timestamp: ts, End: -1}
	if key == nil {
		return e, errors.New("null key")
	}
	switch k {
	case KeyValue, Versioned:
		e.LaneKey = key
	case Window:
		inner, start, _, err := state.DecodeWindowKey(key)
		if err != nil {
			return e, err
		}
		if start < 0 {
			return e, fmt.Errorf("window start %d is negative", start)
		}
		e.LaneKey, e.Start = inner, start
	case Session:
		inner, start, end, err := state.DecodeSessionKey(key)
		if err != nil {
			return e, err
		}
		if start < 0 || end < start {
			return e, fmt.Errorf("session [%d, %d] is not a session", start, end)
		}
		e.LaneKey, e.Start, e.End = inner, start, end
	case JoinBuffer:
		// The key only: the value is Kafka Streams' BufferValue or ours
		// (translateJoinBuffer).
		_, inner, _, err := dsl.DecodeGraceBufferKey(key)
		if err != nil {
			return e, err
		}
		e.LaneKey = inner
		return e, nil
	case FKSubscription:
		// The key only: the value is Kafka Streams' SubscriptionWrapper
		// or ours, translated from it by the plan (translateSubscription).
		sub, err := DecodeSubscription(key, nil)
		if err != nil {
			return e, err
		}
		e.LaneKey = sub.ForeignKey
		return e, nil
	case JoinOuter:
		// The value's elements are checked by the layout, the values
		// inside them by the sample (our store's serdes).
		return decodeJoinOuter(e)
	case SuppressBuffer:
		return e, errors.New("a suppress buffer record is decoded with its headers: DecodeSuppress")
	default:
		return e, fmt.Errorf("unknown store kind %q", k)
	}
	if value != nil && valueCheck != nil {
		if err := valueCheck(value); err != nil {
			return e, fmt.Errorf("value: %w", err)
		}
	}
	return e, nil
}

// serdeCheck returns a check of serialized bytes that fails where the
// named serde could not have written them, or nil for a serde whose every
// byte string is valid.
func serdeCheck(name string) func([]byte) error {
	fixed := func(n int, what string) func([]byte) error {
		return func(b []byte) error {
			if len(b) != n {
				return fmt.Errorf("%d bytes, a %s is %d (serde %s)", len(b), what, n, name)
			}
			return nil
		}
	}
	switch name {
	case "long", "int64":
		return fixed(8, "long")
	case "integer", "int", "int32":
		return fixed(4, "integer")
	case "double", "float64":
		return fixed(8, "double")
	case "string":
		return func(b []byte) error {
			if !utf8.Valid(b) {
				return fmt.Errorf("not UTF-8 (serde %s)", name)
			}
			return nil
		}
	}
	return nil
}

// ErrSuppressBuffer is a suppress buffer holding records that cannot be
// translated: with no suppress buffer of ours to go to, or for a
// suppressed table whose key layout, and so the lane of each entry, our
// topology does not tell (docs/migration.md, "What is not migrated").
var ErrSuppressBuffer = errors.New("a suppress buffer that holds records is not translated: let the suppression drain (stop the input and wait for its releases) before cutting over")

// SuppressVersion reads the version header Kafka Streams' suppress buffer
// puts on its changelog records ("v", one byte: 1, 2 or 3). ok is false
// when there is none, which is how such a changelog is told from others.
func SuppressVersion(headers map[string][]byte) (version int, ok bool) {
	v, found := headers["v"]
	if !found || len(v) != 1 || v[0] < 1 || v[0] > 3 {
		return 0, false
	}
	return int(v[0]), true
}

// ErrMetadata is the class of committed offset metadata that does not
// decode; errors.Is finds it in an *OffsetError.
var ErrMetadata = kafka.ErrBadOffsetMetadata

// OffsetError is committed offset metadata that does not decode: an
// unknown TopicPartitionMetadata version, or bytes that are not one.
type OffsetError struct {
	Group     string
	Topic     string
	Partition int32
	Err       error
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("group %s: committed offset of %s[%d]: %v", e.Group, e.Topic, e.Partition, e.Err)
}

func (e *OffsetError) Unwrap() error { return e.Err }

// DecodeOffsetMetadata reads Kafka Streams' TopicPartitionMetadata
// (versions 1 and 2, with processor metadata) committed with an offset.
func DecodeOffsetMetadata(group, topic string, partition int32, md string) (kafka.TopicPartitionMetadata, error) {
	m, err := kafka.DecodeTopicPartitionMetadata(md)
	if err != nil {
		return m, &OffsetError{Group: group, Topic: topic, Partition: partition, Err: err}
	}
	return m, nil
}
