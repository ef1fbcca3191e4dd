package migrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/window"
)

// ShadowOptions say what a shadow run runs beside what. The embedded
// Options are the seed's: From is the live Kafka Streams application, To
// the shadow's own application id (its group, changelogs and topics),
// Built our topology built under To, as a migration takes them.
type ShadowOptions struct {
	Options
	// Topology is our topology, not built: the shadow run renames its
	// input and output topics (RenameTopics) and runs it.
	Topology *topology.Topology
	// EngineConfig is our engine's configuration; the shadow run sets its
	// application id, bootstrap servers and exactly-once.
	EngineConfig map[string]string
	// EngineOptions are passed to our engine (a logger).
	EngineOptions []engine.Option
	// For bounds the run's duration, Records the input records it
	// compares; at zero, no bound: the run goes on until ctx is done. Either
	// way it ends with a last aligned point.
	For     time.Duration
	Records int64
	// Interval is the time between aligned points (default 1 s).
	Interval time.Duration
	// Settle is how long the last point may wait for our engine to catch
	// up, and for Kafka Streams to hold still long enough to be read at
	// one point (default 60 s).
	Settle time.Duration
	// Examples is how many unexpected differences the report lists in
	// full (default 20; all with a negative value).
	Examples int
	// Point, when set, is told after every aligned point.
	Point func(ShadowPoint)
	// Abort, when set, ends the last aligned point, which the end of ctx
	// begins (a second Ctrl-C after the first).
	Abort context.Context
}

// ErrUnexpectedDifferences is a shadow run whose last comparison found an
// unexpected difference: the report lists them with their records.
var ErrUnexpectedDifferences = errors.New("unexpected differences between Kafka Streams' output and ours")

// ErrShadowRunBefore is a shadow application id whose group has committed
// offsets: a shadow run starts from Kafka Streams' state, not from an
// earlier run's.
var ErrShadowRunBefore = errors.New("the shadow application id has run before")

// ErrNotQuiet is a seed during which Kafka Streams committed: its state
// read and its offsets would not be of one moment.
var ErrNotQuiet = errors.New("the Kafka Streams application committed during the seed")

// ShadowInputTopic is where a shadow run copies the input topic topic for
// our engine to read: the input up to each aligned point, and no further.
func ShadowInputTopic(app, topic string) string { return app + "-input-" + topic }

// ShadowOutputTopic is where our engine writes, in a shadow run, what it
// would write to topic.
func ShadowOutputTopic(app, topic string) string { return app + "-output-" + topic }

// ShadowOutput is an output topic compared.
type ShadowOutput struct {
	Topic  string `json:"topic"`
	Shadow string `json:"shadow_topic"`
	// WindowSuffix is the length of the window suffix of its keys (8 for
	// a time window, 16 for a session), 0 when they are not windowed.
	WindowSuffix int `json:"window_suffix,omitempty"`
}

// ShadowPoint is one aligned point: the input both sides had processed
// (records since the seed) and what was compared there.
type ShadowPoint struct {
	Point   int   `json:"point"`
	Records int64 `json:"input_records"`
	Comparison
}

// ShadowReport is what a shadow run found: every key of every output
// topic by its verdict at its last comparison.
type ShadowReport struct {
	From    string         `json:"from_application_id"`
	Shadow  string         `json:"shadow_application_id"`
	Inputs  []string       `json:"inputs"`
	Outputs []ShadowOutput `json:"outputs"`
	// Seed is the migration that seeded the shadow from Kafka Streams'
	// state.
	Seed *Report `json:"seed"`
	// Points are the aligned points compared at; Records the input records
	// copied to our engine, all compared at the last point.
	Points  int     `json:"points"`
	Records int64   `json:"input_records"`
	Seconds float64 `json:"seconds"`
	Comparison
	// Transient are keys unexpectedly different at some point that match
	// at the last (see docs/decisions/0034-shadow-alignment.md).
	Transient int `json:"transient"`
	// Differences are the unexpected differences, at most Examples of
	// them; Comparison.Unexpected counts them all.
	Differences []Difference `json:"differences"`
	// OK says no unexpected difference was found.
	OK bool `json:"ok"`
}

