package task

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/internal/hop"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
	"github.com/stoatflow/stoatctl/engine/window"
)

// Input is a record as read from a topic (or a boundary): raw bytes and
// where they came from.
type Input struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp int64
	Headers   processor.Headers
	// Origin is, for a record that crossed an in-memory boundary, the
	// source-topic record it descends from; zero for a record read from a
	// source topic, which is its own origin.
	Origin Origin
	// KeyHash is lane.Murmur2(Key) when KeyHashed: the dispatcher hashes
	// a key to pick its lane, and a record written with the same key
	// bytes (a sink passing the key through, a changelog of a store keyed
	// by it) is partitioned by the same hash, so it is computed once.
	KeyHash   int32
	KeyHashed bool
}

// Output is a record a task writes.
type Output struct {
	Topic string
	// Partition is the partition a custom partitioner chose, or -1 for the
	// producer's default.
	Partition int32
	Key       []byte
	Value     []byte
	Timestamp int64
	Headers   processor.Headers
	// Boundary is set when the record crosses an in-memory boundary.
	Boundary *topology.Boundary
	// Store is set for a changelog record: the store that changed.
	Store string
	// Origin is the input record being processed when the task wrote
	// this, for errors about it; zero when a timer, a punctuator or a
	// barrier wrote it.
	Origin Origin
	// Held is, for a changelog record, the held word of the key's record
	// in the store's byte store (state.HeldLogger), or nil. Only the
	// collector's goroutine may use it, and only before Send returns.
	Held *uint64
	// KeyHash is the murmur2 hash that partitions the record when
	// KeyHashed: lane.Murmur2(Key) when Key is the bytes the input record
	// was laned by, whose hash the dispatcher computed (Input.KeyHash);
	// for a sink of windowed keys, the hash of the inner key before the
	// window (node.innerSuffix), where Kafka Streams puts windowed
	// results.
	KeyHash   int32
	KeyHashed bool
	// Uncoalesced marks a changelog record that must reach the changelog
	// even when the same key is written again in the epoch: a versioned
	// store's, whose every write is a version.
	Uncoalesced bool
}

// Origin names an input record: its topic, partition and offset.
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
}

func (o Origin) String() string {
	if o.Topic == "" {
		return "no input record (a timer, punctuator or barrier)"
	}
	return fmt.Sprintf("%s[%d]@%d", o.Topic, o.Partition, o.Offset)
}

// Collector receives a task's writes.
type Collector interface {
	Send(o Output) error
}

// CollectorFunc adapts a function to Collector.
type CollectorFunc func(Output) error

func (f CollectorFunc) Send(o Output) error { return f(o) }

// Options configure a task.
type Options struct {
	// ID names the task, "<sub-topology>_<partition>".
	ID string
	// Partition is the partition the task's changelog writes go to.
	Partition int32
	Collector Collector
	Time      Time
	Logger    *slog.Logger
	Metrics   *metrics.Registry
	// GlobalStores are the stores of the global sub-topology, readable by
	// every processor.
	GlobalStores map[string]state.Store
	// PartitionCount reports a sink topic's partition count for custom
	// partitioners; nil means 1.
	PartitionCount func(topic string) (int32, error)
	// Lanes is the lane count of the sub-topology, over which the timer
	// lane checks judge a split; 0 means the configured count
	// (lane.Configured).
	Lanes int
	// Restore, when set, runs after the stores are initialised and before
	// any processor is: the engine rebuilds the stores from their
	// changelogs there, so that a processor's Init reads restored state.
	Restore func(stores map[string]state.Store) error
	// Backend supplies the byte stores of the stores built from
	// state.Default (default.dsl.store); nil keeps them in memory.
	Backend state.BytesSupplier
	// Persistent supplies the byte stores of the stores built from
	// state.RocksDB; nil fails their Init.
	Persistent state.BytesSupplier
}

// Task runs one sub-topology.
type Task struct {
	id        string
	partition int32
	built     *topology.Built
	sub       *topology.Subtopology
	nodes     map[string]*node
	sources   map[string]*node
	stores    map[string]state.Store
	global    map[string]state.Store
	out       Collector
	time      Time
	log       *slog.Logger
	metrics   *metrics.Registry
	partCount func(string) (int32, error)
	restore   func(map[string]state.Store) error
	backend   state.BytesSupplier
	persist   state.BytesSupplier

	deserHandler string
	dlqTopic     string
	procHandler  string

	// partitionTime is each input partition's highest event time, Unknown
	// before its first record; recentPT remembers the entries of the
	// partitions read last, as the map lookup hashes the topic.
	partitionTime map[partitionKey]*int64
	recentPT      watermark.Recent[int64]
	// lastSrc is the source node of topic lastSrcTopic, the last looked up.
	lastSrcTopic string
	lastSrc      *node
	rc           recordContext
	// floor is the late-drop floor of the work in progress.
	floor   int64
	current *node
	failed  error

	streamPunct punctuationQueue
	wallPunct   punctuationQueue
	punctSeq    int

	timers timerState

	initialized bool
	// storesOpen says OpenStores ran.
	storesOpen bool
	closed     bool
	// Whether any processor listens for watermarks or barriers: most
	// topologies have none, and then the per-record calls cost nothing.
	hasWatermarkListeners bool
	hasBarrierListeners   bool

	// meter is this instance's meters (metrics.TaskMeter). sampleIn
	// counts down the records to the next timed one; sampling says the
	// record in progress is timed, so that its nodes time themselves and
	// its sources and sinks take its end-to-end latency.
	meter    *metrics.TaskMeter
	sampleIn int
	sampling bool
	// sampledAt is when the sampled record in progress began.
	sampledAt time.Time
	// processed counts the records not yet added to the meter: the task
	// adds them at each sampled record, each commit and its close
	// (publish), so that an untimed record costs no atomic operation.
	// metered are the nodes metered at debug level, whose own counts
	// publish adds too.
	processed int64
	metered   []*node
}

type partitionKey struct {
	topic     string
	partition int32
}

