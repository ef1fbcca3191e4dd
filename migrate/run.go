package migrate

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/kgotxn"
)

// marker is the value of a migration marker.
type marker struct {
	End     int64 `json:"end_offset"`
	Records int64 `json:"records"`
}

func markerKey(topic string, partition int32) string { return fmt.Sprintf("%s/%d", topic, partition) }

// readMarkers sets Done on the partitions an earlier run completed up to
// their current end.
func (s *session) readMarkers(ctx context.Context, p *Plan) error {
	topic := MarkerTopic(s.opts.To)
	d, err := s.adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("migrate: look up %s: %w", topic, err)
	}
	if td, ok := d[topic]; !ok || td.Err != nil {
		return nil
	}
	done := map[string]marker{}
	if _, err := s.read(ctx, topic, kafka.FromLogStart(0), func(r *kgo.Record) error {
		var m marker
		if err := json.Unmarshal(r.Value, &m); err != nil {
			return fmt.Errorf("marker %q: %w", r.Key, err)
		}
		done[string(r.Key)] = m
		return nil
	}); err != nil {
		return fmt.Errorf("migrate: read markers from %s: %w", topic, err)
	}
	for _, sp := range p.Stores {
		for i, pp := range sp.Partitions {
			if m, ok := done[markerKey(sp.markerSource(), pp.Partition)]; ok && m.End == pp.End {
				sp.Partitions[i].Done = true
			}
		}
	}
	return nil
}

// Report is what a run did.
type Report struct {
	Plan       *Plan  `json:"plan"`
	Translated int64  `json:"recordsTranslated"`
	Skipped    int    `json:"partitionsSkipped"`
	Verify     Verify `json:"verify"`
	// VerifyOnly is set when only the verification ran.
	VerifyOnly bool `json:"verifyOnly,omitempty"`
}

// Run migrates: it makes the plan, refuses while either group has
// members, and writes our changelogs, the emit frontiers, the floor and the
// offsets, then verifies. It writes nothing when the plan fails.
func Run(ctx context.Context, o Options) (*Report, error) {
	s, err := newSession(o)
	if err != nil {
		return nil, err
	}
	defer s.close()
	p, err := s.plan(ctx)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, p)
}

