package migrate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
)

// Direction says which way a migration moves an application: Forward
// (the default) from Kafka Streams to ours, Reverse from ours back to
// Kafka Streams. Both use the same plan, store mapping (by name or
// --map KS_STORE=OUR_STORE), refusals and verification; a reverse plan's
// StorePlan keeps the forward's field meanings (Source and SourceTopic are
// Kafka Streams' store and changelog, Store and Topic ours) while the
// records flow from Topic to SourceTopic.
type Direction string

const (
	Forward Direction = "forward"
	Reverse Direction = "reverse"
)

// ErrNotStarted is a reverse migration of an application of ours that
// has committed no offset: there is nothing to carry back.
var ErrNotStarted = errors.New("our application has committed no offset")

// ErrKafkaStreamsAhead is a way back to a Kafka Streams application that
// has committed past our offsets: it has run since (after an earlier way
// back, or beside ours), and ours would rewind it and write older state
// over its.
var ErrKafkaStreamsAhead = errors.New("the Kafka Streams application has processed past our offsets")

// ourState is one store of ours restored as our engine restores it: the
// latest record of each key in each partition.
type ourState map[int32]map[string]heldRecord

// heldRecord is a record's value and timestamp, kept to be written back
// (the verification keeps only hashes, kv).
type heldRecord struct {
	value []byte
	ts    int64
}