type recordContext struct {
	meta    processor.RecordMetadata
	hasMeta bool
	// origin is the source-topic record this one descends from.
	origin    Origin
	timestamp int64
	headers   processor.Headers
	// key is the key of the record at the node being run (or of the timer
	// being fired): the timer service's current key.
	key any
	// laneBytes are the bytes the work was laned by: the raw key bytes the
	// record arrived with, or the timer's key bytes. laned is false where
	// no key hash picked the lane (a punctuator, a null key, a custom
	// partitioner), and then no lane check runs.
	laneBytes []byte
	laned     bool
	// laneHash is lane.Murmur2(laneBytes) when laneHashed (the
	// dispatcher's, Input.KeyHash).
	laneHash   int32
	laneHashed bool
	// sourceKey is the key the source decoded from laneBytes with the
	// String serde; sourceKeyOK says there is one.
	sourceKey   string
	sourceKeyOK bool
}

type node struct {
	name     string
	spec     *topology.Node
	proc     processor.Untyped
	children []*node
	byName   map[string]*node
	ctx      *nodeContext
	// timers is set for a timer-aware processor.
	timers *timerNode
	// entry is set for a source whose only child takes its records
	// through a typed entry (package hop).
	entry hop.Entry
	// meter is the node's meters in the task's TaskMeter; process is its
	// Process meter at debug level (nil at info, where only sources and
	// sinks meter anything: their end-to-end latency).
	meter   *metrics.NodeMeter
	process *metrics.Meter
	// processed counts the node's records not yet added to process (the
	// task's publish adds them).
	processed int64
	// sampleIn counts a sink's records down to the next whose end-to-end
	// latency it takes whatever the task samples: the finals a watermark
	// flush or a punctuator emits are no record's that Process timed.
	sampleIn int
	// innerSuffix is, for a sink of windowed keys (a windowed key serde,
	// no partitioner of its own, not an in-memory boundary), how many
	// bytes follow the inner key in its keys: the record is partitioned
	// by the inner key's hash, as Kafka Streams' WindowedStreamPartitioner
	// does. 0 otherwise.
	innerSuffix int
}

