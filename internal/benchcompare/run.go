package benchcompare

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/benchbase"
	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/interop"
)

// The brokers a run can use.
const (
	// BrokerEmbedded is the embedded broker (kfake), started in this
	// process afresh for every system's run; Kafka Streams reaches it over
	// TCP like any client.
	BrokerEmbedded = "embedded"
	// BrokerReal is Apache Kafka 4.4 from scripts/kafka.sh, one broker for
	// the whole run; every system's run gets topics of its own, deleted
	// after it.
	BrokerReal = "real"
)

// Options configures Run.
type Options struct {
	Input      Input
	Rounds     int
	Brokers    []string
	Topologies []string
	Lanes      int
	// Store is stoatctl's default.dsl.store.
	Store string
	// Compression is the compression.type of stoatctl's producers and
	// the bare loop's; empty is none.
	Compression string
	// Root is the repository root (for the Java runner and scripts/kafka.sh).
	Root string
	// KStreams runs Kafka Streams beside the others.
	KStreams bool
	// LatencyFor is how long each latency run offers load; 0 skips latency.
	LatencyFor time.Duration
	// MemoryKeys are the key counts of the memory figures; none skips them.
	MemoryKeys []int
	// Timeout bounds one system's run.
	Timeout time.Duration
	// LogDir gets Kafka Streams' logs, one file per run.
	LogDir string
	// EmbeddedInProcess runs the embedded broker inside this process, as
	// before 2026-12-02, rather than in a child process per run
	// (docs/decisions/0019-bench-broker-per-phase.md).
	EmbeddedInProcess bool
	// Progress gets a line per run.
	Progress io.Writer
	Label    string
	Command  string
}

// Run runs the whole comparison and returns its report. A system's run
// that fails is recorded as a failed sample (with the reason) and the run
// goes on; only a broker that cannot be had stops it.
func Run(ctx context.Context, o Options) (*Report, error) {
	host, _ := os.Hostname()
	rep := &Report{Meta: Meta{
		Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Host: host, GoVersion: runtime.Version(),
		LoadStart: loadAverage(), Cores: runtime.NumCPU(), Lanes: o.Lanes,
		Records: o.Input.Records, Keys: o.Input.Keys, ValueBytes: o.Input.ValueBytes,
		Partitions: int(o.Input.Partitions), Rounds: o.Rounds, Label: o.Label, Command: o.Command,
		EmbeddedInProcess: o.EmbeddedInProcess,
	}}
	// The load average at the end, on every way out.
	defer func() { rep.Meta.LoadEnd = loadAverage() }()
	env := Env{Lanes: o.Lanes, Store: o.Store, Compression: o.Compression, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: o.Timeout, LogDir: o.LogDir}
	if o.KStreams {
		j, err := interop.Build(o.Root)
		if err != nil {
			return nil, err
		}
		env.Java = j
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}
	}
	// Memory first, while the heap holds nothing of the other runs.
	for _, keys := range o.MemoryKeys {
		m, err := StoreMemory(keys)
		if err != nil {
			return rep, err
		}
		progress("memory %d keys: %.0f bytes/key, peak heap %d MiB", keys, m.BytesPerKey, m.PeakHeapBytes>>20)
		rep.Memory = append(rep.Memory, m)
	}
	for _, br := range o.Brokers {
		b, err := openBroker(ctx, br, o.Root)
		if err == nil {
			b.inProcess = o.EmbeddedInProcess
		}
		if err != nil {
			return rep, err
		}
		for round := range o.Rounds {
			for _, topo := range o.Topologies {
				systems := systemsFor(topo, o.KStreams)
				// Rotate the order each round, so that no system always
				// runs first on a fresh machine or last on a tired one.
				k := round % len(systems)
				systems = append(systems[k:], systems[:k]...)
				for _, sys := range systems {
					s := runOne(ctx, b, env, o.Input, br, topo, sys, round)
					if s.Failed != "" {
						progress("%s round %d %s %s: failed: %s", br, round+1, topo, sys, firstLine(s.Failed))
					} else {
						progress("%s round %d %s %s: %.0f records/s", br, round+1, topo, sys, s.RecordsPerSec)
					}
					rep.Samples = append(rep.Samples, s)
				}
			}
		}
		if o.LatencyFor > 0 {
			rep.Latency = append(rep.Latency, latencies(ctx, b, env, o, br, rep, progress)...)
			rep.Close = append(rep.Close, closeLatency(ctx, b, env, o, br, progress))
		}
		b.close()
	}
	return rep, nil
}