// planReverse makes the plan of a reverse migration: every store of our
// topology with a changelog goes to Kafka Streams' changelog of the store
// it maps to; our group's committed offsets go to Kafka Streams' group
// with each on-window-close store's emit frontier in the processor
// metadata (its lastEmitWindowCloseTime). It reads, and writes nothing.
func (s *session) planReverse(ctx context.Context) (*Plan, error) {
	o := s.opts
	p := &Plan{From: o.From, To: o.To, Direction: Reverse, EmitFrontier: true, Unmapped: []Unmapped{}, Offsets: []OffsetCopy{}, Accepted: []Problem{}, Empty: []EmptyStore{}}
	topics, err := s.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: list topics: %w", err)
	}
	if err := topics.Error(); err != nil {
		return nil, fmt.Errorf("migrate: list topics: %w", err)
	}
	if p.ourPartitions, err = s.ourPartitionCount(topics); err != nil {
		return nil, err
	}
	// Ours to Kafka Streams': --map is KS_STORE=OUR_STORE in both
	// directions.
	ksName := map[string]string{}
	for ks, ours := range o.Map {
		ksName[ours] = ks
	}
	s.refusedStores = map[string]string{}
	frontiers := map[string]int64{}
	for _, ours := range slices.Sorted(maps.Keys(o.Built.Stores)) {
		info := o.Built.Stores[ours]
		if info.Global || strings.HasSuffix(ours, "-emitfrontier") {
			// Emit frontiers go to the processor metadata, below. A store
			// with logging disabled is refused by newStorePlan: its
			// state is in our state directory only.
			continue
		}
		ks := ours
		if n, ok := ksName[ours]; ok {
			ks = n
		}
		topic := o.From + "-" + ks + "-changelog"
		d, exists := topics[topic]
		sp, err := s.newStorePlan(ctx, ks, ours, info, topic, exists)
		if err != nil {
			return nil, err
		}
		if sp.Kind == Versioned && !sp.kindProblem() {
			// The way back writes our state (each key's latest record)
			// and tombstones for the keys only Kafka Streams' changelog
			// holds: a versioned store's state is every version.
			sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a versioned store, which the way back does not carry yet (it writes each key's latest value, not its history)", ks, ours)
		}
		if exists && int32(len(d.Partitions)) != p.ourPartitions {
			sp.problem(ProblemStoreKind, nil, "store %s: Kafka Streams' changelog %s has %d partitions, our changelog %d: a task's state would land in another task", ks, topic, len(d.Partitions), p.ourPartitions)
		}
		for i := range sp.problems {
			sp.problems[i].Loses = fmt.Sprintf("the state of our store %s does not go back; Kafka Streams' store %s restores what its changelog held before", ours, ks)
		}
		if len(sp.problems) > 0 {
			s.problems = append(s.problems, sp.problems...)
			s.refusedStores[ks] = ours
			continue
		}
		// Ours, as our engine restores it.
		st, ends := ourState{}, map[int32]int64{}
		if _, ok := topics[sp.Topic]; ok {
			if st, ends, err = s.restoreOurs(ctx, sp, p.ourPartitions); err != nil {
				return nil, err
			}
		}
		live := 0
		for _, keys := range st {
			live += len(keys)
		}
		if sp.Kind == SuppressBuffer && live == 0 && !exists {
			p.Unmapped = append(p.Unmapped, Unmapped{info.ChangelogTopic, "suppress buffer holding no record, and Kafka Streams has no changelog for it: nothing to carry"})
			continue
		}
		// Kafka Streams' keys that ours does not hold get a tombstone, so
		// that its restore, from wherever its checkpoint says, ends on
		// our state.
		theirs := ourState{}
		if exists {
			if theirs, _, err = s.restore(ctx, topic, partitionsOf(d), false); err != nil {
				return nil, fmt.Errorf("migrate: read %s: %w", topic, err)
			}
		}
		for _, part := range seq(p.ourPartitions) {
			pp := PartitionPlan{Partition: part, Records: int64(len(st[part])), End: ends[part]}
			for k := range theirs[part] {
				if _, ok := st[part][k]; !ok {
					pp.Tombstones++
				}
			}
			sp.Partitions = append(sp.Partitions, pp)
		}
		sp.ours, sp.theirs = st, theirs
		if sp.Frontier != nil {
			var v int64
			_, ok := topics[sp.Frontier.Topic]
			if ok {
				if v, ok, err = s.readFrontier(ctx, sp.Frontier, sp.Store, p.ourPartitions); err != nil {
					return nil, err
				}
			}
			if ok {
				// Kafka Streams emits a window once its close time
				// passes lastEmitWindowCloseTime; ours emitted every
				// window closing at or before the frontier.
				sp.Frontier.Value, sp.Frontier.From = v-sp.metaOffset, "our emit frontier "+sp.Frontier.Topic
				frontiers[ks] = sp.Frontier.Value
			} else {
				sp.Frontier.Value, sp.Frontier.From = -1, "our emit frontier unset: no window emitted yet"
			}
		}
		p.Stores = append(p.Stores, sp)
	}
	floor, err := s.readStamp(ctx, topics)
	if err != nil {
		return nil, err
	}
	if err := s.reverseOffsets(ctx, p, topics, frontiers, floor); err != nil {
		return nil, err
	}
	if p.Groups, err = s.groups(ctx); err != nil {
		return nil, err
	}
	if err := settle(p, o.Overrides, s.problems); err != nil {
		return p, err
	}
	return p, nil
}

// ourPartitionCount is our changelogs' partition count: our most
// partitioned source topic's, as the engine's.
func (s *session) ourPartitionCount(topics kadm.TopicDetails) (int32, error) {
	o := s.opts
	var sources []string
	for t, node := range o.Built.SourceTopics {
		if n := o.Built.Nodes[node]; n != nil && n.Source != nil && n.Boundary == nil && !isGlobal(o.Built, node) {
			sources = append(sources, t)
		}
	}
	slices.Sort(sources)
	var n int32
	for _, t := range sources {
		d, ok := topics[t]
		if !ok {
			return 0, fmt.Errorf("migrate: source topic %s of our topology does not exist", t)
		}
		n = max(n, int32(len(d.Partitions)))
	}
	return max(n, 1), nil
}