// New instantiates sub-topology st of b. Call Init before processing.
func New(b *topology.Built, st *topology.Subtopology, opts Options) (*Task, error) {
	t := &Task{
		id:            opts.ID,
		partition:     opts.Partition,
		built:         b,
		sub:           st,
		nodes:         map[string]*node{},
		sources:       map[string]*node{},
		stores:        map[string]state.Store{},
		global:        opts.GlobalStores,
		out:           opts.Collector,
		time:          opts.Time,
		log:           opts.Logger,
		metrics:       opts.Metrics,
		partCount:     opts.PartitionCount,
		restore:       opts.Restore,
		backend:       opts.Backend,
		persist:       opts.Persistent,
		partitionTime: map[partitionKey]*int64{},
	}
	if t.id == "" {
		t.id = fmt.Sprintf("%d_%d", st.ID, opts.Partition)
	}
	if t.out == nil {
		return nil, errors.New("task: no collector")
	}
	if t.time == nil {
		t.time = NewStreamClock(nil)
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	t.log = t.log.With("task", t.id)
	if t.metrics == nil {
		t.metrics = metrics.NewRegistry()
	}
	if t.partCount == nil {
		t.partCount = func(string) (int32, error) { return 1, nil }
	}
	var err error
	if t.deserHandler, err = handlerVerdict(b.Config, config.DeserializationHandler, true); err != nil {
		return nil, err
	}
	if t.procHandler, err = handlerVerdict(b.Config, config.ProcessingHandler, false); err != nil {
		return nil, err
	}
	t.dlqTopic = b.Config.String(config.DeadLetterQueueTopic)
	if t.deserHandler == handlerDeadLetter && t.dlqTopic == "" {
		return nil, fmt.Errorf("task: config %s is dead-letter but %s is not set", config.DeserializationHandler, config.DeadLetterQueueTopic)
	}
	if err := t.configureTimers(opts.Lanes); err != nil {
		return nil, err
	}
	specs := make([]metrics.NodeSpec, len(st.Nodes))
	for i, n := range st.Nodes {
		specs[i] = metrics.NodeSpec{Name: n.Name, Kind: nodeKind(n.Kind)}
	}
	t.meter = t.metrics.ClaimTask(t.id, st.ID, specs)
	debug := t.metrics.Debug()

	for _, n := range st.Nodes {
		nd := &node{name: n.Name, spec: n, byName: map[string]*node{}}
		nd.ctx = &nodeContext{t: t, node: nd}
		nd.meter = t.meter.Nodes[slices.IndexFunc(t.meter.Nodes, func(m *metrics.NodeMeter) bool { return m.Name == n.Name })]
		if debug && n.Kind != topology.SourceNode {
			nd.process = &nd.meter.Process
			t.metered = append(t.metered, nd)
		}
		if n.Kind == topology.SinkNode && n.Boundary == nil && n.Sink.Partitioner == nil {
			// Kafka Streams' repartition topics are hashed by the whole
			// key (no WindowedStreamPartitioner there): boundaries keep it.
			nd.innerSuffix, _ = window.InnerKeySuffix(n.Sink.KeySerde)
		}
		t.nodes[n.Name] = nd
		if n.Kind == topology.SourceNode {
			for _, topic := range n.Source.Topics {
				t.sources[topic] = nd
			}
		}
	}
	for _, nd := range t.nodes {
		for _, c := range nd.spec.Children {
			child, ok := t.nodes[c]
			if !ok {
				return nil, fmt.Errorf("task %s: node %s: child %s is not in sub-topology %d", t.id, nd.name, c, st.ID)
			}
			nd.children = append(nd.children, child)
			nd.byName[c] = child
		}
	}
	return t, nil
}

const handlerDeadLetter = "dead-letter"

// HandlerVerdict reads the exception handler named by key: fail or
// continue (Kafka Streams' class names for them accepted), and
// dead-letter where allowDLQ says the handler may write one.
func HandlerVerdict(cfg config.Config, key string, allowDLQ bool) (string, error) {
	return handlerVerdict(cfg, key, allowDLQ)
}

func handlerVerdict(cfg config.Config, key string, allowDLQ bool) (string, error) {
	v := cfg.String(key)
	switch v {
	case "", config.HandlerFail, "log-and-fail", "org.apache.kafka.streams.errors.LogAndFailExceptionHandler",
		"org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler",
		"org.apache.kafka.streams.errors.DefaultProductionExceptionHandler":
		return config.HandlerFail, nil
	case config.HandlerContinue, "log-and-continue", "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler",
		"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler":
		return config.HandlerContinue, nil
	case handlerDeadLetter:
		if allowDLQ {
			return handlerDeadLetter, nil
		}
	}
	allowed := "fail, continue"
	if allowDLQ {
		allowed += ", dead-letter"
	}
	return "", fmt.Errorf("task: config %s: %q is not one of %s", key, v, allowed)
}

// ID is the task's name.
func (t *Task) ID() string { return t.id }

// Partition is the task's partition: where its changelog writes go.
func (t *Task) Partition() int32 { return t.partition }

// Subtopology is the sub-topology the task runs.
func (t *Task) Subtopology() *topology.Subtopology { return t.sub }

// Init builds and initialises the task's stores, then its processors in
// topological order, so that a processor's Init can read its stores.
func (t *Task) Init() error {
	if t.initialized {
		return nil
	}
	if err := t.OpenStores(); err != nil {
		return err
	}
	if t.restore != nil {
		if err := t.restore(t.stores); err != nil {
			return fmt.Errorf("task %s: restore state: %w", t.id, err)
		}
	}
	for i, n := range t.sub.Nodes {
		nd := t.nodes[n.Name]
		if n.Kind != topology.ProcessorNode {
			continue
		}
		nd.proc = n.Supplier()
		// Before Init: a processor fetches its timer service there.
		if err := t.attachTimers(nd, i); err != nil {
			return err
		}
		prev := t.current
		t.current = nd
		err := nd.proc.Init(nd.ctx)
		t.current = prev
		if err != nil {
			return fmt.Errorf("task %s: init processor %s: %w", t.id, n.Name, err)
		}
		inner := processor.Unwrap(nd.proc)
		if _, ok := inner.(processor.WatermarkListener); ok {
			t.hasWatermarkListeners = true
		}
		if _, ok := inner.(processor.BarrierListener); ok {
			t.hasBarrierListeners = true
		}
	}
	for _, n := range t.sub.Sources {
		t.takeEntry(t.nodes[n.Name])
	}
	t.initialized = true
	return nil
}

// takeEntry gives source src the typed entry of its only child, when the
// child is a processor (without timers, which key by the record's key as
// the erased path has it) that offers one for the source's serdes.
func (t *Task) takeEntry(src *node) {
	if len(src.children) != 1 {
		return
	}
	c := src.children[0]
	if c.spec.Kind != topology.ProcessorNode || c.timers != nil {
		return
	}
	tk, ok := c.proc.(hop.Taker)
	if !ok {
		// A processor the DSL wrapped (a topology file's fixed-key
		// step) offers one itself, as it offers the listeners.
		tk, ok = processor.Unwrap(c.proc).(hop.Taker)
	}
	if ok {
		spec := src.spec.Source
		if e, ok := tk.Entry(spec.KeySerde, spec.ValueSerde); ok {
			src.entry = e
		}
	}
}

// OpenStores builds and initialises the task's stores, once; Init calls
// it. A runtime that restores the stores of several tasks from one read of
// a changelog opens them all first (Stores), writes to them, then calls
// Init, which restores through Options.Restore, when set, and initialises
// the processors.
func (t *Task) OpenStores() error {
	if t.storesOpen {
		return nil
	}
	for _, name := range t.sub.Stores {
		info := t.built.Stores[name]
		s, err := info.Builder.Build()
		if err != nil {
			return fmt.Errorf("task %s: build state store %s: %w", t.id, name, err)
		}
		if err := s.Init(storeContext{t}); err != nil {
			return fmt.Errorf("task %s: init state store %s: %w", t.id, name, err)
		}
		t.stores[name] = s
	}
	t.storesOpen = true
	return nil
}

// Laning reports where the work in progress came from, for a runtime that
// routes its writes: the partition of the record being processed (inRecord
// false outside a record: a barrier, a punctuator, a watermark flush) and
// the key bytes its lane was picked by (laned false when no key hash
// picked it).
func (t *Task) Laning() (partition int32, inRecord bool, keyBytes []byte, laned bool) {
	return t.rc.meta.Partition, t.rc.hasMeta, t.rc.laneBytes, t.rc.laned
}

// LaneHash is lane.Murmur2 of Laning's key bytes, computed once: by the
// dispatcher when it gave one (Input.KeyHash), else here.
func (t *Task) LaneHash() int32 {
	if !t.rc.laneHashed {
		t.rc.laneHash, t.rc.laneHashed = lane.Murmur2(t.rc.laneBytes), true
	}
	return t.rc.laneHash
}

// HashOf is lane.Murmur2(b), reusing the lane hash when b holds the lane
// bytes (a key written as it was read).
func (t *Task) HashOf(b []byte) int32 {
	if t.rc.laneBytes != nil && bytes.Equal(b, t.rc.laneBytes) {
		return t.LaneHash()
	}
	return lane.Murmur2(b)
}

// Store returns one of the task's stores (global ones included).
func (t *Task) Store(name string) (state.Store, bool) {
	if s, ok := t.stores[name]; ok {
		return s, true
	}
	s, ok := t.global[name]
	return s, ok
}

// Stores returns the task's own stores by name.
func (t *Task) Stores() map[string]state.Store { return t.stores }

// Reads reports whether the task has a source for topic.
func (t *Task) Reads(topic string) bool {
	_, ok := t.sourceFor(topic)
	return ok
}

func (t *Task) sourceFor(topic string) (*node, bool) {
	if t.lastSrc != nil && t.lastSrcTopic == topic {
		return t.lastSrc, true
	}
	nd, ok := t.sources[topic]
	if !ok {
		for _, n := range t.sub.Sources {
			if n.Source.Pattern != nil && n.Source.Pattern.MatchString(topic) {
				nd, ok = t.nodes[n.Name], true
				break
			}
		}
	}
	if ok {
		// Records come in runs of one topic: the next one most likely
		// reads the same source, without a hash or a pattern match.
		t.lastSrcTopic, t.lastSrc = topic, nd
	}
	return nd, ok
}

// Process runs one record through the sub-topology. An error means the
// record could not be processed under the configured handlers: the caller
// must not commit past it. The task reads *in during the call and keeps
// no pointer to it (the lanes pass the record where it lies in its batch).
func (t *Task) Process(in *Input) error {
	if !t.initialized {
		return fmt.Errorf("task %s: process before init", t.id)
	}
	t.processed++
	if t.sampleIn--; t.sampleIn > 0 {
		return t.process(in)
	}
	return t.processTimed(in)
}

// publish adds the records processed since the last call to the meter,
// which the scrape reads: at every sampled record, every commit and the
// close, so the exported count trails by at most one barrier interval.
func (t *Task) publish() {
	if t.processed > 0 {
		t.meter.Process.Events.Add(t.processed)
		t.processed = 0
	}
	for _, nd := range t.metered {
		if nd.processed > 0 {
			nd.process.Events.Add(nd.processed)
			nd.processed = 0
		}
	}
}

// SampleNext makes the next record Process is given a timed one: the
// lanes time the first record of every batch, so that a quiet input,
// whose batches are a record or two, is timed record by record.
func (t *Task) SampleNext() { t.sampleIn = 0 }

// processTimed is process for a sampled record (metrics.SampleEvery):
// the task, its nodes at debug level and its sources' and sinks'
// end-to-end latencies time it.
func (t *Task) processTimed(in *Input) error {
	t.sampleIn = metrics.SampleEvery
	t.publish()
	start := time.Now()
	t.sampling, t.sampledAt = true, start
	defer func() {
		t.sampling = false
		t.meter.Process.Timing.Observe(time.Since(start), start)
	}()
	return t.process(in)
}

// e2e records a sampled record's end-to-end latency at nd: the wall
// clock now less the record's timestamp, none below zero (a timestamp
// ahead of the clock is not a negative latency).
func (t *Task) e2e(nd *node, timestamp int64) {
	d := time.Duration(max(t.time.WallClock()-timestamp, 0)) * time.Millisecond
	// The sampled record's start places the sample in its window; a
	// clock read fewer.
	at := t.sampledAt
	if !t.sampling {
		at = time.Now()
	}
	nd.meter.E2E.Observe(d, at)
}

func (t *Task) process(in *Input) error {
	src, ok := t.sourceFor(in.Topic)
	if !ok {
		return fmt.Errorf("task %s: no source reads topic %s", t.id, in.Topic)
	}
	spec := src.spec.Source
	if e := src.entry; e != nil {
		if inKey, err := e.Decode(in.Topic, in.Key, in.Value); err != nil {
			if inKey {
				return t.handleDeserializationError(src, in, positioned(err, spec.KeySerde, "key", in))
			}
			return t.handleDeserializationError(src, in, positioned(err, spec.ValueSerde, "value", in))
		}
		return t.processDecoded(src, in, nil, nil, e)
	}
	key, err := spec.KeySerde.DeserializeAny(in.Topic, in.Key)
	if err == nil {
		var value any
		// The input's bytes are the fetch's, written by nothing after:
		// a serde that can share them need not copy.
		value, err = serde.DeserializeBorrowed(spec.ValueSerde, in.Topic, in.Value)
		if err == nil {
			return t.processDecoded(src, in, key, value, nil)
		}
		err = positioned(err, spec.ValueSerde, "value", in)
	} else {
		err = positioned(err, spec.KeySerde, "key", in)
	}
	return t.handleDeserializationError(src, in, err)
}

func positioned(err error, s serde.Any, what string, in *Input) error {
	if de, ok := serde.AsDecodeError(err); ok {
		return fmt.Errorf("record %s: %w", what, de.At(in.Topic, in.Partition, in.Offset))
	}
	return fmt.Errorf("deserialize record %s with serde %s: topic %s partition %d offset %d: %w", what, s.Name(), in.Topic, in.Partition, in.Offset, err)
}

// processDecoded runs a decoded record through the sub-topology: its key
// and value, or, when src takes an entry, e, which holds them typed.
func (t *Task) processDecoded(src *node, in *Input, key, value any, e hop.Entry) error {
	ptp := t.partitionTimeOf(in.Topic, in.Partition)
	pt := *ptp
	ts, err := t.eventTime(src, in, key, value, e, pt)
	if err != nil {
		return err
	}
	if ts < 0 {
		t.metrics.Counter(metrics.DroppedRecords, "reason", metrics.ReasonNoEventTime).Add(1)
		t.log.Warn("skipping record with invalid timestamp", "source", src.name, "topic", in.Topic,
			"partition", in.Partition, "offset", in.Offset, "timestamp", ts, "extractor", src.spec.Source.Extractor.Name())
		return nil
	}
	if ts > pt {
		*ptp = ts
	}
	if t.sampling {
		t.e2e(src, ts)
	}
	if !t.sub.Global && !src.spec.Source.Table {
		// A global store's or a table's updates are not the
		// application's event time: a bulk load stamped in the future
		// must not make stream records late (topology.SourceSpec.Table).
		t.time.ObserveStreamTime(ts)
	}
	prevFloor := t.floor
	t.floor = t.time.Floor()
	defer func() { t.floor = prevFloor }()

	prev := t.rc
	t.rc = recordContext{
		meta:       processor.RecordMetadata{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset},
		hasMeta:    true,
		origin:     in.Origin,
		timestamp:  ts,
		headers:    in.Headers,
		laneBytes:  in.Key,
		laned:      in.Key != nil && (src.spec.Boundary == nil || src.spec.Boundary.Partitioner == nil),
		laneHash:   in.KeyHash,
		laneHashed: in.KeyHashed,
	}
	ks, ok := key.(string)
	if e != nil {
		ks, ok = e.SourceKey()
	}
	if ok && serde.IsString(src.spec.Source.KeySerde) {
		t.rc.sourceKey, t.rc.sourceKeyOK = ks, true
	}
	defer func() { t.rc = prev }()
	t.failed = nil
	if e != nil {
		t.runNode(src.children[0], processor.Erased{Timestamp: ts, Headers: in.Headers}, e)
		return t.takeFailure()
	}
	rec := processor.Erased{Key: key, Value: value, Timestamp: ts, Headers: in.Headers}
	for _, c := range src.children {
		t.run(c, rec)
	}
	return t.takeFailure()
}

// partitionTimeOf is the partition's event-time entry, made Unknown on
// its first record.
func (t *Task) partitionTimeOf(topic string, partition int32) *int64 {
	if p := t.recentPT.Get(topic, partition); p != nil {
		return p
	}
	pk := partitionKey{topic, partition}
	p, ok := t.partitionTime[pk]
	if !ok {
		p = new(int64)
		*p = Unknown
		t.partitionTime[pk] = p
	}
	t.recentPT.Put(topic, partition, p)
	return p
}

// eventTime reads a record's event time: the source's watermark strategy's
// assigner when it declares one, else its timestamp extractor. Either
// takes the key and value as the erased path has them: from e, when the
// record came through an entry.
func (t *Task) eventTime(src *node, in *Input, key, value any, e hop.Entry, partitionTime int64) (int64, error) {
	spec := src.spec.Source
	if spec.Watermark != nil && spec.Watermark.Assigner() != nil {
		if e != nil {
			key, value = e.Erased()
		}
		ts, err := spec.Watermark.Assigner()(key, value, in.Timestamp)
		if err != nil {
			return 0, fmt.Errorf("source %s: timestamp assigner: topic %s partition %d offset %d: %w",
				src.name, in.Topic, in.Partition, in.Offset, err)
		}
		return ts, nil
	}
	if spec.Extractor == topology.RecordTimestamp && in.Timestamp >= 0 {
		// The default extractor reads the timestamp alone: no record to
		// build for it (its error, for a negative one, is the call below).
		return in.Timestamp, nil
	}
	if e != nil {
		key, value = e.Erased()
	}
	ts, err := spec.Extractor.Extract(topology.ConsumedRecord{
		Topic: in.Topic, Partition: in.Partition, Offset: in.Offset,
		Key: key, Value: value, Timestamp: in.Timestamp, Headers: in.Headers,
	}, partitionTime)
	if err != nil {
		return 0, fmt.Errorf("source %s: timestamp extractor %s: topic %s partition %d offset %d: %w",
			src.name, spec.Extractor.Name(), in.Topic, in.Partition, in.Offset, err)
	}
	return ts, nil
}

// takeFailure returns and clears the failure of the current record.
func (t *Task) takeFailure() error {
	err := t.failed
	t.failed = nil
	t.timers.fault = nil
	return err
}

// run processes rec at nd. Failures are recorded on the task, not returned,
// so that Forward needs no error result.
func (t *Task) run(nd *node, rec processor.Erased) { t.runNode(nd, rec, nil) }

// runNode is run, for a record that comes to processor nd through entry e
// when e is set: rec then has its timestamp and headers only, and the
// record context no key (only timers read it, and a node with timers
// takes no entry).
func (t *Task) runNode(nd *node, rec processor.Erased, e hop.Entry) {
	if t.failed != nil {
		return
	}
	prevTS, prevHeaders, prevKey, prevNode := t.rc.timestamp, t.rc.headers, t.rc.key, t.current
	t.rc.timestamp, t.rc.headers, t.rc.key = rec.Timestamp, rec.Headers, rec.Key
	defer func() {
		t.rc.timestamp, t.rc.headers, t.rc.key = prevTS, prevHeaders, prevKey
		// A panic in the node (its processor, serializer or sink) is its
		// processing error: the handler decides, as for an error, and
		// the record's other paths go on under continue.
		if r := recover(); r != nil {
			t.current = prevNode
			t.handleProcessingError(nd, recovered(r))
		}
	}()
	var err error
	// timed is when a sampled record reached a processor node at debug
	// level (nd.process); a panic leaves it untimed.
	var timed time.Time
	switch nd.spec.Kind {
	case topology.SinkNode:
		err = t.sink(nd, rec)
	case topology.ProcessorNode:
		if nd.process != nil {
			nd.processed++
			if t.sampling {
				timed = time.Now()
			}
		}
		// Inlined invoke: a closure here would cost an allocation per
		// record per node.
		prev := t.current
		t.current = nd
		if nd.timers != nil {
			err = t.sampleTimerLane(nd.timers, rec)
		}
		switch {
		case err != nil:
		case e != nil:
			err = e.Process(rec.Timestamp, rec.Headers)
		default:
			err = nd.proc.Process(rec)
		}
		if t.timers.fault != nil {
			err = t.takeTimerFault(err)
		}
		t.current = prev
		if !timed.IsZero() {
			nd.process.Timing.Observe(time.Since(timed), timed)
		}
	default:
		err = fmt.Errorf("node %s: a source cannot be forwarded to", nd.name)
	}
	if err != nil {
		t.handleProcessingError(nd, err)
	}
}

// invoke runs fn as node nd: the node's context is current, so forwards
// from fn go to nd's children.
func (t *Task) invoke(nd *node, fn func() error) (err error) {
	prev := t.current
	t.current = nd
	defer func() {
		t.current = prev
		if r := recover(); r != nil {
			err = recovered(r)
		}
	}()
	return fn()
}

// PanicError is a panic recovered from a processor's code (Process, a
// punctuator, a timer, a listener, a serde, an extractor), which goes to
// the processing exception handler as an error would: the value it
// panicked with, and the stack at the panic, which is logged.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap is the value panicked with when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered is the PanicError of r, a value recover returned, with the
// stack of the goroutine that panicked (a deferred call runs on it before
// it unwinds).
func recovered(r any) *PanicError {
	return &PanicError{Value: r, Stack: debug.Stack()}
}

// Fatal marks an error that bypasses the processing exception handler: the
// record's processing fails whatever the handler says.
type Fatal interface {
	error
	Fatal() bool
}

// ProcessingError is a record (or punctuation) whose processing failed.
type ProcessingError struct {
	Task      string
	Node      string
	Position  processor.RecordMetadata
	HasRecord bool
	Err       error
}

func (e *ProcessingError) Error() string {
	if e.HasRecord {
		return fmt.Sprintf("task %s: processor %s: topic %s partition %d offset %d: %v",
			e.Task, e.Node, e.Position.Topic, e.Position.Partition, e.Position.Offset, e.Err)
	}
	return fmt.Sprintf("task %s: processor %s: %v", e.Task, e.Node, e.Err)
}

func (e *ProcessingError) Unwrap() error { return e.Err }

func (t *Task) handleProcessingError(nd *node, err error) {
	if t.failed != nil {
		// A descendant already failed the record; its error is the one
		// that matters, and the ancestors' errors only repeat it.
		return
	}
	var pe *ProcessingError
	if errors.As(err, &pe) {
		t.failed = err
		return
	}
	perr := &ProcessingError{Task: t.id, Node: nd.name, Position: t.rc.meta, HasRecord: t.rc.hasMeta, Err: err}
	if pe := (*PanicError)(nil); errors.As(err, &pe) {
		t.log.Error("processor panicked", "error", perr.Error(), "stack", string(pe.Stack))
	}
	var fatal Fatal
	if t.procHandler == config.HandlerContinue && !(errors.As(err, &fatal) && fatal.Fatal()) {
		t.metrics.Counter(metrics.DroppedRecords, "reason", metrics.ReasonProcessing).Add(1)
		t.log.Warn("processing error, continuing", "error", perr.Error())
		return
	}
	t.failed = perr
}

func (t *Task) handleDeserializationError(src *node, in *Input, err error) error {
	var fatal Fatal
	if errors.As(err, &fatal) && fatal.Fatal() {
		// Not the record's fault (a schema registry that does not
		// answer): skipping would drop every record until it is back.
		return fmt.Errorf("source %s: %w", src.name, err)
	}
	switch t.deserHandler {
	case config.HandlerContinue:
		t.metrics.Counter(metrics.DroppedRecords, "reason", metrics.ReasonDeserialization).Add(1)
		t.log.Warn("skipping record that does not deserialize", "source", src.name, "error", err.Error())
		return nil
	case handlerDeadLetter:
		headers := in.Headers.Clone().
			Add("__streams.errors.exception", []byte("DeserializationError")).
			Add("__streams.errors.message", []byte(err.Error())).
			Add("__streams.errors.topic", []byte(in.Topic)).
			Add("__streams.errors.partition", []byte(strconv.Itoa(int(in.Partition)))).
			Add("__streams.errors.offset", []byte(strconv.FormatInt(in.Offset, 10)))
		if serr := t.out.Send(Output{Topic: t.dlqTopic, Partition: -1, Key: in.Key, Value: in.Value, Timestamp: in.Timestamp, Headers: headers}); serr != nil {
			return fmt.Errorf("source %s: send to dead-letter topic %s: %w (after: %w)", src.name, t.dlqTopic, serr, err)
		}
		t.metrics.Counter(metrics.DroppedRecords, "reason", metrics.ReasonDeserialization).Add(1)
		t.log.Warn("record that does not deserialize sent to the dead-letter topic", "source", src.name, "topic", t.dlqTopic, "error", err.Error())
		return nil
	}
	// Kafka Streams says the same: the user's next question is how to
	// get past the record.
	return fmt.Errorf("source %s: %w (%s is fail; set it to continue or dead-letter to skip such records)",
		src.name, err, config.DeserializationHandler)
}

func (t *Task) sink(nd *node, rec processor.Erased) error {
	spec := nd.spec.Sink
	topic := spec.Topic
	if spec.Chooser != nil {
		topic = spec.Chooser(rec.Key, rec.Value, topology.RecordContext{
			Topic: t.rc.meta.Topic, Partition: t.rc.meta.Partition, Offset: t.rc.meta.Offset,
			Timestamp: rec.Timestamp, Headers: rec.Headers,
		})
		if topic == "" {
			return fmt.Errorf("sink %s: topic chooser returned an empty topic", nd.name)
		}
	}
	k, passed, err := t.sinkHead(nd, topic, rec.Key, rec.Timestamp)
	if err != nil {
		return err
	}
	v, err := spec.ValueSerde.SerializeAny(topic, rec.Value)
	if err != nil {
		return sinkValueError(nd, topic, err)
	}
	partition := int32(-1)
	if spec.Partitioner != nil {
		n, err := t.partCount(topic)
		if err != nil {
			return fmt.Errorf("sink %s: partition count of topic %s for its partitioner: %w", nd.name, topic, err)
		}
		if p, ok := spec.Partitioner(topic, rec.Key, rec.Value, n); ok {
			if p < 0 || p >= n {
				// Kafka's producer refuses a partition out of range too, failing
				// Kafka Streams.
				return fmt.Errorf("sink %s: partitioner chose partition %d of topic %s, which has %d", nd.name, p, topic, n)
			}
			partition = p
		}
	}
	return t.sinkSend(nd, topic, partition, k, passed, v, rec.Timestamp, rec.Headers)
}

// sinkHead is a sink's work before the value: the timestamp's check and
// the key's encoding.
func (t *Task) sinkHead(nd *node, topic string, key any, timestamp int64) (k []byte, passed bool, err error) {
	if err := sinkStamp(nd, topic, timestamp); err != nil {
		return nil, false, err
	}
	k, passed, err = t.sinkKey(nd.spec.Sink.KeySerde, topic, key)
	if err != nil {
		return nil, false, sinkKeyError(nd, topic, err)
	}
	return k, passed, nil
}

func sinkStamp(nd *node, topic string, timestamp int64) error {
	if timestamp < 0 {
		return fmt.Errorf("sink %s: topic %s: record has negative timestamp %d", nd.name, topic, timestamp)
	}
	return nil
}

func sinkKeyError(nd *node, topic string, err error) error {
	return fmt.Errorf("sink %s: serialize key for topic %s with serde %s: %w", nd.name, topic, nd.spec.Sink.KeySerde.Name(), err)
}

func sinkValueError(nd *node, topic string, err error) error {
	return fmt.Errorf("sink %s: serialize value for topic %s with serde %s: %w", nd.name, topic, nd.spec.Sink.ValueSerde.Name(), err)
}

// sinkSend hands an encoded sink record to the collector.
func (t *Task) sinkSend(nd *node, topic string, partition int32, k []byte, passed bool, v []byte, timestamp int64, headers processor.Headers) error {
	o := Output{Topic: topic, Partition: partition, Key: k, Value: v, Timestamp: timestamp, Headers: headers, Boundary: nd.spec.Boundary}
	// A sink is metered here, where both the sink node and a hop to it
	// (sinkTarget) send: at debug level its count, and for a sampled
	// record its end-to-end latency.
	if nd.process != nil {
		nd.processed++
	}
	if nd.sampleIn--; t.sampling || nd.sampleIn <= 0 {
		nd.sampleIn = metrics.SampleEvery
		t.e2e(nd, timestamp)
	}
	switch {
	case nd.innerSuffix > 0 && partition < 0 && len(k) >= nd.innerSuffix:
		o.KeyHash, o.KeyHashed = lane.Murmur2(k[:len(k)-nd.innerSuffix]), true
	case passed && t.rc.laneHashed:
		o.KeyHash, o.KeyHashed = t.rc.laneHash, true
	}
	if err := t.out.Send(o); err != nil {
		return fmt.Errorf("sink %s: send to topic %s: %w", nd.name, topic, err)
	}
	return nil
}

// sinkTarget is nd's only child as a hop.Target, when it is a plain sink
// (package hop): sink's work around the encoding of the key and the
// value, in sink's order, with its errors charged to the sink node as run
// charges them.
func (t *Task) sinkTarget(nd *node) (hop.Target, bool) {
	if len(nd.children) != 1 || nd.children[0].spec.Kind != topology.SinkNode {
		return hop.Target{}, false
	}
	sn := nd.children[0]
	spec := sn.spec.Sink
	if spec.Chooser != nil || spec.Partitioner != nil {
		return hop.Target{}, false
	}
	topic := spec.Topic
	return hop.Target{
		Topic: topic, KeySerde: spec.KeySerde, ValueSerde: spec.ValueSerde,
		Failed: func() bool { return t.failed != nil },
		Stamp: func(timestamp int64) bool {
			if err := sinkStamp(sn, topic, timestamp); err != nil {
				t.handleProcessingError(sn, err)
				return false
			}
			return true
		},
		PassKey:     func(key string) ([]byte, bool) { return t.passKey(spec.KeySerde, key) },
		KeyFailed:   func(err error) { t.handleProcessingError(sn, sinkKeyError(sn, topic, err)) },
		ValueFailed: func(err error) { t.handleProcessingError(sn, sinkValueError(sn, topic, err)) },
		Send: func(k []byte, passed bool, v []byte, timestamp int64, headers processor.Headers) {
			if err := t.sinkSend(sn, topic, -1, k, passed, v, timestamp, headers); err != nil {
				t.handleProcessingError(sn, err)
			}
		},
	}, true
}

// sinkKey serializes a sink record's key. A String key equal to the one
// the source decoded is written as the bytes it arrived with (passKey).
func (t *Task) sinkKey(s serde.Any, topic string, key any) (b []byte, passed bool, err error) {
	if ks, ok := key.(string); ok {
		if b, ok := t.passKey(s, ks); ok {
			return b, true, nil
		}
	}
	b, err = s.SerializeAny(topic, key)
	return b, false, err
}

// passKey returns the bytes the record being processed arrived with, when
// key is the String key the source decoded from them and s is the String
// serde: the common pass-through key costs no encoding, and its bytes are
// the lane bytes (passed true), capped.
func (t *Task) passKey(s serde.Any, key string) (b []byte, passed bool) {
	if !t.rc.sourceKeyOK || key != t.rc.sourceKey || !serde.IsString(s) {
		return nil, false
	}
	b = t.rc.laneBytes
	return b[:len(b):len(b)], true
}

// Commit flushes the task's stores, so their changelog records are out
// before the caller commits offsets.
func (t *Task) Commit() error {
	t.publish()
	for _, name := range t.sub.Stores {
		if s, ok := t.stores[name]; ok {
			if err := s.Flush(); err != nil {
				return fmt.Errorf("task %s: flush state store %s: %w", t.id, name, err)
			}
		}
	}
	return nil
}

// Close closes processors (in reverse order) and then stores.
func (t *Task) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	nodes := slices.Clone(t.sub.Nodes)
	slices.Reverse(nodes)
	for _, n := range nodes {
		if nd := t.nodes[n.Name]; nd.proc != nil {
			if err := nd.proc.Close(); err != nil {
				errs = append(errs, fmt.Errorf("task %s: close processor %s: %w", t.id, n.Name, err))
			}
		}
	}
	for name, s := range t.stores {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("task %s: close state store %s: %w", t.id, name, err))
		}
	}
	t.publish()
	t.metrics.ReleaseTask(t.meter)
	return errors.Join(errs...)
}

