package dsl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
)

// A stream-table join with a grace period (KIP-923, Joined.WithGracePeriod)
// holds each stream record back until event time has passed its
// timestamp by the grace, then joins it with the versioned table as of
// its timestamp, in timestamp order: table updates up to grace late still
// reach the stream records they concern. A record already that late when
// it arrives is joined at once, as Kafka Streams joins a record its
// buffer refuses.
//
// The held records are in a key-value store of bytes, "<join>-Buffer"
// (Kafka Streams' name for its RocksDBTimeOrderedKeyValueBuffer), logged
// to its changelog so that a restart loses none (decision 0035):
//
//	timestamp (8, big-endian) | serialized key | sequence number (4)  ->  0x01 | header count (uvarint) | headers | serialized value
//
// a header being its key length (uvarint), key, value length plus one
// (uvarint; 0 for a null value) and value. The key is Kafka Streams'
// time-first layout (TimeFirstWindowKeySchema) without its prefix byte,
// so records leave in timestamp order, then key bytes, then arrival. The
// layout of the values is ours: migrate translates Kafka Streams'
// BufferValue into it (GraceBuffer; docs/decisions/0043).
//
// "Now" is the buffer's own stream time, as in Kafka Streams'
// RocksDBTimeOrderedKeyValueBuffer: the largest timestamp of a record put
// into it. A record older than now less the grace is joined at once;
// otherwise it is put, and every record now less the grace has passed
// leaves. Only a buffered record moves that time and releases records,
// so, as in Kafka Streams, the last records wait for a later one, and a
// null value or a late record releases nothing. The time is the
// processor instance's: per task in Kafka Streams, per lane of a task
// here (decision 0035), which is the same with one lane; neither the
// watermark nor the floor is read, so the driver and the engine agree.

// GraceBuffer is implemented by the store builder of a stream-table
// join's grace buffer, so that tools can tell it from a plain key-value
// store of bytes: migrate translates Kafka Streams' buffer records into
// its layout, which is not Kafka Streams'.
type GraceBuffer interface {
	state.StoreBuilder
	// GraceBufferOf is the join node the buffer belongs to.
	GraceBufferOf() string
}

// graceBufferStore is the buffer's store builder.
type graceBufferStore struct {
	state.StoreBuilder
	join string
}

func (g graceBufferStore) GraceBufferOf() string { return g.join }

// graceBufferName is the buffer store of join node name, as Kafka Streams
// names it.
func graceBufferName(join string) string { return join + "-Buffer" }

func newGraceBufferStore(join string) graceBufferStore {
	return graceBufferStore{
		StoreBuilder: state.KeyValueStoreBuilder(graceBufferName(join), serde.Bytes(), serde.Bytes(), state.Default()),
		join:         join,
	}
}

// ErrGraceBufferEntry is the class of a buffer entry that does not decode.
var ErrGraceBufferEntry = errors.New("bad stream-table join buffer entry")

const (
	graceKeyTime      = 8
	graceKeySeq       = 4
	graceValueVersion = 0x01
)

// EncodeGraceBufferKey lays out a buffered record's key.
func EncodeGraceBufferKey(ts int64, key []byte, seq uint32) []byte {
	b := make([]byte, 0, graceKeyTime+len(key)+graceKeySeq)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	b = append(b, key...)
	return binary.BigEndian.AppendUint32(b, seq)
}

// DecodeGraceBufferKey splits a buffered record's key; key aliases b.
func DecodeGraceBufferKey(b []byte) (ts int64, key []byte, seq uint32, err error) {
	if len(b) < graceKeyTime+graceKeySeq {
		return 0, nil, 0, fmt.Errorf("%w: key of %d bytes", ErrGraceBufferEntry, len(b))
	}
	n := len(b) - graceKeySeq
	return int64(binary.BigEndian.Uint64(b)), b[graceKeyTime:n:n], binary.BigEndian.Uint32(b[n:]), nil
}

