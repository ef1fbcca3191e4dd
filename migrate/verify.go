package migrate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
)

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// Verify is the outcome of the verification pass.
type Verify struct {
	Stores []StoreVerify `json:"stores"`
	// OK is false when any store or offset differs.
	OK      bool     `json:"ok"`
	Offsets []string `json:"offsetDifferences,omitempty"`
	// Time lists seeded emit frontiers and floors that are missing or
	// behind what the plan seeds.
	Time []string `json:"timeDifferences,omitempty"`
}

// StoreVerify compares one store.
type StoreVerify struct {
	Store       string   `json:"store"`
	Keys        int      `json:"keys"`
	Differences int      `json:"differences"`
	Examples    []string `json:"examples,omitempty"`
}

// VerifyOnly runs the verification pass alone.
func VerifyOnly(ctx context.Context, o Options) (*Report, error) {
	s, err := newSession(o)
	if err != nil {
		return nil, err
	}
	defer s.close()
	p, err := s.plan(ctx)
	if err != nil {
		return nil, err
	}
	verify := s.verify
	if p.Direction == Reverse {
		verify = s.verifyReverse
	}
	v, err := verify(ctx, p)
	return &Report{Plan: p, Verify: v, VerifyOnly: true}, err
}

// kv is a value as the verification holds it: its hash, length and
// timestamp, and the value itself when it is short enough to print in an
// example. Holding no slice of the record lets the fetch's buffers go as
// soon as a partition is read.
type kv struct {
	sum   uint64
	n     int
	ts    int64
	short [16]byte
}

// verifySeed seeds the verification's value hashes: any seed will do,
// as both sides are hashed in one process.
var verifySeed = maphash.MakeSeed()

func kvOf(value []byte, ts int64) kv {
	v := kv{sum: maphash.Bytes(verifySeed, value), n: len(value), ts: ts}
	copy(v.short[:], value)
	return v
}

// same says two held values are equal (up to a 64-bit hash collision).
func (v kv) same(o kv) bool { return v.sum == o.sum && v.n == o.n && v.ts == o.ts }

// String is the value as an example prints it: in hex when short, else
// its length and hash.
func (v kv) String() string {
	if v.n < 0 {
		return "a tombstone"
	}
	if v.n <= len(v.short) {
		return fmt.Sprintf("%x", v.short[:v.n])
	}
	return fmt.Sprintf("(%d bytes, hash %016x)", v.n, v.sum)
}

// versionKey is a version of a versioned store as the verification's maps
// hold it: the key, then the version's timestamp (8 bytes). A versioned
// store's state is every version its changelog holds (Kafka Streams'
// restore puts each record as the version at its timestamp, and so does
// ours), so the sides are compared version by version, the last record
// of a (key, timestamp) pair winning, as a put at a version's timestamp
// replaces it.
func versionKey(key []byte, ts int64) string {
	return string(binary.BigEndian.AppendUint64(append([]byte(nil), key...), uint64(ts)))
}

// versionOf is a version's value as the verification holds it; a
// tombstone is a version too (it ends the one before), held with length
// -1 so that it differs from an empty value.
func versionOf(value []byte, ts int64) kv {
	v := kvOf(value, ts)
	if value == nil {
		v.n = -1
	}
	return v
}

// describeVersion names a versionKey in a partition as the examples of a
// difference print it.
func describeVersion(partition int32, k string) string {
	n := len(k) - 8
	return fmt.Sprintf("partition %d key %q version at %d", partition, k[:n], int64(binary.BigEndian.Uint64([]byte(k[n:]))))
}