// nodeContext is the processor.Context of one node.
type nodeContext struct {
	t    *Task
	node *node
}

func (c *nodeContext) ApplicationID() string { return c.t.built.ApplicationID }
func (c *nodeContext) TaskID() string        { return c.t.id }
func (c *nodeContext) NodeName() string      { return c.node.name }
func (c *nodeContext) RecordMetadata() (processor.RecordMetadata, bool) {
	return c.t.rc.meta, c.t.rc.hasMeta
}

// SourceRecord names the source-topic record the current record descends
// from (itself, unless it crossed an in-memory boundary); ok is false
// outside a record.
func (c *nodeContext) SourceRecord() (topic string, partition int32, offset int64, ok bool) {
	if !c.t.rc.hasMeta {
		return "", 0, 0, false
	}
	if o := c.t.rc.origin; o.Topic != "" {
		return o.Topic, o.Partition, o.Offset, true
	}
	return c.t.rc.meta.Topic, c.t.rc.meta.Partition, c.t.rc.meta.Offset, true
}

func (c *nodeContext) CurrentStreamTime() int64 { return c.t.time.StreamTime() }
func (c *nodeContext) CurrentSystemTime() int64 { return c.t.time.WallClock() }
func (c *nodeContext) Watermark() int64         { return c.t.time.StreamTime() }
func (c *nodeContext) Floor() int64             { return c.t.floor }
func (c *nodeContext) IsLate() bool {
	return c.t.rc.hasMeta && c.t.rc.timestamp < c.t.time.StreamTime()
}
func (c *nodeContext) Commit()                      {}
func (c *nodeContext) AppConfig() map[string]string { return c.t.built.Config.Map() }

