package dsl

// The suppress tests are internal: windowed aggregations are not in the DSL
// yet, so the untilWindowCloses tests build a small windowed table by hand,
// and the restore test re-creates the processor outside the driver.
// Helpers carry a sup prefix.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
	"github.com/stoatflow/stoatctl/testdriver"
)

var supConfig = map[string]string{
	"application.id":      "app",
	"default.key.serde":   "string",
	"default.value.serde": "string",
}

// supManual is supConfig with commits left to the test.
var supManual = map[string]string{
	"application.id":              "app",
	"default.key.serde":           "string",
	"default.value.serde":         "string",
	"test.driver.commit-per-pipe": "false",
}

func supDriver(t *testing.T, b *Builder, cfg map[string]string) *testdriver.Driver {
	t.Helper()
	d, err := testdriver.New(b.Topology(), cfg)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// supPipe pipes key@ts into topic, value v, with headers h (key=value
// pairs) when given.
func supPipe(t *testing.T, d *testdriver.Driver, topic, key, v string, ts int64, h ...string) {
	t.Helper()
	if err := supTryPipe(d, topic, key, v, ts, h...); err != nil {
		t.Fatalf("pipe %s@%d: %v", key, ts, err)
	}
}

func supTryPipe(d *testdriver.Driver, topic, key, v string, ts int64, h ...string) error {
	str := serde.String()
	var headers processor.Headers
	for i := 0; i+1 < len(h); i += 2 {
		headers = headers.Add(h[i], []byte(h[i+1]))
	}
	r := testdriver.TestRecord[string, string]{Key: key, Value: v, Timestamp: ts, Headers: headers, ValueNull: v == "<null>"}
	return testdriver.CreateInputTopic(d, topic, str, str).PipeRecord(r)
}

// supRead reads "key:value@ts" records from topic, with "[h=v]" after a
// record that has headers.
func supRead[K, V any](t *testing.T, d *testdriver.Driver, topic string, ks serde.Serde[K], vs serde.Serde[V]) []string {
	t.Helper()
	rs, err := testdriver.CreateOutputTopic(d, topic, ks, vs).ReadRecordsToList()
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	out := []string{}
	for _, r := range rs {
		v := fmt.Sprint(r.Value)
		if r.ValueNull {
			v = "<null>"
		}
		s := fmt.Sprintf("%s:%s@%d", supKey(r.Key), v, r.Timestamp)
		for _, h := range r.Headers {
			s += fmt.Sprintf("[%s=%s]", h.Key, h.Value)
		}
		out = append(out, s)
	}
	return out
}

func supKey(k any) string {
	if w, ok := k.(window.Windowed[string]); ok {
		return fmt.Sprintf("%s@[%d,%d)", w.Key, w.Window.Start, w.Window.End)
	}
	return fmt.Sprint(k)
}

func supCheck(t *testing.T, what string, got, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// supCapture records the changes a node forwards, as "key:new/old@ts".
func supCapture(b *Builder, node string) *[]string {
	var log []string
	b.t.AddProcessor(node+"-capture", stateless(func(_ processor.Context[any, any], rec processor.Erased) error {
		c, _ := rec.Value.(change)
		log = append(log, fmt.Sprintf("%s:%v/%v@%d", supKey(rec.Key), c.New, c.Old, rec.Timestamp))
		return nil
	}), node)
	return &log
}

// supTake returns what a capture logged and forgets it.
func supTake(log *[]string) []string {
	out := slices.Clone(*log)
	*log = (*log)[:0]
	return out
}

// supCounts is "in" grouped by key and counted: nodes 0 to 2, so the
// suppress node after it is KTABLE-SUPPRESS-0000000003.
func supCounts(b *Builder) KTable[string, int64] {
	return Stream(b, ConsumedWith(serde.String(), serde.String()), "in").GroupByKey().Count()
}

// TestSuppressUntilTimeLimit: counts per key held for 10 ms of event time,
// released by later records and by advancing the watermark; the buffer
// time is the first update's, later updates keep its place.
func TestSuppressUntilTimeLimit(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	b := NewBuilder()
	held := supCounts(b).Suppress(UntilTimeLimit(10*time.Millisecond, Unbounded()))
	changes := supCapture(b, held.Node())
	held.ToStream().To("out", ProducedWith(str, i64))
	d := supDriver(t, b, supConfig)
	out := func() []string { return supRead(t, d, "out", str, i64) }

	supPipe(t, d, "in", "a", "x", 0)
	supPipe(t, d, "in", "a", "x", 3)
	supPipe(t, d, "in", "b", "x", 5)
	supCheck(t, "held", out(), nil)

	// The watermark reaches a's first update + 10 on this pipe: a leaves
	// with its latest count, timestamp and headers.
	supPipe(t, d, "in", "a", "x", 10, "h", "v2")
	supCheck(t, "a released by a record", out(), []string{"a:3@10[h=v2]"})

	if err := d.AdvanceWatermark(15); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "b released by the watermark", out(), []string{"b:1@5"})

	supPipe(t, d, "in", "c", "x", 16)
	supPipe(t, d, "in", "a", "x", 17)
	supPipe(t, d, "in", "b", "x", 12) // out of order, still held until 22
	supCheck(t, "held again", out(), nil)
	if err := d.AdvanceWatermark(30); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "released together, in buffer-time order", out(), []string{"b:2@12", "c:1@16", "a:4@17"})

	supPipe(t, d, "in", "z", "x", 40)
	supPipe(t, d, "in", "y", "x", 40)
	// Due at once: the last frontier (40) is past 20 + 10.
	supPipe(t, d, "in", "x", "x", 20)
	supCheck(t, "a record the frontier already passed", out(), []string{"x:1@20"})
	if err := d.AdvanceWatermark(50); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "equal buffer times leave in key order", out(), []string{"y:1@40", "z:1@40"})

	// Old values are what downstream saw last: the old value of the first
	// update buffered (Count forwards 0 as a new key's old value).
	supCheck(t, "changes", supTake(changes), []string{
		"a:3/0@10", "b:1/0@5", "b:2/1@12", "c:1/0@16", "a:4/3@17", "x:1/0@20", "y:1/0@40", "z:1/0@40",
	})

	store := "KTABLE-SUPPRESS-STATE-STORE-0000000004"
	s, err := testdriver.KeyValueStore[[]byte, []byte](d, store)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.ApproximateNumEntries(); n != 0 {
		t.Fatalf("%d keys left in %s after every release", n, store)
	}
	if !slices.Contains(d.ProducedTopicNames(), "app-"+store+"-changelog") {
		t.Fatalf("no changelog written: %v", d.ProducedTopicNames())
	}
}

