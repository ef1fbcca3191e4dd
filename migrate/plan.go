package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
	"github.com/stoatflow/stoatctl/engine/watermark"
)

// Options say what to migrate from and to.
type Options struct {
	// Config is the application's configuration: replication.factor and
	// the topic. configs of the internal topics a run creates.
	Config config.Config
	// From is the Kafka Streams application id; To is ours.
	From, To string
	// Built is our topology, built with our configuration.
	Built *topology.Built
	// Seeds are the bootstrap servers; ClientOpts connect to them (TLS,
	// SASL), they are not for consuming.
	Seeds      []string
	ClientOpts []kgo.Opt
	// Map maps Kafka Streams store names to ours, for stores whose names
	// differ (generated names such as KSTREAM-AGGREGATE-STATE-STORE-0000000002).
	Map map[string]string
	// EmitFrontier seeds the emit frontier companion of every
	// on-window-close store.
	EmitFrontier bool
	// BatchRecords is how many records one transaction carries at most
	// (default 50 000).
	BatchRecords int
	// WaitForGroups is how long a run waits for both groups to have no
	// members before it refuses. A stopped Kafka Streams instance does not
	// leave its group (its consumers close without LeaveGroup); its member
	// goes after the session timeout, 45 s by default.
	WaitForGroups time.Duration
	// Progress, when set, is told as the copy starts and after every
	// committed batch (see Progress).
	Progress func(Progress)
	// StateDir, when set, is where the stores come from: Kafka Streams'
	// state.dir (or its application's folder in it), read while Kafka
	// Streams is stopped, in place of the changelog topics. Offsets and
	// time still come from the committed offsets on the broker.
	StateDir string
	// RocksDBLibrary is the RocksDB shared library that reads StateDir's
	// stores: a librocksdb.so, or a rocksdbjni jar (the Kafka Streams
	// application's own, whose RocksDB wrote them). Empty is the system's
	// librocksdb.so.
	RocksDBLibrary string
	// Direction is Forward (Kafka Streams to ours, the zero value) or
	// Reverse (ours back to Kafka Streams, reverse.go).
	Direction Direction
	// Overrides accept problems that would refuse the migration, each by
	// naming it.
	Overrides
	// live is a shadow run's seed (Shadow): Kafka Streams runs on, so its
	// group's members do not refuse the run; the shadow checks instead
	// that it committed nothing while its state was read.
	live bool
}

// Progress is where a translation stands on one source partition (Done
// of Total records) and over the whole run (Copied of ToCopy: the records
// of every partition the run copies, those an earlier run finished left
// out). A run reports once with Copied 0 (and no Topic) as the copy
// starts, then after every committed batch that carried records.
type Progress struct {
	Topic     string
	Partition int32
	Done      int64
	Total     int64
	Copied    int64
	ToCopy    int64
}

// windowedChangelogExtraRetention is the day Kafka Streams adds to a
// windowed store's retention for its changelog's retention.ms
// (windowstore.changelog.additional.retention.ms).
const windowedChangelogExtraRetention = 24 * 60 * 60 * 1000

// Plan is what a migration does; see the package comment.
type Plan struct {
	From string `json:"fromApplicationId"`
	To   string `json:"applicationId"`
	// Direction is "forward", or "reverse" for the way back: records
	// then go from our changelogs (StorePlan.Topic) to Kafka Streams'
	// (SourceTopic), offsets from our group to its.
	Direction Direction      `json:"direction"`
	Stores    []*StorePlan   `json:"stores"`
	Unmapped  []Unmapped     `json:"unmapped"`
	Offsets   []OffsetCopy   `json:"offsets"`
	Floor     *Floor         `json:"floor,omitempty"`
	Groups    []GroupMembers `json:"groups"`
	// EmitFrontier says whether emit frontiers are seeded.
	EmitFrontier bool `json:"emitFrontier"`
	// Accepted are the problems an override accepted, each with what it
	// loses.
	Accepted []Problem `json:"accepted"`
	// Empty are the stores of ours that start empty because an override
	// said so: the verification checks they are.
	Empty []EmptyStore `json:"startEmpty"`
	// Estimate is how long the copy is expected to take.
	Estimate *Estimate `json:"estimate"`

	ourPartitions int32
}

// StorePlan is one mapped store.
type StorePlan struct {
	Source      string          `json:"sourceStore"`
	Store       string          `json:"store"`
	Kind        Kind            `json:"kind"`
	SourceTopic string          `json:"sourceTopic"`
	Topic       string          `json:"topic"`
	Partitions  []PartitionPlan `json:"partitions"`
	// Frontier is set for an on-window-close store.
	Frontier *FrontierPlan `json:"frontier,omitempty"`
	// NullJoins is set for a left or outer join's store of unmatched
	// records.
	NullJoins *NullJoinPlan `json:"nullJoins,omitempty"`
	// StateDir is set when the store is read from a state directory
	// (Options.StateDir): the folder of its application there.
	StateDir string `json:"stateDir,omitempty"`

	keyCheck, valueCheck func([]byte) error
	// reader reads the store from the state directory; nil when it comes
	// from its changelog.
	reader      *storeReader
	liveWindows map[int32]map[string]Entry
	// closeOffset is how far a window's close time lies past its start
	// (time and sliding windows) or its end (sessions); metaOffset turns
	// Kafka Streams' last emitted window close time (its processor
	// metadata) into our emit frontier, the largest close time it
	// emitted. Both come from our window definition (frontierOffsets).
	closeOffset, metaOffset int64
	session                 bool
	// outerClose is, for a JoinOuter store, the close time of an
	// unmatched record's window (dsl.OuterJoinStore).
	outerClose func(ts int64, left bool) int64
	// keySuffix is, for a suppress buffer, the length of the window
	// suffix after the lane key in its keys.
	keySuffix int
	// check holds a windowed store's records against our window
	// definition; nil for other stores.
	check *windowCheck
	// keySerde and valueSerde are our store's serdes, which the first
	// sampleRecords records are decoded with (nil: not sampled); sampled
	// counts them.
	keySerde, valueSerde serde.Any
	sampled              int
	// problems are what refuses the store; records counts the records
	// that did not decode, the first of which is in problems.
	problems   []Problem
	badRecords int64
	// ours and theirs are, in a reverse plan, our store restored and
	// Kafka Streams' changelog restored, by partition and key.
	ours, theirs ourState
	// fkLeft is, for an FKSubscription store, the join's left table that
	// Kafka Streams' subscriptions are translated by; fkLast its records
	// that are the last of their key, once planned.
	fkLeft *fkLeft
	fkLast fkLast
	// primary is set on the plan that copies Kafka Streams' left table
	// store of a foreign-key join into our join's primary store: a
	// second copy of that changelog, marked done apart from the first.
	primary bool
	// byKey is set when our engine keeps the store's records in the
	// partition of their lane key's murmur2, where a boundary routes
	// them: each record is written there, whatever partition Kafka
	// Streams had it in (a foreign-key join's subscription topic has the
	// right table's partition count, its left table the left topic's);
	// placeBy is the partition count of the store's sub-topology.
	byKey   bool
	placeBy int32
}

// markerSource is what the store's migration markers are named by: the
// source changelog, and for a foreign-key join's primary store, which
// copies the left table's changelog a second time, our changelog too.
func (sp *StorePlan) markerSource() string {
	if sp.primary {
		return sp.SourceTopic + " to " + sp.Topic
	}
	return sp.SourceTopic
}

// problem refuses the store, naming Kafka Streams' store: --skip-store
// accepts it, and ours then starts empty.
func (sp *StorePlan) problem(code string, err error, format string, a ...any) {
	sp.problems = append(sp.problems, Problem{Code: code, Subject: sp.Source, Message: fmt.Sprintf(format, a...), err: err,
		Loses: fmt.Sprintf("the state of Kafka Streams' store %s is not migrated; our store %s starts empty", sp.Source, sp.Store)})
}