func (s *session) run(ctx context.Context, p *Plan) (*Report, error) {
	if p.Direction == Reverse {
		return s.runReverse(ctx, p)
	}
	o := s.opts
	if err := s.awaitEmptyGroups(ctx, p); err != nil {
		return nil, err
	}
	specs := kafka.InternalTopics(o.Built, p.ourPartitions)
	specs = append(specs,
		kafka.TopicSpec{Name: StampTopic(o.To), Store: "stoatflow-watermark", Partitions: 1, ReplicationFactor: -1, Configs: map[string]string{"cleanup.policy": kafka.PolicyCompact}},
		kafka.TopicSpec{Name: MarkerTopic(o.To), Store: "stoatflow-migrate", Partitions: 1, ReplicationFactor: -1, Configs: map[string]string{"cleanup.policy": kafka.PolicyCompact}})
	specs, err := kafka.ApplyTopicSettings(o.Config, specs)
	if err != nil {
		return nil, err
	}
	if err := kafka.EnsureTopics(ctx, s.adm, specs, true); err != nil {
		return nil, fmt.Errorf("migrate: our internal topics: %w", err)
	}
	tx, err := kgo.NewClient(append(append([]kgo.Opt{}, o.ClientOpts...), kgo.SeedBrokers(o.Seeds...),
		kgo.TransactionalID(o.To+"-stoatflow-migrate"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<20),
		// A batch's produce right after the last batch committed can
		// meet CONCURRENT_TRANSACTIONS; its retry waits for this.
		kgo.MetadataMinAge(kafka.DefaultRetryBackoff))...)
	if err != nil {
		return nil, fmt.Errorf("migrate: transactional client: %w", err)
	}
	defer tx.Close()
	rep := &Report{Plan: p}
	s.copied, s.toCopy = 0, 0
	for _, sp := range p.Stores {
		for _, pp := range sp.Partitions {
			if !pp.Done {
				s.toCopy += pp.Records
			}
		}
	}
	if s.opts.Progress != nil && s.toCopy > 0 {
		// The copy starts: a meter's clock for the rate starts here, not
		// before the plan.
		s.opts.Progress(Progress{ToCopy: s.toCopy})
	}
	for _, sp := range p.Stores {
		for _, pp := range sp.Partitions {
			if pp.Done {
				rep.Skipped++
				continue
			}
			n, err := s.translate(ctx, tx, p, sp, pp)
			rep.Translated += n
			if err != nil {
				return rep, err
			}
		}
	}
	// Emit frontiers and the floor, in one transaction.
	var recs []*kgo.Record
	if p.EmitFrontier {
		for _, sp := range p.Stores {
			if fp := sp.Frontier; fp != nil && fp.Value >= 0 {
				key := []byte(sp.Store)
				recs = append(recs, &kgo.Record{Topic: fp.Topic, Partition: int32(lane.For(key, int(p.ourPartitions))), Key: key,
					Value: binary.BigEndian.AppendUint64(nil, uint64(fp.Value))})
			}
		}
	}
	if p.Floor != nil {
		v := binary.BigEndian.AppendUint64(nil, uint64(p.Floor.Value))
		recs = append(recs, &kgo.Record{Topic: p.Floor.Topic, Partition: 0, Key: []byte(o.To), Value: append(v, 1)})
	}
	if len(recs) > 0 {
		if err := commitBatch(ctx, tx, recs); err != nil {
			return rep, fmt.Errorf("migrate: seed emit frontiers and the floor: %w", err)
		}
	}
	if len(p.Offsets) > 0 {
		var offs kadm.Offsets
		for _, oc := range p.Offsets {
			offs.Add(kadm.Offset{Topic: oc.Topic, Partition: oc.Partition, At: oc.Offset, LeaderEpoch: -1, Metadata: oc.metadata})
		}
		resp, err := s.adm.CommitOffsets(ctx, o.To, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return rep, fmt.Errorf("migrate: commit offsets to group %s: %w", o.To, err)
		}
	}
	v, err := s.verify(ctx, p)
	rep.Verify = v
	if err != nil {
		return rep, err
	}
	return rep, nil
}

// awaitEmptyGroups refuses while either group has members, after waiting
// up to WaitForGroups for them to go.
func (s *session) awaitEmptyGroups(ctx context.Context, p *Plan) error {
	deadline := time.Now().Add(s.opts.WaitForGroups)
	for {
		busy := slices.IndexFunc(p.Groups, func(g GroupMembers) bool { return g.Members > 0 && !(s.opts.live && g.Group == s.opts.From) })
		if busy < 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			g := p.Groups[busy]
			return fmt.Errorf("migrate: group %s: %d members: %w; stop every instance first (a stopped Kafka Streams instance stays a member until its session times out: --wait-for-groups waits)",
				g.Group, g.Members, ErrActiveMembers)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		var err error
		if p.Groups, err = s.groups(ctx); err != nil {
			return err
		}
	}
}

