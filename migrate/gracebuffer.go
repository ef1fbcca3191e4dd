package migrate

import (
	"fmt"

	"github.com/stoatflow/stoatctl/engine/dsl"
)

// JoinBuffer is a stream-table join's grace buffer (KIP-923). Kafka
// Streams' RocksDBTimeOrderedKeyValueBuffer logs each held record keyed
// by PrefixedWindowKeySchemas.TimeFirstWindowKeySchema (a prefix byte, 0;
// the record's timestamp, 8 bytes; the serialized key; a sequence number,
// 4 bytes: ours without the prefix) with a BufferValue: the record context (its
// timestamp, offset, topic, partition and headers), a null prior and old
// value, the serialized value, then a buffer time (8 bytes), the layout
// of a V3 suppress buffer record without its header. Ours keeps the
// headers and the value (dsl.EncodeGraceBufferValue): the translation
// drops the offset, topic and partition, which our join does not read.
//
// The buffer's clock, the largest timestamp put, is rebuilt by both
// restores: Kafka Streams' from every key its changelog held, ours from
// the keys still held, and with a grace above zero the record that set
// the clock is still held (only records a grace older leave).
const JoinBuffer Kind = "join-buffer"

// ksTimeFirstPrefix is TimeFirstWindowKeySchema's TIME_FIRST_PREFIX.
const ksTimeFirstPrefix = 0

// ourJoinBufferKey is the key of our buffer for a key of Kafka Streams':
// its prefix byte dropped.
func ourJoinBufferKey(key []byte) ([]byte, error) {
	if len(key) == 0 || key[0] != ksTimeFirstPrefix {
		return nil, fmt.Errorf("join buffer key does not start with TimeFirstWindowKeySchema's prefix %d", ksTimeFirstPrefix)
	}
	return key[1:], nil
}

// translateJoinBuffer turns a decoded record of Kafka Streams' buffer
// changelog into ours.
func translateJoinBuffer(e Entry) (Entry, error) {
	if e.Value == nil {
		return e, nil
	}
	ts, _, _, err := dsl.DecodeGraceBufferKey(e.Key)
	if err != nil {
		return e, err
	}
	v, err := DecodeSuppressV3(e.Value)
	if err != nil {
		return e, fmt.Errorf("BufferValue: %w", err)
	}
	switch {
	case v.New == nil:
		return e, fmt.Errorf("BufferValue with no value: the join buffers none")
	case v.Prior != nil || v.Old != nil:
		return e, fmt.Errorf("BufferValue with a prior or old value: a join buffer holds neither (a suppress buffer's record?)")
	case v.Timestamp != ts:
		return e, fmt.Errorf("BufferValue's record timestamp %d is not its key's %d", v.Timestamp, ts)
	}
	e.Value = dsl.EncodeGraceBufferValue(v.Headers, v.New)
	return e, nil
}