// TestSuppressUntilBarrier: one release per key per epoch, in buffer-time
// then key order, old values from the first update of the epoch.
func TestSuppressUntilBarrier(t *testing.T) {
	str := serde.String()
	b := NewBuilder()
	held := Table(b, "in", ConsumedWith(str, str)).Suppress(UntilBarrier(Unbounded()))
	changes := supCapture(b, held.Node())
	held.ToStream().To("out")
	d := supDriver(t, b, supManual)
	out := func() []string { return supRead(t, d, "out", str, str) }
	barrier := func() {
		t.Helper()
		if err := d.CommitBarrier(); err != nil {
			t.Fatal(err)
		}
	}

	supPipe(t, d, "in", "b", "1", 1)
	supPipe(t, d, "in", "a", "1", 2, "h", "first")
	supPipe(t, d, "in", "b", "2", 3)
	supPipe(t, d, "in", "c", "1", 2)
	supPipe(t, d, "in", "a", "2", 4, "h", "last")
	supCheck(t, "nothing between barriers", out(), nil)
	barrier()
	supCheck(t, "epoch 1", out(), []string{"b:2@3", "a:2@4[h=last]", "c:1@2"})
	supCheck(t, "epoch 1 changes", supTake(changes), []string{"b:2/<nil>@3", "a:2/<nil>@4", "c:1/<nil>@2"})

	supPipe(t, d, "in", "c", "<null>", 6)
	supPipe(t, d, "in", "a", "3", 5)
	barrier()
	supCheck(t, "epoch 2", out(), []string{"a:3@5", "c:<null>@6"})
	supCheck(t, "epoch 2 changes", supTake(changes), []string{"a:3/2@5", "c:<nil>/1@6"})

	barrier()
	supCheck(t, "an empty epoch", out(), nil)

	// Committing after every pipe, the driver's default, makes it eager.
	b = NewBuilder()
	Table(b, "in", ConsumedWith(str, str)).Suppress(UntilBarrier(Unbounded())).ToStream().To("out")
	d = supDriver(t, b, supConfig)
	supPipe(t, d, "in", "a", "1", 1)
	supCheck(t, "eager 1", supRead(t, d, "out", str, str), []string{"a:1@1"})
	supPipe(t, d, "in", "a", "2", 2)
	supCheck(t, "eager 2", supRead(t, d, "out", str, str), []string{"a:2@2"})
}

