package migrate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// A foreign-key join's state (docs/decisions/0043): Kafka Streams keeps a
// subscription store beside the right table, keyed by CombinedKeySchema
// (the foreign key's length, 4 bytes big-endian, the foreign key, the
// left key), each value a SubscriptionWrapper with the Murmur3 hash of the
// left value that subscribed; its resolver reads the left table's own
// store. Ours keeps the same keys with our own hash of the left value,
// and a copy of the left table (the primary store) beside the resolver.
// At a cutover every subscription answers the left key's current value
// (the subscription and response topics drained: checked), so each of
// Kafka Streams' subscriptions becomes ours by hashing that value as our
// join does, after checking that Kafka Streams' hash is of that value,
// and the primary store is a copy of the left table's store.

// FKSubscription is a foreign-key join's subscription store: Kafka
// Streams' SubscriptionWrapper values, translated into our layout by the
// left table's values (dsl.ForeignKeyJoinSubscriptions).
const FKSubscription Kind = "fk-subscription"

// Kafka Streams' SubscriptionWrapper (SubscriptionWrapperSerde): the
// first byte is the version (low 7 bits) with 0x80 set when the hash is
// null, then the instruction, the 16-byte hash unless null, the left key,
// and in version 1 the left key's partition (4 bytes).
const (
	subscriptionHashNull      = 0x80
	subscriptionMaxVersion    = 1
	subscriptionMaxInstructon = 3 // PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
)

// Subscription is a decoded record of Kafka Streams' subscription store.
type Subscription struct {
	// ForeignKey and LeftKey are the parts of the CombinedKey.
	ForeignKey, LeftKey []byte
	// Hash is the Murmur3 hash (128 bits, Kafka Streams' Murmur3.hash128)
	// of the left value that subscribed; nil for none.
	Hash        []byte
	Instruction byte
	Version     byte
}

// DecodeSubscription reads a record of Kafka Streams' subscription store's
// changelog: the CombinedKey and, unless value is nil (a deletion), the
// SubscriptionWrapper, whose left key must be the key's.
func DecodeSubscription(key, value []byte) (Subscription, error) {
	var s Subscription
	if len(key) < 4 {
		return s, fmt.Errorf("subscription key of %d bytes: a CombinedKey starts with the foreign key's length (4 bytes)", len(key))
	}
	n := binary.BigEndian.Uint32(key)
	if uint64(n) > uint64(len(key)-4) {
		return s, fmt.Errorf("subscription key: foreign key of %d bytes in a key of %d", n, len(key))
	}
	s.ForeignKey, s.LeftKey = key[4:4+n], key[4+n:]
	if value == nil {
		return s, nil
	}
	if len(value) < 2 {
		return s, fmt.Errorf("subscription value of %d bytes: not a SubscriptionWrapper", len(value))
	}
	s.Version, s.Instruction = value[0]&^subscriptionHashNull, value[1]
	if s.Version > subscriptionMaxVersion {
		return s, fmt.Errorf("SubscriptionWrapper version %d: versions 0 and 1 are known", s.Version)
	}
	if s.Instruction > subscriptionMaxInstructon {
		return s, fmt.Errorf("SubscriptionWrapper instruction %d is not one", s.Instruction)
	}
	rest := value[2:]
	if value[0]&subscriptionHashNull == 0 {
		if len(rest) < 16 {
			return s, fmt.Errorf("SubscriptionWrapper of %d bytes: its hash is 16", len(value))
		}
		s.Hash, rest = rest[:16], rest[16:]
	}
	if s.Version == 1 {
		if len(rest) < 4 {
			return s, fmt.Errorf("SubscriptionWrapper version 1 of %d bytes: it ends with the left key's partition (4 bytes)", len(value))
		}
		rest = rest[:len(rest)-4]
	}
	if string(rest) != string(s.LeftKey) {
		return s, fmt.Errorf("SubscriptionWrapper's left key %x is not its CombinedKey's %x", rest, s.LeftKey)
	}
	return s, nil
}

