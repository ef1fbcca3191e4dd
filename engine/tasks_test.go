package engine_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// A placement says which partition of n a producer writes the i-th
// record of a batch, of key key, to.
type placement func(key []byte, n int32, i int) int32

// placements are the partitioners of the producers a Kafka Streams
// application meets: Java's (murmur2 of the key), librdkafka's default
// (consistent_random: CRC-32 of the key; kcat and Confluent's clients for
// Python, Go and .NET), and one that scatters each key over every
// partition (a batch of keys distinct keys, then the next, each batch a
// partition further).
func placements(keys int) map[string]placement {
	return map[string]placement{
		"murmur2": func(key []byte, n int32, _ int) int32 { return int32(lane.For(key, int(n))) },
		"crc32":   func(key []byte, n int32, _ int) int32 { return int32(crc32.ChecksumIEEE(key) % uint32(n)) },
		"scatter": func(key []byte, n int32, i int) int32 {
			return int32((crc32.ChecksumIEEE(key) + uint32(i/keys)) % uint32(n))
		},
	}
}

// producePlaced writes records to topic (of n partitions), each to the
// partition place picks for it.
func producePlaced(t testing.TB, addr, topic string, n int32, recs []kv, place placement) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		rs[i] = &kgo.Record{Key: []byte(r.Key), Value: []byte(r.Value), Partition: place([]byte(r.Key), n, i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), produceWithin)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", len(rs), topic, err)
	}
}

// produceWithKcat writes records to topic with kcat, librdkafka's own
// client, with its default partitioner (consistent_random: CRC-32 of the
// key), as a team's non-Java producers write.
func produceWithKcat(t testing.TB, addr, topic string, recs []kv) {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	var in strings.Builder
	for _, r := range recs {
		in.WriteString(r.Key + ":" + r.Value + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-P", "-t", topic, "-K:")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v: %s", err, out)
	}
}

// TestCountWhateverThePartitioner runs two instances of a count over input
// written with each producer partitioner, while partitions move both ways
// between them: the second joins mid-stream, the first leaves, and comes
// back. kcat writes with librdkafka's own default partitioner. A task's state is the state of the records of its partition,
// wherever the producer put them, so every count is exact, committed once;
// a key the producer scatters over the partitions is counted once per
// task, as Kafka Streams counts it.
func TestCountWhateverThePartitioner(t *testing.T) {
	for _, name := range []string{"murmur2", "crc32", "scatter", "kcat"} {
		t.Run(name, func(t *testing.T) {
			const parts, keys, rounds, perRound = 4, 40, 6, 4
			place := placements(keys)[name]
			addr := startKafka(t, map[string]int32{"in": parts, "out": parts})
			producePlaced := producePlaced
			if name == "kcat" {
				producePlaced = func(t testing.TB, addr, topic string, _ int32, recs []kv, _ placement) {
					produceWithKcat(t, addr, topic, recs)
				}
			}
			i := 0
			batch := func() []kv {
				var in []kv
				for range keys * perRound {
					in = append(in, kv{Key: "k" + strconv.Itoa(i%keys), Value: "x"})
					i++
				}
				return in
			}
			owned := func(who string, e *engine.Engine, n int) {
				t.Helper()
				var ps []int32
				eventually(t, 60*time.Second, func() string { return fmt.Sprintf("instance %s runs partitions %v, want %d of them", who, ps, n) },
					func() bool { ps = e.Assignment()["in"]; return len(ps) == n })
			}
			app := "partitioner-" + name
			dirA, dirB := t.TempDir(), t.TempDir()
			a, stopA := runEngine(t, counts(), cfg(addr, app, "state.dir", dirA, "num.stream.threads", "2"))
			owned("a", a, parts)
			producePlaced(t, addr, "in", parts, batch(), place)
			b, stopB := runEngine(t, counts(), cfg(addr, app, "state.dir", dirB, "num.stream.threads", "3"))
			producePlaced(t, addr, "in", parts, batch(), place)
			owned("a", a, parts/2)
			owned("b", b, parts/2)
			producePlaced(t, addr, "in", parts, batch(), place)
			if err := stopA(); err != nil {
				t.Fatalf("first instance: %v", err)
			}
			owned("b", b, parts)
			producePlaced(t, addr, "in", parts, batch(), place)
			a, stopA = runEngine(t, counts(), cfg(addr, app, "state.dir", dirA, "num.stream.threads", "1"))
			owned("a", a, parts/2)
			producePlaced(t, addr, "in", parts, batch(), place)
			producePlaced(t, addr, "in", parts, batch(), place)
			got := readCommitted(t, addr, "out", keys*rounds*perRound, 90*time.Second)
			for who, stop := range map[string]func() error{"a": stopA, "b": stopB} {
				if err := stop(); err != nil {
					t.Fatalf("instance %s: %v", who, err)
				}
			}
			tasks := 1
			if name == "scatter" {
				tasks = parts
			}
			checkTaskCounts(t, got, keys, rounds*perRound, tasks)
		})
	}
}

