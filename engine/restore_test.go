package engine_test

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRestoreInSmallChunks restores a count's changelog into a fresh state
// directory (or into memory) in chunks of 7 records, so that the read
// fills chunks while the applier writes others and the lanes write side by
// side, on another lane count than the one that wrote it: the counts go
// on exactly from where they were.
func TestRestoreInSmallChunks(t *testing.T) {
	for _, store := range []string{"in_memory", "rocksDB"} {
		t.Run(store, func(t *testing.T) {
			if store == "rocksDB" {
				needRocks(t)
			}
			addr := startBroker(t, map[string]int32{"in": 3, "out": 3})
			var in []kv
			for i := range 600 {
				in = append(in, kv{Key: "k" + strconv.Itoa(i%20), Value: "x"})
			}
			produce(t, addr, "in", in[:300])
			// Every write logged: 300 changelog records to restore in
			// chunks of 7, not the 20 a coalesced epoch leaves.
			_, stop := runEngine(t, counts(), storeCfg(addr, "chunks", store, t.TempDir(), "num.stream.threads", "2",
				engine.ChangelogCoalesceBytes, "0"))
			if got := readCommitted(t, addr, "out", 300, 30*time.Second); len(got) != 300 {
				t.Fatalf("first run: %d records, want 300", len(got))
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			produce(t, addr, "in", in[300:])
			e, stop := runEngine(t, counts(), storeCfg(addr, "chunks", store, t.TempDir(), "num.stream.threads", "3",
				engine.RestoreChunkRecords, "7"))
			got := readCommitted(t, addr, "out", 600, 30*time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if r := e.Stats().Restored; r < 300 {
				t.Fatalf("restored %d changelog records, want the first run's 300 at least", r)
			}
			checkCounts(t, got, 20, 30)
		})
	}
}

// TestRestoreFailureStopsRead: a changelog record the store refuses (a
// nil key) in the middle of a changelog of many chunks fails the start
// with an error naming the store, from whichever lane took it, rather
// than hanging the read that feeds the applier.
func TestRestoreFailureStopsRead(t *testing.T) {
	for _, store := range []string{"in_memory", "rocksDB"} {
		t.Run(store, func(t *testing.T) {
			if store == "rocksDB" {
				needRocks(t)
			}
			addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
			compact := "compact"
			kafkatest.CreateTopic(t, kafkatest.Admin(t, addr), "bad-counts-changelog", 2, map[string]*string{"cleanup.policy": &compact})
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bad-counts-changelog"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var recs []*kgo.Record
			for i := range 400 {
				key := []byte("k" + strconv.Itoa(i%40))
				rec := &kgo.Record{Key: key, Value: binary.BigEndian.AppendUint64(nil, uint64(i/40+1)), Partition: int32(lane.For(key, 2)),
					Headers: []kgo.RecordHeader{{Key: "__stoatflow.lane.hash", Value: binary.BigEndian.AppendUint32(nil, uint32(lane.Murmur2(key)))}}}
				if i == 200 {
					rec.Key, rec.Headers = nil, nil
				}
				recs = append(recs, rec)
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			e := engine.New(counts(), storeCfg(addr, "bad", store, t.TempDir(), "num.stream.threads", "2", engine.RestoreChunkRecords, "5"),
				engine.WithLogger(testLogger(t)))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err = e.Run(ctx)
			if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "restore state store counts") {
				t.Fatalf("run: %v (context: %v), want a restore error naming the store", err, ctx.Err())
			}
			t.Logf("run: %v", err)
		})
	}
}