// TestSuppressBufferFull: an emit-early buffer releases its oldest keys
// when full; a shut-down one fails the record, naming node and limit.
func TestSuppressBufferFull(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	limited := func(buffer BufferConfig, cfg map[string]string) *testdriver.Driver {
		b := NewBuilder()
		supCounts(b).Suppress(UntilTimeLimit(10*time.Millisecond, buffer)).ToStream().To("out", ProducedWith(str, i64))
		return supDriver(t, b, cfg)
	}

	t.Run("emit early on records", func(t *testing.T) {
		d := limited(MaxRecords(2), supConfig)
		supPipe(t, d, "in", "a", "x", 0)
		supPipe(t, d, "in", "b", "x", 1)
		supCheck(t, "two fit", supRead(t, d, "out", str, i64), nil)
		supPipe(t, d, "in", "c", "x", 2)
		supCheck(t, "the oldest leaves early", supRead(t, d, "out", str, i64), []string{"a:1@0"})
		if err := d.AdvanceWatermark(12); err != nil {
			t.Fatal(err)
		}
		supCheck(t, "the rest on time", supRead(t, d, "out", str, i64), []string{"b:1@1", "c:1@2"})
	})

	t.Run("emit early on bytes", func(t *testing.T) {
		d := limited(MaxBytes(1), supConfig)
		supPipe(t, d, "in", "a", "x", 0)
		supPipe(t, d, "in", "a", "x", 1)
		supCheck(t, "every record is too big", supRead(t, d, "out", str, i64), []string{"a:1@0", "a:2@1"})
	})

	t.Run("shut down", func(t *testing.T) {
		d := limited(MaxRecords(2).ShutDownWhenFull(), supConfig)
		supPipe(t, d, "in", "a", "x", 0)
		supPipe(t, d, "in", "b", "x", 1)
		err := supTryPipe(d, "in", "c", "x", 2)
		want := "processor KTABLE-SUPPRESS-0000000003: topic in partition 0 offset 2: suppress KTABLE-SUPPRESS-0000000003: buffer exceeded its limit of 2 records (shut down when full): it holds 3 records, "
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v\nwant it to contain %q", err, want)
		}
		var full *BufferFullError
		if !errors.As(err, &full) || full.Records != 3 {
			t.Fatalf("error %v is not a *BufferFullError holding 3 records", err)
		}
		supCheck(t, "nothing of the failed record", supRead(t, d, "out", str, i64), nil)
	})

	t.Run("shut down under the continue handler", func(t *testing.T) {
		cfg := map[string]string{"processing.exception.handler": "continue"}
		for k, v := range supConfig {
			cfg[k] = v
		}
		d := limited(MaxRecords(1).ShutDownWhenFull(), cfg)
		supPipe(t, d, "in", "a", "x", 0)
		if err := supTryPipe(d, "in", "b", "x", 1); err == nil {
			t.Fatal("a full strict buffer was skipped by the continue handler")
		}
	})

	t.Run("due keys do not count", func(t *testing.T) {
		// a is due at b's floor (20 >= 0 + 10): Kafka Streams releases it
		// before checking the bound, and so does the frontier here.
		d := limited(MaxRecords(1).ShutDownWhenFull(), supConfig)
		supPipe(t, d, "in", "a", "x", 0)
		supPipe(t, d, "in", "b", "x", 20)
		supCheck(t, "released on time", supRead(t, d, "out", str, i64), []string{"a:1@0"})
	})

	t.Run("until barrier", func(t *testing.T) {
		b := NewBuilder()
		Table(b, "in", ConsumedWith(str, str)).Suppress(UntilBarrier(MaxRecords(1).ShutDownWhenFull())).ToStream().To("out")
		d := supDriver(t, b, supManual)
		supPipe(t, d, "in", "a", "1", 1)
		supPipe(t, d, "in", "a", "2", 2) // same key: still one record
		err := supTryPipe(d, "in", "b", "1", 3)
		want := "suppress KTABLE-SUPPRESS-0000000003: buffer exceeded its limit of 1 record (shut down when full): it holds 2 records"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v\nwant it to contain %q", err, want)
		}
	})
}