// checkTaskCounts checks that every key was counted 1..per/tasks exactly
// once in each of tasks tasks.
func checkTaskCounts(t testing.TB, got []kv, keys, per, tasks int) {
	t.Helper()
	seen := map[string][]int64{}
	for _, r := range got {
		n := int64(0)
		for _, b := range []byte(r.Value) {
			n = n<<8 | int64(b)
		}
		seen[r.Key] = append(seen[r.Key], n)
	}
	if len(seen) != keys {
		t.Fatalf("%d keys, want %d", len(seen), keys)
	}
	var want []int64
	for c := 1; c <= per/tasks; c++ {
		for range tasks {
			want = append(want, int64(c))
		}
	}
	wrong := 0
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	}) {
		ns := seen[k]
		slices.Sort(ns)
		if !slices.Equal(ns, want) {
			if wrong++; wrong <= 5 {
				t.Errorf("key %s: counts %v, want 1..%d once in each of %d tasks", k, ns, per/tasks, tasks)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d keys counted wrong", wrong, keys)
	}
}

// changelogRecords counts the committed records of each partition of a
// changelog.
func changelogRecords(t testing.TB, addr, topic string, parts int32) map[int32]int64 {
	t.Helper()
	all := make([]int32, parts)
	for p := range all {
		all[p] = int32(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := map[int32]int64{}
	if _, err := kafka.ReadToEndSettled(ctx, []string{addr}, topic, kafka.FromLogStart(all...), func(r *kgo.Record) error {
		n[r.Partition]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRebalanceRestoresOnlyMovedTasks adds an instance to one that runs 8
// tasks of a count with its state in RocksDB: the tasks that move restore
// their changelog partitions, and only those, on the new instance (as
// warm-ups before they move); the
// instance that keeps the others restores nothing for them, its local
// state kept across the rebalance.
func TestRebalanceRestoresOnlyMovedTasks(t *testing.T) {
	needRocks(t)
	const parts, keys = 8, 20000
	addr := startKafka(t, map[string]int32{"in": parts, "out": parts})
	var in []kv
	for i := range keys {
		in = append(in, kv{Key: "key-" + strconv.Itoa(i), Value: "x"})
	}
	a, stopA := runEngine(t, counts(), storeCfg(addr, "moved", "rocksDB", t.TempDir(), "num.stream.threads", "2"))
	eventually(t, 60*time.Second, func() string { return "the first instance does not run every partition" },
		func() bool { return len(a.Assignment()["in"]) == parts })
	produce(t, addr, "in", in)
	readCommitted(t, addr, "out", keys, 60*time.Second)
	// Everything read is committed, locally too (the committer writes an
	// epoch's RocksDB layers before it counts the epoch's records): the
	// rebalance below meets no epoch in flight.
	eventually(t, 10*time.Second, func() string { return "the input is not all committed" }, func() bool { return a.Stats().Records >= keys })
	before := a.Stats().Restored
	perPartition := changelogRecords(t, addr, "moved-counts-changelog", parts)

	b, stopB := runEngine(t, counts(), storeCfg(addr, "moved", "rocksDB", t.TempDir(), "num.stream.threads", "2"))
	psA, psB := halves(t, a, b, parts)
	// Both run: the next records are counted on from the state each has.
	produce(t, addr, "in", in)
	got := readCommitted(t, addr, "out", 2*keys, 60*time.Second)
	if err := stopA(); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	if err := stopB(); err != nil {
		t.Fatalf("second instance: %v", err)
	}
	checkCounts(t, got, keys, 2)
	var moved int64
	for _, p := range psB {
		moved += perPartition[p]
	}
	if n := a.Stats().Restored - before; n != 0 {
		t.Errorf("the instance that kept tasks %v restored %d records, want none", psA, n)
	}
	// The new instance warmed its tasks up before they moved (KIP-441):
	// what it applied then and what it restored at the move are, together,
	// those partitions, once.
	if n := b.Stats().Restored + b.Stats().StandbyRecords; n != moved {
		t.Errorf("the new instance warmed up %d and restored %d records, want %d in all: those of the changelog partitions %v of the tasks that moved (per partition %v)",
			b.Stats().StandbyRecords, b.Stats().Restored, moved, psB, perPartition)
	}
	t.Logf("tasks moved %v: %d changelog records of %d, %d of them warmed up before the move; kept %v: none", psB, moved, keys, b.Stats().StandbyRecords, psA)
}

// halves waits until a and b run half of the parts partitions of "in"
// each, and returns them.
func halves(t *testing.T, a, b *engine.Engine, parts int) (psA, psB []int32) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		return fmt.Sprintf("instances run %v and %v, want %d partitions each", psA, psB, parts/2)
	},
		func() bool {
			psA, psB = a.Assignment()["in"], b.Assignment()["in"]
			return len(psA) == parts/2 && len(psB) == parts/2
		})
	return psA, psB
}

// streamTableJoin joins "in" with the table of "tbl".
func streamTableJoin() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	tbl := dsl.Table(b, "tbl", dsl.ConsumedWith(str, str))
	dsl.JoinTable(dsl.Stream(b, dsl.ConsumedWith(str, str), "in"), tbl, func(_ string, v, t string) string { return v + "/" + t }).
		To("out", dsl.ProducedWith(str, str))
	return b.Topology()
}

// TestJoinInputsNotCopartitionedRefused: a join whose input topics have
// different partition counts would look a key up in another task than
// the one its table row is in; the start is refused, naming both topics.
func TestJoinInputsNotCopartitionedRefused(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 4, "tbl": 2, "out": 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := engine.New(streamTableJoin(), cfg(addr, "not-copartitioned"), engine.WithLogger(testLogger(t))).Run(ctx)
	if !errors.Is(err, engine.ErrNotCopartitioned) || !strings.Contains(err.Error(), "topic in has 4 partitions") || !strings.Contains(err.Error(), "topic tbl has 2") {
		t.Fatalf("run: %v, want ErrNotCopartitioned naming in (4 partitions) and tbl (2)", err)
	}
}

// repartitionedCounts counts "in" behind a repartition declared with 8
// partitions.
func repartitionedCounts() *topology.Topology {
	str := serde.String()
	b := dsl.NewBuilder()
	dsl.Stream(b, dsl.ConsumedWith(str, str), "in").
		Repartition(dsl.RepartitionedWith(str, str).WithNumberOfPartitions(8)).
		GroupByKey().Count(dsl.MaterializedAs[string, int64]("counts")).
		ToStream().To("out", dsl.ProducedWith(str, serde.Int64()))
	return b.Topology()
}

// TestDeclaredRepartitionCountMakesTheTasks: behind a repartition declared
// with 8 partitions over a 2-partition input, the count runs 8 tasks, as
// Kafka Streams would over its 8-partition repartition topic: its
// changelog has 8 partitions, a key's state lies in the partition of
// murmur2(key) mod 8, and a restart restores every count.
func TestDeclaredRepartitionCountMakesTheTasks(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	const keys, per = 40, 4
	_, stop := runEngine(t, repartitionedCounts(), cfg(addr, "declared"))
	produce(t, addr, "in", keyed(keys, per/2))
	readCommitted(t, addr, "out", keys*per/2, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	_, stop = runEngine(t, repartitionedCounts(), cfg(addr, "declared", "num.stream.threads", "3"))
	produce(t, addr, "in", keyed(keys, per/2))
	got := readCommitted(t, addr, "out", keys*per, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, got, keys, per)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := make([]int32, 8)
	for p := range all {
		all[p] = int32(p)
	}
	n := 0
	if _, err := kafka.ReadToEndSettled(ctx, []string{addr}, "declared-counts-changelog", kafka.FromLogStart(all...), func(r *kgo.Record) error {
		n++
		if want := int32(lane.For(r.Key, 8)); r.Partition != want {
			t.Errorf("changelog record of %s in partition %d, want %d (murmur2 mod 8)", r.Key, r.Partition, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the changelog is empty")
	}
}

// TestJoinTasksStayWholeAcrossInstances: three instances of a stream-table
// join over four partitions each. A task's partitions (partition p of the
// stream and of the table) must go to one instance together: with
// partitions assigned one by one, an instance reading partition 2 of the
// stream without partition 2 of the table joins stream records with a
// table it does not keep.
func TestJoinTasksStayWholeAcrossInstances(t *testing.T) {
	kafkatest.Parallel(t)
	addr := startBroker(t, map[string]int32{"in": 4, "tbl": 4, "out": 4})
	const keys = 40
	var rows, orders []kv
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		rows = append(rows, kv{Key: k, Value: "t" + k})
		orders = append(orders, kv{Key: k, Value: "x"})
	}
	produce(t, addr, "tbl", rows)
	var engines []*engine.Engine
	var stops []func() error
	for _, id := range []string{"a", "b", "c"} {
		e, stop := runEngine(t, streamTableJoin(), cfg(addr, "whole-tasks", "stoatflow.instance.id", id))
		engines, stops = append(engines, e), append(stops, stop)
	}
	// Every partition of both topics is read, each by one instance.
	eventually(t, 60*time.Second, func() string {
		var s []string
		for i, e := range engines {
			s = append(s, fmt.Sprintf("%d: %v", i, e.Assignment()))
		}
		return "assignments " + strings.Join(s, "; ")
	}, func() bool {
		n := 0
		for _, e := range engines {
			a := e.Assignment()
			n += len(a["in"]) + len(a["tbl"])
			if len(a["in"]) == 0 {
				return false
			}
		}
		return n == 8
	})
	for i, e := range engines {
		a := e.Assignment()
		if !slices.Equal(a["in"], a["tbl"]) {
			t.Errorf("instance %d reads partitions %v of the stream but %v of the table", i, a["in"], a["tbl"])
		}
	}
	produce(t, addr, "in", orders)
	got := readCommitted(t, addr, "out", keys, 60*time.Second)
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	joined := map[string]string{}
	for _, r := range got {
		joined[r.Key] = r.Value
	}
	for _, r := range rows {
		if want := "x/" + r.Value; joined[r.Key] != want {
			t.Errorf("key %s joined %q, want %q", r.Key, joined[r.Key], want)
		}
	}
}

// TestOlderMemberInGroupRefused: a member assigning partitions by another
// protocol (an older build's cooperative-sticky) holds the group; the
// coordinator refuses the engine's join, and the engine stops with
// ErrGroupProtocol saying what to do instead of retrying for ever.
func TestOlderMemberInGroupRefused(t *testing.T) {
	kafkatest.Parallel(t)
	addr := startBroker(t, map[string]int32{"in": 2, "out": 2})
	old, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("legacy"), kgo.ConsumeTopics("in"),
		kgo.Balancers(kgo.CooperativeStickyBalancer()))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	joined := make(chan struct{})
	go func() {
		for {
			fs := old.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			select {
			case <-joined:
			default:
				close(joined)
			}
		}
	}()
	produce(t, addr, "in", []kv{{Key: "a", Value: "x"}})
	<-joined
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = engine.New(counts(), cfg(addr, "legacy"), engine.WithLogger(testLogger(t))).Run(ctx)
	if !errors.Is(err, engine.ErrGroupProtocol) {
		t.Fatalf("run beside a cooperative-sticky member: %v, want ErrGroupProtocol", err)
	}
	if !strings.Contains(err.Error(), "stop every instance") {
		t.Fatalf("error %q does not say what to do", err)
	}
}

// TestPeerLeavingKeepsInMemoryState: with its stores in memory, an
// instance that revokes nothing at a rebalance (here its peer leaves and
// it takes the peer's tasks over) commits what it processed before the
// rebalance goes on, and its tasks that stay keep their state: it
// restores the changelog partitions of the tasks it took over and
// nothing of its own (decision 0049). Before, every rebalance rebuilt
// every in-memory store from its changelog. The counts stay exact
// through both rebalances, the peer's arrival (which revokes: that one
// still restores what stays) and its leaving, with input between them.
func TestPeerLeavingKeepsInMemoryState(t *testing.T) {
	const parts, keys = 8, 20000
	addr := startKafka(t, map[string]int32{"in": parts, "out": parts})
	var in []kv
	for i := range keys {
		in = append(in, kv{Key: "key-" + strconv.Itoa(i), Value: "x"})
	}
	conf := func() map[string]string {
		return storeCfg(addr, "kept", "in_memory", t.TempDir(), "num.stream.threads", "2")
	}
	a, stopA := runEngine(t, counts(), conf())
	eventually(t, 60*time.Second, func() string { return "the first instance does not run every partition" },
		func() bool { return len(a.Assignment()["in"]) == parts })
	produce(t, addr, "in", in)
	readCommitted(t, addr, "out", keys, 60*time.Second)

	b, stopB := runEngine(t, counts(), conf())
	psA, psB := halves(t, a, b, parts)
	produce(t, addr, "in", in)
	readCommitted(t, addr, "out", 2*keys, 60*time.Second)
	eventually(t, 30*time.Second, func() string { return "the second round is not all committed" },
		func() bool { return a.Stats().Records+b.Stats().Records >= 2*keys })
	perPartition := changelogRecords(t, addr, "kept-counts-changelog", parts)
	before, aborted := a.Stats().Restored, a.Stats().Aborted

	// The peer leaves: its final epoch commits, and the first instance
	// is assigned its tasks, revoking none of its own.
	if err := stopB(); err != nil {
		t.Fatalf("second instance: %v", err)
	}
	eventually(t, 60*time.Second, func() string { return "the first instance did not take every partition back" },
		func() bool { return len(a.Assignment()["in"]) == parts && a.State() == engine.Running })
	produce(t, addr, "in", in)
	got := readCommitted(t, addr, "out", 3*keys, 60*time.Second)
	if err := stopA(); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	checkCounts(t, got, keys, 3)
	var taken, own int64
	for _, p := range psB {
		taken += perPartition[p]
	}
	for _, p := range psA {
		own += perPartition[p]
	}
	if n := a.Stats().Restored - before; n != taken {
		t.Errorf("taking over tasks %v the first instance restored %d records, want %d: those of the tasks it took (%v per partition), none of its own %v (%d records)",
			psB, n, taken, perPartition, psA, own)
	}
	// Taking tasks over revokes nothing: the epochs in flight commit.
	if n := a.Stats().Aborted - aborted; n != 0 {
		t.Errorf("the first instance aborted %d epochs taking tasks over, want none", n)
	}
	t.Logf("took over %v: %d changelog records restored; kept %v in memory: %d records not restored", psB, taken, psA, own)
}

// TestChurnInMemoryExactlyOnce: three instances of a count in memory join
// and leave while a producer writes without pause, so that every
// rebalance meets epochs in flight and records processed after the last
// barrier: ones that give an instance tasks (it commits what it
// processed and keeps its stores, decision 0049) and ones that take some
// (the epoch in flight aborts, the stores are restored). Every count of
// every key is committed once. Keeping the stores at every rebalance
// without the drain counts records twice here.
func TestChurnInMemoryExactlyOnce(t *testing.T) {
	const parts, keys, each = 6, 60, 1
	addr := startKafka(t, map[string]int32{"in": parts, "out": parts})
	// The producer writes every key each times a batch until told to
	// stop; rounds counts the batches written.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done, stopped := make(chan struct{}), make(chan error, 1)
	rounds := 0
	// A batch every 2 ms, about 30 k records/s: load all along, and a
	// run of a few seconds a -race build still reads back.
	pace := time.NewTicker(2 * time.Millisecond)
	defer pace.Stop()
	go func() {
		for {
			select {
			case <-done:
				stopped <- nil
				return
			case <-pace.C:
			}
			var recs []*kgo.Record
			for range each {
				for k := range keys {
					recs = append(recs, &kgo.Record{Key: []byte("k" + strconv.Itoa(k)), Value: []byte("x")})
				}
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				stopped <- err
				return
			}
			rounds++
		}
	}()
	type instance struct {
		e    *engine.Engine
		stop func() error
		dir  string
	}
	insts := map[string]*instance{}
	start := func(name string) {
		in := insts[name]
		if in == nil {
			in = &instance{dir: t.TempDir()}
			insts[name] = in
		}
		in.e, in.stop = runEngine(t, counts(), cfg(addr, "churn", "state.dir", in.dir, "num.stream.threads", "2"))
		// Joined: it runs a share of the tasks.
		eventually(t, 60*time.Second, func() string { return "instance " + name + " was given no task" },
			func() bool { return len(in.e.Assignment()["in"]) > 0 && in.e.State() == engine.Running })
	}
	stop := func(name string) {
		if err := insts[name].stop(); err != nil {
			t.Fatalf("instance %s: %v", name, err)
		}
		insts[name].stop = nil
	}
	start("a")
	for _, step := range []func(){
		func() { start("b") }, func() { start("c") }, func() { stop("a") }, func() { stop("b") },
		func() { start("a") }, func() { stop("c") }, func() { start("b") }, func() { stop("a") },
	} {
		step()
	}
	close(done)
	if err := <-stopped; err != nil {
		t.Fatalf("produce: %v", err)
	}
	per := rounds * each
	got := readCommitted(t, addr, "out", keys*per, 90*time.Second)
	var aborted, restored int64
	for name, in := range insts {
		if in.stop != nil {
			stop(name)
		}
		aborted += in.e.Stats().Aborted
		restored += in.e.Stats().Restored
	}
	checkCounts(t, got, keys, per)
	t.Logf("%d records in and out; the last incarnations aborted %d epochs and restored %d records", len(got), aborted, restored)
}
