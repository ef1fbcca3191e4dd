package task

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// Keyed timers: the runtime side of processor.TimerService.
//
// Every timer-aware processor has a timer store, "<node>-timers", a
// changelogged key-value store of raw bytes registered by the build
// (topology.TimerSpec). Its layout is part of the persisted format:
//
//	time index   'T' | domain (1) | time (8) | key length (4) | key | name  ->  0x01
//	name index   'N' | domain (1) | key length (4) | key | name            ->  time (8)
//
// domain is 0 for event time and 1 for processing time; time is
// big-endian with its sign bit flipped, so the unsigned byte order of the
// time index is time order, negative times included; the key length is
// big-endian; key is the timer key under the timer key serde; name is the
// timer's name in UTF-8, empty for an unnamed timer. The time index value
// is the layout version. The name index, written for named timers only,
// maps a key's name to the time it is armed at, which is what lets a
// re-registration move it. The changelog carries both indexes as they are
// written, so a restored store needs no rebuild.
//
// Because the key bytes come from the timer key serde, that serde is part
// of the format: changing it strands the timers already stored under the
// old bytes. Settle it before relying on persisted timers.

const (
	timerTimeIndex     byte = 'T'
	timerNameIndex     byte = 'N'
	timerLayoutVersion byte = 1
	// timerTimeHeader is the time index key before the timer key.
	timerTimeHeader = 1 + 1 + 8 + 4
	signBit         = uint64(1) << 63
)

// TimerLaneMismatch counts the lane splits the sampled check finds, per
// processor ("processor" label). It is registered at zero for every
// timer-aware processor so an alert on its increase sees the first split.
const TimerLaneMismatch = "timer.lane.mismatch.total"

const (
	// The sampled check looks at the first sampleFirst records per
	// processor and lane, then at one in sampleEvery: a mismatch every key
	// shows is caught at once, at a cost that stays flat after warm-up.
	sampleFirst = 64
	sampleEvery = 4096
	// maxTimerCascade bounds how often one firing pass goes back to a time
	// it already fired, because OnTimer armed timers that are already due.
	// A processor re-arming its own timer at the same time would otherwise
	// spin forever; the rest fires at the next pass.
	maxTimerCascade = 1000
)

// errTimerLayout is a timer store key that does not follow the layout.
var errTimerLayout = errors.New("timer store key does not follow the timer layout")

// timerState is the task's timer machinery.
type timerState struct {
	nodes []*timerNode
	// lanes is the lane count splits are judged over.
	lanes int
	// guard and sampled are the verdicts of the two runtime checks.
	guard   string
	sampled string
	// fault is a lane split the guard refused during the current
	// processor call. It is rethrown when that processor returns, so a
	// processor that catches the error does not hide it.
	fault error
}

// timerNode is one timer-aware processor's timers.
type timerNode struct {
	nd *node
	// order is the node's topological position: timers due at the same
	// time for the same key fire upstream processor first.
	order    int
	store    state.KeyValueStore[[]byte, []byte]
	keySerde serde.Any
	// topic is what the timer key serde is given: the timer store's
	// changelog topic, as for any store's serdes.
	topic   string
	onTimer func(processor.Timer[any]) error

	// earliest[d] is a lower bound of the earliest timer of domain d when
	// known[d]: registrations lower it, and a scan makes it exact.
	earliest [2]int64
	known    [2]bool

	// seen counts the records the sampled check saw, per record lane.
	seen         map[int]int64
	mismatch     *atomic.Int64
	sampleWarned bool
	guardWarned  bool
	encodeWarned bool
}