// supWindowCounter counts records per key and time window, forwarding
// each count as a table change of a windowed key. It drops nothing late,
// so that the suppress node's own late rule is what the test sees.
type supWindowCounter struct {
	windows window.TimeWindows
	ctx     processor.Context[any, any]
	counts  map[window.Windowed[string]]int64
}

func (p *supWindowCounter) Init(ctx processor.Context[any, any]) error {
	p.ctx, p.counts = ctx, map[window.Windowed[string]]int64{}
	return nil
}

func (p *supWindowCounter) Close() error { return nil }

func (p *supWindowCounter) Process(rec processor.Erased) error {
	for _, w := range p.windows.WindowsFor(rec.Timestamp) {
		k := window.Windowed[string]{Key: rec.Key.(string), Window: w}
		n := p.counts[k]
		var old any
		if n > 0 {
			old = n
		}
		p.counts[k] = n + 1
		p.ctx.Forward(processor.Erased{Key: k, Value: change{New: n + 1, Old: old}, Timestamp: rec.Timestamp, Headers: rec.Headers})
	}
	return nil
}

// supWindowedCounts is a windowed table of counts over topic, carrying the
// windows' close-time rule as a windowed aggregation's table does.
func supWindowedCounts(b *Builder, topic string, w window.TimeWindows) KTable[window.Windowed[string], int64] {
	src := Stream(b, ConsumedWith(serde.String(), serde.String()), topic)
	node := b.t.GeneratedName("TEST-WINDOWED-COUNT-")
	b.t.AddProcessor(node, func() processor.Untyped { return &supWindowCounter{windows: w} }, src.node)
	return KTable[window.Windowed[string], int64]{
		b:          b,
		node:       node,
		keySerde:   window.TimeWindowedSerde(serde.String(), w.Size()),
		valueSerde: serde.Int64(),
		meta:       &tableMeta{closeTime: w.CloseTime},
		sources:    src.sources,
	}
}

// TestSuppressUntilWindowCloses: final results only, released on the pipe
// whose watermark reaches the close; a window is closed when its close
// equals the floor, open one tick before.
func TestSuppressUntilWindowCloses(t *testing.T) {
	w := window.TimeWindowsOfSizeAndGrace(10*time.Millisecond, 5*time.Millisecond)
	ks, i64 := window.TimeWindowedSerde(serde.String(), w.Size()), serde.Int64()
	b := NewBuilder()
	final := supWindowedCounts(b, "in", w).Suppress(UntilWindowCloses(Unbounded()))
	final.ToStream().To("out", ProducedWith(ks, i64))
	d := supDriver(t, b, supConfig)
	out := func() []string { return supRead(t, d, "out", ks, i64) }
	late := func() int64 { return d.Metrics().Value(metrics.DroppedRecords, "reason", "late_window") }

	supPipe(t, d, "in", "a", "x", 2)  // [0,10) closes at 15
	supPipe(t, d, "in", "b", "x", 7)  // [0,10)
	supPipe(t, d, "in", "a", "x", 12) // [10,20) closes at 25
	supPipe(t, d, "in", "x", "x", 14) // floor 14
	supPipe(t, d, "in", "a", "x", 3)  // one tick before the close: admitted
	supCheck(t, "nothing before the close", out(), nil)
	if late() != 0 {
		t.Fatalf("%d late drops before any window closed", late())
	}

	supPipe(t, d, "in", "c", "x", 15) // the watermark reaches 15
	supCheck(t, "released on the pipe that reaches the close", out(), []string{"a@[0,10):2@3", "b@[0,10):1@7"})

	supPipe(t, d, "in", "a", "x", 4) // close 15 == floor 15: closed
	supCheck(t, "a closed window takes no record", out(), nil)
	if late() != 1 {
		t.Fatalf("late_window drops %d, want 1", late())
	}

	if err := d.AdvanceWatermark(24); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "one tick before the next close", out(), nil)
	if err := d.AdvanceWatermark(25); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "next windows, in key order", out(), []string{"a@[10,20):1@12", "c@[10,20):1@15", "x@[10,20):1@14"})
}

