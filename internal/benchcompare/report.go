package benchcompare

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// The systems, in the order the report lists them.
const (
	SystemBareLoop        = "bare-loop"
	SystemStoat           = "stoatctl"
	SystemKStreams        = "kstreams"
	SystemKStreamsNoCache = "kstreams-nocache"
)

// Sample is one system's throughput on one topology in one round, or the
// reason there is none.
type Sample struct {
	Broker, Topology, System string
	Round                    int
	RecordsPerSec            float64
	// Records is how many input records the run was over. CPU is the
	// user and system CPU time the system used on them, BrokerCPU the
	// broker's meanwhile (runOne says over which stretch); zero when not
	// measured (the broker inside this process, no /proc).
	Records        int
	CPU, BrokerCPU time.Duration
	// GCShare is the share of the system's CPU its garbage collector
	// took, as the Go runtime accounts for it (benchbase.RuntimeCPU);
	// zero when not measured (Kafka Streams).
	GCShare float64
	// Failed says why the run gave no rate (a Kafka Streams feature that
	// failed on the embedded broker, a timeout); empty when it did.
	Failed string
}

// LatencySample is the end-to-end latency of one system at one offered
// rate.
type LatencySample struct {
	Broker, System string
	// Share is the offered rate as a share of the system's measured
	// maximum rate (0.25, 0.5, 0.75); Offered is that rate in records/s.
	// With Shared, every system is offered the same rate, Share of the
	// slowest system's maximum (SharedShare).
	Share, Offered float64
	Shared         bool
	// Records is how many records the percentiles are over.
	Records        int
	P50, P99, P999 float64 // milliseconds
	Failed         string
}

// CloseLatency is the final-result latency of windows emitted on close.
type CloseLatency struct {
	Broker, System string
	// CommitIntervalMs is the unit of P50 and P99.
	CommitIntervalMs float64
	Windows          int
	P50, P99         float64 // commit intervals
	Failed           string
}

// Memory is what the in-memory store holds for a number of keys.
type Memory struct {
	Keys        int
	BytesPerKey float64
	// PeakHeapBytes is the largest heap in use sampled while the keys
	// were written; RetainedBytes the heap the store held after a GC.
	PeakHeapBytes, RetainedBytes uint64
}

// Meta is what a reader needs to judge the figures.
type Meta struct {
	Date, Host, GoVersion string
	// LoadAverage is /proc/loadavg's first three fields at the start and
	// at the end of the run.
	LoadStart, LoadEnd string
	Cores, Lanes       int
	Records, Keys      int
	ValueBytes         int
	Partitions, Rounds int
	Label              string // e.g. "smoke run"; empty for a full run
	Command            string
	// EmbeddedInProcess says the embedded broker ran inside the
	// comparison's process rather than in a child of its own.
	EmbeddedInProcess bool
}

// Report is everything one run measured.
type Report struct {
	Meta    Meta
	Samples []Sample
	Latency []LatencySample
	Close   []CloseLatency
	Memory  []Memory
}

// Row is one line of the throughput table: a system on a topology.
type Row struct {
	Topology, System      string
	Rate, ToCeiling, ToKS Summary
	// CPU and BrokerCPU are the seconds of CPU the system and its broker
	// spent per million input records, over the rounds that measured
	// them.
	CPU, BrokerCPU Summary
	// GC is the system's GC share of its CPU (Sample.GCShare).
	GC       Summary
	Failures []string
}

// Rows summarises the samples of broker, topology by topology in
// topologies' order and system by system in the report's order. Ratios
// to the ceiling divide by the bare loop's rate in the same round on the
// same broker (it runs the map topology only: it is the ceiling of every
// topology); ratios to Kafka Streams by Kafka Streams' (cache as shipped)
// on the same topology in the same round.
func (r *Report) Rows(broker string) []Row {
	rates := map[[2]string]map[int]float64{}
	cpu, brokerCPU, gc := map[[2]string][]float64{}, map[[2]string][]float64{}, map[[2]string][]float64{}
	fails := map[[2]string][]string{}
	perMillion := func(d time.Duration, n int) float64 { return d.Seconds() / float64(n) * 1e6 }
	for _, s := range r.Samples {
		if s.Broker != broker {
			continue
		}
		k := [2]string{s.Topology, s.System}
		if s.Failed != "" {
			fails[k] = append(fails[k], fmt.Sprintf("round %d: %s", s.Round+1, s.Failed))
			continue
		}
		if rates[k] == nil {
			rates[k] = map[int]float64{}
		}
		rates[k][s.Round] = s.RecordsPerSec
		if s.Records > 0 && s.CPU > 0 {
			cpu[k] = append(cpu[k], perMillion(s.CPU, s.Records))
		}
		if s.Records > 0 && s.BrokerCPU > 0 {
			brokerCPU[k] = append(brokerCPU[k], perMillion(s.BrokerCPU, s.Records))
		}
		if s.GCShare > 0 {
			gc[k] = append(gc[k], s.GCShare)
		}
	}
	ceiling := rates[[2]string{TopoMap, SystemBareLoop}]
	var rows []Row
	for _, topo := range Topologies {
		for _, sys := range []string{SystemBareLoop, SystemStoat, SystemKStreams, SystemKStreamsNoCache} {
			k := [2]string{topo, sys}
			if rates[k] == nil && fails[k] == nil {
				continue
			}
			row := Row{Topology: topo, System: sys, Failures: fails[k]}
			row.Rate = Summarize(values(rates[k]))
			row.ToCeiling = Summarize(Ratios(rates[k], ceiling))
			row.ToKS = Summarize(Ratios(rates[k], rates[[2]string{topo, SystemKStreams}]))
			row.CPU, row.BrokerCPU, row.GC = Summarize(cpu[k]), Summarize(brokerCPU[k]), Summarize(gc[k])
			rows = append(rows, row)
		}
	}
	return rows
}