// systemsFor is the systems that run topo: the bare loop maps only, and
// Kafka Streams runs without its cache only where a store sits behind it.
func systemsFor(topo string, ks bool) []string {
	var out []string
	if topo == TopoMap {
		out = append(out, SystemBareLoop)
	}
	out = append(out, SystemStoat)
	if ks {
		out = append(out, SystemKStreams)
		if stateful(topo) {
			out = append(out, SystemKStreamsNoCache)
		}
	}
	return out
}

// runOne is one system's run: a fresh broker (embedded) or fresh topics
// (real), the input loaded, the system run over it, the topics dropped.
func runOne(ctx context.Context, b *brokerHandle, env Env, in Input, br, topo, sys string, round int) Sample {
	s := Sample{Broker: br, Topology: topo, System: sys, Round: round}
	t := Topics{Prefix: fmt.Sprintf("b%d-r%d-%s-%s-%d", time.Now().Unix()%100000, round, topo, sys, os.Getpid()%1000)}
	seeds, brokerPID, release, err := b.fresh(ctx)
	if err != nil {
		s.Failed = err.Error()
		return s
	}
	defer release(t.Prefix)
	env.Seeds = seeds
	base := time.Now().Add(-time.Duration(in.Records) * time.Millisecond).Truncate(time.Minute)
	if err := load(ctx, seeds, topo, t, in, base); err != nil {
		s.Failed = err.Error()
		return s
	}
	n := inputRecords(topo, in)
	// Start on a quiet machine: the broker (or the JVM of the run
	// before) may still be collecting the garbage of the load.
	benchbase.Quiet(ctx, quietBusy, quietWait)
	// The CPU the system and its broker spend: the bare loop and
	// stoatctl run in this process and are metered over their whole
	// call; Kafka Streams meters its JVM and the broker itself, from
	// RUNNING to consumed, leaving out the JVM's start.
	s.Records = n
	inProcess := sys == SystemBareLoop || sys == SystemStoat
	var runtimeCPU benchbase.RuntimeCPU
	if inProcess {
		// The runtime accounts for its CPU at the end of a GC cycle: one
		// now starts the account where the run starts (and hands the run
		// a heap without the load's garbage, whichever system it is).
		runtime.GC()
		runtimeCPU = benchbase.ReadRuntimeCPU()
	}
	brokerMeter, self := meterPID(brokerPID), benchbase.ProcessCPU()
	// The run carries pprof labels (system, topology), inherited by the
	// goroutines it starts: a -cpuprofile of the comparison separates
	// the systems with pprof -tagfocus, and is a region of an execution
	// trace (benchcompare -trace), named "system topology".
	pprof.Do(ctx, pprof.Labels("system", sys, "topology", topo), func(ctx context.Context) {
		defer trace.StartRegion(ctx, sys+" "+topo).End()
		switch sys {
		case SystemBareLoop:
			s.RecordsPerSec, err = runBareLoop(ctx, env, t, n)
		case SystemStoat:
			s.RecordsPerSec, _, err = runStoat(ctx, env, topo, t, n)
		case SystemKStreams, SystemKStreamsNoCache:
			s.RecordsPerSec, s.CPU, s.BrokerCPU, err = runKStreams(ctx, env, topo, t, sys == SystemKStreams, brokerPID)
		}
	})
	if inProcess {
		s.CPU = benchbase.ProcessCPU() - self
		s.BrokerCPU, _ = brokerMeter.stop()
		// And one more cycle closes the account: the run's last cycles
		// are in it, plus this one's (small: the run's garbage is gone
		// with its system).
		runtime.GC()
		s.GCShare = benchbase.ReadRuntimeCPU().GCShare(runtimeCPU)
	}
	if err != nil {
		s.Failed = err.Error()
	}
	return s
}