// ksMurmur3 is Kafka Streams' Murmur3.hash128 (the x64 128-bit variant,
// seed 104729) of data, its two longs big-endian, as the
// SubscriptionWrapper carries it.
func ksMurmur3(data []byte) [16]byte {
	const (
		c1   = 0x87c37b91114253d5
		c2   = 0x4cf5ad432745937f
		seed = 104729
	)
	h1, h2 := uint64(seed), uint64(seed)
	n := len(data)
	for i := 0; i+16 <= n; i += 16 {
		k1 := binary.LittleEndian.Uint64(data[i:])
		k2 := binary.LittleEndian.Uint64(data[i+8:])
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}
	tail := data[n/16*16:]
	var k1, k2 uint64
	for i := len(tail) - 1; i >= 8; i-- {
		k2 ^= uint64(tail[i]) << (8 * (i - 8))
	}
	if len(tail) > 8 {
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
	}
	for i := min(len(tail), 8) - 1; i >= 0; i-- {
		k1 ^= uint64(tail[i]) << (8 * i)
	}
	if len(tail) > 0 {
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	var out [16]byte
	binary.BigEndian.PutUint64(out[:], h1)
	binary.BigEndian.PutUint64(out[8:], h2)
	return out
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// leftValue is what the translation keeps of a left table's value: Kafka
// Streams' hash of it, and our subscription store's value for it.
type leftValue struct {
	theirs [16]byte
	ours   []byte
}

// fkLeft is a foreign-key join's left table as the translation of its
// subscriptions needs it, by left key bytes.
type fkLeft struct {
	store, topic string
	values       map[string]leftValue
}

// ErrFKSubscription is the class of a subscription of Kafka Streams that
// does not answer its left key's current value: the join had not settled
// when it stopped, and the subscription cannot be translated.
var ErrFKSubscription = errors.New("a foreign-key join's subscription that is not the left table's current value")

// ksStoreOf is the Kafka Streams store that maps to our store ours: by
// --map, else the same name.
func (s *session) ksStoreOf(ours string) string {
	for ks, o := range s.opts.Map {
		if o == ours {
			return ks
		}
	}
	return ours
}

// fkLeftValues reads, once per left store, Kafka Streams' changelog of the
// left table's store to its end: each key's latest value, hashed both ways
// (held: 16 + 17 bytes and the key per left key).
func (s *session) fkLeftValues(ctx context.Context, sp *StorePlan, sub dsl.ForeignKeyJoinSubscriptions, leftStore string) (*fkLeft, error) {
	ks := s.ksStoreOf(leftStore)
	l := &fkLeft{store: ks, topic: topology.ChangelogTopic(s.opts.From, ks), values: map[string]leftValue{}}
	d, err := s.adm.ListTopics(ctx, l.topic)
	if err != nil {
		return nil, fmt.Errorf("migrate: look up %s: %w", l.topic, err)
	}
	td, ok := d[l.topic]
	if !ok || td.Err != nil {
		sp.problem(ProblemStoreKind, nil, "store %s: the left table's store %s of our foreign-key join has no Kafka Streams changelog %s to translate the subscriptions by", sp.Source, leftStore, l.topic)
		return nil, nil
	}
	var first error
	if _, err := s.read(ctx, l.topic, kafka.FromLogStart(partitionsOf(td)...), func(r *kgo.Record) error {
		if r.Value == nil {
			delete(l.values, string(r.Key))
			return nil
		}
		ours, err := sub.SubscriptionValue(r.Value)
		if err != nil {
			if first == nil {
				first = &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Store: ks, Err: err}
			}
			return nil
		}
		l.values[string(r.Key)] = leftValue{theirs: ksMurmur3(r.Value), ours: ours}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("migrate: read %s: %w", l.topic, err)
	}
	if first != nil {
		sp.problem(ProblemRecord, first, "store %s: the left table's value cannot be hashed as our join hashes it: %v", sp.Source, first)
		return nil, nil
	}
	return l, nil
}

// fkLast is, for a subscription store's changelog, each key's last
// record by partition: the store's state, which alone is translated. An
// earlier record of a key was sent by a value the left key has since
// replaced, which its later record (or tombstone) supersedes.
type fkLast map[int32]map[string]lastRecord

// lastRecord is a key's last record in a changelog partition.
type lastRecord struct {
	offset int64
	value  []byte
	ts     int64
}

// keep notes r as its key's last record so far.
func (l fkLast) keep(r *kgo.Record) {
	keys := l[r.Partition]
	if keys == nil {
		keys = map[string]lastRecord{}
		l[r.Partition] = keys
	}
	keys[string(r.Key)] = lastRecord{offset: r.Offset, value: r.Value, ts: r.Timestamp.UnixMilli()}
}

// superseded says a later record of r's key follows it.
func (l fkLast) superseded(r *kgo.Record) bool {
	last, ok := l[r.Partition][string(r.Key)]
	return !ok || last.offset != r.Offset
}

// errSuperseded is a subscription store record a later one of its key
// supersedes: not translated, nor compared.
var errSuperseded = errors.New("superseded by a later record of its key")

// checkSubscriptions translates, once every record is read, each key's
// last record, refusing the store on the first that does not translate,
// and keeps last for the copy and the verification.
func (sp *StorePlan) checkSubscriptions(last fkLast) {
	for part, keys := range last {
		for k, lr := range keys {
			if lr.value == nil {
				continue
			}
			if _, err := sp.translateSubscription(Entry{Key: []byte(k), Value: lr.value, Timestamp: lr.ts}); err != nil {
				sp.recordProblem(&RecordError{Topic: sp.SourceTopic, Partition: part, Offset: lr.offset, Store: sp.Source, Err: err})
			}
		}
	}
	sp.fkLast = last
}

// translateSubscription turns a decoded record of Kafka Streams'
// subscription store into ours: the same key, and our hash of the left
// key's current value, which must be the value Kafka Streams' hash is of.
func (sp *StorePlan) translateSubscription(e Entry) (Entry, error) {
	sub, err := DecodeSubscription(e.Key, e.Value)
	if err != nil {
		return e, err
	}
	e.LaneKey = sub.ForeignKey
	if e.Value == nil {
		return e, nil
	}
	if sub.Instruction < 2 {
		// Kafka Streams deletes on these and never stores them.
		return e, fmt.Errorf("SubscriptionWrapper with the delete instruction %d stored", sub.Instruction)
	}
	lv, ok := sp.fkLeft.values[string(sub.LeftKey)]
	switch {
	case !ok:
		return e, fmt.Errorf("%w: left key %q has no value in %s", ErrFKSubscription, sub.LeftKey, sp.fkLeft.topic)
	case sub.Hash == nil || string(sub.Hash) != string(lv.theirs[:]):
		return e, fmt.Errorf("%w: left key %q's subscription to foreign key %q was sent by another value than its current one in %s (drain the subscription and response topics before cutting over)",
			ErrFKSubscription, sub.LeftKey, sub.ForeignKey, sp.fkLeft.topic)
	}
	e.Value = lv.ours
	return e, nil
}

// fkStorePlan sets up a store of our foreign-key join (newStorePlan):
// refused is true when it refused it.
func (s *session) fkStorePlan(ctx context.Context, sp *StorePlan, fk dsl.ForeignKeyJoinStore, info *topology.StoreInfo, checkTopic bool) (refused bool, err error) {
	role, left := fk.ForeignKeyJoinRole(), fk.ForeignKeyJoinLeftStore()
	switch {
	case s.opts.Direction == Reverse:
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a foreign-key join's %s store, which the way back does not carry yet (Kafka Streams' subscriptions hash the left values with Murmur3, ours otherwise)", sp.Source, sp.Store, role)
		return true, nil
	case left == "":
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a foreign-key join's %s store, and the join's left table keeps no latest values in a store of its own (it is computed from another table, or versioned), which migrate rebuilds the join's state from: give the left table a store of its own in both applications", sp.Source, sp.Store, role)
		return true, nil
	case s.sd != nil:
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a foreign-key join's %s store, which migrate carries from Kafka Streams' changelogs only, not from the state directory: migrate without --from-state-dir while the changelog topics exist", sp.Source, sp.Store, role)
		return true, nil
	}
	if sp.placeBy, err = s.subtopologyPartitions(ctx, info); err != nil {
		return true, err
	}
	sp.byKey = true
	if role == "primary" {
		sp.primary = true
		return false, nil
	}
	sub, ok := info.Builder.(dsl.ForeignKeyJoinSubscriptions)
	if !ok || !checkTopic {
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a foreign-key join's %s store that cannot be translated", sp.Source, sp.Store, role)
		return true, nil
	}
	sp.Kind = FKSubscription
	l, err := s.fkLeftValues(ctx, sp, sub, left)
	if err != nil || l == nil {
		return true, err
	}
	sp.fkLeft = l
	return false, nil
}

// subtopologyPartitions is the partition count our engine gives the
// changelogs of info's sub-topology, as engine's changelogPartitions
// does: its most partitioned source topic's, else a boundary's declared
// count, else the most partitioned source topic of the whole topology
// (a sub-topology fed by boundaries only, as our foreign-key join's
// resolver is). A boundary places a record in the partition of its key's
// murmur2 over this count.
func (s *session) subtopologyPartitions(ctx context.Context, info *topology.StoreInfo) (int32, error) {
	var n, declared int32
	for _, st := range s.opts.Built.Subtopologies {
		if st.ID != info.Subtopology {
			continue
		}
		for _, src := range st.Sources {
			if src.Boundary != nil {
				declared = max(declared, src.Boundary.Partitions)
				continue
			}
			if src.Source == nil || len(src.Source.Topics) == 0 {
				continue
			}
			d, err := s.adm.ListTopics(ctx, src.Source.Topics...)
			if err != nil {
				return 0, fmt.Errorf("migrate: look up %v: %w", src.Source.Topics, err)
			}
			for _, td := range d {
				if td.Err == nil {
					n = max(n, int32(len(td.Partitions)))
				}
			}
		}
	}
	if n == 0 {
		n = declared
	}
	if n == 0 {
		d, err := s.adm.ListTopics(ctx, slices.Collect(maps.Keys(s.opts.Built.SourceTopics))...)
		if err != nil {
			return 0, fmt.Errorf("migrate: look up our source topics: %w", err)
		}
		for _, td := range d {
			if td.Err == nil {
				n = max(n, int32(len(td.Partitions)))
			}
		}
	}
	return max(n, 1), nil
}

// besideFKResolver says info's store is in the sub-topology of a
// foreign-key join's resolver (its result store, and what follows it
// there), whose records our engine routes by their key's murmur2.
func (s *session) besideFKResolver(info *topology.StoreInfo) bool {
	for _, other := range s.opts.Built.Stores {
		if fk, ok := other.Builder.(dsl.ForeignKeyJoinStore); ok && fk.ForeignKeyJoinRole() == "primary" && other.Subtopology == info.Subtopology {
			return true
		}
	}
	return false
}