// restoreOurs reads our changelog of sp as our engine restores it, and
// its end offsets.
func (s *session) restoreOurs(ctx context.Context, sp *StorePlan, partitions int32) (ourState, map[int32]int64, error) {
	st, ends, err := s.restore(ctx, sp.Topic, seq(partitions), true)
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: read our changelog %s: %w", sp.Topic, err)
	}
	for part, keys := range st {
		for k, v := range keys {
			var err error
			if sp.Kind == SuppressBuffer {
				// Kafka Streams' buffer keeps the same key, the value in
				// its V3 layout.
				if _, err = DecodeSuppress([]byte(k), nil, nil, 0, sp.keySuffix); err == nil {
					v.value, err = EncodeSuppress(v.value)
					keys[k] = v
				}
			} else {
				// The value too: a join's shared store's lists.
				_, err = Decode(sp.Kind, []byte(k), v.value, 0, nil)
			}
			if err != nil {
				return nil, nil, &RecordError{Topic: sp.Topic, Partition: part, Offset: -1, Store: sp.Store, Err: err}
			}
		}
	}
	return st, ends, nil
}

// restore reads topic to its end: the latest record of each key in each
// partition, and each partition's end offset.
func (s *session) restore(ctx context.Context, topic string, parts []int32, settled bool) (ourState, map[int32]int64, error) {
	st, ends := ourState{}, map[int32]int64{}
	read := s.read
	if settled {
		read = s.readOurs
	}
	end, err := read(ctx, topic, kafka.FromLogStart(parts...), func(r *kgo.Record) error {
		keys := st[r.Partition]
		if keys == nil {
			keys = map[string]heldRecord{}
			st[r.Partition] = keys
		}
		if r.Value == nil {
			delete(keys, string(r.Key))
		} else {
			keys[string(r.Key)] = heldRecord{r.Value, r.Timestamp.UnixMilli()}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(ends, end)
	return st, ends, nil
}

// readFrontier is the latest value of our store's emit frontier.
func (s *session) readFrontier(ctx context.Context, fp *FrontierPlan, store string, partitions int32) (int64, bool, error) {
	key := []byte(store)
	part := int32(lane.For(key, int(partitions)))
	var v int64
	found := false
	if _, err := s.readOurs(ctx, fp.Topic, kafka.FromLogStart(part), func(r *kgo.Record) error {
		if string(r.Key) != store {
			return nil
		}
		if r.Value == nil {
			found = false
			return nil
		}
		if len(r.Value) != 8 {
			return &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Store: fp.Store, Err: fmt.Errorf("emit frontier of %d bytes, not 8", len(r.Value))}
		}
		v, found = int64(binary.BigEndian.Uint64(r.Value)), true
		return nil
	}); err != nil {
		return 0, false, fmt.Errorf("migrate: read emit frontier %s: %w", fp.Topic, err)
	}
	return v, found, nil
}

// readStamp is our watermark stamp (the floor), -1 when unset.
func (s *session) readStamp(ctx context.Context, topics kadm.TopicDetails) (int64, error) {
	topic := StampTopic(s.opts.To)
	if _, ok := topics[topic]; !ok {
		return -1, nil
	}
	v := int64(-1)
	if _, err := s.readOurs(ctx, topic, kafka.FromLogStart(0), func(r *kgo.Record) error {
		if len(r.Value) >= 8 {
			v = int64(binary.BigEndian.Uint64(r.Value))
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("migrate: read our watermark stamp %s: %w", topic, err)
	}
	return v, nil
}

// reverseOffsets plans the offsets Kafka Streams' group gets: ours, with
// their partition times, and its repartition topics' own (drained,
// checked), their partition times raised to our floor; every one carries
// the emit frontiers as processor metadata, which Kafka Streams merges
// over a task's partitions by taking the largest.
func (s *session) reverseOffsets(ctx context.Context, p *Plan, topics kadm.TopicDetails, frontiers map[string]int64, floor int64) error {
	o := s.opts
	var ours, theirs kadm.OffsetResponses
	err := kafka.WhileSettling(ctx, func() (err error) {
		ours, err = s.adm.FetchOffsets(ctx, o.To)
		return err
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("migrate: committed offsets of group %s: %w", o.To, err)
	}
	err = kafka.WhileSettling(ctx, func() (err error) {
		theirs, err = s.adm.FetchOffsets(ctx, o.From)
		return err
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		theirs, err = kadm.OffsetResponses{}, nil
	}
	if err != nil {
		return fmt.Errorf("migrate: committed offsets of group %s: %w", o.From, err)
	}
	add := func(group, topic string, part int32, at int64, md string, raise int64) error {
		m, err := DecodeOffsetMetadata(group, topic, part, md)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		m.PartitionTime = max(m.PartitionTime, raise)
		// Our entries (the floor, repartition marks) are ours: Kafka
		// Streams has no use for them, and a later migration forward
		// must not resume from them.
		maps.DeleteFunc(m.Processor, func(k string, _ int64) bool { return strings.HasPrefix(k, kafka.OwnKeyPrefix) })
		if len(m.Processor) == 0 {
			m.Processor = nil
		}
		if len(frontiers) > 0 {
			if m.Processor == nil {
				m.Processor = map[string]int64{}
			}
			maps.Copy(m.Processor, frontiers)
		}
		enc, err := m.Encode()
		if err != nil {
			return fmt.Errorf("migrate: offset metadata of %s[%d]: %w", topic, part, err)
		}
		p.Offsets = append(p.Offsets, OffsetCopy{Topic: topic, Partition: part, Offset: at, PartitionTime: m.PartitionTime, metadata: enc})
		return nil
	}
	var first error
	skipped := map[string]bool{}
	ours.Each(func(r kadm.OffsetResponse) {
		if strings.HasPrefix(r.Topic, o.To+"-") {
			// Our own internal topic (a re-key through a topic): Kafka
			// Streams has its own.
			if !skipped[r.Topic] {
				skipped[r.Topic] = true
				p.Unmapped = append(p.Unmapped, Unmapped{r.Topic, "our internal topic: its offsets do not go to Kafka Streams' group"})
			}
			return
		}
		if first != nil || r.Err != nil || r.At < 0 {
			return
		}
		if t, ok := theirs.Lookup(r.Topic, r.Partition); ok && t.Err == nil && t.At > r.At {
			first = fmt.Errorf("migrate: group %s has committed %s[%d] at %d, group %s at %d: %w; going back would rewind it",
				o.From, r.Topic, r.Partition, t.At, o.To, r.At, ErrKafkaStreamsAhead)
			return
		}
		first = add(o.To, r.Topic, r.Partition, r.At, r.Metadata, -1)
	})
	if first != nil {
		return first
	}
	if len(p.Offsets) == 0 {
		return fmt.Errorf("migrate: group %s: %w; there is nothing to carry back", o.To, ErrNotStarted)
	}
	var repartition []string
	for t := range topics {
		if strings.HasPrefix(t, o.From+"-") && strings.HasSuffix(t, "-repartition") {
			repartition = append(repartition, t)
		}
	}
	slices.Sort(repartition)
	if err := s.checkDrained(ctx, repartition, theirs); err != nil {
		return err
	}
	theirs.Each(func(r kadm.OffsetResponse) {
		if first == nil && r.Err == nil && r.At >= 0 && slices.Contains(repartition, r.Topic) {
			first = add(o.From, r.Topic, r.Partition, r.At, r.Metadata, floor)
		}
	})
	if first != nil {
		return first
	}
	slices.SortFunc(p.Offsets, func(a, b OffsetCopy) int {
		return cmpOffset(a.Topic, a.Partition, b.Topic, b.Partition)
	})
	return nil
}

func cmpOffset(at string, ap int32, bt string, bp int32) int {
	if c := strings.Compare(at, bt); c != 0 {
		return c
	}
	return int(ap - bp)
}

// runReverse writes Kafka Streams' changelogs (our state, and a tombstone
// for each key of theirs that ours does not hold) and commits its group's
// offsets, then verifies. It writes nothing when the plan failed.
func (s *session) runReverse(ctx context.Context, p *Plan) (*Report, error) {
	o := s.opts
	if err := s.awaitEmptyGroups(ctx, p); err != nil {
		return nil, err
	}
	if err := s.ensureTheirChangelogs(ctx, p); err != nil {
		return nil, err
	}
	tx, err := kgo.NewClient(append(append([]kgo.Opt{}, o.ClientOpts...), kgo.SeedBrokers(o.Seeds...),
		kgo.TransactionalID(o.To+"-stoatflow-migrate-reverse"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<20),
		kgo.MetadataMinAge(kafka.DefaultRetryBackoff))...)
	if err != nil {
		return nil, fmt.Errorf("migrate: transactional client: %w", err)
	}
	defer tx.Close()
	rep := &Report{Plan: p}
	// The progress over the whole way back, as the forward run reports
	// it: announced once as the copy starts, then per batch.
	var copied, toCopy int64
	for _, sp := range p.Stores {
		for _, pp := range sp.Partitions {
			toCopy += pp.Records + pp.Tombstones
		}
	}
	if o.Progress != nil && toCopy > 0 {
		o.Progress(Progress{ToCopy: toCopy})
	}
	for _, sp := range p.Stores {
		for _, pp := range sp.Partitions {
			var batch []*kgo.Record
			var done int64
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				if err := commitBatch(ctx, tx, batch); err != nil {
					return fmt.Errorf("migrate: write %s[%d] from %s: %w", sp.SourceTopic, pp.Partition, sp.Topic, err)
				}
				rep.Translated += int64(len(batch))
				done += int64(len(batch))
				copied += int64(len(batch))
				batch = batch[:0]
				if o.Progress != nil {
					o.Progress(Progress{Topic: sp.Topic, Partition: pp.Partition, Done: done, Total: pp.Records + pp.Tombstones,
						Copied: copied, ToCopy: max(toCopy, copied)})
				}
				return nil
			}
			put := func(k string, v heldRecord, tombstone bool) error {
				r := &kgo.Record{Topic: sp.SourceTopic, Partition: pp.Partition, Key: []byte(k), Timestamp: msTime(v.ts)}
				if !tombstone {
					r.Value = v.value
					if sp.Kind == SuppressBuffer {
						// Kafka Streams reads a buffer record by its
						// version header.
						r.Headers = []kgo.RecordHeader{{Key: "v", Value: []byte{3}}}
					}
				}
				batch = append(batch, r)
				if len(batch) >= o.BatchRecords {
					return flush()
				}
				return nil
			}
			ours, theirs := sp.ours[pp.Partition], sp.theirs[pp.Partition]
			for _, k := range slices.Sorted(maps.Keys(theirs)) {
				if _, ok := ours[k]; !ok {
					if err := put(k, theirs[k], true); err != nil {
						return rep, err
					}
				}
			}
			for _, k := range slices.Sorted(maps.Keys(ours)) {
				if err := put(k, ours[k], false); err != nil {
					return rep, err
				}
			}
			if err := flush(); err != nil {
				return rep, err
			}
		}
	}
	if len(p.Offsets) > 0 {
		var offs kadm.Offsets
		for _, oc := range p.Offsets {
			offs.Add(kadm.Offset{Topic: oc.Topic, Partition: oc.Partition, At: oc.Offset, LeaderEpoch: -1, Metadata: oc.metadata})
		}
		resp, err := s.adm.CommitOffsets(ctx, o.From, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return rep, fmt.Errorf("migrate: commit offsets to group %s: %w", o.From, err)
		}
	}
	v, err := s.verifyReverse(ctx, p)
	rep.Verify = v
	return rep, err
}

// ensureTheirChangelogs creates Kafka Streams' changelogs that do not
// exist, with our changelog's partition count, cleanup policy and
// retention (a windowed store's retention plus a day in both).
func (s *session) ensureTheirChangelogs(ctx context.Context, p *Plan) error {
	var names []string
	for _, sp := range p.Stores {
		names = append(names, sp.SourceTopic)
	}
	if len(names) == 0 {
		return nil
	}
	have, err := s.adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("migrate: look up Kafka Streams' changelogs: %w", err)
	}
	for _, sp := range p.Stores {
		if d, ok := have[sp.SourceTopic]; ok && d.Err == nil {
			continue
		}
		cfgs, err := s.adm.DescribeTopicConfigs(ctx, sp.Topic)
		if err != nil {
			return fmt.Errorf("migrate: configs of %s: %w", sp.Topic, err)
		}
		rc, err := cfgs.On(sp.Topic, nil)
		if err != nil || rc.Err != nil {
			return fmt.Errorf("migrate: configs of %s: %w", sp.Topic, errors.Join(err, rc.Err))
		}
		set := map[string]*string{}
		for _, c := range rc.Configs {
			if (c.Key == "cleanup.policy" || c.Key == "retention.ms") && c.Value != nil {
				set[c.Key] = c.Value
			}
		}
		resp, err := s.adm.CreateTopic(ctx, p.ourPartitions, -1, set, sp.SourceTopic)
		if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("migrate: create Kafka Streams' changelog %s: %w", sp.SourceTopic, err)
		}
	}
	return nil
}

// verifyReverse restores Kafka Streams' changelogs as it restores them
// (the latest record of each key in each partition) and compares them
// key by key, value and timestamp, with our state the plan read, and
// Kafka Streams' committed offsets and their metadata with the plan's.
func (s *session) verifyReverse(ctx context.Context, p *Plan) (Verify, error) {
	v := Verify{OK: true, Stores: []StoreVerify{}}
	for _, sp := range p.Stores {
		got, _, err := s.restore(ctx, sp.SourceTopic, seq(p.ourPartitions), true)
		if err != nil {
			return v, fmt.Errorf("migrate: verify: read %s: %w", sp.SourceTopic, err)
		}
		sv := StoreVerify{Store: sp.Source}
		diff := func(format string, a ...any) {
			sv.Differences++
			if len(sv.Examples) < 5 {
				sv.Examples = append(sv.Examples, fmt.Sprintf(format, a...))
			}
		}
		for _, part := range seq(p.ourPartitions) {
			want, have := sp.ours[part], got[part]
			sv.Keys += len(want)
			for _, k := range slices.Sorted(maps.Keys(want)) {
				h, ok := have[k]
				switch {
				case !ok:
					diff("%s[%d]: key %q missing", sp.SourceTopic, part, k)
				case string(h.value) != string(want[k].value) || h.ts != want[k].ts:
					diff("%s[%d]: key %q holds %q at %d, ours %q at %d", sp.SourceTopic, part, k, h.value, h.ts, want[k].value, want[k].ts)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(have)) {
				if _, ok := want[k]; !ok {
					diff("%s[%d]: key %q is not in our store %s", sp.SourceTopic, part, k, sp.Store)
				}
			}
		}
		if sv.Differences > 0 {
			v.OK = false
		}
		v.Stores = append(v.Stores, sv)
	}
	var theirs kadm.OffsetResponses
	if err := kafka.WhileSettling(ctx, func() (err error) {
		theirs, err = s.adm.FetchOffsets(ctx, s.opts.From)
		return err
	}); err != nil {
		return v, fmt.Errorf("migrate: verify: committed offsets of group %s: %w", s.opts.From, err)
	}
	for _, oc := range p.Offsets {
		r, ok := theirs.Lookup(oc.Topic, oc.Partition)
		if !ok || r.Err != nil || r.At != oc.Offset || r.Metadata != oc.metadata {
			v.OK = false
			v.Offsets = append(v.Offsets, fmt.Sprintf("group %s %s[%d]: committed %d, want %d (with the planned metadata)", s.opts.From, oc.Topic, oc.Partition, r.At, oc.Offset))
		}
	}
	if !v.OK {
		return v, fmt.Errorf("migrate: verification of the way back to %s failed: %s", s.opts.From, v.summary())
	}
	return v, nil
}
