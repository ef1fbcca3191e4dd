package cmd

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kadm"
)

// mixedTopology joins orders with their payments (a stream-stream join),
// then with the customer's row (a stream-table join), re-keys the pairs
// by the customer's tier and counts them in tumbling windows of 10 s
// emitted on close, written as "tier@window-start".
const mixedTopology = `application-id: %s
tables:
  customers:
    topic: customers
    key-serde: string
    value-serde: json
    store: customer-store
sources:
  orders:
    topic: orders
    key-serde: string
    value-serde: json
    timestamp: value.ts
  payments:
    topic: payments
    key-serde: string
    value-serde: json
    timestamp: value.ts
pipelines:
  paid-per-tier:
    from: orders
    steps:
      - join:
          with: payments
          window: 100ms
          joiner: '{order: left.id}'
          store: order-payments
      - left-join:
          with: customers
          joiner: '{order: left.order, tier: right?.tier ?? "unknown"}'
      - group-by: {key: value.tier, key-serde: string}
      - window: {type: tumbling, size: 10s, emit: on-window-close}
      - count: {store: paid-per-tier}
      - to-stream
      - map: {key: 'key + "@" + string(window.start)', value: value}
      - to: {topic: %s, key-serde: string, value-serde: long}
`

// TestRunMixedTopologyOnFourInstances is issue 40's acceptance run: the
// mixed topology above as stoatctl processes of one application, input
// produced throughout by kcat (librdkafka's partitioner), three
// instances at first, one SIGKILLed mid-stream, a fourth added later, one
// stopped with SIGTERM. Every final window must be committed exactly
// once with every pair of it, read back read-committed by kcat and by
// franz-go, and equal to what one instance alone computes from the same
// input. The windows behind the re-key close only as far as the slowest
// task writing the repartition topic has come (decision 0042).
func TestRunMixedTopologyOnFourInstances(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kcat is not installed; scripts/test.sh installs it (Debian package kcat)")
		}
		t.Skip("kcat is not installed (scripts/test.sh installs it)")
	}
	const customers, seconds, rounds = 12, 100, 5
	tiers := []string{"gold", "silver", "bronze"}
	addr := kafkatest.Start(t, map[string]int32{"customers": 4, "orders": 4, "payments": 4, "paid-per-tier": 4, "paid-per-tier-solo": 1})
	bin := filepath.Join(buildBinary(t), "stoatctl")
	kc := kcatRunner(t, kcat, addr)
	dir := t.TempDir()
	file := func(app, out string) string {
		path := filepath.Join(dir, app+".yaml")
		if err := os.WriteFile(path, fmt.Appendf(nil, mixedTopology, app, out), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	group, solo := file("mixed", "paid-per-tier"), file("mixed-solo", "paid-per-tier-solo")
	start := func(topo, name string) *runInstance {
		args := []string{"run", "-t", topo, "-b", addr, "--state-dir", filepath.Join(dir, "state-"+name),
			"-X", "stoatflow.topology.rekey=topic", "-X", "stoatflow.watermark.max-out-of-orderness-ms=0",
			"-X", "stoatflow.commit-barrier.interval-ms=100", "-X", "num.stream.threads=2",
			"-X", "session.timeout.ms=6000", "--http", "off"}
		if l := os.Getenv("MIXED_LOG_LEVEL"); l != "" {
			args = append(args, "--log-level", l)
		}
		in := startRun(t, bin, args...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("instance %s's warnings and errors:\n%s", name, warnings(in.stderr.String()))
			}
		})
		return in
	}
	var rows strings.Builder
	for c := range customers {
		fmt.Fprintf(&rows, "c%d:{\"tier\":%q}\n", c, tiers[c%len(tiers)])
	}
	// Each customer orders and pays once a second, both stamped alike:
	// one pair per customer and second.
	round := func(r int) {
		var orders, payments strings.Builder
		for s := r * seconds / rounds; s < (r+1)*seconds/rounds; s++ {
			for c := range customers {
				ts := s*1000 + 1
				fmt.Fprintf(&orders, "c%d:{\"id\":\"c%d-%d\",\"ts\":%d}\n", c, c, s, ts)
				fmt.Fprintf(&payments, "c%d:{\"ts\":%d}\n", c, ts)
			}
		}
		kc(orders.String(), "-t", "orders", "-P", "-K:")
		kc(payments.String(), "-t", "payments", "-P", "-K:")
	}

	a, b, c := start(group, "a"), start(group, "b"), start(group, "c")
	for name, in := range map[string]*runInstance{"a": a, "b": b, "c": c} {
		in.awaitAssigned(t, name)
	}
	kc(rows.String(), "-t", "customers", "-P", "-K:")
	awaitCommitted(t, addr, "mixed", "customers", customers)
	round(0)
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = b.cmd.Wait()
	round(1)
	d := start(group, "d")
	d.awaitAssigned(t, "d")
	round(2)
	c.stop(t, "c")
	round(3)
	round(4)

	// Windows [0 s, 10 s) to [80 s, 90 s) close; [90 s, 100 s) waits
	// for event time past 100 s.
	want := map[string]int64{}
	for _, tier := range tiers {
		for w := range 9 {
			want[tier+"@"+strconv.Itoa(w*10_000)] = 10 * customers / int64(len(tiers))
		}
	}
	byKcat := windowCounts(t, kc, "paid-per-tier", len(want))
	byFranz := readWindowCounts(t, addr, "paid-per-tier", len(want))
	a.stop(t, "a")
	d.stop(t, "d")
	for name, got := range map[string]map[string][]int64{"kcat": byKcat, "franz-go": byFranz} {
		checkWindowCounts(t, name, got, want)
	}

	// One instance alone over the same input computes the same.
	alone := start(solo, "solo")
	byOne := windowCounts(t, kc, "paid-per-tier-solo", len(want))
	alone.stop(t, "solo")
	checkWindowCounts(t, "one instance", byOne, want)
}

