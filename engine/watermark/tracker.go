package watermark

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Partition names one source partition.
type Partition struct {
	Topic     string
	Partition int32
}

// PartitionState is what Snapshot reports for one partition.
type PartitionState struct {
	Partition
	Watermark     int64
	LastEventTime int64
	Idle          bool
	// LastRecord is the wall-clock time, epoch ms, at which the partition
	// last delivered a record, whatever its event time; 0 before the
	// first. Unlike LastEventTime it moves for records older than the
	// partition's newest, which is how a reader tells a partition that is
	// live but behind from one that went quiet.
	LastRecord int64
	// LastAdvance is the wall-clock time, epoch ms, at which the
	// partition's watermark last moved, as the tracker saw it; 0 before
	// it moved in this process (a seeded watermark has not moved yet). A
	// reader that polls can then tell how long a watermark has stood
	// still from one look, instead of from two looks some time apart.
	LastAdvance int64
	// IdleSince is the wall-clock time, epoch ms, at which the partition
	// was last marked idle; 0 while it is not idle.
	IdleSince int64
	// Registered is the wall-clock time, epoch ms, at which the tracker
	// started tracking the partition: since then a partition whose
	// watermark never moved (LastAdvance 0), such as one that never had a
	// record, has waited.
	Registered int64
	// IdlenessTimeout is the timeout in force for this partition: its
	// source's, else the tracker's default; 0 means never idle.
	IdlenessTimeout time.Duration
	Alignment       string
	// AlignmentHeld says the partition's watermark is ahead of its
	// alignment group's minimum by more than the group's drift, so its
	// fetch is paused (Tracker.Align).
	AlignmentHeld bool
	// Previewing says the partition's next record waits behind older
	// records of other partitions and Preview is the watermark the
	// partition will have once it is processed; the global watermark
	// counts it as if it were (Tracker.Heads). Preview is Unset
	// otherwise, as when the strategy cannot tell.
	Previewing bool
	Preview    int64
	// HeadHeldSince is the wall-clock time, epoch ms, since which that
	// record has waited; 0 when none waits.
	HeadHeldSince int64
}

type partitionState struct {
	gen          Generator
	idleness     int64
	lastActivity int64
	lastEvent    int64
	lastRecord   int64
	// wm is the watermark as last seen, to tell when it moved.
	wm          int64
	lastAdvance int64
	idle        bool
	idleSince   int64
	registered  int64
	alignment   string
	// held says Align holds the partition back; a held partition does
	// not go idle, since it is quiet because it is held.
	held bool
	// preview, headOffset and headSince describe the partition's next
	// record while it waits behind older records (Heads); preview is
	// Unset otherwise.
	preview, headOffset, headSince int64
	// previewable says the partition's generator is a built-in one, which
	// can tell its watermark after an event without seeing it.
	previewable bool
	// external says the watermark is told (SetExternal), not made from
	// the partition's records, and so is its idleness.
	external bool
}

// told is the generator of an external partition: its watermark is what
// SetExternal last said, and records do not move it.
type told struct{ w int64 }

func (g *told) OnEvent(int64)  {}
func (g *told) Current() int64 { return g.w }

// RegisterExternal starts tracking p with a watermark told by
// SetExternal rather than made from its records: a repartition topic's
// partition, told by the markers of the tasks writing it. It starts
// Unset, holding the minimum back until told, and goes idle only when
// told so: a writer that went quiet is not a partition with nothing to
// come.
func (t *Tracker) RegisterExternal(p Partition, now int64) {
	t.parts[p] = &partitionState{gen: &told{w: Unset}, external: true, lastActivity: now, lastEvent: Unset, registered: now, preview: Unset, wm: Unset}
}

// SetExternal tells an external partition's watermark, which never goes
// back, and whether it is idle. It does nothing to a partition that is
// not tracked or not external.
func (t *Tracker) SetExternal(p Partition, w int64, idle bool, now int64) {
	st, ok := t.parts[p]
	if !ok || !st.external {
		return
	}
	g := st.gen.(*told)
	g.w = max(g.w, w)
	st.lastActivity = now
	if idle != st.idle {
		st.idle, st.idleSince = idle, 0
		if idle {
			st.idleSince = now
		}
	}
	st.noteMove(now)
}

// Minimum is the lowest watermark (or preview) of the tracked partitions
// include accepts that are not idle, and false when there are none. It
// moves nothing: Advance decides idleness first.
func (t *Tracker) Minimum(include func(Partition) bool) (int64, bool) {
	minimum, any := Unset, false
	for p, st := range t.parts {
		if st.idle || !include(p) {
			continue
		}
		w := max(st.gen.Current(), st.preview)
		if !any || w < minimum {
			minimum, any = w, true
		}
	}
	return minimum, any
}

// Idle says whether p is tracked and idle.
func (t *Tracker) Idle(p Partition) bool {
	st, ok := t.parts[p]
	return ok && st.idle
}

// alignGroup is an alignment group's rule and when Align last applied it.
type alignGroup struct {
	drift, every int64
	// checked is the wall-clock time of the last pass; -1 before the first.
	checked int64
}