// Shadow runs our topology beside a live Kafka Streams application and
// compares their output key by key at aligned points. It touches nothing
// of the Kafka Streams application: it reads its group's committed
// offsets, its changelogs, repartition and output topics, and writes only
// topics and a group of the shadow application id (o.To).
//
//  1. The seed: a migration (Run) of Kafka Streams' state into o.To, with
//     Kafka Streams running; its group's offsets read before and after must
//     be equal (ErrNotQuiet otherwise), and its repartition topics drained.
//  2. Our engine runs our topology renamed: it reads ShadowInputTopic
//     copies of the input, from the seed's offsets on, and writes
//     ShadowOutputTopic topics.
//  3. Each Interval, an aligned point: Kafka Streams' committed input
//     offsets are read twice, its output read up to its last stable
//     offsets between, and the point is taken only when both reads agree
//     (it committed nothing in between). The input is copied up to those
//     offsets, our engine is waited for until it has committed all of it,
//     our output is read to its end, and the Comparer compares the keys
//     written since the last point, but those with records still in Kafka
//     Streams' repartition topics (deferred to a later point).
//
// The report is returned with ErrUnexpectedDifferences when a key's last
// comparison found one.
func Shadow(ctx context.Context, o ShadowOptions) (*ShadowReport, error) {
	start := time.Now()
	if o.Topology == nil {
		return nil, errors.New("shadow: our topology is required")
	}
	if strings.HasPrefix(o.To, o.From+"-") {
		// A migration of From later (the cutover) would take the shadow's
		// changelogs for Kafka Streams' own stores.
		return nil, fmt.Errorf("shadow: the shadow application id %s begins with %s-, the prefix of Kafka Streams' internal topics: pick another", o.To, o.From)
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Settle <= 0 {
		o.Settle = time.Minute
	}
	if o.Examples == 0 {
		o.Examples = 20
	}
	// The emit frontiers too: a window Kafka Streams emitted before the
	// seed is not compared, and ours must not emit it again.
	o.Direction, o.live, o.EmitFrontier = Forward, true, true
	s, err := newSession(o.Options)
	if err != nil {
		return nil, err
	}
	defer s.close()
	sh := &shadow{o: o, s: s, adm: s.adm}
	rep := &ShadowReport{From: o.From, Shadow: o.To, Differences: []Difference{}}
	if err := sh.prepare(ctx, rep); err != nil {
		return rep, err
	}
	if err := sh.seed(ctx, rep); err != nil {
		return rep, err
	}
	runErr := sh.run(ctx, rep)
	sum, diffs, transient := sh.cmp.Summary(o.Examples)
	rep.Comparison, rep.Differences, rep.Transient = sum, diffs, transient
	if rep.Differences == nil {
		rep.Differences = []Difference{}
	}
	rep.Points, rep.Records = sh.points, sh.copiedTotal()
	rep.Seconds = time.Since(start).Seconds()
	rep.OK = runErr == nil && sum.Unexpected == 0
	if runErr != nil {
		return rep, runErr
	}
	if sum.Unexpected > 0 {
		return rep, fmt.Errorf("shadow: %d of %d keys compared: %w", sum.Unexpected, sum.Compared, ErrUnexpectedDifferences)
	}
	return rep, nil
}

// shadow is one shadow run.
type shadow struct {
	o   ShadowOptions
	s   *session
	adm *kadm.Client
	cmp *Comparer
	// inputs are Kafka Streams' input topics (our topology's sources),
	// repartition its repartition topics, outputs the topics compared.
	inputs      []string
	repartition []string
	outputs     []ShadowOutput
	// ksOut is where the read of each of Kafka Streams' output topics
	// stands, oursOut our shadow topics'.
	ksOut, oursOut map[string]kafka.Positions
	// source is where the copy of each input partition stands (an offset
	// of the input topic), copied how many records it wrote to the
	// shadow input partition, base where that partition began.
	source, copied, base map[string]kafka.Positions
	points               int
	copier               *kgo.Client
}

func (sh *shadow) copiedTotal() int64 {
	var n int64
	for t, ps := range sh.copied {
		for p, c := range ps {
			n += c - sh.base[t][p]
		}
	}
	return n
}

// prepare finds the topics: the inputs, the outputs with their window
// suffixes, Kafka Streams' repartition topics; and refuses a shadow id
// that has run.
func (sh *shadow) prepare(ctx context.Context, rep *ShadowReport) error {
	o := sh.o
	b := o.Built
	for t, node := range b.SourceTopics {
		if n := b.Nodes[node]; n != nil && n.Source != nil && n.Boundary == nil && !isGlobal(b, node) {
			sh.inputs = append(sh.inputs, t)
		}
	}
	slices.Sort(sh.inputs)
	suffix := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(b.Nodes)) {
		n := b.Nodes[name]
		if n.Kind != topology.SinkNode || n.Boundary != nil {
			continue
		}
		if n.Sink.Chooser != nil {
			return fmt.Errorf("shadow: sink %s picks its topic per record: a shadow run compares named topics", name)
		}
		w, _ := window.InnerKeySuffix(n.Sink.KeySerde)
		if _, dup := suffix[n.Sink.Topic]; !dup {
			sh.outputs = append(sh.outputs, ShadowOutput{Topic: n.Sink.Topic, Shadow: ShadowOutputTopic(o.To, n.Sink.Topic), WindowSuffix: w})
		}
		suffix[n.Sink.Topic] = w
	}
	if len(sh.outputs) == 0 {
		return errors.New("shadow: our topology writes no output topic: nothing to compare")
	}
	slices.SortFunc(sh.outputs, func(a, b ShadowOutput) int { return strings.Compare(a.Topic, b.Topic) })
	sh.cmp = NewComparer(suffix)
	rep.Inputs, rep.Outputs = sh.inputs, sh.outputs

	topics, err := sh.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("shadow: list topics: %w", err)
	}
	for _, out := range sh.outputs {
		if _, ok := topics[out.Topic]; !ok {
			return fmt.Errorf("shadow: Kafka Streams' output topic %s does not exist", out.Topic)
		}
	}
	for _, in := range sh.inputs {
		if _, ok := topics[in]; !ok {
			return fmt.Errorf("shadow: input topic %s does not exist", in)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		if strings.HasPrefix(t, o.From+"-") && strings.HasSuffix(t, "-repartition") {
			sh.repartition = append(sh.repartition, t)
		}
	}
	ours, err := sh.adm.FetchOffsets(ctx, o.To)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("shadow: committed offsets of group %s: %w", o.To, err)
	}
	if err == nil && len(ours.Offsets()) > 0 {
		return fmt.Errorf("shadow: group %s: %w; pick another --shadow-id, or delete its group and topics", o.To, ErrShadowRunBefore)
	}
	return nil
}

