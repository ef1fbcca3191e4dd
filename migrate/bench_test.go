package migrate

import (
	"context"
	"encoding/binary"
	"flag"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topofile"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// benchRecords is the size of BenchmarkMigrateVsCopy's changelog.
var benchRecords = flag.Int("migrate.records", 1_000_000, "records in BenchmarkMigrateVsCopy's changelog")

// BenchmarkMigrateVsCopy measures the translation of a key-value changelog
// (the word-count mirror's counts store, -migrate.records records, 1 M by
// default, over four partitions) on the embedded broker: records/s of
// translate, and the ratio to a bare franz-go loop that reads the same
// partitions and writes them back transactionally unchanged, in batches of
// the same size (copy-records/s), measured in the same run. The two
// alternate which goes first, so that neither always meets a warm broker.
// plan-read-records/s is the rate the plan read and decoded the same
// partitions at, which its estimate starts from (Estimate), and
// copy-per-plan-read the translation's rate over it.
func BenchmarkMigrateVsCopy(b *testing.B) {
	n, parts := *benchRecords, int32(4)
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
		recs[i] = &kgo.Record{Topic: "ks-counts-changelog", Partition: int32(i) % parts, Key: []byte("word-" + strconv.Itoa(i)),
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
	migrate := func() {
		start := time.Now()
		for _, pp := range p.Stores[0].Partitions {
			if _, err := s.translate(ctx, tx, p, p.Stores[0], pp); err != nil {
				b.Fatal(err)
			}
		}
		ours += time.Since(start)
	}
	copyBare := func() {
		start := time.Now()
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
	// The plan's own measure of its read, as the estimate takes it.
	var planRate float64
	replan := func() {
		s.meter = readMeter{}
		q, err := s.plan(ctx)
		if err != nil {
			b.Fatal(err)
		}
		planRate += q.Estimate.ReadRate
	}
	// One round unmeasured: the first writes to a topic meet a cold
	// broker (its partitions' first segments, the producer's metadata).
	migrate()
	copyBare()
	ours, bare = 0, 0
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			migrate()
			copyBare()
		} else {
			copyBare()
			migrate()
		}
		replan()
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/ours.Seconds(), "records/s")
	b.ReportMetric(float64(n)*float64(b.N)/bare.Seconds(), "copy-records/s")
	b.ReportMetric(bare.Seconds()/ours.Seconds(), "ratio-to-copy")
	// The plan's estimate takes the copy to run at copyPerRead of the
	// rate the plan read at: plan-read-records/s against records/s
	// shows how close that is.
	b.ReportMetric(planRate/float64(b.N), "plan-read-records/s")
	b.ReportMetric(float64(n)*float64(b.N)/ours.Seconds()/(planRate/float64(b.N)), "copy-per-plan-read")

	// The verification pass that follows a run: its rate against the
	// bare copy's, and the most heap it held (sampled every 10 ms; a
	// store is compared one partition at a time).
	runtime.GC()
	base := benchbase.HeapInUse()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if h := benchbase.HeapInUse(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	start := time.Now()
	v, err := s.verify(ctx, p)
	took := time.Since(start)
	close(stop)
	<-sampled
	if err != nil || !v.OK {
		b.Fatalf("verify: %v, %+v", err, v)
	}
	b.ReportMetric(float64(n)/took.Seconds(), "verify-records/s")
	b.ReportMetric(float64(n)/took.Seconds()/(float64(n)*float64(b.N)/bare.Seconds()), "verify-per-copy")
	b.ReportMetric(float64(peak.Load()-min(base, peak.Load()))/(1<<20), "verify-peak-heap-MB")
}