// TestSuppressRefusals: misuse is reported by Build, naming the node.
func TestSuppressRefusals(t *testing.T) {
	str := serde.String()
	windows := window.TimeWindowsOfSizeWithNoGrace(10 * time.Millisecond)
	tests := []struct {
		name  string
		build func(b *Builder)
		want  string
	}{
		{
			name:  "untilWindowCloses on a table that is not windowed",
			build: func(b *Builder) { supCounts(b).Suppress(UntilWindowCloses(Unbounded())) },
			want:  "node KTABLE-SUPPRESS-0000000003: untilWindowCloses needs a windowed table, but table KSTREAM-AGGREGATE-0000000002 has no window close time",
		},
		{
			name:  "untilWindowCloses emitting early",
			build: func(b *Builder) { supWindowedCounts(b, "in", windows).Suppress(UntilWindowCloses(MaxRecords(5))) },
			want:  "node KTABLE-SUPPRESS-0000000002: untilWindowCloses needs a strict buffer (ShutDownWhenFull or Unbounded), but the buffer emits early when full",
		},
		{
			name: "untilBarrier emitting early",
			build: func(b *Builder) {
				Table(b, "in", ConsumedWith(str, str)).Suppress(UntilBarrier(MaxBytes(100)))
			},
			want: "node KTABLE-SUPPRESS-0000000003: untilBarrier never releases an intermediate update early, but the buffer emits early when full",
		},
		{
			name:  "negative time limit",
			build: func(b *Builder) { supCounts(b).Suppress(UntilTimeLimit(-time.Second, Unbounded())) },
			want:  "node KTABLE-SUPPRESS-0000000003: untilTimeLimit: time limit -1s is negative",
		},
		{
			name:  "negative bound",
			build: func(b *Builder) { supCounts(b).Suppress(UntilTimeLimit(time.Second, MaxRecords(-1))) },
			want:  "node KTABLE-SUPPRESS-0000000003: buffer: max records -1 is negative",
		},
		{
			name:  "no trigger",
			build: func(b *Builder) { supCounts(b).Suppress(Suppressed{}) },
			want:  "node KTABLE-SUPPRESS-0000000003: suppressed has no trigger",
		},
		{
			name: "beside a noWatermarks source",
			build: func(b *Builder) {
				Stream(b, ConsumedWith(str, str).WithWatermarkStrategy(watermark.NoWatermarks()), "frozen").To("elsewhere")
				supCounts(b).Suppress(UntilTimeLimit(time.Second, Unbounded()))
			},
			want: "node KTABLE-SUPPRESS-0000000005: suppress needs event time, but source KSTREAM-SOURCE-0000000000 declares noWatermarks()",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			tc.build(b)
			_, err := testdriver.New(b.Topology(), supConfig)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}

	// untilBarrier reads no clock, so a frozen source does not stop it.
	b := NewBuilder()
	Stream(b, ConsumedWith(str, str).WithWatermarkStrategy(watermark.NoWatermarks()), "frozen").To("elsewhere")
	Table(b, "in", ConsumedWith(str, str)).Suppress(UntilBarrier(Unbounded())).ToStream().To("out")
	supDriver(t, b, supConfig)
}

// TestSuppressNames: Kafka Streams' names, Suppressed.WithName for node
// and store, Named for the node.
func TestSuppressNames(t *testing.T) {
	str := serde.String()
	tests := []struct {
		name      string
		suppress  func(KTable[string, int64]) KTable[string, int64]
		node      string
		store     string
		changelog string
	}{
		{
			name: "generated",
			suppress: func(t KTable[string, int64]) KTable[string, int64] {
				return t.Suppress(UntilTimeLimit(time.Second, Unbounded()))
			},
			node: "KTABLE-SUPPRESS-0000000003", store: "KTABLE-SUPPRESS-STATE-STORE-0000000004",
			changelog: "app-KTABLE-SUPPRESS-STATE-STORE-0000000004-changelog",
		},
		{
			name: "withName",
			suppress: func(t KTable[string, int64]) KTable[string, int64] {
				return t.Suppress(UntilTimeLimit(time.Second, Unbounded()).WithName("hold"))
			},
			node: "hold", store: "hold-store", changelog: "app-hold-store-changelog",
		},
		{
			name: "named wins",
			suppress: func(t KTable[string, int64]) KTable[string, int64] {
				return t.Suppress(UntilTimeLimit(time.Second, Unbounded()).WithName("hold"), Name("held"))
			},
			node: "held", store: "held-store", changelog: "app-held-store-changelog",
		},
		{
			name: "no changelog",
			suppress: func(t KTable[string, int64]) KTable[string, int64] {
				return t.Suppress(UntilTimeLimit(time.Second, Unbounded().WithLoggingDisabled()))
			},
			node: "KTABLE-SUPPRESS-0000000003", store: "KTABLE-SUPPRESS-STATE-STORE-0000000004",
		},
		{
			name: "untilBarrier has no store",
			suppress: func(t KTable[string, int64]) KTable[string, int64] {
				return t.Suppress(UntilBarrier(Unbounded()))
			},
			node: "KTABLE-SUPPRESS-0000000003",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			held := tc.suppress(supCounts(b))
			held.ToStream().To("out", ProducedWith(str, serde.Int64()))
			d := supDriver(t, b, supConfig)
			if held.Node() != tc.node {
				t.Fatalf("node %s, want %s", held.Node(), tc.node)
			}
			n := d.Built().Nodes[tc.node]
			var stores []string
			for _, s := range n.Stores {
				if s != "KSTREAM-AGGREGATE-STATE-STORE-0000000001" {
					stores = append(stores, s)
				}
			}
			if tc.store == "" {
				if len(stores) != 0 || n.EventTime != "" {
					t.Fatalf("stores %v, event time %q: want none", stores, n.EventTime)
				}
				return
			}
			if !slices.Equal(stores, []string{tc.store}) || n.EventTime != "suppress" {
				t.Fatalf("stores %v, event time %q: want [%s], suppress", stores, n.EventTime, tc.store)
			}
			if got := d.Built().Stores[tc.store].ChangelogTopic; got != tc.changelog {
				t.Fatalf("changelog %q, want %q", got, tc.changelog)
			}
			// In memory whatever default.dsl.store says, as Kafka
			// Streams' buffer (the lane databases skip it).
			if got, want := d.Built().Stores[tc.store].Builder.Backend(), state.InMemory().Name(); got != want {
				t.Fatalf("the buffer's backend is %q, want %q", got, want)
			}
		})
	}
}

