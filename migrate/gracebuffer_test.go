package migrate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/migrate"
)

// graceJoinYAML is versionedJoinYAML with a grace period of 5 s, the
// join named priced: its buffer is priced-Buffer, as Kafka Streams names
// it (Joined.as("priced")).
const graceJoinYAML = `application-id: ours
tables:
  prices: {topic: prices, key-serde: string, value-serde: string, store: {name: prices-store, history-retention: 1h}}
sources:
  orders: {topic: orders, key-serde: string, value-serde: string}
pipelines:
  priced:
    from: orders
    steps:
      - left-join: {with: prices, grace: 5s, name: priced, joiner: 'left + "@" + (right ?? "?")'}
      - to: {topic: priced, key-serde: string, value-serde: string}
`

// TestJoinBufferCutover: a stream-table join's grace buffer, as Kafka
// Streams' RocksDBTimeOrderedKeyValueBuffer logs it (key: a prefix byte,
// timestamp, key, sequence number; value: a BufferValue with the record context and the
// value, then the buffer time), is translated into ours, and the orders
// it held at the cutover leave it after, joined with the prices valid at
// their time (a late price among them), with their headers, once an
// order 5 s newer comes. Before, the plan refused the buffer.
func TestJoinBufferCutover(t *testing.T) {
	addr := kafkatest.Start(t, map[string]int32{"prices": 1, "orders": 1, "priced": 1})
	ksVersioned(t, addr, hourOfHistory, []ksVersion{{"p1", ptr("10"), 1000}, {"p1", ptr("11"), 1500}}, 3000)
	adm := kadm.NewClient(client(t, addr))
	kafkatest.CreateTopic(t, adm, "ks-priced-Buffer-changelog", 1, map[string]*string{"cleanup.policy": ptr("compact")})
	held := func(ts int64, key, value string, seq uint32, hs processor.Headers) *kgo.Record {
		// TimeFirstWindowKeySchema.toStoreKeyBinary: prefix 0, then
		// our layout.
		return &kgo.Record{Topic: "ks-priced-Buffer-changelog", Key: append([]byte{0}, dsl.EncodeGraceBufferKey(ts, []byte(key), seq)...),
			Value:     migrate.EncodeSuppressV3(migrate.SuppressV3{Timestamp: ts, Offset: int64(seq), Topic: "orders", Headers: hs, New: []byte(value)}),
			Timestamp: time.UnixMilli(ts)}
	}
	gone := held(500, "p1", "o0", 1, nil)
	tombstone := &kgo.Record{Topic: gone.Topic, Key: gone.Key, Timestamp: gone.Timestamp}
	produceTo(t, addr, gone, held(2000, "p1", "o1", 2, processor.Headers{{Key: "h", Value: []byte("v")}}), held(3000, "p1", "o2", 3, nil), tombstone)
	f, built := loadFile(t, graceJoinYAML)
	opts := migrate.Options{From: "ks", To: "ours", Built: built, Seeds: []string{addr}}
	ctx := context.Background()
	rep, err := migrate.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]migrate.Kind{}
	for _, sp := range rep.Plan.Stores {
		kinds[sp.Store] = sp.Kind
	}
	if kinds["priced-Buffer"] != migrate.JoinBuffer || !rep.Verify.OK {
		t.Fatalf("stores %v, verify %+v", kinds, rep.Verify)
	}
	ours := map[string][]byte{}
	if _, err := kafka.ReadToEnd(ctx, []string{addr}, "ours-priced-Buffer-changelog", kafka.FromLogStart(0), func(r *kgo.Record) error {
		if r.Value == nil {
			delete(ours, string(r.Key))
		} else {
			ours[string(r.Key)] = r.Value
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := dsl.EncodeGraceBufferValue(processor.Headers{{Key: "h", Value: []byte("v")}}, []byte("o1")); string(ours[string(dsl.EncodeGraceBufferKey(2000, []byte("p1"), 2))]) != string(want) || len(ours) != 2 {
		t.Errorf("our buffer %q, want o1 as %q and o2", ours, want)
	}

	stop := runFile(t, f, addr, "ours")
	defer stop()
	produceTo(t, addr, &kgo.Record{Topic: "orders", Key: []byte("p1"), Value: []byte("o3"), Timestamp: time.UnixMilli(8000)})
	out := client(t, addr, kgo.ConsumeTopics("priced"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	var header string
	for deadline := time.Now().Add(20 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		pctx, pc := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			for _, h := range r.Headers {
				if h.Key == "h" {
					header = string(r.Value) + " " + string(h.Value)
				}
			}
		})
		pc()
	}
	if want := []string{"o1@11", "o2@11"}; !slices.Equal(got, want) {
		t.Errorf("released after the cutover %v, want %v", got, want)
	}
	if header != "o1@11 v" {
		t.Errorf("o1's header after the cutover: %q, want v on o1@11", header)
	}
}