// configureTimers reads the timer checks' configuration. lanes is the
// runtime's lane count, 0 for the configured one. A bad lane count or
// verdict refuses only a topology with timers: one without them never
// judges lanes.
func (t *Task) configureTimers(lanes int) error {
	hasTimers := slices.ContainsFunc(t.sub.Nodes, func(n *topology.Node) bool { return n.Timers != nil })
	cfg := t.built.Config
	if lanes <= 0 {
		n, err := lane.Configured(cfg)
		if err != nil {
			if hasTimers {
				return fmt.Errorf("task %s: lane count: %w", t.id, err)
			}
			n = lane.ReferenceCount
		}
		lanes = n
	}
	t.timers.lanes = lanes
	if !hasTimers {
		return nil
	}
	var err error
	if t.timers.guard, err = cfg.Verdict(config.TimerLaneAffinityGuard); err != nil {
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	if t.timers.sampled, err = cfg.Verdict(config.TimerLaneAffinitySampledCheck, config.TimerLaneAffinitySampledCheckAlias); err != nil {
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	return nil
}

// attachTimers gives nd, a processor just instantiated, its timers when the
// build found it timer-aware.
func (t *Task) attachTimers(nd *node, order int) error {
	spec := nd.spec.Timers
	if spec == nil {
		return nil
	}
	onTimer, ok := processor.OnTimerOf(nd.proc)
	if !ok {
		return fmt.Errorf("task %s: processor %s: %w (the build found OnTimer; the supplier now returns a processor without it)", t.id, nd.name, processor.ErrNoTimers)
	}
	store, ok := t.stores[spec.Store].(state.KeyValueStore[[]byte, []byte])
	if !ok {
		return fmt.Errorf("task %s: processor %s: timer store %s is a %T, not a key-value store of bytes", t.id, nd.name, spec.Store, t.stores[spec.Store])
	}
	topic := spec.Store
	if info, ok := t.built.Stores[spec.Store]; ok && info.ChangelogTopic != "" {
		topic = info.ChangelogTopic
	}
	tn := &timerNode{
		nd:       nd,
		order:    order,
		store:    store,
		keySerde: spec.KeySerde,
		topic:    topic,
		onTimer:  onTimer,
		seen:     map[int]int64{},
		mismatch: t.metrics.Counter(TimerLaneMismatch, "processor", nd.name),
	}
	nd.timers = tn
	t.timers.nodes = append(t.timers.nodes, tn)
	return nil
}

// HasTimers reports whether a processor of the task receives timers, so a
// runtime need not ask the others to fire any.
func (t *Task) HasTimers() bool { return len(t.timers.nodes) > 0 }

// HasWallClockWork reports whether the task has wall-clock punctuators or
// timers, which need the runtime to keep ticking when no record arrives.
func (t *Task) HasWallClockWork() bool { return len(t.wallPunct) > 0 || t.HasTimers() }

// TimerService is the processor's timer service (processor.Timers).
func (c *nodeContext) TimerService() (processor.ErasedTimerService, error) {
	if c.node.timers == nil {
		return nil, fmt.Errorf("processor %s: %w", c.node.name, processor.ErrNoTimers)
	}
	return &timerService{t: c.t, tn: c.node.timers}, nil
}

// Lane is the lane of the work in progress and the lane count: the lane
// of the record being processed, or of the timer being fired. false in a
// punctuator, for a record without a key, and behind a custom partitioner,
// where no key hash picked the lane.
func (c *nodeContext) Lane() (int, int, bool) {
	rc := &c.t.rc
	lanes := c.t.timers.lanes
	if !rc.laned {
		return 0, lanes, false
	}
	return lane.For32(c.t.LaneHash(), lanes), lanes, true
}

type timerService struct {
	t  *Task
	tn *timerNode
}

func (s *timerService) CurrentKey() (any, bool) {
	k := s.t.rc.key
	return k, k != nil
}

func (s *timerService) Register(tm processor.Timer[any]) error {
	kb, err := s.prepare("register", tm)
	if err != nil {
		return err
	}
	if err := s.t.putTimer(s.tn, tm, kb); err != nil {
		return fmt.Errorf("processor %s: register %s: %w", s.tn.nd.name, describeTimer(tm), err)
	}
	return nil
}

func (s *timerService) Delete(tm processor.Timer[any]) error {
	kb, err := s.prepare("delete", tm)
	if err != nil {
		return err
	}
	if err := s.t.deleteTimer(s.tn, tm, kb); err != nil {
		return fmt.Errorf("processor %s: delete %s: %w", s.tn.nd.name, describeTimer(tm), err)
	}
	return nil
}

func describeTimer(tm processor.Timer[any]) string {
	if tm.Name != "" {
		return fmt.Sprintf("timer %q (%s at %d) for key %v", tm.Name, tm.Domain, tm.Time, tm.Key)
	}
	return fmt.Sprintf("timer (%s at %d) for key %v", tm.Domain, tm.Time, tm.Key)
}

// prepare validates tm, serialises its key with the timer key serde and
// runs the guard.
func (s *timerService) prepare(op string, tm processor.Timer[any]) ([]byte, error) {
	tn := s.tn
	if !tm.Domain.Valid() {
		return nil, fmt.Errorf("processor %s: %s %s: unknown time domain", tn.nd.name, op, describeTimer(tm))
	}
	kb, err := tn.keySerde.SerializeAny(tn.topic, tm.Key)
	if err != nil {
		return nil, fmt.Errorf("processor %s: %s %s: serialize key with timer key serde %s: %w", tn.nd.name, op, describeTimer(tm), tn.keySerde.Name(), err)
	}
	if kb == nil {
		return nil, fmt.Errorf("processor %s: %s %s: the key is null", tn.nd.name, op, describeTimer(tm))
	}
	if err := s.t.guardTimerLane(tn, op, tm.Key, kb); err != nil {
		return nil, err
	}
	return kb, nil
}

// guardTimerLane is the guard: a timer registered or deleted for the key
// being processed must pick the lane that key's record was laned on. It
// compares lanes, not bytes: two encodings that hash to one lane are no
// split. On a split with the error verdict the operation does not happen,
// and the error is remembered so the record fails even if the processor
// swallows it.
func (t *Task) guardTimerLane(tn *timerNode, op string, key any, kb []byte) error {
	ts := &t.timers
	rc := &t.rc
	if ts.guard == config.VerdictOff || ts.lanes <= 1 || !rc.laned || rc.key == nil {
		return nil
	}
	if !sameKey(key, rc.key) {
		// Another key's timer: it fires on that key's lane, by design.
		return nil
	}
	timerLane, recordLane := lane.For(kb, ts.lanes), lane.For32(t.LaneHash(), ts.lanes)
	if timerLane == recordLane {
		return nil
	}
	err := &processor.TimerLaneAffinityError{
		Node: tn.nd.name, Check: "guard", Key: key, KeySerde: tn.keySerde.Name(),
		TimerKeyBytes: kb, LaneBytes: rc.laneBytes,
		TimerLane: timerLane, RecordLane: recordLane, Lanes: ts.lanes,
	}
	if ts.guard == config.VerdictWarn {
		if !tn.guardWarned {
			tn.guardWarned = true
			t.log.Warn("timer lane split: a timer for the key being processed picks another lane; its timers will run beside its records",
				"processor", tn.nd.name, "operation", op, "error", err.Error())
		}
		return nil
	}
	t.log.Error("timer lane split: timer operation refused", "processor", tn.nd.name, "operation", op, "error", err.Error())
	if ts.fault == nil {
		ts.fault = err
	}
	return err
}

// sameKey compares keys as the processor sees them. DeepEqual rather than
// ==, which panics on a comparable type holding a slice (a struct with an
// interface field); it runs once per timer operation, not per record.
func sameKey(a, b any) bool {
	return a != nil && b != nil && reflect.DeepEqual(a, b)
}

// sampleTimerLane is the sampled check, run before Process of a
// timer-aware processor: it re-serialises the record key with the timer
// key serde and compares its lane with the record's, for the first
// sampleFirst records per processor and lane and one in sampleEvery after.
func (t *Task) sampleTimerLane(tn *timerNode, rec processor.Erased) error {
	ts := &t.timers
	rc := &t.rc
	if ts.sampled == config.VerdictOff || ts.lanes <= 1 || !rc.laned || rec.Key == nil {
		return nil
	}
	recordLane := lane.For32(t.LaneHash(), ts.lanes)
	n := tn.seen[recordLane]
	tn.seen[recordLane] = n + 1
	if n >= sampleFirst && (n-sampleFirst)%sampleEvery != sampleEvery-1 {
		return nil
	}
	kb, err := tn.keySerde.SerializeAny(tn.topic, rec.Key)
	if err != nil || kb == nil {
		// Not a lane split: the key cannot be a timer key at all, which a
		// registration reports loudly when it happens.
		if !tn.encodeWarned {
			tn.encodeWarned = true
			t.log.Warn("timer lane check: record key does not serialize with the timer key serde",
				"processor", tn.nd.name, "timer_key_serde", tn.keySerde.Name(), "error", fmt.Sprint(err))
		}
		return nil
	}
	timerLane := lane.For(kb, ts.lanes)
	if timerLane == recordLane {
		return nil
	}
	tn.mismatch.Add(1)
	lerr := &processor.TimerLaneAffinityError{
		Node: tn.nd.name, Check: "sampled check", Key: rec.Key, KeySerde: tn.keySerde.Name(),
		TimerKeyBytes: kb, LaneBytes: rc.laneBytes,
		TimerLane: timerLane, RecordLane: recordLane, Lanes: ts.lanes,
	}
	if !tn.sampleWarned {
		tn.sampleWarned = true
		t.log.Warn("timer lane split sampled: this processor's timers may run beside its records", "processor", tn.nd.name, "error", lerr.Error())
	}
	if ts.sampled == config.VerdictError {
		return lerr
	}
	return nil
}

// takeTimerFault returns err, or the lane split the guard refused during
// the processor call that just returned when err is nil, and clears it.
func (t *Task) takeTimerFault(err error) error {
	if f := t.timers.fault; f != nil {
		t.timers.fault = nil
		if err == nil {
			return f
		}
	}
	return err
}

// Timer store keys, see the layout at the top of this file.

func timerTimePrefix(d processor.TimeDomain, time int64) []byte {
	b := make([]byte, 0, timerTimeHeader)
	b = append(b, timerTimeIndex, byte(d))
	return binary.BigEndian.AppendUint64(b, uint64(time)^signBit)
}

func timerTimeKey(d processor.TimeDomain, time int64, key []byte, name string) []byte {
	b := make([]byte, 0, timerTimeHeader+len(key)+len(name))
	b = append(b, timerTimeIndex, byte(d))
	b = binary.BigEndian.AppendUint64(b, uint64(time)^signBit)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	return append(b, name...)
}

func timerNameKey(d processor.TimeDomain, key []byte, name string) []byte {
	b := make([]byte, 0, 1+1+4+len(key)+len(name))
	b = append(b, timerNameIndex, byte(d))
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	return append(b, name...)
}

// storedTimer is a time index entry, decoded.
type storedTimer struct {
	domain processor.TimeDomain
	time   int64
	key    []byte
	name   string
}

// decodeTimerTimeKey splits a time index key. key aliases b.
func decodeTimerTimeKey(b []byte) (storedTimer, error) {
	if len(b) < timerTimeHeader || b[0] != timerTimeIndex {
		return storedTimer{}, fmt.Errorf("decode timer key %q: %w", b, errTimerLayout)
	}
	d := processor.TimeDomain(b[1])
	if !d.Valid() {
		return storedTimer{}, fmt.Errorf("decode timer key %q: domain %d: %w", b, b[1], errTimerLayout)
	}
	n := uint64(binary.BigEndian.Uint32(b[10:timerTimeHeader]))
	if n > uint64(len(b)-timerTimeHeader) {
		return storedTimer{}, fmt.Errorf("decode timer key %q: key length %d exceeds the %d bytes left: %w", b, n, len(b)-timerTimeHeader, errTimerLayout)
	}
	end := timerTimeHeader + int(n)
	return storedTimer{
		domain: d,
		time:   int64(binary.BigEndian.Uint64(b[2:10]) ^ signBit),
		key:    b[timerTimeHeader:end:end],
		name:   string(b[end:]),
	}, nil
}

func encodeTimerTime(time int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(time)) }

func decodeTimerTime(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("decode timer name index value: %d bytes, want 8: %w", len(b), errTimerLayout)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// putTimer arms a timer whose key serialises to kb. A named timer first
// leaves the time it was armed at.
func (t *Task) putTimer(tn *timerNode, tm processor.Timer[any], kb []byte) error {
	tk := timerTimeKey(tm.Domain, tm.Time, kb, tm.Name)
	if tm.Name != "" {
		nk := timerNameKey(tm.Domain, kb, tm.Name)
		old, found, err := tn.store.Get(nk)
		if err != nil {
			return err
		}
		moved := true
		if found {
			oldTime, err := decodeTimerTime(old)
			if err != nil {
				return err
			}
			if moved = oldTime != tm.Time; moved {
				if _, _, err := tn.store.Delete(timerTimeKey(tm.Domain, oldTime, kb, tm.Name)); err != nil {
					return err
				}
			}
		}
		if moved {
			if err := tn.store.Put(nk, encodeTimerTime(tm.Time)); err != nil {
				return err
			}
		}
	}
	// Arming an armed timer writes nothing, so a processor re-arming per
	// record does not flood the changelog.
	if _, found, err := tn.store.Get(tk); err != nil {
		return err
	} else if !found {
		if err := tn.store.Put(tk, []byte{timerLayoutVersion}); err != nil {
			return err
		}
	}
	d := tm.Domain
	if tn.known[d] && tm.Time < tn.earliest[d] {
		tn.earliest[d] = tm.Time
	}
	return nil
}

// deleteTimer removes a timer: by name when it has one, else the unnamed
// timer at its time. Absent timers write nothing.
func (t *Task) deleteTimer(tn *timerNode, tm processor.Timer[any], kb []byte) error {
	if tm.Name == "" {
		return deleteIfPresent(tn.store, timerTimeKey(tm.Domain, tm.Time, kb, ""))
	}
	nk := timerNameKey(tm.Domain, kb, tm.Name)
	old, found, err := tn.store.Get(nk)
	if err != nil || !found {
		return err
	}
	oldTime, err := decodeTimerTime(old)
	if err != nil {
		return err
	}
	if err := deleteIfPresent(tn.store, timerTimeKey(tm.Domain, oldTime, kb, tm.Name)); err != nil {
		return err
	}
	_, _, err = tn.store.Delete(nk)
	return err
}

func deleteIfPresent(s state.KeyValueStore[[]byte, []byte], key []byte) error {
	_, found, err := s.Get(key)
	if err != nil || !found {
		return err
	}
	_, _, err = s.Delete(key)
	return err
}

// FireEventTimers fires the event-time timers at or before upTo, the
// event-time clock. floor is the late-drop floor of what they forward: the
// watermark of the last commit barrier. It reports whether any fired.
func (t *Task) FireEventTimers(upTo, floor int64) (bool, error) {
	return t.fireTimers(processor.EventTime, upTo, floor)
}

// FireProcessingTimers fires the processing-time timers at or before now,
// the wall clock, judged against floor.
func (t *Task) FireProcessingTimers(now, floor int64) (bool, error) {
	return t.fireTimers(processor.ProcessingTime, now, floor)
}

// dueTimer is a timer about to fire.
type dueTimer struct {
	tn       *timerNode
	storeKey []byte
	storedTimer
}

// fireTimers fires due timers in time order, and at one time in key bytes
// order (then upstream processor first, then by name). A timer OnTimer
// arms that is already due fires in the same pass, up to maxTimerCascade
// returns to an earlier or equal time.
func (t *Task) fireTimers(d processor.TimeDomain, upTo, floor int64) (bool, error) {
	if len(t.timers.nodes) == 0 {
		return false, nil
	}
	prevFloor := t.floor
	t.floor = floor
	defer func() { t.floor = prevFloor }()
	fired, first := false, true
	last, cascades := int64(math.MinInt64), 0
	for {
		next, ok, err := t.nextDue(d, upTo)
		if err != nil || !ok {
			return fired, err
		}
		if !first && next <= last {
			if cascades++; cascades > maxTimerCascade {
				t.log.Warn("timers keep arming timers that are already due; the rest fire at the next pass",
					"domain", d.String(), "time", next, "passes", maxTimerCascade)
				return fired, nil
			}
		}
		last, first = next, false
		due, err := t.dueAt(d, next)
		if err != nil {
			return fired, err
		}
		for _, e := range due {
			ran, err := t.fireTimer(e)
			fired = fired || ran
			if err != nil {
				return fired, err
			}
		}
	}
}

// nextDue is the earliest time, at or before upTo, at which some processor
// has a timer of domain d.
func (t *Task) nextDue(d processor.TimeDomain, upTo int64) (int64, bool, error) {
	best, found := int64(0), false
	for _, tn := range t.timers.nodes {
		at, err := tn.earliestAt(d, upTo)
		if err != nil {
			return 0, false, fmt.Errorf("task %s: processor %s: %w", t.id, tn.nd.name, err)
		}
		if at <= upTo && (!found || at < best) {
			best, found = at, true
		}
	}
	return best, found, nil
}

// earliestAt is the time of tn's earliest timer of domain d, or a lower
// bound of it above upTo; the store is read only when the cached bound is
// due, so a pass with nothing due costs no scan.
func (tn *timerNode) earliestAt(d processor.TimeDomain, upTo int64) (int64, error) {
	if tn.known[d] && tn.earliest[d] > upTo {
		return tn.earliest[d], nil
	}
	it, err := tn.store.PrefixScan([]byte{timerTimeIndex, byte(d)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	at := int64(math.MaxInt64)
	if it.Next() {
		st, err := decodeTimerTimeKey(it.Key())
		if err != nil {
			return 0, err
		}
		at = st.time
	}
	if err := it.Err(); err != nil {
		return 0, err
	}
	tn.earliest[d], tn.known[d] = at, true
	return at, nil
}

// dueAt lists every processor's timers of domain d at exactly time, in
// firing order.
func (t *Task) dueAt(d processor.TimeDomain, time int64) ([]dueTimer, error) {
	var due []dueTimer
	prefix := timerTimePrefix(d, time)
	for _, tn := range t.timers.nodes {
		it, err := tn.store.PrefixScan(prefix)
		if err != nil {
			return nil, fmt.Errorf("task %s: processor %s: scan timers: %w", t.id, tn.nd.name, err)
		}
		for it.Next() {
			k := bytes.Clone(it.Key())
			st, err := decodeTimerTimeKey(k)
			if err != nil {
				it.Close()
				return nil, fmt.Errorf("task %s: processor %s: %w", t.id, tn.nd.name, err)
			}
			due = append(due, dueTimer{tn: tn, storeKey: k, storedTimer: st})
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return nil, fmt.Errorf("task %s: processor %s: scan timers: %w", t.id, tn.nd.name, err)
		}
	}
	slices.SortFunc(due, func(a, b dueTimer) int {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c
		}
		if a.tn.order != b.tn.order {
			return a.tn.order - b.tn.order
		}
		return bytes.Compare([]byte(a.name), []byte(b.name))
	})
	return due, nil
}

// fireTimer removes e from the store and calls OnTimer in the timer's
// record context: key, timestamp = the timer's time, the key's lane.
// Removing it first lets OnTimer arm it again. A timer an earlier one in
// the same pass deleted does not fire.
func (t *Task) fireTimer(e dueTimer) (bool, error) {
	tn := e.tn
	if _, found, err := tn.store.Get(e.storeKey); err != nil || !found {
		return false, err
	}
	prev := t.rc
	t.rc = recordContext{timestamp: e.time, laneBytes: e.key, laned: true}
	defer func() { t.rc = prev }()
	t.failed, t.timers.fault = nil, nil
	tm := processor.Timer[any]{Time: e.time, Domain: e.domain, Name: e.name}
	err := t.removeFired(tn, e)
	if err == nil {
		tm.Key, err = tn.keySerde.DeserializeAny(tn.topic, e.key)
		if err != nil {
			err = fmt.Errorf("decode timer key %q with timer key serde %s: %w", e.key, tn.keySerde.Name(), err)
		}
	}
	if err == nil {
		t.rc.key = tm.Key
		err = t.invoke(tn.nd, func() error { return tn.onTimer(tm) })
		err = t.takeTimerFault(err)
	}
	if err != nil {
		t.handleProcessingError(tn.nd, fmt.Errorf("on timer (%s at %d%s): %w", e.domain, e.time, nameSuffix(e.name), err))
	}
	return true, t.takeFailure()
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(", name %q", name)
}

// removeFired deletes a firing timer, and its name index entry while that
// still points at it.
func (t *Task) removeFired(tn *timerNode, e dueTimer) error {
	if _, _, err := tn.store.Delete(e.storeKey); err != nil {
		return err
	}
	if e.name == "" {
		return nil
	}
	nk := timerNameKey(e.domain, e.key, e.name)
	v, found, err := tn.store.Get(nk)
	if err != nil || !found {
		return err
	}
	if at, err := decodeTimerTime(v); err == nil && at != e.time {
		return nil
	}
	_, _, err = tn.store.Delete(nk)
	return err
}
