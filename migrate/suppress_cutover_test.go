package migrate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

// v3Value is a suppress buffer changelog value as Kafka Streams' V3
// layout has it (BufferValue.serialize, then the buffer time): record
// context without headers, prior null, old and new 8-byte longs.
func v3Value(ts, offset int64, partition int32, old []byte, newValue int64, bufferTime int64) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(ts))
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, 6)
	b = append(b, "logins"...)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	b = binary.BigEndian.AppendUint32(b, 0)          // no headers
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // prior: null
	if old == nil {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(len(old)))
		b = append(b, old...)
	}
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(newValue))
	return binary.BigEndian.AppendUint64(b, uint64(bufferTime))
}

// TestSuppressBufferRestoresToOwningLane: a Kafka Streams suppress buffer
// (untilWindowCloses over a five-minute count, as interop's suppress
// mirror) holding one window for each of eight users, migrated, restored
// by our engine running three lanes over four input partitions. Each
// user's next login in the window must find its buffered entry in the lane
// that owns the user: the window is then released once, with the count
// going on from Kafka Streams'. An entry restored into another lane would
// be released there as well, with the count Kafka Streams had, beside the
// owning lane's new entry: two results for one window.
func TestSuppressBufferRestoresToOwningLane(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"logins": 4, "login-counts": 2})
	ctx := context.Background()
	f, built := load(t, "suppress", "ours")
	var buffer string
	for name, info := range built.Stores {
		if _, ok := info.Builder.(dsl.SuppressBuffer); ok {
			buffer = name
		}
	}
	if buffer == "" {
		t.Fatalf("no suppress buffer among %v", slices.Sorted(maps.Keys(built.Stores)))
	}

	const size, grace = 300_000, 30_000
	w := time.Now().Add(-3*time.Hour).UnixMilli() / size * size
	adm := kadm.NewClient(client(t, addr))
	counts, buf := "ks-failed-logins-changelog", "ks-"+buffer+"-changelog"
	kafkatest.CreateTopic(t, adm, counts, 4, map[string]*string{"cleanup.policy": ptr("compact,delete"),
		"retention.ms": ptr(strconv.Itoa(size + grace + 24*3600*1000))})
	kafkatest.CreateTopic(t, adm, buf, 4, map[string]*string{"cleanup.policy": ptr("compact")})
	long := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	var recs []*kgo.Record
	const users = 8
	for i := range users {
		user := "u" + strconv.Itoa(i)
		// Kafka Streams' task partition: the one its input's producer
		// (Kafka's partitioner, as below) put the user's logins in, and
		// ours too.
		part := int32(lane.For([]byte(user), 4))
		n := int64(i + 1)
		wkey := append(append([]byte(user), long(w)...), 0, 0, 0, 0)
		recs = append(recs, &kgo.Record{Topic: counts, Partition: part, Key: wkey, Value: long(n), Timestamp: time.UnixMilli(w + 1000)})
		var old []byte
		if n > 1 {
			old = long(n - 1)
		}
		recs = append(recs, &kgo.Record{Topic: buf, Partition: part, Key: append([]byte(user), long(w)...),
			Value:   v3Value(w+1000*n, n, part, old, n, w+size),
			Headers: []kgo.RecordHeader{{Key: "v", Value: []byte{3}}}, Timestamp: time.Now()})
	}
	if err := client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	md, _ := kafka.TopicPartitionMetadata{PartitionTime: w + 200_000}.Encode()
	var offs kadm.Offsets
	for p := range int32(4) {
		offs.Add(kadm.Offset{Topic: "logins", Partition: p, At: 0, LeaderEpoch: -1, Metadata: md})
	}
	if resp, err := adm.CommitOffsets(ctx, "ks", offs); err != nil || resp.Error() != nil {
		t.Fatal(err, resp.Error())
	}

	var clientLog syncBuffer
	logOpt := kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelInfo, nil))
	rep, err := migrate.Run(ctx, migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}, ClientOpts: []kgo.Opt{logOpt}})
	if err != nil {
		t.Fatalf("%v\nclient log:\n%s", err, clientLog.String())
	}
	if !rep.Verify.OK || rep.Translated != 2*users {
		t.Fatalf("report: %+v", rep)
	}

	cfg := maps.Clone(f.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg["application.id"], cfg["bootstrap.servers"], cfg["num.stream.threads"] = "ours", addr, "3"
	cfg[engine.BarrierIntervalMs] = "100"
	e := engine.New(f.Topology, cfg, engine.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	// One more login per user in the window (Kafka's partitioner places
	// them), then one on every partition past the window's close.
	var in []*kgo.Record
	for i := range users {
		in = append(in, &kgo.Record{Topic: "logins", Key: []byte("u" + strconv.Itoa(i)), Value: []byte("failed"), Timestamp: time.UnixMilli(w + 250_000)})
	}
	if err := client(t, addr).ProduceSync(ctx, in...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	in = in[:0]
	for p := range int32(4) {
		in = append(in, &kgo.Record{Topic: "logins", Partition: p, Key: []byte(fmt.Sprintf("later%d", p)), Value: []byte("failed"), Timestamp: time.UnixMilli(w + 2*size)})
	}
	if err := client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, in...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	got := map[string][]int64{}
	out := client(t, addr, kgo.ConsumeTopics("login-counts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var quietSince time.Time
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		pctx, pc := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := out.PollFetches(pctx)
		pc()
		fs.EachRecord(func(r *kgo.Record) {
			user := string(r.Key[:len(r.Key)-8])
			if start := int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:])); start != w {
				t.Errorf("%s: a result for window %d, want only %d", user, start, w)
			}
			got[user] = append(got[user], int64(binary.BigEndian.Uint64(r.Value)))
		})
		if len(got) < users {
			continue
		}
		// Every window is out; wait a little for a second result of one.
		if quietSince.IsZero() {
			quietSince = time.Now()
		} else if time.Since(quietSince) > 2*time.Second {
			break
		}
	}
	for i := range users {
		user := "u" + strconv.Itoa(i)
		if want := []int64{int64(i + 2)}; !slices.Equal(got[user], want) {
			t.Errorf("%s: released %v, want %v (Kafka Streams' count %d, then one more)", user, got[user], want, i+1)
		}
	}
	if len(got) != users {
		t.Errorf("results for %d keys, want %d: %v", len(got), users, got)
	}
}