// Every run waits, after loading its input, until the CPUs were busy at
// most quietBusy of a 200 ms window, or quietWait at most.
const (
	quietBusy = 0.2
	quietWait = 10 * time.Second
)

// brokerHandle is one broker kind: the embedded one started per run, or
// one real broker for the whole run.
type brokerHandle struct {
	kind string
	// inProcess starts the embedded broker in this process.
	inProcess bool
	root      string
	dir       string // the real broker's STOATCTL_KAFKA_DIR
	addr      string
	pid       int // the real broker's process, 0 when unknown
}

func openBroker(ctx context.Context, kind, root string) (*brokerHandle, error) {
	b := &brokerHandle{kind: kind, root: root}
	if kind == BrokerEmbedded {
		return b, nil
	}
	if kind != BrokerReal {
		return nil, fmt.Errorf("unknown broker %q (embedded or real)", kind)
	}
	b.dir = filepath.Join(os.TempDir(), fmt.Sprintf("kafka-benchcompare-%d", os.Getpid()))
	// Three tries: kafka.sh picks its ports free, but on a shared
	// machine another process can take one before the broker binds it.
	var err error
	for try := 1; try <= 3; try++ {
		cmd := exec.CommandContext(ctx, "scripts/kafka.sh", "start", "--watch", fmt.Sprint(os.Getpid()))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "STOATCTL_KAFKA_DIR="+b.dir)
		var stderr tailBuffer
		cmd.Stderr = &stderr
		var out []byte
		if out, err = cmd.Output(); err == nil {
			b.addr = strings.TrimSpace(string(out))
			b.pid = pidFile(b.dir, "broker.pid")
			return b, nil
		}
		err = fmt.Errorf("start the real broker (scripts/kafka.sh start, try %d of 3): %w: %s", try, err, stderr.Tail(3))
		fmt.Fprintln(os.Stderr, err)
	}
	b.close() // kafka.sh leaves the folder of a broker that did not start
	return nil, err
}

// fresh returns the seeds of a broker for one run, and what to call
// after it: the embedded broker is closed, the real one's topics under the
// run's prefix (inputs, output, Kafka Streams' internal topics) deleted.
// The broker's process id is 0 when it runs in this process (its CPU is
// then the system's).
func (b *brokerHandle) fresh(ctx context.Context) (seeds []string, pid int, release func(prefix string), err error) {
	if b.kind == BrokerEmbedded && b.inProcess {
		eb, err := broker.Start(ctx, broker.Options{Port: broker.RandomPort})
		if err != nil {
			return nil, 0, nil, fmt.Errorf("start the embedded broker: %w", err)
		}
		return []string{eb.Addr()}, 0, func(string) { eb.Close() }, nil
	}
	if b.kind == BrokerEmbedded {
		addr, pid, stop, err := startBrokerChild(ctx)
		if err != nil {
			return nil, 0, nil, err
		}
		return []string{addr}, pid, func(string) { stop() }, nil
	}
	return []string{b.addr}, b.pid, func(prefix string) { deleteTopics(ctx, b.addr, prefix) }, nil
}

func (b *brokerHandle) close() {
	if b.kind != BrokerReal {
		return
	}
	cmd := exec.Command("scripts/kafka.sh", "stop")
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "STOATCTL_KAFKA_DIR="+b.dir)
	_ = cmd.Run()
}

// deleteTopics deletes every topic whose name starts with prefix.
func deleteTopics(ctx context.Context, addr, prefix string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ts, err := adm.ListTopics(ctx)
	if err != nil {
		return
	}
	var del []string
	for _, name := range ts.Names() {
		if strings.HasPrefix(name, prefix) {
			del = append(del, name)
		}
	}
	if len(del) > 0 {
		_, _ = adm.DeleteTopics(ctx, del...)
	}
}

// loadAverage is /proc/loadavg's first three fields, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// maxRate is the median rate of sys on the map topology on broker br, or
// NaN without one.
func maxRate(rep *Report, br, sys string) float64 {
	var xs []float64
	for _, s := range rep.Samples {
		if s.Broker == br && s.System == sys && s.Topology == TopoMap && s.Failed == "" {
			xs = append(xs, s.RecordsPerSec)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	return Summarize(xs).Median
}