// translate copies one source partition into our changelog, a batch per
// transaction, the marker in the last one. It returns the records written.
func (s *session) translate(ctx context.Context, tx *kgo.Client, p *Plan, sp *StorePlan, pp PartitionPlan) (int64, error) {
	var done int64
	batch := make([]*kgo.Record, 0, min(s.opts.BatchRecords, int(pp.Records)+1))
	flush := func(records int) error {
		if err := commitBatch(ctx, tx, batch); err != nil {
			return fmt.Errorf("migrate: write %s from %s[%d]: %w", sp.Topic, sp.SourceTopic, pp.Partition, err)
		}
		done += int64(records)
		s.copied += int64(records)
		batch = batch[:0]
		if s.opts.Progress != nil && records > 0 {
			s.opts.Progress(Progress{Topic: sp.SourceTopic, Partition: pp.Partition, Done: done, Total: pp.Records,
				Copied: s.copied, ToCopy: max(s.toCopy, s.copied)})
		}
		return nil
	}
	add := func(e Entry) error {
		part := pp.Partition
		if sp.byKey {
			// Our engine keeps the store's records by their key's
			// murmur2, where its boundary routes them; Kafka Streams'
			// placement can differ (another partition count).
			part = int32(lane.For(e.LaneKey, int(sp.placeBy)))
		}
		batch = append(batch, ourRecord(sp, e, part))
		if len(batch) >= s.opts.BatchRecords {
			return flush(len(batch))
		}
		return nil
	}
	if sp.reader != nil {
		err := sp.reader.each(pp.Partition, func(path string, key, value []byte, ts int64) error {
			e, err := s.decodeState(sp, path, key, value, ts)
			if err != nil {
				return err
			}
			return add(e)
		})
		if err != nil {
			return done, fmt.Errorf("migrate: store %s of %s: %w", sp.Source, sp.StateDir, err)
		}
	} else {
		_, err := s.read(ctx, sp.SourceTopic, kafka.Positions{pp.Partition: kafka.LogStart}, func(r *kgo.Record) error {
			if r.Offset >= pp.End {
				return nil
			}
			e, err := s.decode(sp, r)
			if errors.Is(err, errSuperseded) {
				return nil
			}
			if err != nil {
				return err
			}
			return add(e)
		})
		if err != nil {
			return done, fmt.Errorf("migrate: read %s: %w", sp.SourceTopic, err)
		}
	}
	n := len(batch)
	mv, _ := json.Marshal(marker{End: pp.End, Records: pp.Records})
	batch = append(batch, &kgo.Record{Topic: MarkerTopic(s.opts.To), Partition: 0, Key: []byte(markerKey(sp.markerSource(), pp.Partition)), Value: mv})
	return done, flush(n)
}

// ourRecord places a decoded record of the task of partition as our engine
// would have written it: in the task's partition, as Kafka Streams wrote
// it, with the hash of its lane key, which picks its lane within the task.
func ourRecord(sp *StorePlan, e Entry, partition int32) *kgo.Record {
	// One allocation for the record, its header and the header's value.
	r := &struct {
		rec kgo.Record
		hdr [1]kgo.RecordHeader
		val [4]byte
	}{}
	binary.BigEndian.PutUint32(r.val[:], uint32(lane.Murmur2(e.LaneKey)))
	r.hdr[0] = kgo.RecordHeader{Key: lane.HashHeader, Value: r.val[:]}
	r.rec = kgo.Record{Topic: sp.Topic, Partition: partition, Key: e.Key, Value: e.Value, Timestamp: msTime(e.Timestamp), Headers: r.hdr[:]}
	return &r.rec
}

func commitBatch(ctx context.Context, tx *kgo.Client, recs []*kgo.Record) error {
	if err := tx.BeginTransaction(); err != nil {
		return err
	}
	var first error
	for _, r := range recs {
		tx.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil && first == nil {
				first = err
			}
		})
	}
	ferr := tx.Flush(ctx)
	if ferr == nil && first == nil {
		// A transaction with no offsets that wrote only to topics new to
		// the client can be aborted silently otherwise (see
		// kgotxn.AwaitProduceMetadata).
		written := make(map[string]int32, 2)
		last := ""
		for _, r := range recs {
			if r.Topic != last { // a batch is one changelog, then its marker
				written[r.Topic], last = r.Partition, r.Topic
			}
		}
		ferr = kgotxn.AwaitProduceMetadata(ctx, tx, written)
	}
	commit := kgo.TryCommit
	if ferr != nil || first != nil {
		commit = kgo.TryAbort
	}
	if err := tx.EndTransaction(ctx, commit); err != nil {
		return err
	}
	return errors.Join(ferr, first)
}