// EncodeGraceBufferValue lays out a buffered record's headers and value.
func EncodeGraceBufferValue(headers processor.Headers, value []byte) []byte {
	b := []byte{graceValueVersion}
	b = binary.AppendUvarint(b, uint64(len(headers)))
	for _, h := range headers {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		if h.Value == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(h.Value))+1)
		b = append(b, h.Value...)
	}
	return append(b, value...)
}

// DecodeGraceBufferValue reads what EncodeGraceBufferValue wrote. The
// value and the header values alias b.
func DecodeGraceBufferValue(b []byte) (processor.Headers, []byte, error) {
	if len(b) == 0 || b[0] != graceValueVersion {
		return nil, nil, fmt.Errorf("%w: no version byte", ErrGraceBufferEntry)
	}
	b = b[1:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: header count", ErrGraceBufferEntry)
	}
	b = b[w:]
	var hs processor.Headers
	for range n {
		kl, w := binary.Uvarint(b)
		if w <= 0 || kl > uint64(len(b)-w) {
			return nil, nil, fmt.Errorf("%w: header key length", ErrGraceBufferEntry)
		}
		key := string(b[w : w+int(kl)])
		b = b[w+int(kl):]
		vl, w := binary.Uvarint(b)
		if w <= 0 || (vl > 0 && vl-1 > uint64(len(b)-w)) {
			return nil, nil, fmt.Errorf("%w: header value length", ErrGraceBufferEntry)
		}
		b = b[w:]
		var val []byte
		if vl > 0 {
			end := int(vl - 1)
			val, b = b[:end:end], b[end:]
		}
		hs = append(hs, processor.Header{Key: key, Value: val})
	}
	return hs, b, nil
}

// graceJoin is lookupJoin behind the grace buffer.
type graceJoin[K, V, VT, VR any] struct {
	join       *lookupJoin[K, V, VT, VR]
	grace      int64
	store      string
	keySerde   serde.Serde[K]
	valueSerde serde.Serde[V]
	serdes     []any

	ctx processor.Context[any, any]
	buf state.KeyValueStore[[]byte, []byte]
	// raw is buf's byte store, scanned from its first key (the typed
	// store takes no open bound).
	raw state.KeyValueBytesStore
	seq uint32
	// observed is the buffer's stream time: the largest timestamp put,
	// -1 before any. A restored buffer starts from its largest held
	// timestamp (Kafka Streams replays its whole changelog for it).
	observed int64
	// minTS is the smallest buffered timestamp (math.MaxInt64 when none),
	// so that a put with nothing due reads nothing.
	minTS int64
}