// Tracker computes the global watermark: the minimum of the watermarks of
// every partition that is not idle. It never moves backwards. It is not
// safe for concurrent use; the engine's dispatcher owns it.
type Tracker struct {
	parts           map[Partition]*partitionState
	groups          map[string]*alignGroup
	defaultIdleness int64
	global          int64
}

// NewTracker returns a tracker whose partitions idle after defaultIdleness
// unless their source sets its own timeout; 0 disables the default.
func NewTracker(defaultIdleness time.Duration) *Tracker {
	return &Tracker{parts: map[Partition]*partitionState{}, groups: map[string]*alignGroup{}, defaultIdleness: defaultIdleness.Milliseconds(), global: Unset}
}

// Register starts tracking p under strategy s; now is the wall clock in
// epoch ms. Registering a tracked partition resets it.
func (t *Tracker) Register(p Partition, s Strategy, now int64) {
	idle := s.Idleness().Milliseconds()
	if idle == 0 {
		idle = t.defaultIdleness
	}
	st := &partitionState{gen: s.NewGenerator(), idleness: idle, lastActivity: now, lastEvent: Unset, registered: now, preview: Unset}
	st.wm = st.gen.Current()
	_, can := st.gen.(previewer)
	st.previewable = can && s.Kind() != KindCustom
	if a := s.AlignmentGroup(); a != nil {
		st.alignment = a.Group
		// The build refuses members of one group that disagree on the
		// drift or the interval, so the first member's rule is the group's.
		if _, ok := t.groups[a.Group]; !ok {
			t.groups[a.Group] = &alignGroup{drift: a.MaxDrift.Milliseconds(), every: a.UpdateInterval.Milliseconds(), checked: -1}
		}
	}
	t.parts[p] = st
}

// Seed resumes p from a committed partition time, so that a restart does
// not wait for new records to rebuild event time.
func (t *Tracker) Seed(p Partition, partitionTime int64) {
	if st, ok := t.parts[p]; ok && partitionTime >= 0 {
		st.gen.OnEvent(partitionTime)
		// Seeding resumes a watermark; it is not a move seen here.
		st.wm = st.gen.Current()
		if partitionTime > st.lastEvent {
			st.lastEvent = partitionTime
		}
	}
}

// Unregister stops tracking p (its partition was revoked).
func (t *Tracker) Unregister(p Partition) { delete(t.parts, p) }

// Observe records a dispatched record's event time on p.
func (t *Tracker) Observe(p Partition, eventTime, now int64) {
	st, ok := t.parts[p]
	if !ok {
		return
	}
	st.gen.OnEvent(eventTime)
	st.lastRecord = now
	if st.external {
		// Its markers say whether it is idle; its records cannot.
		return
	}
	st.lastActivity = now
	st.idle, st.idleSince = false, 0
	st.noteMove(now)
	if eventTime > st.lastEvent {
		st.lastEvent = eventTime
	}
}

// Active records that p delivered records at wall-clock now, whatever
// their event time: a partition delivering records older than its
// largest event time is live, not idle, and keeps holding the watermark
// back (excluding it would drop its records as late).
func (t *Tracker) Active(p Partition, now int64) {
	if st, ok := t.parts[p]; ok && !st.external {
		st.lastActivity, st.lastRecord = now, now
		st.idle, st.idleSince = false, 0
	}
}

// noteMove stamps the partition's watermark move, if it moved, with now.
func (st *partitionState) noteMove(now int64) {
	if w := st.gen.Current(); w != st.wm {
		st.wm, st.lastAdvance = w, now
	}
}

// Advance recomputes the global watermark at wall-clock now and reports it
// and whether it moved. When every partition is idle the watermark stays
// where it is: idleness excludes a partition from the minimum, it does not
// make time pass.
func (t *Tracker) Advance(now int64) (int64, bool) {
	minimum, any := Unset, false
	for _, st := range t.parts {
		// A generator may move without a record (one driven by the wall
		// clock); the dispatcher advances often enough to see it.
		st.noteMove(now)
		if st.idleness > 0 && now-st.lastActivity >= st.idleness && !st.idle && !st.held {
			st.idle, st.idleSince = true, now
		}
		if st.idle {
			continue
		}
		w := max(st.gen.Current(), st.preview)
		if !any || w < minimum {
			minimum, any = w, true
		}
	}
	if !any || minimum <= t.global {
		return t.global, false
	}
	t.global = minimum
	return t.global, true
}

// Global is the last computed global watermark.
func (t *Tracker) Global() int64 { return t.global }

