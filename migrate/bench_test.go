package migrate

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// BenchmarkTranslate measures the translation of a key-value changelog
// (the word-count mirror's counts store, 200 000 records over four
// partitions) on the embedded broker: records/s of translate alone, and
// the ratio to a bare franz-go loop that reads the same partitions and
// writes them back transactionally unchanged, in batches of the same size
// (copy-records/s), measured in the same run.
func BenchmarkTranslate(b *testing.B) {
	const n, parts = 200_000, 4
	br, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"lines": parts, "word-counts": 1}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	addr := br.Addr()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	kafkatest.CreateTopic(b, adm, "ks-counts-changelog", parts, map[string]*string{"cleanup.policy": &compact})
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "ks-counts-changelog", Partition: int32(i % parts), Key: []byte("word-" + strconv.Itoa(i)),
			Value: binary.BigEndian.AppendUint64(nil, uint64(i)), Timestamp: time.UnixMilli(int64(i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	f, err := topofile.Load("../interop/topologies/word-count.yaml")
	if err != nil {
		b.Fatal(err)
	}
	built, err := f.Topology.Build(config.New(map[string]string{config.ApplicationID: "ours"}))
	if err != nil {
		b.Fatal(err)
	}
	s, err := newSession(Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	p, err := s.plan(ctx)
	if err != nil {
		b.Fatal(err)
	}
	specs := append(kafka.InternalTopics(built, p.ourPartitions),
		kafka.TopicSpec{Name: MarkerTopic("ours"), Partitions: 1, ReplicationFactor: -1, Configs: map[string]string{"cleanup.policy": "compact"}},
		kafka.TopicSpec{Name: "copy", Partitions: parts, ReplicationFactor: -1})
	if err := kafka.EnsureTopics(ctx, s.adm, specs, true); err != nil {
		b.Fatal(err)
	}
	tx, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("bench"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()

	var ours, bare time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for _, pp := range p.Stores[0].Partitions {
			if _, err := s.translate(ctx, tx, p, p.Stores[0], pp); err != nil {
				b.Fatal(err)
			}
		}
		ours += time.Since(start)

		start = time.Now()
		for _, pp := range p.Stores[0].Partitions {
			batch := make([]*kgo.Record, 0, s.opts.BatchRecords)
			_, err := s.read(ctx, "ks-counts-changelog", kafka.Positions{pp.Partition: kafka.LogStart}, func(r *kgo.Record) error {
				batch = append(batch, &kgo.Record{Topic: "copy", Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
				if len(batch) >= s.opts.BatchRecords {
					err := commitBatch(ctx, tx, batch)
					batch = batch[:0]
					return err
				}
				return nil
			})
			if err == nil && len(batch) > 0 {
				err = commitBatch(ctx, tx, batch)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		bare += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/ours.Seconds(), "records/s")
	b.ReportMetric(float64(n)*float64(b.N)/bare.Seconds(), "copy-records/s")
	b.ReportMetric(bare.Seconds()/ours.Seconds(), "ratio-to-copy")
}