// verifyStore compares one mapped store, partition by partition: a task's
// state is in the partition of the task, in both changelogs, so only one
// partition's keys are held at once (a 10 M-key store held both sides'
// every key, 5.3 GB, before). Each side's state is what a restore would
// build: the latest record per key up to the planned end (the source) or
// the end (ours), whose lane hash header must be the one our engine
// restores by.
func (s *session) verifyStore(ctx context.Context, p *Plan, sp *StorePlan) (StoreVerify, error) {
	sv := StoreVerify{Store: sp.Store}
	ends := map[int32]int64{}
	for _, pp := range sp.Partitions {
		ends[pp.Partition] = pp.End
	}
	parts := seq(p.ourPartitions)
	for _, pp := range sp.Partitions {
		if !slices.Contains(parts, pp.Partition) {
			parts = append(parts, pp.Partition)
		}
	}
	slices.Sort(parts)
	var examples []string
	// addSource adds a record of the source changelog to want, as a
	// restore of it would hold it.
	addSource := func(want map[string]kv, r *kgo.Record) error {
		key, value, ts := r.Key, r.Value, r.Timestamp.UnixMilli()
		if (sp.Kind == SuppressBuffer || sp.Kind == FKSubscription) && value != nil || sp.Kind == JoinBuffer {
			// Compared in our layout: the translation's (a join
			// buffer's keys too, tombstones included).
			e, err := s.decode(sp, r)
			if errors.Is(err, errSuperseded) {
				return nil
			}
			if err != nil {
				return err
			}
			key, value, ts = e.Key, e.Value, e.Timestamp
		}
		if sp.Kind == Versioned {
			want[versionKey(key, ts)] = versionOf(value, ts)
		} else if value == nil {
			delete(want, string(key))
		} else {
			want[string(key)] = kvOf(value, ts)
		}
		return nil
	}
	// A store our engine keeps by its key's murmur2 (byKey) is compared
	// in the partitions the translation put its records in: the source
	// is read whole first.
	var byPart map[int32]map[string]kv
	if sp.byKey && sp.reader == nil {
		byPart = map[int32]map[string]kv{}
		if _, err := s.read(ctx, sp.SourceTopic, kafka.FromLogStart(slices.Collect(maps.Keys(ends))...), func(r *kgo.Record) error {
			if r.Offset >= ends[r.Partition] {
				return nil
			}
			e, err := Decode(sp.Kind, r.Key, nil, 0, nil)
			if err != nil {
				return err
			}
			part := int32(lane.For(e.LaneKey, int(sp.placeBy)))
			if byPart[part] == nil {
				byPart[part] = map[string]kv{}
			}
			return addSource(byPart[part], r)
		}); err != nil {
			return sv, fmt.Errorf("migrate: verify: read %s: %w", sp.SourceTopic, err)
		}
	}
	for _, part := range parts {
		want := map[string]kv{}
		if byPart != nil {
			if byPart[part] != nil {
				want = byPart[part]
			}
		} else if _, ok := ends[part]; ok {
			if sp.reader != nil {
				// The state directory's stores, read again.
				if err := sp.reader.each(part, func(_ string, key, value []byte, ts int64) error {
					want[string(key)] = kvOf(value, ts)
					return nil
				}); err != nil {
					return sv, fmt.Errorf("migrate: verify: store %s of %s: %w", sp.Source, sp.StateDir, err)
				}
			} else if _, err := s.read(ctx, sp.SourceTopic, kafka.Positions{part: kafka.LogStart}, func(r *kgo.Record) error {
				if r.Offset >= ends[r.Partition] {
					return nil
				}
				return addSource(want, r)
			}); err != nil {
				return sv, fmt.Errorf("migrate: verify: read %s: %w", sp.SourceTopic, err)
			}
		}
		got := map[string]kv{}
		if part < p.ourPartitions {
			if _, err := s.readOurs(ctx, sp.Topic, kafka.Positions{part: kafka.LogStart}, func(r *kgo.Record) error {
				var e Entry
				var err error
				if sp.Kind == SuppressBuffer {
					// Ours, in our layout: only the lane key is needed.
					e, err = DecodeSuppress(r.Key, nil, nil, 0, sp.keySuffix)
				} else {
					e, err = Decode(sp.Kind, r.Key, r.Value, 0, nil)
				}
				if err != nil {
					return &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Store: sp.Store, Err: err}
				}
				h := headerMap(r)[lane.HashHeader]
				if len(h) != 4 || int32(binary.BigEndian.Uint32(h)) != lane.Murmur2(e.LaneKey) ||
					sp.byKey && int(r.Partition) != lane.For(e.LaneKey, int(sp.placeBy)) {
					sv.Differences++
					if len(examples) < 5 {
						examples = append(examples, fmt.Sprintf("%s[%d] offset %d: key %q is not where our engine would restore it from", r.Topic, r.Partition, r.Offset, r.Key))
					}
				}
				if sp.Kind == Versioned {
					got[versionKey(r.Key, r.Timestamp.UnixMilli())] = versionOf(r.Value, r.Timestamp.UnixMilli())
				} else if r.Value == nil {
					delete(got, string(r.Key))
				} else {
					got[string(r.Key)] = kvOf(r.Value, r.Timestamp.UnixMilli())
				}
				return nil
			}); err != nil {
				return sv, fmt.Errorf("migrate: verify: read %s: %w", sp.Topic, err)
			}
		}
		sv.Keys += len(want)
		// Only the keys that differ are sorted, for the examples: sorting
		// every key took longer than reading both topics at 10 M keys.
		var differ []string
		for k, w := range want {
			if g, ok := got[k]; ok && g.same(w) {
				continue
			}
			differ = append(differ, k)
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				differ = append(differ, k)
			}
		}
		slices.Sort(differ)
		sv.Differences += len(differ)
		for _, k := range differ {
			if len(examples) >= 5 {
				break
			}
			w, inWant := want[k]
			g, ok := got[k]
			what := describeKey(partKey(part, []byte(k)))
			if sp.Kind == Versioned {
				what = describeVersion(part, k)
			}
			if !inWant {
				examples = append(examples, fmt.Sprintf("%s: ours only", what))
				continue
			}
			examples = append(examples, fmt.Sprintf("%s: source %s at %d, ours %s at %d (present %v)", what, w, w.ts, g, g.ts, ok))
		}
	}
	sv.Examples = examples
	return sv, nil
}