// awaitCommitted waits until group has committed n records of topic,
// summed over its partitions.
func awaitCommitted(t *testing.T, addr, group, topic string, n int64) {
	t.Helper()
	adm := kafkatest.Admin(t, addr)
	var sum int64
	var err error
	if !pollUntil(60*time.Second, 100*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var offs kadm.OffsetResponses
		offs, err = adm.FetchOffsets(ctx, group)
		sum = 0
		if err == nil {
			for _, o := range offs[topic] {
				sum += o.At
			}
		}
		return sum >= n
	}) {
		t.Fatalf("group %s committed %d of %d records of %s within 60 s (%v)", group, sum, n, topic, err)
	}
}

// pollUntil asks cond every interval until it holds or within has
// passed, and reports whether it held.
func pollUntil(within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// windowCounts reads topic with kcat, read-committed, until want records
// came or 90 s passed, and returns the counts each key got.
func windowCounts(t *testing.T, kc func(string, ...string) string, topic string, want int) map[string][]int64 {
	t.Helper()
	var got map[string][]int64
	pollUntil(90*time.Second, 500*time.Millisecond, func() bool {
		var n int
		got, n = map[string][]int64{}, 0
		out := kc("", "-t", topic, "-C", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n", "-s", "value=q", "-X", "isolation.level=read_committed")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("value %q of %s: %v", v, k, err)
			}
			got[k] = append(got[k], x)
			n++
		}
		return n >= want
	})
	return got
}

// readWindowCounts reads topic with franz-go, read-committed, until want
// records came or 90 s passed.
func readWindowCounts(t *testing.T, addr, topic string, want int) map[string][]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got, n := map[string][]int64{}, 0
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for n < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var v int64
			for _, b := range r.Value {
				v = v<<8 | int64(b)
			}
			got[string(r.Key)] = append(got[string(r.Key)], v)
			n++
		})
	}
	return got
}

// checkWindowCounts requires each window of want once, with its count,
// and nothing else.
func checkWindowCounts(t *testing.T, reader string, got map[string][]int64, want map[string]int64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(got)) {
		w, ok := want[k]
		switch {
		case !ok:
			t.Errorf("%s: window %s emitted %v, want none (closed too early?)", reader, k, got[k])
		case len(got[k]) != 1 || got[k][0] != w:
			t.Errorf("%s: window %s emitted %v, want [%d] once", reader, k, got[k], w)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: window %s not emitted", reader, k)
		}
	}
}

// warnings are the lines of a log at WARN or ERROR.
func warnings(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
