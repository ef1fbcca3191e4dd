package engine_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// kafkaPartition is the partition Kafka's default partitioner gives key
// bytes (franz-go's, not ours: toPositive(murmur2(key)) % n).
func kafkaPartition(key []byte, n int32) int32 {
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic("out").Partition(&kgo.Record{Key: key}, int(n)))
}

// TestSinkPartitionsAsKafkaStreams: where each result lands, against the
// partition Kafka Streams gives it. A windowed result (time window, session,
// suppressed window) goes to the partition of its inner key, as Kafka
// Streams' WindowedStreamPartitioner puts it, so that a key's windows stay
// in its partition and in order; a result keyed anew (selectKey) goes to
// the partition of its whole key, Kafka's default; a partitioner of one's
// own is given the sink topic's partition count (five here, where the
// input and so our changelogs have two) and is obeyed.
func TestSinkPartitionsAsKafkaStreams(t *testing.T) {
	const parts = 5
	str := serde.String()
	var seenN atomic.Int32
	for _, tc := range []struct {
		name   string
		topo   func() *topology.Topology
		suffix int // bytes after the inner key; -1: the whole key
		custom bool
	}{
		{name: "time window on close", suffix: 8, topo: func() *topology.Topology {
			b := dsl.NewBuilder()
			g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
			dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 0)).EmitStrategy(dsl.OnWindowClose()),
				dsl.MaterializedAs[string, int64]("win")).
				ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
			return b.Topology()
		}},
		{name: "session", suffix: 16, topo: func() *topology.Topology {
			b := dsl.NewBuilder()
			g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
			dsl.CountSession(g.WindowedBySession(window.SessionWindowsOfInactivityGapAndGrace(3*time.Second, 0)), dsl.MaterializedAs[string, int64]("sessions")).
				ToStream().To("out", dsl.ProducedWith(window.SessionWindowedSerde(str), serde.Int64()))
			return b.Topology()
		}},
		{name: "suppressed window", suffix: 8, topo: func() *topology.Topology {
			b := dsl.NewBuilder()
			g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
			dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 0)), dsl.MaterializedAs[string, int64]("win")).
				Suppress(dsl.UntilWindowCloses(dsl.Unbounded())).
				ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()))
			return b.Topology()
		}},
		{name: "re-keyed", suffix: -1, topo: func() *topology.Topology {
			b := dsl.NewBuilder()
			s := dsl.SelectKey(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), func(k, v string) string { return k + "/" + v })
			s.To("out", dsl.ProducedWith(str, str))
			return b.Topology()
		}},
		{name: "partitioner of its own", custom: true, topo: func() *topology.Topology {
			b := dsl.NewBuilder()
			g := dsl.Stream(b, dsl.ConsumedWith(str, str), "in").GroupByKey()
			dsl.CountWindowed(g.WindowedBy(window.TimeWindowsOfSizeAndGrace(10*time.Second, 0)).EmitStrategy(dsl.OnWindowClose()),
				dsl.MaterializedAs[string, int64]("win")).
				ToStream().To("out", dsl.ProducedWith(window.TimeWindowedSerde(str, 10_000), serde.Int64()).
				WithPartitioner(func(_ string, k window.Windowed[string], _ int64, n int32) (int32, bool) {
					seenN.Store(n)
					return int32(len(k.Key)) % n, true
				}))
			return b.Topology()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startBroker(t, map[string]int32{"in": 2, "out": parts})
			var in []kv
			for s := range 40 {
				for i := range 12 {
					in = append(in, kv{Key: "key-" + strconv.Itoa(i*7), Value: "x", Timestamp: int64(1_000_000 + s*1000 + i)})
				}
			}
			// Far ahead, on both partitions: every window closes.
			for i := range 12 {
				in = append(in, kv{Key: "key-" + strconv.Itoa(i*7), Value: "x", Timestamp: 2_000_000})
			}
			produce(t, addr, "in", in)
			_, stop := runEngine(t, tc.topo(), cfg(addr, "partitions", "stoatflow.watermark.max-out-of-orderness-ms", "0"))
			out := readCommittedRecords(t, addr, "out", 48, 30*time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if len(out) < 48 {
				t.Fatalf("%d results, want at least 48", len(out))
			}
			moved := 0
			for _, r := range out {
				var want int32
				switch {
				case tc.custom:
					inner := r.Key[:len(r.Key)-8]
					want = int32(len(inner)) % parts
				case tc.suffix < 0:
					want = kafkaPartition(r.Key, parts)
				default:
					want = kafkaPartition(r.Key[:len(r.Key)-tc.suffix], parts)
					if kafkaPartition(r.Key, parts) != want {
						moved++
					}
				}
				if r.Partition != want {
					t.Errorf("key %q in partition %d, Kafka Streams puts it in %d", r.Key, r.Partition, want)
				}
			}
			if tc.suffix > 0 && moved == 0 {
				t.Errorf("every result's whole key hashes to its inner key's partition too: the test tells nothing")
			}
			if tc.custom && seenN.Load() != parts {
				t.Errorf("the partitioner was told %d partitions, the sink topic has %d", seenN.Load(), parts)
			}
		})
	}
}