// SinkTarget implements hop.Offerer.
func (c *nodeContext) SinkTarget() (hop.Target, bool) { return c.t.sinkTarget(c.node) }

func (c *nodeContext) Forward(rec processor.Record[any, any]) {
	t := c.t
	prev := t.current
	t.current = c.node
	for _, child := range c.node.children {
		t.run(child, rec)
	}
	t.current = prev
}

func (c *nodeContext) ForwardTo(rec processor.Record[any, any], child string) {
	nd, ok := c.node.byName[child]
	if !ok {
		c.t.handleProcessingError(c.node, fmt.Errorf("forward to %s: %w (children: %v)", child, processor.ErrUnknownChild, c.node.spec.Children))
		return
	}
	prev := c.t.current
	c.t.current = c.node
	c.t.run(nd, rec)
	c.t.current = prev
}

func (c *nodeContext) StateStore(name string) (any, error) {
	if slices.Contains(c.node.spec.Stores, name) {
		if s, ok := c.t.stores[name]; ok {
			return s, nil
		}
	}
	if s, ok := c.t.global[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("processor %s: state store %s: %w", c.node.name, name, processor.ErrStoreNotConnected)
}

func (c *nodeContext) Schedule(interval time.Duration, typ processor.PunctuationType, p processor.Punctuator) (processor.Cancellable, error) {
	return c.t.schedule(c.node, interval, typ, p)
}

// storeContext is what the task's stores see.
type storeContext struct{ t *Task }

func (s storeContext) ApplicationID() string { return s.t.built.ApplicationID }

func (s storeContext) ChangelogTopic(store string) string {
	if info, ok := s.t.built.Stores[store]; ok {
		return info.ChangelogTopic
	}
	return ""
}

func (s storeContext) RecordTimestamp() int64 { return s.t.rc.timestamp }

// DefaultBackend makes storeContext a state.BackendContext.
func (s storeContext) DefaultBackend() state.BytesSupplier { return s.t.backend }

// PersistentBackend makes storeContext a state.BackendContext.
func (s storeContext) PersistentBackend() state.BytesSupplier { return s.t.persist }

// LogChangeHeld makes storeContext a state.HeldLogger: the held word goes
// with the output to the collector, whose coalescer uses it.
func (s storeContext) LogChangeHeld(store string, key, value []byte, timestamp int64, held *uint64) error {
	return s.logChange(store, key, value, timestamp, nil, held)
}

func (s storeContext) LogChange(store string, key, value []byte, timestamp int64, headers []state.Header) error {
	return s.logChange(store, key, value, timestamp, headers, nil)
}

// logChange sends a change to store's changelog topic, if it has one.
func (s storeContext) logChange(store string, key, value []byte, timestamp int64, headers []state.Header, held *uint64) error {
	info, ok := s.t.built.Stores[store]
	if !ok || info.ChangelogTopic == "" {
		return nil
	}
	var h processor.Headers
	for _, x := range headers {
		h = append(h, processor.Header{Key: x.Key, Value: x.Value})
	}
	// Every write of a versioned store is a version of its key, which a
	// restore needs: none may be coalesced into a later one.
	versioned := info.Builder != nil && info.Builder.Kind() == state.KindVersionedKeyValue
	return s.t.out.Send(Output{Topic: info.ChangelogTopic, Partition: s.t.partition, Key: key, Value: value, Timestamp: timestamp, Headers: h, Store: store, Held: held, Uncoalesced: versioned})
}

// Metrics is the registry the task counts into; DSL processors reach it
// through their context to count drops.
func (c *nodeContext) Metrics() *metrics.Registry { return c.t.metrics }

// Logger is the task's logger; DSL processors log their drops through it.
func (c *nodeContext) Logger() *slog.Logger { return c.t.log }

// nodeKind is a node kind's name in the meters.
func nodeKind(k topology.NodeKind) string {
	switch k {
	case topology.SourceNode:
		return metrics.KindSource
	case topology.SinkNode:
		return metrics.KindSink
	}
	return metrics.KindProcessor
}

// StoreMeter claims the meters of one instance of store at debug level
// (state.MeteredContext); nil at info, where stores are not metered.
func (s storeContext) StoreMeter(store string) (*metrics.StoreMeter, func()) {
	if !s.t.metrics.Debug() {
		return nil, nil
	}
	m := s.t.metrics.ClaimStore(store)
	return m, func() { s.t.metrics.ReleaseStore(m) }
}