func (p *graceJoin[K, V, VT, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if err := p.join.Init(ctx); err != nil {
		return err
	}
	if err := configureSerdes(ctx, p.serdes); err != nil {
		return fmt.Errorf("serdes of the join buffer %s: %w", p.store, err)
	}
	buf, err := processor.KeyValueStore[[]byte, []byte](ctx, p.store)
	if err != nil {
		return err
	}
	bb, ok := buf.(state.BytesBacked)
	if !ok {
		return fmt.Errorf("join buffer %s: a %T has no byte store", p.store, buf)
	}
	p.buf, p.raw = buf, bb.Bytes()
	// A restored buffer: continue its sequence numbers, so that a new
	// record never overwrites a held one of the same time and key.
	it, err := p.raw.All()
	if err != nil {
		return fmt.Errorf("join buffer %s: %w", p.store, err)
	}
	defer it.Close()
	p.minTS, p.observed = math.MaxInt64, -1
	for it.Next() {
		ts, _, seq, err := DecodeGraceBufferKey(it.Key())
		if err != nil {
			return fmt.Errorf("join buffer %s: %w", p.store, err)
		}
		p.minTS, p.seq, p.observed = min(p.minTS, ts), max(p.seq, seq), max(p.observed, ts)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("join buffer %s: %w", p.store, err)
	}
	return nil
}

// limit is the newest timestamp due at now: now less the grace.
func (p *graceJoin[K, V, VT, VR]) limit(now int64) int64 {
	if now < math.MinInt64+p.grace {
		return math.MinInt64
	}
	return now - p.grace
}

func (p *graceJoin[K, V, VT, VR]) Process(rec processor.Erased) error {
	// What the join drops or cannot hold goes to it now: null values
	// (dropped), null keys (dropped, or joined with nothing by a left
	// join; Kafka Streams' buffer refuses them), and records already
	// older than the grace.
	if rec.Value == nil || rec.Key == nil || rec.Timestamp < p.limit(p.observed) {
		return p.join.Process(rec)
	}
	k, v, err := narrow[K, V](rec)
	if err != nil {
		return err
	}
	kb, err := p.keySerde.Serialize(p.store, k)
	if err != nil {
		return fmt.Errorf("join buffer %s: serialize key: %w", p.store, err)
	}
	vb, err := p.valueSerde.Serialize(p.store, v)
	if err != nil {
		return fmt.Errorf("join buffer %s: serialize value: %w", p.store, err)
	}
	if kb == nil || vb == nil {
		return p.join.Process(rec)
	}
	p.seq = (p.seq + 1) & math.MaxInt32
	if err := p.buf.Put(EncodeGraceBufferKey(rec.Timestamp, kb, p.seq), EncodeGraceBufferValue(rec.Headers, vb)); err != nil {
		return fmt.Errorf("join buffer %s: %w", p.store, err)
	}
	p.minTS, p.observed = min(p.minTS, rec.Timestamp), max(p.observed, rec.Timestamp)
	// As Kafka Streams evicts right after each put.
	return p.evict(p.limit(p.observed))
}

// evict joins, in timestamp order, every held record stamped at or before
// limit, each with the headers and timestamp it arrived with.
func (p *graceJoin[K, V, VT, VR]) evict(limit int64) error {
	if limit < 0 || p.minTS > limit {
		return nil
	}
	var to []byte
	if limit < math.MaxInt64 {
		// Inclusive bound: every key is longer than these 8 bytes, so
		// this takes the keys stamped up to limit and none after.
		to = binary.BigEndian.AppendUint64(nil, uint64(limit+1))
	}
	it, err := p.raw.Range(nil, to)
	if err != nil {
		return fmt.Errorf("join buffer %s: %w", p.store, err)
	}
	type held struct{ key, value []byte }
	var due []held
	for it.Next() {
		// Copied: a RocksDB iterator reuses its memory.
		due = append(due, held{key: append([]byte(nil), it.Key()...), value: append([]byte(nil), it.Value()...)})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("join buffer %s: %w", p.store, err)
	}
	for _, h := range due {
		ts, kb, _, err := DecodeGraceBufferKey(h.key)
		if err != nil {
			return fmt.Errorf("join buffer %s: %w", p.store, err)
		}
		if ts > limit {
			break
		}
		hs, vb, err := DecodeGraceBufferValue(h.value)
		if err != nil {
			return fmt.Errorf("join buffer %s: %w", p.store, err)
		}
		k, err := p.keySerde.Deserialize(p.store, kb)
		if err != nil {
			return fmt.Errorf("join buffer %s: deserialize key: %w", p.store, err)
		}
		v, err := p.valueSerde.Deserialize(p.store, vb)
		if err != nil {
			return fmt.Errorf("join buffer %s: deserialize value: %w", p.store, err)
		}
		if _, _, err := p.buf.Delete(h.key); err != nil {
			return fmt.Errorf("join buffer %s: %w", p.store, err)
		}
		if err := p.join.Process(processor.Erased{Key: any(k), Value: any(v), Timestamp: ts, Headers: hs}); err != nil {
			return err
		}
	}
	// The smallest left, if any.
	it, err = p.raw.All()
	if err != nil {
		return fmt.Errorf("join buffer %s: %w", p.store, err)
	}
	defer it.Close()
	p.minTS = math.MaxInt64
	if it.Next() {
		if p.minTS, _, _, err = DecodeGraceBufferKey(it.Key()); err != nil {
			return fmt.Errorf("join buffer %s: %w", p.store, err)
		}
	}
	return it.Err()
}

func (p *graceJoin[K, V, VT, VR]) Close() error { return p.join.Close() }