// supStoreContext is a store's runtime outside any task.
type supStoreContext struct{}

func (supStoreContext) ApplicationID() string          { return "app" }
func (supStoreContext) ChangelogTopic(s string) string { return "app-" + s + "-changelog" }
func (supStoreContext) RecordTimestamp() int64         { return 0 }
func (supStoreContext) LogChange(string, []byte, []byte, int64, []state.Header) error {
	return nil
}

// supProcContext is a processor's runtime outside any task: it hands out
// one store and records what is forwarded. The rest of the interface is
// left nil: a call to it fails the test with a panic.
type supProcContext struct {
	processor.Context[any, any]
	store     state.Store
	forwarded []string
}

func (c *supProcContext) ApplicationID() string          { return "app" }
func (c *supProcContext) AppConfig() map[string]string   { return supConfig }
func (c *supProcContext) StateStore(string) (any, error) { return c.store, nil }
func (c *supProcContext) Forward(rec processor.Erased) {
	ch := rec.Value.(change)
	c.forwarded = append(c.forwarded, fmt.Sprintf("%s:%v/%v@%d", supKey(rec.Key), ch.New, ch.Old, rec.Timestamp))
}

// TestSuppressBufferRestores: a buffer rebuilt from its changelog releases
// what was held, in order, with the values and old values held.
func TestSuppressBufferRestores(t *testing.T) {
	str, i64 := serde.String(), serde.Int64()
	b := NewBuilder()
	supCounts(b).Suppress(UntilTimeLimit(10*time.Millisecond, Unbounded())).ToStream().To("out", ProducedWith(str, i64))
	d := supDriver(t, b, supConfig)
	supPipe(t, d, "in", "b", "x", 1)
	supPipe(t, d, "in", "a", "x", 2)
	supPipe(t, d, "in", "b", "x", 3)
	supPipe(t, d, "in", "c", "x", 4)
	if err := d.AdvanceWatermark(11); err != nil { // b leaves, and is deleted
		t.Fatal(err)
	}
	supCheck(t, "before the restart", supRead(t, d, "out", str, i64), []string{"b:2@3"})

	const store = "KTABLE-SUPPRESS-STATE-STORE-0000000004"
	logged, err := testdriver.CreateOutputTopic(d, "app-"+store+"-changelog", serde.Bytes(), serde.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	var records []state.ChangelogRecord
	for _, r := range logged {
		var v []byte
		if !r.ValueNull {
			v = r.Value
		}
		records = append(records, state.ChangelogRecord{Key: r.Key, Value: v, Timestamp: r.Timestamp})
	}

	s, err := d.Built().Stores[store].Builder.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(supStoreContext{}); err != nil {
		t.Fatal(err)
	}
	if err := s.(state.Restorer).Restore(records); err != nil {
		t.Fatal(err)
	}
	p := d.Built().Nodes["KTABLE-SUPPRESS-0000000003"].Supplier()
	ctx := &supProcContext{store: s}
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	l := processor.Unwrap(p).(processor.WatermarkListener)
	if err := l.OnWatermark(13); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "after the restart, up to 13", ctx.forwarded, []string{"a:1/0@2"})
	if err := l.OnWatermark(20); err != nil {
		t.Fatal(err)
	}
	supCheck(t, "after the restart, up to 20", ctx.forwarded, []string{"a:1/0@2", "c:1/0@4"})
}

