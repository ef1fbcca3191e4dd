// Command benchcompare runs internal/benchcompare: stoatctl, the bare
// franz-go exactly-once loop and Kafka Streams 4.4 over the same input on
// the embedded broker and on a real Kafka broker, and writes the report
// (Markdown) and one throughput chart (PNG) per broker. `make
// bench-compare` runs it with the full sizes; flags, or the environment
// variables named in their help, shrink it for a quick run:
//
//	go run ./scripts/benchcompare -records 50000 -rounds 2 -latency 3s -label "smoke run"
//
// It lives under scripts/ rather than cmd/ because it is a development
// tool, never part of the stoatctl binary, and it is a program rather than
// a Go benchmark because it runs for many minutes, writes files and takes
// flags, none of which go test's benchmark loop is for. Exit status: 0
// done (some systems' runs may have failed: the report lists them), 1 the
// run could not be made (no broker, no Java runner), 2 bad flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/internal/benchcompare"
)

func main() {
	// The comparison starts this program again as each run's embedded
	// broker (decision 0019).
	if broker.IsChild() {
		os.Exit(broker.ServeChild())
	}
	os.Exit(run())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() int {
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	records := fs.Int("records", envInt("STOATCTL_BENCH_RECORDS", 1_000_000), "input records per run ($STOATCTL_BENCH_RECORDS)")
	keys := fs.Int("keys", envInt("STOATCTL_BENCH_KEYS", 10_000), "distinct keys ($STOATCTL_BENCH_KEYS)")
	valueBytes := fs.Int("value-bytes", 100, "bytes per value")
	partitions := fs.Int("partitions", 4, "input partitions")
	rounds := fs.Int("rounds", envInt("STOATCTL_BENCH_ROUNDS", 3), "rounds, each running every system once ($STOATCTL_BENCH_ROUNDS)")
	brokers := fs.String("brokers", envString("STOATCTL_BENCH_BROKERS", "embedded,real"), "brokers: embedded, real or both ($STOATCTL_BENCH_BROKERS)")
	topos := fs.String("topologies", strings.Join(benchcompare.Topologies, ","), "topologies to run")
	lanes := fs.Int("lanes", runtime.NumCPU(), "stoatctl lanes (num.stream.threads), and Kafka Streams' stream threads")
	store := fs.String("store", "in_memory", "stoatctl's default.dsl.store: in_memory or rocksDB (Kafka Streams keeps its default, RocksDB)")
	compression := fs.String("compression", "none", "compression.type of stoatctl's producers and the bare loop's (none, gzip, snappy, lz4, zstd); Kafka Streams keeps its default, none")
	kstreams := fs.Bool("kstreams", true, "run Kafka Streams too (needs a JDK and Maven)")
	inProcess := fs.Bool("embedded-inprocess", false, "run the embedded broker inside this process, not in a child process per run (decision 0019)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole comparison to `file`; each run carries the pprof labels system and topology")
	traceOut := fs.String("trace", "", "write an execution trace of the whole comparison to `file` (where goroutines wait and cores idle; read it with go tool trace)")
	latency := fs.Duration("latency", 10*time.Second, "how long each latency run offers load; 0 skips latency")
	memKeys := fs.String("memory-keys", envString("STOATCTL_BENCH_MEMORY_KEYS", "1000000"), "key counts of the memory figures, e.g. 1000000,10000000; empty skips them ($STOATCTL_BENCH_MEMORY_KEYS)")
	timeout := fs.Duration("timeout", 10*time.Minute, "longest one system's run may take")
	out := fs.String("out", envString("STOATCTL_BENCH_OUT", "bench-compare-out"), "folder for report.md and the charts ($STOATCTL_BENCH_OUT)")
	label := fs.String("label", "", `label of the run in the report's title, e.g. "smoke run"`)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchcompare: -cpuprofile: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "benchcompare: -cpuprofile %s: %v\n", *cpuProfile, err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchcompare: -trace: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			fmt.Fprintf(os.Stderr, "benchcompare: -trace %s: %v\n", *traceOut, err)
			return 2
		}
		defer trace.Stop()
	}
	var mem []int
	for _, f := range strings.FieldsFunc(*memKeys, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "error: -memory-keys: %q is not a positive integer\n", f)
			return 2
		}
		mem = append(mem, n)
	}
	topoList := strings.Split(*topos, ",")
	for _, t := range topoList {
		known := false
		for _, k := range benchcompare.Topologies {
			known = known || k == t
		}
		if !known {
			fmt.Fprintf(os.Stderr, "error: -topologies: unknown topology %q (known: %s)\n", t, strings.Join(benchcompare.Topologies, ", "))
			return 2
		}
	}
	if *store != "in_memory" && *store != "rocksDB" {
		fmt.Fprintf(os.Stderr, "error: -store: %q is neither in_memory nor rocksDB\n", *store)
		return 2
	}
	// The folder is made before the comparison, which takes many minutes:
	// an -out that cannot be written fails now, not once the figures are
	// in.
	if err := os.MkdirAll(filepath.Join(*out, "logs"), 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "error: -out %s: %v\n", *out, err)
		return 2
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "kafka.sh")); err != nil {
		fmt.Fprintln(os.Stderr, "error: run from the repository root (no scripts/kafka.sh here)")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := benchcompare.Run(ctx, benchcompare.Options{
		Input:       benchcompare.Input{Records: *records, Keys: *keys, ValueBytes: *valueBytes, Partitions: int32(*partitions)},
		Rounds:      *rounds,
		Brokers:     strings.Split(*brokers, ","),
		Topologies:  topoList,
		Lanes:       *lanes,
		Store:       *store,
		Compression: *compression,
		Root:        root,
		KStreams:    *kstreams,
		LatencyFor:  *latency,
		MemoryKeys:  mem,
		Timeout:     *timeout,
		LogDir:      filepath.Join(*out, "logs"),

		EmbeddedInProcess: *inProcess,
		Progress:          os.Stderr,
		Label:             *label,
		Command:           "go run ./scripts/benchcompare " + benchcompare.CommandLine(os.Args[1:]),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if rep == nil {
			return 1
		}
	}
	for _, br := range rep.Brokers() {
		if err := rep.WriteChart(br, filepath.Join(*out, "chart-"+br+".png")); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	}
	f, err := os.Create(filepath.Join(*out, "report.md"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	defer f.Close()
	if err := rep.WriteMarkdown(f, "chart-%s.png"); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if err := rep.WriteMarkdown(os.Stdout, "chart-%s.png"); err != nil {
		return 1
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", filepath.Join(*out, "report.md"))
	return 0
}