// partitionsOf is the partition count of one of our internal topics: one
// for the stamp topic, our changelogs' count otherwise.
func (p *Plan) partitionsOf(topic string) int32 {
	if p.Floor != nil && topic == p.Floor.Topic {
		return 1
	}
	return p.ourPartitions
}

// Records is the store's record count over its partitions.
func (s *StorePlan) Records() int64 {
	var n int64
	for _, p := range s.Partitions {
		n += p.Records
	}
	return n
}

// PartitionPlan is one partition of a source changelog.
type PartitionPlan struct {
	Partition  int32 `json:"partition"`
	Records    int64 `json:"records"`
	Tombstones int64 `json:"tombstones"`
	// End is the offset the partition is read to.
	End int64 `json:"endOffset"`
	// Done is set when a marker says an earlier run translated the
	// partition up to End.
	Done bool `json:"done"`
}

// FrontierPlan is the emit frontier of an on-window-close store.
type FrontierPlan struct {
	Store string `json:"store"`
	Topic string `json:"topic"`
	// Value is the frontier seeded under --emit-frontier: windows closing
	// at or before it count as emitted. In a reverse plan it is Kafka
	// Streams' lastEmitWindowCloseTime written back (-1: none).
	Value int64 `json:"value"`
	// From says where Value comes from: "processor metadata" (Kafka
	// Streams' last emitted window close time plus the grace), "partition
	// time" or "max changelog timestamp".
	From string `json:"from"`
	// ReEmitted is how many windows Kafka Streams already emitted would be
	// emitted again without --emit-frontier.
	ReEmitted int64 `json:"reEmittedWithoutFrontier"`
	// ReEmittedWithFrontier is how many would be even with it: windows of
	// source partitions whose stream time ran ahead of the slowest one's.
	ReEmittedWithFrontier int64 `json:"reEmittedWithFrontier"`
	// Pending is how many windows Kafka Streams had closed (their close
	// time at or before its stream time) and not yet emitted: it looks
	// for closed windows at most once a second, when a window boundary
	// is crossed. Our engine emits each once after the cutover.
	Pending int64 `json:"pending"`
}

// EmptyStore is a store of ours that starts empty.
type EmptyStore struct {
	Store string `json:"store"`
	Topic string `json:"topic"`
}

// Unmapped is an internal topic of the source that is not migrated.
type Unmapped struct {
	Topic  string `json:"topic"`
	Reason string `json:"reason"`
}

// OffsetCopy is one committed input offset copied to our group.
type OffsetCopy struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Offset        int64  `json:"offset"`
	PartitionTime int64  `json:"partitionTime"`
	metadata      string
}

// Floor is the watermark stamp seeded for our lanes.
type Floor struct {
	Topic string `json:"topic"`
	Value int64  `json:"value"`
	From  string `json:"from"`
}

// GroupMembers is a consumer group and its active members.
type GroupMembers struct {
	Group   string `json:"group"`
	Members int    `json:"members"`
}

// ErrActiveMembers is a group with members: a migration would race them.
var ErrActiveMembers = errors.New("group has active members")

// MarkerTopic is the topic of our application's migration markers.
func MarkerTopic(app string) string { return app + "-stoatflow-migrate-markers" }

// StampTopic is our application's watermark stamp topic.
func StampTopic(app string) string { return app + "-stoatflow-watermark-changelog" }

// session holds the clients one plan or run uses.
type session struct {
	opts Options
	cl   *kgo.Client
	adm  *kadm.Client
	// sd is the state directory the stores come from, under
	// Options.StateDir.
	sd *stateDir
	// problems are what the plan found that refuses it, unless an
	// override accepts them; refusedStores maps each Kafka Streams store
	// refused so to the store of ours it maps to.
	problems      []Problem
	refusedStores map[string]string
	// meter times the plan's reading of the stores, for Plan.Estimate.
	meter readMeter
	// copied and toCopy are the run's progress over every partition.
	copied, toCopy int64
}