// TestSuppressBufferLayout round-trips the store layout and pins its
// bytes: it is what the changelog carries across restarts.
func TestSuppressBufferLayout(t *testing.T) {
	v := suppressValue{
		bufferTime: 7, timestamp: 9,
		headers: processor.Headers{{Key: "h", Value: []byte("v")}, {Key: "n"}},
		prior:   nil, newValue: []byte{},
	}
	b := encodeSuppressValue(v)
	want := []byte{1, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 2, 1, 'h', 2, 'v', 1, 'n', 1, 1, 0}
	if !slices.Equal(b, want) {
		t.Fatalf("layout %v, want %v", b, want)
	}
	got, err := decodeSuppressValue(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("decoded %+v, want %+v", got, v)
	}
	if size := suppressEntrySize([]byte("k"), v.headers, v.prior, v.newValue); size != int64(8+1+len(b)) {
		t.Fatalf("entry size %d, want %d", size, 8+1+len(b))
	}
	for _, bad := range [][]byte{nil, {2}, b[:len(b)-1], append(slices.Clone(b), 0)} {
		if _, err := decodeSuppressValue(bad); !errors.Is(err, errSuppressLayout) {
			t.Fatalf("decode %v: error %v, want errBufferLayout", bad, err)
		}
	}
}

// FuzzSuppressBufferLayout: the decoder of restored buffer entries never
// panics, and what it accepts survives a round trip. (The bytes need not:
// varints may be written longer than needed.)
func FuzzSuppressBufferLayout(f *testing.F) {
	f.Add(encodeSuppressValue(suppressValue{bufferTime: 1, timestamp: 2, prior: []byte("a"), newValue: []byte("b")}))
	f.Add(encodeSuppressValue(suppressValue{headers: processor.Headers{{Key: "k", Value: []byte("v")}}}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeSuppressValue(b)
		if err != nil {
			return
		}
		again, err := decodeSuppressValue(encodeSuppressValue(v))
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Fatalf("%v decodes to %+v, which round-trips to %+v (%v)", b, v, again, err)
		}
	})
}