// Brokers is the brokers the report has samples of, embedded first.
func (r *Report) Brokers() []string {
	var out []string
	for _, b := range []string{BrokerEmbedded, BrokerReal} {
		for _, s := range r.Samples {
			if s.Broker == b {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// cpuPair is a row's CPU cell: the system's and the broker's median
// seconds per million records, "-" for one not measured, the system's
// with its median GC share when measured.
func cpuPair(sys, broker, gc Summary) string {
	if sys.N == 0 && broker.N == 0 {
		return ""
	}
	f := func(s Summary) string {
		if s.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", s.Median)
	}
	own := f(sys)
	if sys.N > 0 && gc.N > 0 {
		own += fmt.Sprintf(" (GC %.0f %%)", 100*gc.Median)
	}
	return own + ", " + f(broker)
}

func values(m map[int]float64) []float64 {
	out := make([]float64, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// WriteMarkdown writes the report as Markdown: the run's facts, then one
// throughput table per broker, the latency tables and the memory table.
// chart, when not empty, is the chart's file name pattern (with %s for the
// broker) to link under each throughput table.
func (r *Report) WriteMarkdown(w io.Writer, chart string) error {
	var b strings.Builder
	m := r.Meta
	title := "Comparison run"
	if m.Label != "" {
		title += " (" + m.Label + ")"
	}
	fmt.Fprintf(&b, "### %s, %s\n\n", title, m.Date)
	fmt.Fprintf(&b, "- command: `%s`\n", m.Command)
	fmt.Fprintf(&b, "- machine: %s, %d cores, %s; load average %s at the start, %s at the end\n",
		m.Host, m.Cores, m.GoVersion, m.LoadStart, m.LoadEnd)
	fmt.Fprintf(&b, "- input: %s records, %s keys, %d-byte values, %d partitions; %d lanes (Kafka Streams: %d stream threads); %d rounds\n",
		count(m.Records), count(m.Keys), m.ValueBytes, m.Partitions, m.Lanes, m.Lanes, m.Rounds)
	where := "a fresh child process per run"
	if m.EmbeddedInProcess {
		where = "inside the comparison's process, fresh per run"
	}
	fmt.Fprintf(&b, "- embedded broker: %s\n\n", where)
	for _, br := range r.Brokers() {
		fmt.Fprintf(&b, "#### Throughput, %s broker (records/s; ratios per round, median and range)\n\n", br)
		b.WriteString("| topology | system | records/s (median) | min-max | ÷ ceiling | ÷ Kafka Streams | CPU s per 1 M records: system (its GC's share), broker | rounds |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
		var notes []string
		for _, row := range r.Rows(br) {
			rounds := fmt.Sprint(row.Rate.N)
			if len(row.Failures) > 0 {
				rounds += fmt.Sprintf(" (%d failed)", len(row.Failures))
				// The first failure stands for the rest: they differ in
				// their topic names at most.
				note := fmt.Sprintf("%s, %s, %s", row.Topology, row.System, oneLine(row.Failures[0]))
				if len(row.Failures) > 1 {
					note += fmt.Sprintf(" (and %d more rounds)", len(row.Failures)-1)
				}
				notes = append(notes, note)
			}
			rate, rng := "failed", ""
			if row.Rate.N > 0 {
				rate, rng = count(int(math.Round(row.Rate.Median))), count(int(math.Round(row.Rate.Min)))+"-"+count(int(math.Round(row.Rate.Max)))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.Topology, row.System, rate, rng,
				ratio(row.ToCeiling), ratio(row.ToKS), cpuPair(row.CPU, row.BrokerCPU, row.GC), rounds)
		}
		b.WriteString("\n")
		if len(notes) > 0 {
			b.WriteString("Failed runs:\n\n")
			for _, n := range notes {
				fmt.Fprintf(&b, "- %s\n", n)
			}
			b.WriteString("\n")
		}
		if chart != "" {
			fmt.Fprintf(&b, "![throughput, %s broker](%s)\n\n", br, fmt.Sprintf(chart, br))
		}
	}
	if len(r.Latency) > 0 {
		b.WriteString("#### End-to-end latency, map topology (produce to read_committed read, ms)\n\n")
		b.WriteString("| broker | system | offered | records/s | records | p50 | p99 | p99.9 |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, l := range sortedLatency(r.Latency) {
			if l.Shared {
				continue
			}
			if l.Failed != "" {
				fmt.Fprintf(&b, "| %s | %s | %.0f %% | %s | failed: %s | | | |\n", l.Broker, l.System, l.Share*100, count(int(l.Offered)), oneLine(l.Failed))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f %% | %s | %s | %s | %s | %s |\n", l.Broker, l.System, l.Share*100,
				count(int(l.Offered)), count(l.Records), ms(l.P50), ms(l.P99), ms(l.P999))
		}
		b.WriteString("\n")
	}
	writeShared(&b, r.Latency)
	if len(r.Close) > 0 {
		b.WriteString("#### Final-result latency of windows emitted on close (close passed on every partition to committed result)\n\n")
		b.WriteString("| broker | system | commit interval | window results | p50 | p99 |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		for _, c := range r.Close {
			if c.Failed != "" {
				fmt.Fprintf(&b, "| %s | %s | %.0f ms | failed: %s | | |\n", c.Broker, c.System, c.CommitIntervalMs, oneLine(c.Failed))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f ms | %s | %.2f intervals | %.2f intervals |\n", c.Broker, c.System,
				c.CommitIntervalMs, count(c.Windows), c.P50, c.P99)
		}
		b.WriteString("\n")
	}
	if len(r.Memory) > 0 {
		b.WriteString("#### Memory of the in-memory key-value store (a count's entries)\n\n")
		b.WriteString("| keys | bytes per key | retained heap | peak heap |\n")
		b.WriteString("| --- | --- | --- | --- |\n")
		for _, mem := range r.Memory {
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s |\n", count(mem.Keys), mem.BytesPerKey, mib(mem.RetainedBytes), mib(mem.PeakHeapBytes))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeShared writes the table of the latency runs at one offered rate,
// each p99 also as a ratio to Kafka Streams' on the same broker.
func writeShared(b *strings.Builder, ls []LatencySample) {
	var shared []LatencySample
	ks := map[string]float64{} // broker -> Kafka Streams' p99
	for _, l := range sortedLatency(ls) {
		if !l.Shared {
			continue
		}
		shared = append(shared, l)
		if l.System == SystemKStreams && l.Failed == "" {
			ks[l.Broker] = l.P99
		}
	}
	if len(shared) == 0 {
		return
	}
	fmt.Fprintf(b, "#### End-to-end latency at one offered rate (%.0f %% of the slowest system's maximum), map topology (ms)\n\n", shared[0].Share*100)
	b.WriteString("| broker | system | records/s | records | p50 | p99 | p99.9 | p99 ÷ Kafka Streams' |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, l := range shared {
		if l.Failed != "" {
			fmt.Fprintf(b, "| %s | %s | %s | failed: %s | | | | |\n", l.Broker, l.System, count(int(l.Offered)), oneLine(l.Failed))
			continue
		}
		vs := ""
		if k, ok := ks[l.Broker]; ok && k > 0 {
			vs = fmt.Sprintf("%.2f", l.P99/k)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Broker, l.System, count(int(l.Offered)),
			count(l.Records), ms(l.P50), ms(l.P99), ms(l.P999), vs)
	}
	b.WriteString("\n")
}

// oneLine folds a multi-line failure into one line of a Markdown list.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

func sortedLatency(ls []LatencySample) []LatencySample {
	out := slices.Clone(ls)
	order := map[string]int{SystemBareLoop: 0, SystemStoat: 1, SystemKStreams: 2, SystemKStreamsNoCache: 3}
	brokers := map[string]int{BrokerEmbedded: 0, BrokerReal: 1}
	slices.SortStableFunc(out, func(a, b LatencySample) int {
		if c := brokers[a.Broker] - brokers[b.Broker]; c != 0 {
			return c
		}
		if c := order[a.System] - order[b.System]; c != 0 {
			return c
		}
		switch {
		case a.Share < b.Share:
			return -1
		case a.Share > b.Share:
			return 1
		}
		return 0
	})
	return out
}

func ratio(s Summary) string {
	switch s.N {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Median, s.Min, s.Max)
}

func ms(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// count writes n with a thin space between thousands ("1 000 000"), as the
// rest of the docs do.
func count(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