func newSession(o Options) (*session, error) {
	if o.From == "" || o.To == "" || o.Built == nil {
		return nil, errors.New("migrate: both application ids and our topology are required")
	}
	if o.From == o.To {
		return nil, fmt.Errorf("migrate: the Kafka Streams application id and ours are both %q", o.From)
	}
	if o.Direction == "" {
		o.Direction = Forward
	}
	if o.Direction != Forward && o.Direction != Reverse {
		return nil, fmt.Errorf("migrate: direction %q is neither %s nor %s", o.Direction, Forward, Reverse)
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 50_000
	}
	cl, err := kgo.NewClient(append(slices.Clone(o.ClientOpts), kgo.SeedBrokers(o.Seeds...))...)
	if err != nil {
		return nil, fmt.Errorf("migrate: client: %w", err)
	}
	return &session{opts: o, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (s *session) close() { s.cl.Close() }

// MakePlan reads, and writes nothing. A corrupt record, offset metadata of
// an unknown version, a kind or window mismatch, or a repartition topic
// Kafka Streams has not drained is an error, naming what is at fault.
func MakePlan(ctx context.Context, o Options) (*Plan, error) {
	s, err := newSession(o)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.plan(ctx)
}

func (s *session) plan(ctx context.Context) (*Plan, error) {
	if s.opts.Direction == Reverse {
		return s.planReverse(ctx)
	}
	o := s.opts
	p := &Plan{From: o.From, To: o.To, Direction: Forward, EmitFrontier: o.EmitFrontier, Unmapped: []Unmapped{}, Offsets: []OffsetCopy{}, Accepted: []Problem{}, Empty: []EmptyStore{}}
	topics, err := s.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: list topics: %w", err)
	}
	if err := topics.Error(); err != nil {
		return nil, fmt.Errorf("migrate: list topics: %w", err)
	}
	// Our changelogs take the partition count of our most partitioned
	// source topic, as the engine's do.
	var sources []string
	for t, node := range o.Built.SourceTopics {
		if n := o.Built.Nodes[node]; n != nil && n.Source != nil && n.Boundary == nil && !isGlobal(o.Built, node) {
			sources = append(sources, t)
		}
	}
	slices.Sort(sources)
	if p.ourPartitions, err = s.ourPartitionCount(topics); err != nil {
		return nil, err
	}

	var offsets kadm.OffsetResponses
	err = kafka.WhileSettling(ctx, func() (err error) {
		offsets, err = s.adm.FetchOffsets(ctx, o.From)
		return err
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		// Kafka Streams never committed: there is state, perhaps, but no
		// offsets or time to carry over.
		offsets, err = kadm.OffsetResponses{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: committed offsets of group %s: %w", o.From, err)
	}
	meta := map[string]map[int32]kafka.TopicPartitionMetadata{}
	var metaErr error
	offsets.Each(func(r kadm.OffsetResponse) {
		if r.Err != nil || metaErr != nil {
			return
		}
		m, err := DecodeOffsetMetadata(o.From, r.Topic, r.Partition, r.Metadata)
		if err != nil {
			metaErr = err
			return
		}
		if meta[r.Topic] == nil {
			meta[r.Topic] = map[int32]kafka.TopicPartitionMetadata{}
		}
		meta[r.Topic][r.Partition] = m
	})
	if metaErr != nil {
		return nil, fmt.Errorf("migrate: %w", metaErr)
	}
	if err := s.checkInputs(ctx, offsets, sources); err != nil {
		return nil, err
	}

	var sd *stateDir
	if o.StateDir != "" {
		if sd, err = openStateDir(o.StateDir, o.From, nil); err != nil {
			return nil, fmt.Errorf("migrate: --from-state-dir: %w", err)
		}
		if sd.lib, err = loadRocks(o.RocksDBLibrary); err != nil {
			return nil, fmt.Errorf("migrate: --from-state-dir: %w", err)
		}
		s.sd = sd
	}

	prefix := o.From + "-"
	used := map[string]string{}
	seen := map[string]bool{}
	s.refusedStores = map[string]string{}
	var repartition, fkTopics, emptyBuffers []string
	// addStore takes a store planned: refused, its problems are kept and
	// ours is marked fed (an override of the problem starts ours empty).
	addStore := func(sp *StorePlan) {
		if len(sp.problems) > 0 {
			s.problems = append(s.problems, sp.problems...)
			s.refusedStores[sp.Source] = sp.Store
			return
		}
		p.Stores = append(p.Stores, sp)
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		if !strings.HasPrefix(t, prefix) {
			continue
		}
		name := strings.TrimPrefix(t, prefix)
		switch {
		case strings.HasSuffix(name, "-repartition"):
			repartition = append(repartition, t)
			p.Unmapped = append(p.Unmapped, Unmapped{t, "repartition topic: our engine re-keys in memory; it must be drained (checked)"})
			continue
		case strings.HasSuffix(name, "-subscription-registration-topic") || strings.HasSuffix(name, "-subscription-response-topic"):
			// Their records in flight are subscriptions and answers the
			// translated stores would miss.
			fkTopics = append(fkTopics, t)
			p.Unmapped = append(p.Unmapped, Unmapped{t, "a foreign-key join's subscription topic: our join crosses in memory; it must be drained (checked)"})
			continue
		case !strings.HasSuffix(name, "-changelog"):
			p.Unmapped = append(p.Unmapped, Unmapped{t, "not a changelog or repartition topic of Kafka Streams"})
			continue
		}
		store := strings.TrimSuffix(name, "-changelog")
		seen[store] = true
		if strings.Contains(store, "SUPPRESS") || strings.HasSuffix(store, "-store") && s.isSuppress(ctx, t, topics[t]) {
			live, err := s.suppressLive(ctx, t, topics[t])
			if err != nil {
				return nil, err
			}
			if live == 0 {
				p.Unmapped = append(p.Unmapped, Unmapped{t, "suppress buffer, empty: nothing to move (ours starts empty)"})
				// An empty buffer feeds ours of the same name (or
				// --map), else one of ours that nothing feeds.
				if ours, ok := s.ourStoreName(store); ok {
					used[ours] = store
				} else {
					emptyBuffers = append(emptyBuffers, store)
				}
				continue
			}
			// Also from a state directory: Kafka Streams keeps no copy of
			// a suppress buffer there (it is in memory), the changelog is
			// its only one.
			ours, info, ok, err := s.mapStore(p, used, store, t)
			if err != nil {
				return nil, err
			}
			if !ok {
				s.problems = append(s.problems, Problem{Code: ProblemStoreUnmapped, Subject: store, err: ErrSuppressBuffer,
					Message: fmt.Sprintf("%s: %d records buffered, and our topology has no store %s; map it with --map %s=OUR_SUPPRESS_STORE", t, live, store, store),
					Loses:   fmt.Sprintf("the %d records the suppress buffer %s holds are never released", live, store)})
				continue
			}
			if _, isBuffer := info.Builder.(dsl.SuppressBuffer); !isBuffer {
				s.problems = append(s.problems, Problem{Code: ProblemStoreKind, Subject: store, err: ErrSuppressBuffer,
					Message: fmt.Sprintf("%s: %d records buffered, and our store %s is not a suppress buffer", t, live, ours),
					Loses:   fmt.Sprintf("the %d records the suppress buffer %s holds are never released; our store %s starts empty", live, store, ours)})
				s.refusedStores[store] = ours
				continue
			}
			sp, err := s.planStore(ctx, p, store, ours, info, t, topics[t], meta)
			if err != nil {
				return nil, err
			}
			addStore(sp)
			continue
		}
		if sd != nil {
			if _, ok := sd.stores[store]; ok {
				continue // read from the state directory, below
			}
			p.Unmapped = append(p.Unmapped, Unmapped{t, "not in the state directory " + sd.root + ": migrating from the state directory, the changelog is not read"})
			continue
		}
		ours, info, ok, err := s.mapStore(p, used, store, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			s.unmappedProblem(store, t)
			continue
		}
		sp, err := s.planStore(ctx, p, store, ours, info, t, topics[t], meta)
		if err != nil {
			return nil, err
		}
		addStore(sp)
	}
	if sd != nil {
		for _, store := range slices.Sorted(maps.Keys(sd.stores)) {
			seen[store] = true
			t := topology.ChangelogTopic(o.From, store)
			ours, info, ok, err := s.mapStore(p, used, store, t)
			if err != nil {
				return nil, err
			}
			if !ok {
				s.unmappedProblem(store, t)
				continue
			}
			d, exists := topics[t]
			sp, err := s.planStoreOffline(ctx, p, sd.stores[store], ours, info, t, exists, d, meta)
			if err != nil {
				return nil, err
			}
			sp.StateDir = sd.root
			addStore(sp)
		}
	}
	if sd == nil {
		// A foreign-key join's primary store is a copy of its left
		// table's store, which Kafka Streams' resolver reads instead.
		for _, ours := range slices.Sorted(maps.Keys(o.Built.Stores)) {
			info := o.Built.Stores[ours]
			fk, isFK := info.Builder.(dsl.ForeignKeyJoinStore)
			if !isFK || fk.ForeignKeyJoinRole() != "primary" || used[ours] != "" || fk.ForeignKeyJoinLeftStore() == "" {
				continue
			}
			ks := s.ksStoreOf(fk.ForeignKeyJoinLeftStore())
			t := topology.ChangelogTopic(o.From, ks)
			if _, ok := topics[t]; !ok {
				continue // unfed: refused below
			}
			used[ours] = ks
			sp, err := s.planStore(ctx, p, ks, ours, info, t, topics[t], meta)
			if err != nil {
				return nil, err
			}
			if len(sp.problems) > 0 {
				s.problems = append(s.problems, sp.problems...)
				continue
			}
			p.Stores = append(p.Stores, sp)
		}
	}
	s.unfedStores(p, used, emptyBuffers)
	for ks, ours := range o.Map {
		if !seen[ks] {
			where := "changelog topic " + topology.ChangelogTopic(o.From, ks)
			if sd != nil {
				where = "store " + ks + " in " + sd.root
			}
			return nil, fmt.Errorf("migrate: --map %s=%s: %s has no %s", ks, ours, o.From, where)
		}
	}
	if err := s.checkDrained(ctx, append(repartition, fkTopics...), offsets); err != nil {
		return nil, err
	}

	// Offsets of our source topics, with Kafka Streams' partition times.
	for _, t := range sources {
		for part := range topics[t].Partitions {
			r, ok := offsets.Lookup(t, part)
			if !ok || r.Err != nil || r.At < 0 {
				continue
			}
			p.Offsets = append(p.Offsets, OffsetCopy{Topic: t, Partition: part, Offset: r.At, PartitionTime: meta[t][part].PartitionTime, metadata: r.Metadata})
		}
	}
	slices.SortFunc(p.Offsets, func(a, b OffsetCopy) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	if err := s.checkNotRun(ctx, p); err != nil {
		return nil, err
	}

	// The floor: Kafka Streams' stream time, the smallest partition time
	// of the partitions its aggregations read (the repartition topics when
	// it re-keys, else the input), so that what it would have dropped as
	// late we drop.
	if o.Built.EventTime {
		from := repartition
		what := "partition time of the repartition topics"
		if len(from) == 0 {
			from, what = sources, "partition time of the input topics"
		}
		floor := int64(math.MaxInt64)
		for _, t := range from {
			for _, m := range meta[t] {
				if m.PartitionTime >= 0 {
					floor = min(floor, m.PartitionTime)
				}
			}
		}
		if floor != math.MaxInt64 {
			p.Floor = &Floor{Topic: StampTopic(o.To), Value: floor, From: "smallest " + what + " committed by " + o.From}
		}
	}
	for _, sp := range p.Stores {
		if sp.Frontier != nil {
			if err := s.planFrontier(ctx, p, sp, meta, repartition, sources); err != nil {
				return nil, err
			}
		}
	}
	if p.Groups, err = s.groups(ctx); err != nil {
		return nil, err
	}
	if err := s.readMarkers(ctx, p); err != nil {
		return nil, err
	}
	p.Estimate = s.meter.estimate(p)
	if err := settle(p, o.Overrides, s.problems); err != nil {
		return p, err
	}
	// What the accepted problems leave empty.
	empty := map[string]bool{}
	for _, pr := range p.Accepted {
		switch ours, refused := s.refusedStores[pr.Subject]; {
		case pr.Code == ProblemStoreUnfed:
			empty[pr.Subject] = true
		case refused && pr.Code != ProblemInputNotRead && pr.Code != ProblemInputNotCommitted:
			empty[ours] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(empty)) {
		if info := o.Built.Stores[name]; info != nil && info.ChangelogTopic != "" {
			p.Empty = append(p.Empty, EmptyStore{Store: name, Topic: info.ChangelogTopic})
		}
	}
	return p, nil
}

// ErrAlreadyRunning is our group having committed offsets other than the
// ones a migration copies: our application has processed input since, and
// migrating again would rewind it and regress its state.
var ErrAlreadyRunning = errors.New("our application has run since it was migrated")

// checkNotRun refuses when our group's committed offsets differ from Kafka
// Streams': a re-run is only safe before our application processes
// anything (the same offsets: the copy is then a no-op).
func (s *session) checkNotRun(ctx context.Context, p *Plan) error {
	var ours kadm.OffsetResponses
	err := kafka.WhileSettling(ctx, func() (err error) {
		ours, err = s.adm.FetchOffsets(ctx, s.opts.To)
		return err
	})
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("migrate: committed offsets of group %s: %w", s.opts.To, err)
	}
	want := map[string]map[int32]int64{}
	for _, oc := range p.Offsets {
		if want[oc.Topic] == nil {
			want[oc.Topic] = map[int32]int64{}
		}
		want[oc.Topic][oc.Partition] = oc.Offset
	}
	var bad error
	ours.Each(func(r kadm.OffsetResponse) {
		if bad != nil || r.Err != nil || r.At < 0 {
			return
		}
		if w, ok := want[r.Topic][r.Partition]; !ok || w != r.At {
			ks := "none"
			if ok {
				ks = strconv.FormatInt(w, 10)
			}
			bad = fmt.Errorf("migrate: group %s has committed %s[%d] at %d, %s at %s: %w; migrating again would rewind it",
				s.opts.To, r.Topic, r.Partition, r.At, s.opts.From, ks, ErrAlreadyRunning)
		}
	})
	return bad
}

// groups counts the members of both groups.
func (s *session) groups(ctx context.Context) ([]GroupMembers, error) {
	var out []GroupMembers
	err := kafka.WhileSettling(ctx, func() error {
		out = out[:0]
		groups, err := s.adm.DescribeGroups(ctx, s.opts.From, s.opts.To)
		if err != nil {
			return fmt.Errorf("migrate: describe groups: %w", err)
		}
		for _, g := range []string{s.opts.From, s.opts.To} {
			d := groups[g]
			if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
				return fmt.Errorf("migrate: describe group %s: %w", g, d.Err)
			}
			out = append(out, GroupMembers{Group: g, Members: len(d.Members)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func isGlobal(b *topology.Built, node string) bool {
	return b.Global != nil && slices.ContainsFunc(b.Global.Sources, func(n *topology.Node) bool { return n.Name == node })
}

// unmappedProblem refuses a Kafka Streams store that maps to no store of
// ours.
func (s *session) unmappedProblem(store, topic string) {
	s.problems = append(s.problems, Problem{Code: ProblemStoreUnmapped, Subject: store,
		Message: fmt.Sprintf("store %s (%s): our topology has no store %s; map it with --map %s=OUR_STORE", store, topic, store, store),
		Loses:   fmt.Sprintf("the state of Kafka Streams' store %s", store)})
}

// ourStoreName is the store of ours Kafka Streams' store maps to, by
// --map or by name, if our topology has it.
func (s *session) ourStoreName(store string) (string, bool) {
	ours, mapped := s.opts.Map[store]
	if !mapped {
		ours = store
	}
	_, ok := s.opts.Built.Stores[ours]
	return ours, ok
}

// unfedStores refuses every store of ours that no Kafka Streams store
// feeds (it would start empty, where Kafka Streams had state), but for a
// suppress buffer when Kafka Streams has an empty one unaccounted for.
// Where Kafka Streams has a store of the same kind mapped to nothing, the
// problem suggests the --map (a typo in a name).
func (s *session) unfedStores(p *Plan, used map[string]string, emptyBuffers []string) {
	o := s.opts
	fed := map[string]bool{}
	for _, ours := range s.refusedStores {
		fed[ours] = true
	}
	var unmapped []Problem
	for _, pr := range s.problems {
		if pr.Code == ProblemStoreUnmapped {
			unmapped = append(unmapped, pr)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.Built.Stores)) {
		info := o.Built.Stores[name]
		if _, ok := used[name]; ok || fed[name] || info.ChangelogTopic == "" || info.Global || strings.HasSuffix(name, "-emitfrontier") {
			continue
		}
		if _, isBuffer := info.Builder.(dsl.SuppressBuffer); isBuffer && len(emptyBuffers) > 0 {
			p.Unmapped = append(p.Unmapped, Unmapped{info.ChangelogTopic, fmt.Sprintf("our suppress buffer %s starts empty, as Kafka Streams' %s is", name, emptyBuffers[0])})
			emptyBuffers = emptyBuffers[1:]
			continue
		}
		msg := fmt.Sprintf("our store %s (%s) has no Kafka Streams store to come from", name, info.Builder.Kind())
		var like []string
		for _, u := range unmapped {
			if !slices.Contains(like, u.Subject) {
				like = append(like, u.Subject)
			}
		}
		if len(like) > 0 {
			msg += fmt.Sprintf("; Kafka Streams' stores mapped to none of ours: %s (--map KS_STORE=%s)", strings.Join(like, ", "), name)
		}
		s.problems = append(s.problems, Problem{Code: ProblemStoreUnfed, Subject: name, Message: msg,
			Loses: fmt.Sprintf("our store %s starts empty", name)})
	}
}

// checkInputs compares the input topics: those Kafka Streams committed
// offsets for (its repartition topics aside) against the topics our
// topology reads. One ours does not read is refused (its position, and
// what the topology made of it, would be left behind), and one of ours
// that Kafka Streams committed nothing for while it holds records (our
// group would start it at auto.offset.reset, not where Kafka Streams
// was).
func (s *session) checkInputs(ctx context.Context, offsets kadm.OffsetResponses, sources []string) error {
	o := s.opts
	committed := map[string][]int32{}
	offsets.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.At >= 0 && !strings.HasPrefix(r.Topic, o.From+"-") {
			committed[r.Topic] = append(committed[r.Topic], r.Partition)
		}
	})
	for _, t := range slices.Sorted(maps.Keys(committed)) {
		if _, ok := o.Built.SourceNodeFor(t); ok {
			continue
		}
		s.problems = append(s.problems, Problem{Code: ProblemInputNotRead, Subject: t,
			Message: fmt.Sprintf("input topic %s: %s committed offsets for %d partitions of it, and our topology does not read it", t, o.From, len(committed[t])),
			Loses:   fmt.Sprintf("Kafka Streams' position in %s, and what its topology made of the topic's records after the cutover", t)})
	}
	var fresh []string
	for _, t := range sources {
		if _, ok := committed[t]; !ok {
			fresh = append(fresh, t)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	starts, err := s.adm.ListStartOffsets(ctx, fresh...)
	if err != nil {
		return fmt.Errorf("migrate: start offsets of %s: %w", strings.Join(fresh, ", "), err)
	}
	ends, err := s.adm.ListEndOffsets(ctx, fresh...)
	if err != nil {
		return fmt.Errorf("migrate: end offsets of %s: %w", strings.Join(fresh, ", "), err)
	}
	for _, t := range fresh {
		var held int64
		ends.Each(func(l kadm.ListedOffset) {
			if l.Topic != t || l.Err != nil {
				return
			}
			if st, ok := starts.Lookup(t, l.Partition); ok && st.Err == nil {
				held += l.Offset - st.Offset
			}
		})
		if held == 0 {
			continue // nothing Kafka Streams could have read
		}
		s.problems = append(s.problems, Problem{Code: ProblemInputNotCommitted, Subject: t,
			Message: fmt.Sprintf("input topic %s of our topology: %s committed no offset for it, and it holds %d records", t, o.From, held),
			Loses:   fmt.Sprintf("our group has no position in %s: it starts at auto.offset.reset (earliest reads its %d records again into the migrated state, latest skips them)", t, held)})
	}
	return nil
}

func (s *session) read(ctx context.Context, topic string, from kafka.Positions, fn func(*kgo.Record) error) (kafka.Positions, error) {
	return kafka.ReadToEnd(ctx, s.opts.Seeds, topic, from, fn, s.opts.ClientOpts...)
}

// readOurs reads one of our topics that the run may have just written,
// to its high watermark: Apache Kafka answers EndTxn before it writes the
// commit markers, so the last stable offset can still stop before the
// run's last transaction, and a read to it would miss what the run
// wrote (the verification failed so in CI's real tier).
func (s *session) readOurs(ctx context.Context, topic string, from kafka.Positions, fn func(*kgo.Record) error) (kafka.Positions, error) {
	return kafka.ReadToEndSettled(ctx, s.opts.Seeds, topic, from, fn, s.opts.ClientOpts...)
}

func partitionsOf(d kadm.TopicDetail) []int32 { return slices.Sorted(maps.Keys(d.Partitions)) }

// isSuppress tells a suppress buffer named by Suppressed.withName from a
// store: its records carry the buffer's version header.
func (s *session) isSuppress(ctx context.Context, topic string, d kadm.TopicDetail) bool {
	found := false
	errStop := errors.New("stop")
	_, _ = s.read(ctx, topic, kafka.FromLogStart(partitionsOf(d)...), func(r *kgo.Record) error {
		_, found = SuppressVersion(headerMap(r))
		return errStop
	})
	return found
}

// suppressLive counts the keys a suppress buffer still holds.
func (s *session) suppressLive(ctx context.Context, topic string, d kadm.TopicDetail) (int, error) {
	live := map[string]bool{}
	_, err := s.read(ctx, topic, kafka.FromLogStart(partitionsOf(d)...), func(r *kgo.Record) error {
		if r.Value == nil {
			delete(live, string(r.Key))
		} else {
			live[string(r.Key)] = true
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("migrate: read suppress buffer %s: %w", topic, err)
	}
	return len(live), nil
}

func headerMap(r *kgo.Record) map[string][]byte {
	if len(r.Headers) == 0 {
		return nil
	}
	m := make(map[string][]byte, len(r.Headers))
	for _, h := range r.Headers {
		m[h.Key] = h.Value
	}
	return m
}

// checkDrained refuses a repartition topic holding records Kafka Streams
// has not processed: we re-key in memory, and they would be lost.
func (s *session) checkDrained(ctx context.Context, topics []string, offsets kadm.OffsetResponses) error {
	if len(topics) == 0 {
		return nil
	}
	ends, err := s.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("migrate: end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	for _, t := range topics {
		from := kafka.Positions{}
		ends.Each(func(l kadm.ListedOffset) {
			if l.Topic != t || l.Err != nil {
				return
			}
			at := kafka.LogStart
			if r, ok := offsets.Lookup(t, l.Partition); ok && r.Err == nil && r.At >= 0 {
				at = r.At
			}
			if at < l.Offset {
				from[l.Partition] = at
			}
		})
		pending := map[int32]int64{}
		count := func(r *kgo.Record) error {
			// Our engine's watermark markers are not records to
			// process: the last epoch's lie past the committed offsets.
			for _, h := range r.Headers {
				if h.Key == watermark.MarkerHeader {
					return nil
				}
			}
			pending[r.Partition]++
			return nil
		}
		if _, err := s.read(ctx, t, from, count); err != nil {
			return fmt.Errorf("migrate: read repartition topic %s: %w", t, err)
		}
		for _, part := range slices.Sorted(maps.Keys(pending)) {
			return fmt.Errorf("migrate: repartition topic %s[%d] holds %d records %s has not processed (from offset %d): stop its input and let it drain first",
				t, part, pending[part], s.opts.From, from[part])
		}
	}
	return nil
}

// mapStore pairs Kafka Streams' store with ours, by --map or by name. ok
// is false when ours has none (the caller refuses it: unmappedProblem).
func (s *session) mapStore(p *Plan, used map[string]string, store, topic string) (string, *topology.StoreInfo, bool, error) {
	o := s.opts
	ours, mapped := o.Map[store]
	if !mapped {
		ours = store
	}
	info, ok := o.Built.Stores[ours]
	if !ok {
		if mapped {
			return "", nil, false, fmt.Errorf("migrate: --map %s=%s: our topology has no store %s", store, ours, ours)
		}
		return "", nil, false, nil
	}
	if prev, dup := used[ours]; dup {
		return "", nil, false, fmt.Errorf("migrate: stores %s and %s of %s both map to our store %s", prev, store, o.From, ours)
	}
	used[ours] = store
	return ours, info, true, nil
}

// windowed is what our window and session store builders tell.
type windowed interface {
	Retention() int64
}

type sized interface {
	WindowSize() int64
}

func (s *session) planStore(ctx context.Context, p *Plan, ksStore, ours string, info *topology.StoreInfo, topic string, d kadm.TopicDetail, meta map[string]map[int32]kafka.TopicPartitionMetadata) (*StorePlan, error) {
	sp, err := s.newStorePlan(ctx, ksStore, ours, info, topic, true)
	if err != nil || sp.kindProblem() {
		// A store whose kind or configuration is not ours is not read:
		// its records would be read as another layout.
		return sp, err
	}
	parts := partitionsOf(d)
	counts := make(map[int32]*PartitionPlan, len(parts))
	for _, part := range parts {
		counts[part] = &PartitionPlan{Partition: part}
	}
	var live map[int32]map[string]Entry
	if sp.Frontier != nil || sp.Kind == JoinOuter {
		live = map[int32]map[string]Entry{}
	}
	var last fkLast
	if sp.Kind == FKSubscription {
		last = fkLast{}
	}
	countRecord := func(r *kgo.Record) error {
		e, err := s.decode(sp, r)
		if err != nil {
			sp.recordProblem(err)
			return nil
		}
		if last != nil {
			last.keep(r)
		}
		if sp.check != nil {
			sp.check.entry(e, fmt.Sprintf("%s[%d] offset %d", r.Topic, r.Partition, r.Offset))
		}
		c := counts[r.Partition]
		c.Records++
		if e.Value == nil {
			c.Tombstones++
		}
		if live != nil {
			if live[r.Partition] == nil {
				live[r.Partition] = map[string]Entry{}
			}
			if e.Value == nil {
				delete(live[r.Partition], string(e.Key))
			} else {
				live[r.Partition][string(e.Key)] = Entry{Start: e.Start, End: e.End, Timestamp: e.Timestamp, Left: e.Left, Waiting: e.Waiting}
			}
		}
		return nil
	}
	var ends kafka.Positions
	err = s.meter.measure(func() (n int64, err error) {
		ends, err = s.read(ctx, topic, kafka.FromLogStart(parts...), func(r *kgo.Record) error {
			n++
			return countRecord(r)
		})
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: read %s: %w", topic, err)
	}
	for _, part := range parts {
		counts[part].End = ends[part]
		sp.Partitions = append(sp.Partitions, *counts[part])
	}
	if last != nil {
		sp.checkSubscriptions(last)
	}
	if sp.Frontier != nil {
		sp.liveWindows = live
	}
	if sp.Kind == JoinOuter {
		sp.NullJoins = planNullJoins(live, sp.outerClose, meta)
	}
	if sp.check != nil {
		sp.check.setStreamTime(maxPartitionTime(meta))
	}
	sp.finish()
	return sp, nil
}

// maxPartitionTime is the largest partition time Kafka Streams committed,
// -1 when none.
func maxPartitionTime(meta map[string]map[int32]kafka.TopicPartitionMetadata) int64 {
	t := int64(-1)
	for _, ms := range meta {
		for _, m := range ms {
			t = max(t, m.PartitionTime)
		}
	}
	return t
}

// kindProblem tells a store whose records cannot be read as ours.
func (sp *StorePlan) kindProblem() bool {
	return slices.ContainsFunc(sp.problems, func(p Problem) bool { return p.Code == ProblemStoreKind })
}

// recordProblem counts a record that does not decode; the first refuses
// the store, naming it.
func (sp *StorePlan) recordProblem(err error) {
	sp.badRecords++
	if sp.badRecords == 1 {
		sp.problem(ProblemRecord, err, "store %s: %v", sp.Source, err)
	}
}

// finish completes the store's problems once every record is read.
func (sp *StorePlan) finish() {
	for i, pr := range sp.problems {
		if pr.Code == ProblemRecord && sp.badRecords > 1 {
			sp.problems[i].Message += fmt.Sprintf(" (and %d more records that do not decode)", sp.badRecords-1)
		}
	}
	if sp.check != nil {
		for _, pr := range sp.check.problems(sp.Source, sp.Store) {
			sp.problem(pr.Code, nil, "%s", pr.Message)
		}
	}
}

// planStoreOffline plans a store read from the state directory: its
// entries are counted and decoded (every check the changelog path makes),
// each task's partition is one source partition, and its end is the
// changelog offset the store says it is complete to. The changelog
// topic's configuration is checked when the topic still exists; the
// segments' names are checked against our store's retention either way.
func (s *session) planStoreOffline(ctx context.Context, p *Plan, st *ksStore, ours string, info *topology.StoreInfo, topic string, exists bool, _ kadm.TopicDetail, meta map[string]map[int32]kafka.TopicPartitionMetadata) (*StorePlan, error) {
	sp, err := s.newStorePlan(ctx, st.name, ours, info, topic, exists)
	if err != nil || sp.kindProblem() {
		return sp, err
	}
	if sp.Kind == Versioned {
		// Kafka Streams' RocksDBVersionedStore keeps a latest-value
		// store and segments of several versions per entry
		// (RocksDBVersionedStoreSegmentValueFormatter), which the state
		// directory reader does not decode; its changelog has every
		// version in the layout ours restores.
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a versioned store, which migrate carries from Kafka Streams' changelog %s only, not from the state directory (its segments' layout is not read): migrate without --from-state-dir while the changelog topic exists", st.name, ours, topic)
		return sp, nil
	}
	// A join's shared store is a key-value store of lists there.
	keyValue := sp.Kind == KeyValue || sp.Kind == JoinOuter
	if st.segmented == keyValue {
		what := "a key-value store (rocksdb/" + st.name + ")"
		if st.segmented {
			what = "a segmented (window or session) store"
		}
		sp.problem(ProblemStoreKind, nil, "store %s: %s in the state directory, and our store %s is a %s store", st.name, what, ours, info.Builder.Kind())
		return sp, nil
	}
	kind := sp.Kind
	if kind == JoinOuter {
		kind = KeyValue
	}
	r := &storeReader{st: st, kind: kind, topic: topic, plainTime: streamTime(meta), lib: s.sd.lib}
	_, r.timeOrdered = s.opts.Built.Stores[ours+"-emitfrontier"]
	if w, ok := info.Builder.(windowed); ok && st.segmented {
		r.interval = segmentInterval(w.Retention())
	}
	sp.reader = r
	var live map[int32]map[string]Entry
	if sp.Frontier != nil || sp.Kind == JoinOuter {
		live = map[int32]map[string]Entry{}
	}
	for _, part := range slices.Sorted(maps.Keys(st.tasks)) {
		pp := PartitionPlan{Partition: part}
		if err := s.meter.measure(func() (int64, error) {
			err := r.each(part, func(path string, key, value []byte, ts int64) error {
				e, err := s.decodeState(sp, path, key, value, ts)
				if err != nil {
					sp.recordProblem(err)
					return nil
				}
				if sp.check != nil {
					sp.check.entry(e, fmt.Sprintf("%s key %x", path, key))
				}
				pp.Records++
				if live != nil {
					if live[part] == nil {
						live[part] = map[string]Entry{}
					}
					live[part][string(e.Key)] = Entry{Start: e.Start, End: e.End, Timestamp: e.Timestamp, Left: e.Left, Waiting: e.Waiting}
				}
				return nil
			})
			return pp.Records, err
		}); err != nil {
			var sde *StateDirError
			if !errors.As(err, &sde) {
				return nil, fmt.Errorf("migrate: store %s: %w", st.name, err)
			}
			// The store's folders or entries are not the layout ours
			// reads (a segment named off our retention's interval).
			sp.problem(ProblemStoreKind, err, "store %s: %v", st.name, err)
			return sp, nil
		}
		if pp.End, err = r.end(part); err != nil {
			return nil, fmt.Errorf("migrate: store %s: %w", st.name, err)
		}
		sp.Partitions = append(sp.Partitions, pp)
	}
	if sp.Kind == JoinOuter {
		sp.NullJoins = planNullJoins(live, sp.outerClose, meta)
	} else {
		sp.liveWindows = live
	}
	if sp.check != nil {
		sp.check.setStreamTime(maxPartitionTime(meta))
	}
	sp.finish()
	return sp, nil
}

// streamTime is Kafka Streams' largest committed partition time, the
// timestamp given to entries of stores that keep none; now when nothing
// is committed.
func streamTime(meta map[string]map[int32]kafka.TopicPartitionMetadata) int64 {
	t := int64(-1)
	for _, ms := range meta {
		for _, m := range ms {
			t = max(t, m.PartitionTime)
		}
	}
	if t < 0 {
		t = time.Now().UnixMilli()
	}
	return t
}

// decodeState decodes an entry of the state directory, laid out as its
// changelog record, with the checks decode makes.
func (s *session) decodeState(sp *StorePlan, path string, key, value []byte, ts int64) (Entry, error) {
	e, err := Decode(sp.Kind, key, value, ts, sp.valueCheck)
	if err == nil && sp.keyCheck != nil {
		if kerr := sp.keyCheck(e.LaneKey); kerr != nil {
			err = fmt.Errorf("key: %w", kerr)
		}
	}
	if err == nil {
		err = sp.sample(e)
	}
	if err != nil {
		return e, &StateDirError{Path: path, Key: key, Err: err}
	}
	return e, nil
}

// newStorePlan checks our store against Kafka Streams' (kind, logging,
// and, when checkTopic, the changelog topic's cleanup policy and
// retention) and sets up its checks and frontier.
func (s *session) newStorePlan(ctx context.Context, ksStore, ours string, info *topology.StoreInfo, topic string, checkTopic bool) (*StorePlan, error) {
	o := s.opts
	sp := &StorePlan{Source: ksStore, Store: ours, SourceTopic: topic, Topic: info.ChangelogTopic,
		keyCheck: serdeCheck(info.Builder.KeySerdeName()), valueCheck: serdeCheck(info.Builder.ValueSerdeName())}
	kind, ok := kindOf(info.Builder.Kind())
	if gb, isGrace := info.Builder.(dsl.GraceBuffer); isGrace {
		// Kafka Streams' buffer (RocksDBTimeOrderedKeyValueBuffer) logs a
		// BufferValue with its record context; ours logs our own layout,
		// translated into from its changelog (gracebuffer.go).
		switch {
		case o.Direction == Reverse:
			sp.problem(ProblemStoreKind, nil, "store %s: our store %s is the grace buffer of the stream-table join %s, which the way back does not carry yet (Kafka Streams' layout is a BufferValue)", ksStore, ours, gb.GraceBufferOf())
			return sp, nil
		case s.sd != nil:
			sp.problem(ProblemStoreKind, nil, "store %s: our store %s is the grace buffer of the stream-table join %s, which migrate carries from Kafka Streams' changelog only, not from the state directory: migrate without --from-state-dir while the changelog topic exists", ksStore, ours, gb.GraceBufferOf())
			return sp, nil
		}
	}
	if !ok {
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s is a %s store, a kind that cannot be migrated", ksStore, ours, info.Builder.Kind())
		return sp, nil
	}
	sp.Kind = kind
	if _, isGrace := info.Builder.(dsl.GraceBuffer); isGrace {
		sp.Kind = JoinBuffer
	}
	if fk, isFK := info.Builder.(dsl.ForeignKeyJoinStore); isFK {
		if done, err := s.fkStorePlan(ctx, sp, fk, info, checkTopic); done || err != nil {
			return sp, err
		}
	} else if s.opts.Direction != Reverse && kind == KeyValue && s.besideFKResolver(info) {
		// The join's result store: Kafka Streams keeps it in the left
		// table's task, ours in the resolver's, fed by boundaries.
		n, err := s.subtopologyPartitions(ctx, info)
		if err != nil {
			return nil, err
		}
		sp.byKey, sp.placeBy = true, n
	}
	if sb, isBuffer := info.Builder.(dsl.SuppressBuffer); isBuffer {
		// Our buffer's store is raw bytes; the suppressed table's key
		// layout says where its lane key ends.
		n, known := sb.SuppressKeySuffix()
		if !known {
			sp.problem(ProblemStoreKind, ErrSuppressBuffer, "store %s: the key layout of the table our suppress buffer %s holds is not known (a windowed table derived by a table operation), so the lane of its entries is not", ksStore, ours)
			return sp, nil
		}
		sp.Kind, sp.keySuffix = SuppressBuffer, n
	}
	if !s.joinRolesMatch(sp, ksStore, ours, info) {
		return sp, nil
	}
	if info.ChangelogTopic == "" {
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s has logging disabled; there is no changelog to write", ksStore, ours)
		return sp, nil
	}
	if checkTopic {
		if err := s.checkTopicConfig(ctx, sp, ksStore, ours, info, topic); err != nil {
			return nil, err
		}
	}
	if ss, ok := info.Builder.(interface{ Serdes() (serde.Any, serde.Any) }); ok && sp.Kind != SuppressBuffer {
		// A serde left to the configuration that no processor resolved
		// has no name: it cannot decode, and is not sampled.
		k, v := ss.Serdes()
		if k != nil && k.Name() != "" {
			sp.keySerde = k
		}
		if v != nil && v.Name() != "" {
			sp.valueSerde = v
		}
	}
	if ws, ok := info.Builder.(dsl.WindowedStore); ok {
		// Our windowed aggregation's store says its window definition:
		// the grace and size the frontier needs, and what Kafka Streams'
		// records are held against.
		spec := ws.WindowSpec()
		sp.closeOffset, sp.metaOffset = frontierOffsets(spec)
		sp.session = spec.Kind == "session"
		sp.check = newWindowCheck(spec)
	} else if w, ok := info.Builder.(windowed); ok && kind != KeyValue {
		// A window store of the Processor API: its grace is taken to be
		// its retention less its window size.
		if z, ok := info.Builder.(sized); ok {
			sp.closeOffset, sp.metaOffset = w.Retention(), w.Retention()-z.WindowSize()
		} else {
			sp.closeOffset, sp.metaOffset, sp.session = w.Retention(), w.Retention(), true // gap + grace
		}
	}
	if fr, ok := o.Built.Stores[ours+"-emitfrontier"]; ok && (kind == Window || kind == Session) {
		sp.Frontier = &FrontierPlan{Store: ours + "-emitfrontier", Topic: fr.ChangelogTopic}
	}
	return sp, nil
}

// frontierOffsets are a window definition's closeOffset and metaOffset
// (StorePlan). Kafka Streams records, when it emits, the window close time
// W = stream time - grace (- gap, for sessions) and has emitted:
//
//   - time windows with end <= W: our close (end + grace) <= W + grace;
//   - sliding windows with end <= W - 1 (both bounds inclusive): our
//     close (end + 1 + grace) <= W + grace;
//   - sessions with end <= W - 1: our close (end + gap + grace) <= W +
//     gap + grace - 1.
func frontierOffsets(s dsl.WindowSpec) (closeOffset, metaOffset int64) {
	switch s.Kind {
	case "sliding":
		return s.Size + 1 + s.Grace, s.Grace
	case "session":
		return s.Gap + s.Grace, s.Gap + s.Grace - 1
	}
	return s.Size + s.Grace, s.Grace
}

// checkTopicConfig checks the changelog topic's cleanup policy against
// our store's kind, and a windowed store's retention against ours.
func (s *session) checkTopicConfig(ctx context.Context, sp *StorePlan, ksStore, ours string, info *topology.StoreInfo, topic string) error {
	kind := sp.Kind
	cfgs, err := s.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return fmt.Errorf("migrate: configs of %s: %w", topic, err)
	}
	rc, err := cfgs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return fmt.Errorf("migrate: configs of %s: %w", topic, err)
	}
	conf := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			conf[c.Key] = *c.Value
		}
	}
	if versionedProblem(sp, ksStore, ours, info, topic, conf) {
		return nil
	}
	windowedTopic := strings.Contains(conf["cleanup.policy"], "delete")
	if windowedTopic != (kind == Window || kind == Session) {
		what := "a key-value store's (compact)"
		if windowedTopic {
			what = "a window or session store's (compact,delete)"
		}
		sp.problem(ProblemStoreKind, nil, "store %s: %s's cleanup.policy %q is %s, and our store %s is a %s store",
			ksStore, topic, conf["cleanup.policy"], what, ours, info.Builder.Kind())
		return nil
	}
	if w, ok := info.Builder.(windowed); ok && kind != KeyValue {
		// Kafka always describes retention.ms (its default when the topic
		// sets none); without it the window size cannot be checked, and a
		// check that cannot be made is not passed.
		ret, err := strconv.ParseInt(conf["retention.ms"], 10, 64)
		if err != nil {
			sp.problem(ProblemRetention, nil, "store %s: %s's retention.ms %q does not say the store's retention, so its window size and grace cannot be checked against ours (%s)",
				ksStore, topic, conf["retention.ms"], ours)
			return nil
		}
		if ret != w.Retention()+windowedChangelogExtraRetention {
			sp.problem(ProblemRetention, nil, "store %s: window size or grace mismatch: %s's retention.ms %d is a store retention of %d ms, ours (%s) keeps %d ms (window size + grace, or its retention)",
				ksStore, topic, ret, ret-windowedChangelogExtraRetention, ours, w.Retention())
		}
	}
	return nil
}

// decode decodes a record of sp's source changelog, positioned.
func (s *session) decode(sp *StorePlan, r *kgo.Record) (Entry, error) {
	var e Entry
	var err error
	if sp.Kind == SuppressBuffer {
		e, err = DecodeSuppress(r.Key, r.Value, headerMap(r), r.Timestamp.UnixMilli(), sp.keySuffix)
	} else {
		key := r.Key
		if sp.Kind == JoinBuffer {
			key, err = ourJoinBufferKey(key)
		}
		if err == nil {
			e, err = Decode(sp.Kind, key, r.Value, r.Timestamp.UnixMilli(), sp.valueCheck)
		}
		if err == nil && sp.Kind == JoinBuffer {
			e, err = translateJoinBuffer(e)
		}
		if err == nil && sp.Kind == FKSubscription && sp.fkLast != nil {
			// Planned: only each key's last record is translated.
			if sp.fkLast.superseded(r) {
				return e, errSuperseded
			}
			e, err = sp.translateSubscription(e)
		}
	}
	if err == nil && sp.keyCheck != nil {
		if kerr := sp.keyCheck(e.LaneKey); kerr != nil {
			err = fmt.Errorf("key: %w", kerr)
		}
	}
	if err == nil {
		err = sp.sample(e)
	}
	if err != nil {
		return e, &RecordError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Store: sp.Source, Err: err}
	}
	return e, nil
}

// sampleRecords is how many records of each store are decoded with our
// serdes: a serde that cannot read Kafka Streams' bytes (JSON for Avro, a
// schema that differs) fails on the first; reading every record so would
// cost a migration of millions most of its time.
const sampleRecords = 1000

// sample decodes one of the store's first records with our serdes.
func (sp *StorePlan) sample(e Entry) error {
	if sp.sampled >= sampleRecords || e.Value == nil {
		return nil
	}
	sp.sampled++
	if sp.keySerde != nil {
		key := e.LaneKey
		if sp.Kind == JoinOuter {
			// Our outer store's key serde reads the whole
			// TimestampedKeyAndJoinSide.
			key = e.Key
		}
		if _, err := sp.keySerde.DeserializeAny(sp.Topic, key); err != nil {
			return fmt.Errorf("key: our serde %s cannot read it: %w", sp.keySerde.Name(), err)
		}
	}
	if sp.valueSerde != nil {
		if _, err := sp.valueSerde.DeserializeAny(sp.Topic, e.Value); err != nil {
			return fmt.Errorf("value: our serde %s cannot read it: %w", sp.valueSerde.Name(), err)
		}
	}
	return nil
}

// planFrontier computes an on-window-close store's frontier and the
// windows a cutover without it would emit again. Kafka Streams emitted,
// per task, every window whose end plus grace is at or before its stream
// time when it last emitted: its processor metadata (keyed by the store
// name) holds that stream time less the grace.
func (s *session) planFrontier(_ context.Context, p *Plan, sp *StorePlan, meta map[string]map[int32]kafka.TopicPartitionMetadata, repartition, sources []string) error {
	fp := sp.Frontier
	// bound is, per source partition, the largest close time Kafka
	// Streams emitted there; stream is its stream time there: windows
	// closing in (bound, stream] had closed and were not emitted yet.
	bound, stream := map[int32]int64{}, map[int32]int64{}
	from := map[int32]string{}
	for t, ms := range meta {
		for part, m := range ms {
			if v, ok := m.Processor[sp.Source]; ok {
				b := v + sp.metaOffset
				if cur, seen := bound[part]; !seen || from[part] != "processor metadata" || b < cur {
					bound[part], stream[part], from[part] = b, max(b, m.PartitionTime), "processor metadata"
				}
				continue
			}
			if from[part] == "processor metadata" || m.PartitionTime < 0 {
				continue
			}
			if !slices.Contains(repartition, t) && (len(repartition) > 0 || !slices.Contains(sources, t)) {
				continue
			}
			if cur, seen := bound[part]; !seen || m.PartitionTime < cur {
				bound[part], stream[part], from[part] = m.PartitionTime, m.PartitionTime, "partition time"
			}
		}
	}
	fp.Value, fp.From = math.MaxInt64, ""
	var maxTs int64 = -1
	for _, pp := range sp.Partitions {
		for _, e := range sp.liveWindows[pp.Partition] {
			maxTs = max(maxTs, e.Timestamp)
		}
		if b, ok := bound[pp.Partition]; ok && pp.Records > 0 {
			if b < fp.Value {
				fp.Value, fp.From = b, from[pp.Partition]
			}
		}
	}
	if fp.From == "" {
		fp.Value, fp.From = maxTs, "max changelog timestamp"
		for _, pp := range sp.Partitions {
			bound[pp.Partition], stream[pp.Partition] = maxTs, maxTs
		}
	}
	for part, ws := range sp.liveWindows {
		b, ok := bound[part]
		if !ok {
			continue
		}
		for _, e := range ws {
			closeTime := sp.closeTime(e)
			switch {
			case closeTime <= b:
				fp.ReEmitted++
				if closeTime > fp.Value {
					fp.ReEmittedWithFrontier++
				}
			case closeTime <= stream[part]:
				fp.Pending++
			}
		}
	}
	return nil
}

// closeTime is a live window's close time under our definition.
func (sp *StorePlan) closeTime(e Entry) int64 {
	if sp.session {
		return e.End + sp.closeOffset
	}
	return e.Start + sp.closeOffset
}

// MarshalJSON writes the store's plan with camelCase keys (docs/cli.md)
// and its null-joins also under null_joins, the key docs/migration.md
// gave scripts before that convention, so that those scripts keep
// reading it.
func (s StorePlan) MarshalJSON() ([]byte, error) {
	type plain StorePlan
	return json.Marshal(struct {
		plain
		OldNullJoins *NullJoinPlan `json:"null_joins,omitempty"`
	}{plain(s), s.NullJoins})
}

// versionedCompactionExtra is Kafka Streams'
// VersionedChangelogTopicConfig's
// VERSIONED_STORE_CHANGE_LOG_ADDITIONAL_COMPACTION_LAG_MS: a versioned
// store's changelog has min.compaction.lag.ms its history retention plus
// this.
const versionedCompactionExtra = int64(24 * time.Hour / time.Millisecond)

// versionedProblem tells, from the changelog topic's
// min.compaction.lag.ms, a Kafka Streams store that is versioned
// (VersionedChangelogTopicConfig sets it, other changelogs leave the
// broker's default, 0) mapped to a store of ours that is not, or the
// reverse, and a history retention that differs from ours. Either way
// the copy would not be the history a join reads as of a time: a plain
// store's changelog holds each key's latest value only, and a versioned
// one's last record of a key is not its latest version when versions
// came out of order.
func versionedProblem(sp *StorePlan, ksStore, ours string, info *topology.StoreInfo, topic string, conf map[string]string) bool {
	lag, _ := strconv.ParseInt(conf[state.MinCompactionLagConfig], 10, 64)
	theirs := lag > 0
	var retention time.Duration
	if r, ok := info.Builder.(interface{ HistoryRetention() time.Duration }); ok {
		retention = r.HistoryRetention()
	}
	switch {
	case sp.Kind == Versioned && !theirs:
		sp.problem(ProblemStoreKind, nil, "store %s: %s has no %s, so Kafka Streams' store is not versioned, and our store %s is a versioned store (history retention %v): the changelog holds each key's latest value, not its history",
			ksStore, topic, state.MinCompactionLagConfig, ours, retention)
		return true
	case sp.Kind != Versioned && theirs && sp.Kind == KeyValue:
		sp.problem(ProblemStoreKind, nil, "store %s: %s's %s %d says Kafka Streams' store is versioned (history retention %d ms), and our store %s is a %s store: a key's last record in the changelog is not its latest version when versions came out of order",
			ksStore, topic, state.MinCompactionLagConfig, lag, lag-versionedCompactionExtra, ours, info.Builder.Kind())
		return true
	case sp.Kind == Versioned && lag != retention.Milliseconds()+versionedCompactionExtra:
		sp.problem(ProblemHistoryRetention, nil, "store %s: history retention mismatch: %s's %s %d is a history retention of %d ms, ours (%s) keeps %d ms: a join would read other versions as of a time",
			ksStore, topic, state.MinCompactionLagConfig, lag, lag-versionedCompactionExtra, ours, retention.Milliseconds())
		return true
	}
	return false
}
