package broker_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
)

func start(t *testing.T, opts broker.Options) *broker.Broker {
	t.Helper()
	if opts.Port == 0 {
		opts.Port = broker.RandomPort
	}
	b, err := broker.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// produce writes one record per value to topic, partition by partition
// as the values' keys pick, and waits for every acknowledgement.
func produce(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, v := range values {
		rs = append(rs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s on %s: %v", topic, addr, err)
	}
}

// consume reads n records of topic from the start and returns their
// values, sorted (partitions interleave in no fixed order).
func consume(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s on %s: read %d of %d records before %v: %q", topic, addr, len(got), n, err, got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

func TestProduceAndConsumeOverTCP(t *testing.T) {
	b := start(t, broker.Options{SeedTopics: map[string]int32{"orders": 3, "audit": 0}})
	if host, _, _ := net.SplitHostPort(b.Addr()); host != broker.DefaultHost {
		t.Errorf("Addr() = %s, want host %s", b.Addr(), broker.DefaultHost)
	}
	topics, err := b.Topics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(topics) != "map[audit:1 orders:3]" {
		t.Fatalf("Topics() = %v, want audit with 1 partition (the default) and orders with 3", topics)
	}
	want := []string{"a", "b", "c", "d", "e", "f"}
	produce(t, b.Addr(), "orders", want...)
	if got := consume(t, b.Addr(), "orders", len(want)); !slices.Equal(got, want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

func TestRestartWithDataDirKeepsTopicsRecordsAndOffsets(t *testing.T) {
	dir := t.TempDir()
	opts := broker.Options{Port: broker.RandomPort, DataDir: dir, SeedTopics: map[string]int32{"orders": 2}}
	b, err := broker.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	produce(t, b.Addr(), "orders", "one", "two", "three")
	commitGroupOffset(t, b.Addr(), "orders", 0, 1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The second start also asks for a topic the first did not have, and
	// for another partition count of an existing one: the new topic is
	// created, the existing one is kept as it was.
	opts.SeedTopics = map[string]int32{"orders": 5, "later": 2}
	b = start(t, opts)
	topics, err := b.Topics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(topics) != "map[later:2 orders:2]" {
		t.Fatalf("after restart Topics() = %v, want later:2 (new seed) and orders:2 (kept)", topics)
	}
	if got, want := consume(t, b.Addr(), "orders", 3), []string{"one", "three", "two"}; !slices.Equal(got, want) {
		t.Fatalf("after restart consumed %q, want %q", got, want)
	}
	if off := fetchGroupOffset(t, b.Addr(), "orders", 0); off != 1 {
		t.Fatalf("after restart the group's committed offset of orders[0] is %d, want 1", off)
	}
}

func TestDataDirTakesOneBrokerAtATime(t *testing.T) {
	dir := t.TempDir()
	start(t, broker.Options{DataDir: dir})
	_, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "another broker is using it") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second broker on %s: err = %v, want one naming the directory and saying it is in use", dir, err)
	}
}

func TestStartRefusals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name string
		opts broker.Options
		want string
	}{
		{"port in use", broker.Options{Port: busy}, "start broker on 127.0.0.1:" + strconv.Itoa(busy)},
		{"port out of range", broker.Options{Port: 70000}, "port 70000 is out of range"},
		{"last node's port out of range", broker.Options{Port: 65535, NumBrokers: 2}, "port 65535 is out of range"},
		{"negative node count", broker.Options{NumBrokers: -1}, "-1 nodes"},
		// Kafka refuses topics whose names differ only in '.' and '_'.
		{"colliding seed topics", broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"a.b": 1, "a_b": 1}}, "create seed topic a_b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := broker.Start(t.Context(), tc.opts)
			if err == nil {
				b.Close()
				t.Fatalf("Start succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSeveralNodes(t *testing.T) {
	b := start(t, broker.Options{NumBrokers: 3, SeedTopics: map[string]int32{"t": 6}})
	if n := len(b.Addrs()); n != 3 {
		t.Fatalf("Addrs() = %v, want 3 nodes", b.Addrs())
	}
	want := []string{"1", "2", "3", "4", "5", "6", "7"}
	produce(t, b.Addrs()[2], "t", want...)
	if got := consume(t, b.Addr(), "t", len(want)); !slices.Equal(got, want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

func TestCloseTwice(t *testing.T) {
	b := start(t, broker.Options{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Close", b.Addr())
	}
}

// commitGroupOffset commits offset for topic[partition] in group "g".
func commitGroupOffset(t *testing.T, addr, topic string, partition int32, offset int64) {
	t.Helper()
	adm := admin(t, addr)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	rs, err := adm.CommitOffsets(t.Context(), "g", os)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatalf("commit offset %d of %s[%d] for group g: %v", offset, topic, partition, err)
	}
}

// fetchGroupOffset is group "g"'s committed offset of topic[partition].
func fetchGroupOffset(t *testing.T, addr, topic string, partition int32) int64 {
	t.Helper()
	rs, err := admin(t, addr).FetchOffsets(t.Context(), "g")
	if err != nil {
		t.Fatalf("fetch offsets of group g: %v", err)
	}
	r, ok := rs.Lookup(topic, partition)
	if !ok || r.Err != nil {
		t.Fatalf("group g has no committed offset for %s[%d] (%v)", topic, partition, r.Err)
	}
	return r.At
}

func admin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