// Snapshot reports every partition, sorted by topic and partition.
func (t *Tracker) Snapshot() []PartitionState {
	keys := slices.SortedFunc(maps.Keys(t.parts), func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	out := make([]PartitionState, 0, len(keys))
	for _, k := range keys {
		st := t.parts[k]
		out = append(out, PartitionState{
			Partition: k, Watermark: st.gen.Current(), LastEventTime: st.lastEvent, LastRecord: st.lastRecord, Idle: st.idle,
			LastAdvance: st.lastAdvance, IdleSince: st.idleSince, Registered: st.registered,
			IdlenessTimeout: time.Duration(st.idleness) * time.Millisecond, Alignment: st.alignment, AlignmentHeld: st.held,
			Previewing: st.preview != Unset, Preview: st.preview, HeadHeldSince: st.headSince,
		})
	}
	return out
}

// Align applies the alignment rule at wall-clock now to every group whose
// update interval has passed since its last pass, and reports the
// partitions to hold back (pause) and to let go (resume). A group's
// minimum is the lowest watermark among its members that are not idle and
// have one; a member is held while its watermark is ahead of that minimum
// by more than the group's maximum drift, and let go once it is back
// within it. An idle member is never held: it has nothing to fetch, and
// a record makes it active again. A held member does not go idle (Advance),
// since it is quiet because it is held; its idleness clock restarts when
// it is let go. A group with no minimum lets every member go.
//
// Holding a source back changes no result: the global watermark is a
// minimum, and a held partition is ahead of it. What it bounds is how far
// ahead the fast source's windows, buffers and state run.
func (t *Tracker) Align(now int64) (hold, release []Partition) {
	if len(t.groups) == 0 {
		return nil, nil
	}
	type lowest struct {
		w  int64
		ok bool
	}
	mins := map[string]lowest{}
	for name, g := range t.groups {
		if g.checked >= 0 && now-g.checked < g.every {
			continue
		}
		g.checked = now
		mins[name] = lowest{}
	}
	if len(mins) == 0 {
		return nil, nil
	}
	for _, st := range t.parts {
		m, due := mins[st.alignment]
		if !due || st.idle {
			continue
		}
		if w := st.gen.Current(); w != Unset && (!m.ok || w < m.w) {
			mins[st.alignment] = lowest{w: w, ok: true}
		}
	}
	for p, st := range t.parts {
		m, due := mins[st.alignment]
		if !due {
			continue
		}
		w := st.gen.Current()
		ahead := m.ok && !st.idle && w != Unset && w-m.w > t.groups[st.alignment].drift
		switch {
		case ahead && !st.held:
			st.held = true
			hold = append(hold, p)
		case !ahead && st.held:
			st.held, st.lastActivity = false, now
			release = append(release, p)
		}
	}
	return sortPartitions(hold), sortPartitions(release)
}

// HeldBack says Align holds p back.
func (t *Tracker) HeldBack(p Partition) bool {
	st, ok := t.parts[p]
	return ok && st.held
}

// Held are the partitions Align holds back, sorted.
func (t *Tracker) Held() []Partition {
	var out []Partition
	for p, st := range t.parts {
		if st.held {
			out = append(out, p)
		}
	}
	return sortPartitions(out)
}

// AlignmentGroup is partition p's alignment group and its maximum drift;
// ok is false when p is not tracked or in no group.
func (t *Tracker) AlignmentGroup(p Partition) (group string, maxDrift time.Duration, ok bool) {
	st, tracked := t.parts[p]
	if !tracked || st.alignment == "" {
		return "", 0, false
	}
	return st.alignment, time.Duration(t.groups[st.alignment].drift) * time.Millisecond, true
}

func sortPartitions(ps []Partition) []Partition {
	slices.SortFunc(ps, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return ps
}

// Head is a partition's next record while it waits behind older records
// of other partitions: its event time and offset.
type Head struct {
	Partition
	EventTime, Offset int64
}

// Heads records, at wall-clock now, the partitions whose next record
// waits behind older records, and forgets every other partition's
// preview; it reports whether a preview appeared, moved or went. A
// waiting partition's preview is the watermark its generator would give
// once it saw the head's event time, when the generator can tell without
// seeing it (the built-in strategies) and that is ahead of its watermark;
// a custom generator has no preview. Advance counts a preview in the
// minimum as if the head were processed: the head is not late by the
// partition's own claim once it is, and the records waiting before it
// elsewhere are older, so the minimum does not wait for a head that
// only waits its turn. HeadHeldSince stays while the same record waits.
func (t *Tracker) Heads(heads []Head, now int64) (changed bool) {
	waiting := map[Partition]Head{}
	for _, h := range heads {
		waiting[h.Partition] = h
	}
	for p, st := range t.parts {
		h, ok := waiting[p]
		preview := Unset
		if pv, can := st.gen.(previewer); ok && can && st.previewable {
			if w := pv.Preview(h.EventTime); w > st.gen.Current() {
				preview = w
			}
		}
		if preview == Unset {
			if st.preview != Unset {
				changed = true
			}
			st.preview, st.headSince, st.headOffset = Unset, 0, 0
			continue
		}
		if st.preview == Unset || st.headOffset != h.Offset {
			st.headSince, st.headOffset = now, h.Offset
		}
		changed = changed || preview != st.preview
		st.preview = preview
	}
	return changed
}

// previewer is a generator that can say its watermark after an event
// without seeing it.
type previewer interface {
	Preview(eventTime int64) int64
}