// ksOffsets reads Kafka Streams' committed offsets, stable: a partition
// whose offset a transaction is committing (UNSTABLE_OFFSET_COMMIT, the
// broker's answer to a fetch that requires stable offsets) is asked for
// again until the transaction ends.
func (sh *shadow) ksOffsets(ctx context.Context) (map[string]map[int32]int64, error) {
	out := map[string]map[int32]int64{}
	for {
		unstable := false
		err := kafka.WhileSettling(ctx, func() error {
			clear(out)
			unstable = false
			rs, err := sh.adm.FetchOffsets(kadm.RequireStable(ctx), sh.o.From)
			if errors.Is(err, kerr.GroupIDNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			for _, r := range rs.Sorted() {
				if errors.Is(r.Err, kerr.UnstableOffsetCommit) {
					unstable = true
					continue
				}
				if r.Err != nil {
					return fmt.Errorf("%s[%d]: %w", r.Topic, r.Partition, r.Err)
				}
				if out[r.Topic] == nil {
					out[r.Topic] = map[int32]int64{}
				}
				out[r.Topic][r.Partition] = r.At
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("shadow: committed offsets of group %s: %w", sh.o.From, err)
		}
		if !unstable {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("shadow: committed offsets of group %s: a transaction is committing them: %w", sh.o.From, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func sameOffsets(a, b map[string]map[int32]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[int32]int64) bool { return maps.Equal(x, y) })
}

// seed migrates Kafka Streams' state into the shadow application id, and
// sets up the copy of the input from its committed offsets.
func (sh *shadow) seed(ctx context.Context, rep *ShadowReport) error {
	o := sh.o
	before, err := sh.ksOffsets(ctx)
	if err != nil {
		return err
	}
	ksEnds, err := sh.lastStable(ctx, outputTopics(sh.outputs))
	if err != nil {
		return err
	}
	p, err := sh.s.plan(ctx)
	if err != nil {
		return fmt.Errorf("shadow: seed: %w", err)
	}
	seedRep, err := sh.s.run(ctx, p)
	rep.Seed = seedRep
	if err != nil {
		return fmt.Errorf("shadow: seed: %w", err)
	}
	after, err := sh.ksOffsets(ctx)
	if err != nil {
		return err
	}
	if !sameOffsets(before, after) {
		return fmt.Errorf("shadow: seed %s from %s: %w; its state and offsets would not be of one moment: start the shadow run while its input pauses, under a new --shadow-id",
			o.To, o.From, ErrNotQuiet)
	}

	// Where each side's output starts: Kafka Streams' where it stood at
	// the seed, ours (new topics) at their start.
	sh.ksOut = ksEnds
	sh.oursOut = map[string]kafka.Positions{}
	var specs []kafka.TopicSpec
	topics, err := sh.adm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("shadow: list topics: %w", err)
	}
	for _, out := range sh.outputs {
		specs = append(specs, kafka.TopicSpec{Name: out.Shadow, Partitions: int32(len(topics[out.Topic].Partitions)), ReplicationFactor: -1})
	}
	for _, in := range sh.inputs {
		specs = append(specs, kafka.TopicSpec{Name: ShadowInputTopic(o.To, in), Partitions: int32(len(topics[in].Partitions)), ReplicationFactor: -1})
	}
	if err := kafka.EnsureTopics(ctx, sh.adm, specs, true); err != nil {
		return fmt.Errorf("shadow: create the shadow topics: %w", err)
	}
	shadowIns := make([]string, 0, len(sh.inputs))
	for _, in := range sh.inputs {
		shadowIns = append(shadowIns, ShadowInputTopic(o.To, in))
	}
	ends, err := sh.adm.ListEndOffsets(ctx, append(outputTopics(sh.outputs, true), shadowIns...)...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("shadow: end offsets of the shadow topics: %w", err)
	}
	for _, out := range sh.outputs {
		sh.oursOut[out.Shadow] = kafka.Positions{}
		for part := range topics[out.Topic].Partitions {
			e, _ := ends.Lookup(out.Shadow, part)
			sh.oursOut[out.Shadow][part] = e.Offset
		}
	}

	// The copy of the input starts at Kafka Streams' committed offsets
	// (the seed's), at the log start where it committed none; our group
	// starts each shadow input at its end, with Kafka Streams' partition
	// time in the metadata, as a migration copies it.
	sh.source, sh.copied, sh.base = map[string]kafka.Positions{}, map[string]kafka.Positions{}, map[string]kafka.Positions{}
	meta := map[string]map[int32][]byte{}
	for _, oc := range p.Offsets {
		if meta[oc.Topic] == nil {
			meta[oc.Topic] = map[int32][]byte{}
		}
		meta[oc.Topic][oc.Partition] = []byte(oc.metadata)
	}
	var offs kadm.Offsets
	for _, in := range sh.inputs {
		shadowIn := ShadowInputTopic(o.To, in)
		sh.source[in], sh.copied[in], sh.base[in] = kafka.Positions{}, kafka.Positions{}, kafka.Positions{}
		for part := range topics[in].Partitions {
			at, ok := before[in][part]
			if !ok || at < 0 {
				at = kafka.LogStart
			}
			e, _ := ends.Lookup(shadowIn, part)
			sh.source[in][part], sh.copied[in][part], sh.base[in][part] = at, e.Offset, e.Offset
			offs.Add(kadm.Offset{Topic: shadowIn, Partition: part, At: e.Offset, LeaderEpoch: -1, Metadata: string(meta[in][part])})
		}
	}
	resp, err := sh.adm.CommitOffsets(ctx, o.To, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("shadow: commit the shadow inputs' offsets to group %s: %w", o.To, err)
	}
	// Transactional: the client options may make every client of the
	// application transactional (exactly-once), and a batch of the copy
	// then lands whole or not at all.
	sh.copier, err = kgo.NewClient(append(slices.Clone(o.ClientOpts), kgo.SeedBrokers(o.Seeds...),
		kgo.TransactionalID(o.To+"-stoatflow-shadow-copy"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MetadataMinAge(kafka.DefaultRetryBackoff))...)
	if err != nil {
		return fmt.Errorf("shadow: input copier: %w", err)
	}
	return nil
}

// outputTopics names the output topics: Kafka Streams', or ours with
// shadow set.
func outputTopics(outs []ShadowOutput, shadow ...bool) []string {
	names := make([]string, 0, len(outs))
	for _, out := range outs {
		if len(shadow) > 0 && shadow[0] {
			names = append(names, out.Shadow)
		} else {
			names = append(names, out.Topic)
		}
	}
	return names
}

// lastStable lists the last stable offsets of topics: the end of what a
// read-committed reader sees.
func (sh *shadow) lastStable(ctx context.Context, topics []string) (map[string]kafka.Positions, error) {
	out := map[string]kafka.Positions{}
	if len(topics) == 0 {
		return out, nil
	}
	ls, err := sh.adm.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = ls.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("shadow: last stable offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	ls.Each(func(l kadm.ListedOffset) {
		if out[l.Topic] == nil {
			out[l.Topic] = kafka.Positions{}
		}
		out[l.Topic][l.Partition] = l.Offset
	})
	return out, nil
}

// run starts our engine and takes aligned points until a bound is met or
// ctx is done, then a last one.
func (sh *shadow) run(ctx context.Context, rep *ShadowReport) error {
	o := sh.o
	defer sh.copier.Close()
	if err := o.Topology.RenameTopics(func(t string) string { return ShadowInputTopic(o.To, t) },
		func(t string) string { return ShadowOutputTopic(o.To, t) }); err != nil {
		return fmt.Errorf("shadow: %w", err)
	}
	cfg := maps.Clone(o.EngineConfig)
	if cfg == nil {
		cfg = map[string]string{}
	}
	cfg[config.ApplicationID] = o.To
	cfg[config.BootstrapServers] = strings.Join(o.Seeds, ",")
	// Our output of an input must be visible with the offsets past it:
	// an aligned point reads it once our group has committed them.
	cfg[config.ProcessingGuarantee] = kafka.ExactlyOnceV2
	e := engine.New(o.Topology, cfg, o.EngineOptions...)
	engCtx, stopEngine := context.WithCancel(context.Background())
	engDone := make(chan error, 1)
	go func() { engDone <- e.Run(engCtx) }()
	var engErr error
	engineStopped := func() error {
		if engErr != nil {
			return engErr
		}
		select {
		case err := <-engDone:
			engErr = errors.New("shadow: our engine stopped")
			if err != nil {
				engErr = fmt.Errorf("shadow: our engine stopped: %w", err)
			}
			return engErr
		default:
			return nil
		}
	}
	defer func() {
		stopEngine()
		if engErr == nil {
			<-engDone
		}
	}()

	// The points run until ctx ends or --for has passed, also in the
	// middle of one (waiting for our engine, say): the last point follows.
	points, stopPoints := ctx, context.CancelFunc(func() {})
	if o.For > 0 {
		points, stopPoints = context.WithTimeout(ctx, o.For)
	}
	defer stopPoints()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for points.Err() == nil && (o.Records <= 0 || sh.copiedTotal() < o.Records) {
		select {
		case <-points.Done():
			continue
		case <-tick.C:
		}
		if err := engineStopped(); err != nil {
			return err
		}
		if _, err := sh.point(points, engineStopped, false); err != nil && points.Err() == nil {
			return err
		}
	}
	// The last point, also after an interrupt: it waits for Kafka Streams
	// to hold still long enough to be read, and for our engine.
	abort := o.Abort
	if abort == nil {
		abort = context.Background()
	}
	last, cancel := context.WithTimeout(abort, o.Settle)
	defer cancel()
	if _, err := sh.point(last, engineStopped, true); err != nil {
		return fmt.Errorf("shadow: the last aligned point: %w", err)
	}
	return nil
}

// point takes one aligned point. It returns false, nil when Kafka Streams
// committed while it was being read (no point), unless last, which tries
// again until ctx is done.
func (sh *shadow) point(ctx context.Context, engineStopped func() error, last bool) (bool, error) {
	o := sh.o
	var at map[string]map[int32]int64
	var deferred map[string]map[string]bool
	// The last point waits, up to half the settle time, for Kafka Streams
	// to drain its repartition topics, so that every key is compared.
	drainBy := time.Now().Add(o.Settle / 2)
	for attempt := 0; ; attempt++ {
		before, err := sh.ksOffsets(ctx)
		if err != nil {
			return false, err
		}
		ends, err := sh.lastStable(ctx, append(outputTopics(sh.outputs), sh.repartition...))
		if err != nil {
			return false, err
		}
		// Kafka Streams' output up to its last stable offsets: what it
		// committed, and so what its committed input produced. Read
		// before the check, it is kept either way: it is output of input
		// at or before any later point.
		for _, out := range sh.outputs {
			if _, err := sh.readOutput(ctx, KafkaStreams, out.Topic, out.Topic, sh.ksOut[out.Topic], ends[out.Topic]); err != nil {
				return false, err
			}
		}
		// Records in a repartition topic past Kafka Streams' committed
		// offset are input it has read and not yet aggregated: their keys
		// are not compared at this point.
		deferred = map[string]map[string]bool{}
		for _, t := range sh.repartition {
			from := kafka.Positions{}
			for part, end := range ends[t] {
				if c, ok := before[t][part]; ok && c >= 0 && c < end {
					from[part] = c
				}
			}
			if err := sh.readKeys(ctx, t, from, ends[t], deferred); err != nil {
				return false, err
			}
		}
		after, err := sh.ksOffsets(ctx)
		if err != nil {
			return false, err
		}
		inFlight := slices.ContainsFunc(slices.Collect(maps.Values(deferred)), func(keys map[string]bool) bool { return len(keys) > 0 })
		if sameOffsets(before, after) && (!last || !inFlight || time.Now().After(drainBy)) {
			at = before
			break
		}
		if !last && attempt >= 9 {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}

	// Our engine gets the input up to the same offsets, and is waited for
	// until its group has committed all of it. The copy is not cut short
	// when ctx ends (at --for, or a first Ctrl-C): a transaction ended by
	// a cancelled context would leave the copier unusable for the last
	// point. It is bounded work, given the settle time.
	copyCtx, cancelCopy := context.WithTimeout(context.WithoutCancel(ctx), o.Settle)
	defer cancelCopy()
	for _, in := range sh.inputs {
		if err := sh.copyInput(copyCtx, in, at[in]); err != nil {
			return false, err
		}
	}
	if err := sh.awaitOurs(ctx, engineStopped); err != nil {
		return false, err
	}
	readOurs := func() (int, error) {
		n := 0
		for _, out := range sh.outputs {
			added, err := sh.readOutput(ctx, Ours, out.Topic, out.Shadow, sh.oursOut[out.Shadow], nil)
			if err != nil {
				return n, err
			}
			n += added
		}
		return n, nil
	}
	if _, err := readOurs(); err != nil {
		return false, err
	}
	// A window Kafka Streams emitted and we did not is a difference, but
	// our engine emits closed windows at its commit barriers, and the
	// last one may come after the offsets were committed: the last point
	// waits until our output has stood still for three reads (or a
	// quarter of the settle time) before judging such windows.
	for quiet, until := 0, time.Now().Add(o.Settle/4); last && sh.cmp.AwaitingOurs() > 0 && quiet < 3 && time.Now().Before(until); {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		n, err := readOurs()
		if err != nil {
			return false, err
		}
		if quiet++; n > 0 {
			quiet = 0
		}
	}
	c := sh.cmp.Point(func(topic string, inner []byte) bool {
		for _, keys := range deferred {
			if keys[string(inner)] {
				return true
			}
		}
		return false
	})
	sh.points++
	if o.Point != nil {
		o.Point(ShadowPoint{Point: sh.points, Records: sh.copiedTotal(), Comparison: c})
	}
	return true, nil
}

// readOutput reads one output topic from pos up to end (nil: to its end
// as the read begins, settled: our engine's last transaction is waited
// for) into the comparer, and moves pos on.
func (sh *shadow) readOutput(ctx context.Context, side Side, name, topic string, pos kafka.Positions, end kafka.Positions) (int, error) {
	from := kafka.Positions{}
	for part, p := range pos {
		if end == nil || p < end[part] {
			from[part] = p
		}
	}
	if len(from) == 0 {
		return 0, nil
	}
	added := 0
	add := func(r *kgo.Record) error {
		if end != nil && r.Offset >= end[r.Partition] {
			return nil // past the point: read again at the next
		}
		added++
		sh.cmp.Add(side, name, OutputRecord{Topic: topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()})
		return nil
	}
	var got kafka.Positions
	var err error
	if end == nil {
		got, err = kafka.ReadToEndSettled(ctx, sh.o.Seeds, topic, from, add, sh.o.ClientOpts...)
	} else {
		got, err = kafka.ReadToEnd(ctx, sh.o.Seeds, topic, from, add, sh.o.ClientOpts...)
	}
	if err != nil {
		return added, fmt.Errorf("shadow: read %s's output %s: %w", side, topic, err)
	}
	for part, p := range got {
		if end != nil {
			p = min(p, end[part])
		}
		pos[part] = max(pos[part], p)
	}
	return added, nil
}

// readKeys collects the keys of topic's records from from up to end.
func (sh *shadow) readKeys(ctx context.Context, topic string, from, end kafka.Positions, into map[string]map[string]bool) error {
	if len(from) == 0 {
		return nil
	}
	keys := map[string]bool{}
	_, err := kafka.ReadToEnd(ctx, sh.o.Seeds, topic, from, func(r *kgo.Record) error {
		if r.Offset < end[r.Partition] {
			keys[string(r.Key)] = true
		}
		return nil
	}, sh.o.ClientOpts...)
	if err != nil {
		return fmt.Errorf("shadow: read Kafka Streams' repartition topic %s: %w", topic, err)
	}
	into[topic] = keys
	return nil
}

// copyInput copies input topic in up to the offsets to (Kafka Streams'
// committed offsets at a point) to its shadow input, each record in the
// same partition with its key, value, headers and timestamp.
func (sh *shadow) copyInput(ctx context.Context, in string, to map[int32]int64) error {
	from := kafka.Positions{}
	for part, p := range sh.source[in] {
		if e, ok := to[part]; ok && (p == kafka.LogStart || p < e) {
			from[part] = p
		}
	}
	if len(from) == 0 {
		return nil
	}
	shadowIn := ShadowInputTopic(sh.o.To, in)
	var batch []*kgo.Record
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := commitBatch(ctx, sh.copier, batch); err != nil {
			return fmt.Errorf("shadow: copy %s to %s: %w", in, shadowIn, err)
		}
		for _, r := range batch {
			sh.copied[in][r.Partition]++
		}
		batch = batch[:0]
		return nil
	}
	_, err := kafka.ReadToEnd(ctx, sh.o.Seeds, in, from, func(r *kgo.Record) error {
		if r.Offset >= to[r.Partition] {
			return nil
		}
		batch = append(batch, &kgo.Record{Topic: shadowIn, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
		if len(batch) >= 10_000 {
			return flush()
		}
		return nil
	}, sh.o.ClientOpts...)
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("shadow: copy input %s: %w", in, err)
	}
	for part := range from {
		sh.source[in][part] = to[part]
	}
	return nil
}

// awaitOurs waits until our group has committed every shadow input up to
// what was copied to it.
func (sh *shadow) awaitOurs(ctx context.Context, engineStopped func() error) error {
	for {
		if err := engineStopped(); err != nil {
			return err
		}
		rs, err := sh.adm.FetchOffsets(kadm.RequireStable(ctx), sh.o.To)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) && ctx.Err() == nil {
			return fmt.Errorf("shadow: committed offsets of our group %s: %w", sh.o.To, err)
		}
		caught := err == nil
		for _, in := range sh.inputs {
			for part, want := range sh.copied[in] {
				r, ok := rs.Lookup(ShadowInputTopic(sh.o.To, in), part)
				if !ok || r.Err != nil || r.At < want {
					caught = false
				}
			}
		}
		if caught {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("shadow: waiting for our engine to process the input copied: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