// verify restores each mapped store's state as our engine would, from
// our changelog (the latest record per key of each partition, the lane
// hash each must carry), and compares it key by key and partition by
// partition with the state of the source changelog up to the planned
// ends: a task's state is in the partition of the task, in both. It also checks the
// committed offsets and the seeded frontiers.
func (s *session) verify(ctx context.Context, p *Plan) (Verify, error) {
	v := Verify{OK: true, Stores: []StoreVerify{}}
	for _, sp := range p.Stores {
		sv, err := s.verifyStore(ctx, p, sp)
		if err != nil {
			return v, err
		}
		if sv.Differences > 0 {
			v.OK = false
		}
		v.Stores = append(v.Stores, sv)
	}
	for _, es := range p.Empty {
		// A store an override starts empty must be: what its changelog
		// holds (an earlier deployment's) our engine would restore.
		sv := StoreVerify{Store: es.Store}
		got := map[string]bool{}
		if _, err := s.readOurs(ctx, es.Topic, kafka.FromLogStart(seq(p.ourPartitions)...), func(r *kgo.Record) error {
			if r.Value == nil {
				delete(got, string(r.Key))
			} else {
				got[string(r.Key)] = true
			}
			return nil
		}); err != nil {
			return v, fmt.Errorf("migrate: verify: read %s: %w", es.Topic, err)
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			sv.Differences++
			if len(sv.Examples) < 5 {
				sv.Examples = append(sv.Examples, fmt.Sprintf("key %q: in %s, a store that starts empty", k, es.Topic))
			}
		}
		if sv.Differences > 0 {
			v.OK = false
		}
		v.Stores = append(v.Stores, sv)
	}
	if len(p.Offsets) > 0 {
		var ours kadm.OffsetResponses
		err := kafka.WhileSettling(ctx, func() (err error) {
			ours, err = s.adm.FetchOffsets(ctx, p.To)
			return err
		})
		if err != nil {
			return v, fmt.Errorf("migrate: verify: offsets of group %s: %w", p.To, err)
		}
		for _, oc := range p.Offsets {
			r, ok := ours.Lookup(oc.Topic, oc.Partition)
			if !ok || r.Err != nil || r.At != oc.Offset {
				v.OK = false
				v.Offsets = append(v.Offsets, fmt.Sprintf("%s[%d]: want %d, group %s has %d", oc.Topic, oc.Partition, oc.Offset, p.To, r.At))
			}
		}
	}
	if err := s.verifyTime(ctx, p, &v); err != nil {
		return v, err
	}
	if !v.OK {
		return v, fmt.Errorf("migrate: verification failed: %s", v.summary())
	}
	return v, nil
}

// verifyTime checks that the seeded emit frontiers and the floor are
// there, at least as far as the plan seeds them (our engine moves them
// on once it runs).
func (s *session) verifyTime(ctx context.Context, p *Plan, v *Verify) error {
	latest := func(topic, key string) (int64, bool, error) {
		var val int64
		found := false
		_, err := s.readOurs(ctx, topic, kafka.FromLogStart(seq(p.partitionsOf(topic))...), func(r *kgo.Record) error {
			if string(r.Key) == key && len(r.Value) >= 8 {
				val, found = int64(binary.BigEndian.Uint64(r.Value)), true
			}
			return nil
		})
		return val, found, err
	}
	check := func(what, topic, key string, want int64) error {
		got, ok, err := latest(topic, key)
		if err != nil {
			return fmt.Errorf("migrate: verify: read %s: %w", topic, err)
		}
		if !ok || got < want {
			v.OK = false
			v.Time = append(v.Time, fmt.Sprintf("%s in %s: want %d, found %d (present %v)", what, topic, want, got, ok))
		}
		return nil
	}
	if p.EmitFrontier {
		for _, sp := range p.Stores {
			if fp := sp.Frontier; fp != nil && fp.Value >= 0 {
				if err := check("emit frontier of "+sp.Store, fp.Topic, sp.Store, fp.Value); err != nil {
					return err
				}
			}
		}
	}
	if p.Floor != nil {
		return check("watermark floor", p.Floor.Topic, p.To, p.Floor.Value)
	}
	return nil
}

// summary names every store that differs, and the first offset and time
// difference.
func (v Verify) summary() string {
	var parts []string
	for _, s := range v.Stores {
		if s.Differences > 0 {
			parts = append(parts, fmt.Sprintf("store %s: %d differences, first %v", s.Store, s.Differences, s.Examples))
		}
	}
	if len(v.Offsets) > 0 {
		parts = append(parts, "offsets: "+v.Offsets[0])
	}
	if len(v.Time) > 0 {
		parts = append(parts, "time: "+v.Time[0])
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, "; ")
}

func seq(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// partKey is a changelog key in a partition as the verification's maps
// hold it: the partition, 4 bytes big-endian, then the key. One
// allocation, where formatting the name took a tenth of a 1 M-key
// verification; they sort by partition, then key.
func partKey(partition int32, key []byte) string {
	b := make([]byte, 4, 4+len(key))
	binary.BigEndian.PutUint32(b, uint32(partition))
	return string(append(b, key...))
}

// describeKey names a partKey as the examples of a difference print it.
func describeKey(k string) string {
	return fmt.Sprintf("partition %d key %q", int32(binary.BigEndian.Uint32([]byte(k[:4]))), k[4:])
}
