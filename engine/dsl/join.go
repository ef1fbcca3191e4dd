package dsl

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stoatflow/stoatctl/engine/metrics"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// Kafka Streams' prefixes for join nodes.
const (
	joinPrefix           = "KSTREAM-JOIN-"
	leftJoinPrefix       = "KSTREAM-LEFTJOIN-"
	tableJoinThisPrefix  = "KTABLE-JOINTHIS-"
	tableJoinOtherPrefix = "KTABLE-JOINOTHER-"
	tableMergePrefix     = "KTABLE-MERGE-"
)

var (
	errNilJoiner      = errors.New("nil joiner")
	errNilKeySelector = errors.New("nil key selector")
	errOtherBuilder   = errors.New("belongs to another builder")
)

// JoinTable joins each record of s with t's current value for the record's
// key (an inner join): records whose key t has no value for produce
// nothing. Only stream records trigger output, with their own timestamp;
// table updates only change what later records see. Records with a null
// key or a null value are dropped and counted in dropped.records.total.
//
// If s may have been re-keyed, a boundary named "<joined name>-repartition"
// (or "<stream node>-repartition") comes first, as in Kafka Streams. s and
// t must be co-partitioned: Build refuses inputs keyed by different serdes.
func JoinTable[K, V, VT, VR any](s KStream[K, V], t KTable[K, VT], joiner func(K, V, VT) VR, joined ...Joined[K, V, VT]) KStream[K, VR] {
	return streamTableJoin(s, t, joiner, false, joined)
}

// LeftJoinTable is JoinTable that also keeps records t has no value for:
// the joiner then gets VT's zero value. Kafka Streams passes null there; to
// tell "no value" apart from a zero value, give the table a pointer value
// type (serde.Pointer), whose zero is nil. As in Kafka Streams (since
// KIP-962), a record with a null key is not dropped but joined with the
// zero VT (there is nothing to look up); records with a null value are
// dropped.
func LeftJoinTable[K, V, VT, VR any](s KStream[K, V], t KTable[K, VT], joiner func(K, V, VT) VR, joined ...Joined[K, V, VT]) KStream[K, VR] {
	return streamTableJoin(s, t, joiner, true, joined)
}

func streamTableJoin[K, V, VT, VR any](s KStream[K, V], t KTable[K, VT], joiner func(K, V, VT) VR, left bool, joined []Joined[K, V, VT]) KStream[K, VR] {
	var j Joined[K, V, VT]
	if len(joined) > 0 {
		j = joined[0]
	}
	s = s.repartitionForJoin(j.name, j.keySerde, j.valueSerde)
	prefix := joinPrefix
	if left {
		prefix = leftJoinPrefix
	}
	name := s.b.newName(prefix, []Named{{name: j.name}})
	meta := t.meta
	versioned := meta != nil && meta.versioned
	newJoin := func() *lookupJoin[K, V, VT, VR] {
		p := &lookupJoin[K, V, VT, VR]{
			left:   left,
			joiner: joiner,
			keyOf:  func(rec processor.Erased, _ K, _ V) any { return rec.Key },
			open:   func(ctx processor.Context[any, any]) (lookup, error) { return openLookup[K, VT](ctx, meta) },
		}
		if versioned {
			// A versioned table is read as of the stream record's
			// timestamp (KIP-914).
			p.openAt = func(ctx processor.Context[any, any]) (lookupAt, error) { return openLookupAt[K, VT](ctx, meta) }
		}
		return p
	}
	switch {
	case j.graceSet && j.gracePeriod < 0:
		s.b.t.AddProcessor(name, func() processor.Untyped { return newJoin() }, s.node)
		s.b.t.Fail(name, fmt.Errorf("grace period %v is negative", j.gracePeriod))
	case !j.graceSet:
		s.b.t.AddProcessor(name, func() processor.Untyped { return newJoin() }, s.node)
	case !versioned:
		s.b.t.AddProcessor(name, func() processor.Untyped { return newJoin() }, s.node)
		s.b.t.Fail(name, fmt.Errorf("table %s: %w", t.node, errGraceNeedsVersioned))
	case j.gracePeriod > meta.retention:
		// Kafka Streams' "History retention must be at least grace
		// period": a record held for the grace must still find the
		// version it joins.
		s.b.t.AddProcessor(name, func() processor.Untyped { return newJoin() }, s.node)
		s.b.t.Fail(name, fmt.Errorf("table %s: its history retention %v is shorter than the grace period %v: history retention must be at least the grace period", t.node, meta.retention, j.gracePeriod))
	default:
		ks := serdeOrConfig(orSerde(j.keySerde, s.keySerde), true)
		vs := serdeOrConfig(orSerde(j.valueSerde, s.valueSerde), false)
		grace := j.gracePeriod.Milliseconds()
		store := graceBufferName(name)
		s.b.t.AddProcessor(name, func() processor.Untyped {
			return &graceJoin[K, V, VT, VR]{join: newJoin(), grace: grace, store: store, keySerde: ks, valueSerde: vs, serdes: []any{ks, vs}}
		}, s.node)
		s.b.t.AddStateStore(newGraceBufferStore(name), name)
	}
	if joiner == nil {
		s.b.t.Fail(name, errNilJoiner)
	}
	if s.b != t.b {
		s.b.t.Fail(name, fmt.Errorf("table %s %w", t.node, errOtherBuilder))
	}
	connectLookup(name, t)
	s.b.t.Copartition(name, append(slices.Clone(s.sources), t.sources...)...)
	return KStream[K, VR]{b: s.b, node: name, keySerde: orSerde(j.keySerde, s.keySerde), sources: mergeSources(s.sources, t.sources)}
}

// connectLookup connects node to the stores a lookup of t reads.
func connectLookup[K, V any](node string, t KTable[K, V]) {
	stores, err := t.meta.lookupStores()
	if err != nil {
		t.b.t.Fail(node, fmt.Errorf("table %s %w", t.node, err))
		return
	}
	t.b.t.ConnectProcessorAndStateStores(node, stores...)
}

// repartitionForJoin puts a boundary before a join when s may have been
// re-keyed, so that each record reaches the join on its new key's lane.
// The boundary is named after the join, or after s's node, as Kafka
// Streams names the repartition topic of a join.
func (s KStream[K, V]) repartitionForJoin(name string, ks serde.Serde[K], vs serde.Serde[V]) KStream[K, V] {
	if !s.rekeyed {
		return s
	}
	base := name
	if base == "" {
		base = s.node
	}
	ks, vs = orSerde(ks, s.keySerde), orSerde(vs, s.valueSerde)
	src, _ := s.b.boundary(s.node, base, eraseSerde(ks), eraseSerde(vs), !generatedBoundaryBase.MatchString(base))
	return KStream[K, V]{b: s.b, node: src, keySerde: ks, valueSerde: vs, sources: []string{src}}
}

// lookupJoin joins stream records with a table's values: the processor of
// stream-table and stream-global-table joins (Kafka Streams'
// KStreamKTableJoinProcessor and KStreamGlobalKTableJoinProcessor).
type lookupJoin[K, V, VT, VR any] struct {
	left bool
	// keyOf is the key to look up, erased, nil for a null key.
	keyOf func(rec processor.Erased, k K, v V) any
	open  func(ctx processor.Context[any, any]) (lookup, error)
	// openAt, set for a versioned table, makes the lookup as of a time
	// that replaces get.
	openAt func(ctx processor.Context[any, any]) (lookupAt, error)
	joiner func(K, V, VT) VR
	ctx    processor.Context[any, any]
	get    lookup
	getAt  lookupAt
}

func (p *lookupJoin[K, V, VT, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	if p.openAt != nil {
		at, err := p.openAt(ctx)
		if err != nil {
			return fmt.Errorf("open table lookup: %w", err)
		}
		p.getAt = at
		return nil
	}
	get, err := p.open(ctx)
	if err != nil {
		return fmt.Errorf("open table lookup: %w", err)
	}
	p.get = get
	return nil
}

func (p *lookupJoin[K, V, VT, VR]) Process(rec processor.Erased) error {
	// A null value is an empty message, nothing to join; Kafka Streams
	// drops it rather than give the joiner a null that would read as "no
	// match".
	if rec.Value == nil {
		droppedNullValue(p.ctx)
		return nil
	}
	k, v, err := narrow[K, V](rec)
	if err != nil {
		return err
	}
	var tv any
	switch key := p.keyOf(rec, k, v); {
	case key != nil && p.getAt != nil:
		if tv, _, err = p.getAt(key, rec.Timestamp); err != nil {
			return fmt.Errorf("look up table: %w", err)
		}
	case key != nil:
		if tv, _, err = p.get(key); err != nil {
			return fmt.Errorf("look up table: %w", err)
		}
	case !p.left:
		droppedNullKey(p.ctx)
		return nil
	}
	if tv == nil && !p.left {
		return nil
	}
	vt, err := processor.As[VT](tv)
	if err != nil {
		return fmt.Errorf("table value: %w", err)
	}
	rec.Value = orNull(p.joiner(k, v, vt))
	p.ctx.Forward(rec)
	return nil
}

func (p *lookupJoin[K, V, VT, VR]) Close() error { return nil }

// joinMode is the kind of a table-table join, seen from one side.
type joinMode int

const (
	joinInner joinMode = iota
	// joinLeft keeps this side's keys the other side lacks.
	joinLeft
	// joinRight keeps the other side's keys this side lacks: the other
	// side of a left join.
	joinRight
	joinOuter
)

// mirrored is the mode of the join's other side.
func (m joinMode) mirrored() joinMode {
	switch m {
	case joinLeft:
		return joinRight
	case joinRight:
		return joinLeft
	}
	return m
}

// needsOther reports whether a change on this side yields nothing while the
// other side has no value.
func (m joinMode) needsOther() bool { return m == joinInner || m == joinRight }

// keepsOther reports whether the other side's value alone makes a row.
func (m joinMode) keepsOther() bool { return m == joinRight || m == joinOuter }

// TableJoin joins two tables on their keys (an inner join): the result has
// a value wherever both have one. Each update on either side updates the
// result, with the larger of the two sides' timestamps; an update that
// removes a joined key forwards a delete. opts may name the join (its
// processors are then "<name>", "<name>-join-this" and
// "<name>-join-other") and materialize the result; see TableOption.
//
// Both tables are looked up: a table without a store is looked up through
// the tables it derives from, so joining a Filter or MapTableValues result
// needs no extra store. An unmaterialized result is looked up the same
// way, by joining the two sides' current values.
func TableJoin[K, V, VO, VR any](t KTable[K, V], other KTable[K, VO], joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return tableTableJoin(t, other, joiner, joinInner, opts)
}

// TableLeftJoin is TableJoin keeping every key of t: where other has no
// value the joiner gets VO's zero value (Kafka Streams passes null; use a
// pointer VO to tell the cases apart).
func TableLeftJoin[K, V, VO, VR any](t KTable[K, V], other KTable[K, VO], joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return tableTableJoin(t, other, joiner, joinLeft, opts)
}

// TableOuterJoin is TableJoin keeping every key of either table: the joiner
// gets the zero value for the side that has none.
func TableOuterJoin[K, V, VO, VR any](t KTable[K, V], other KTable[K, VO], joiner func(V, VO) VR, opts ...TableOption) KTable[K, VR] {
	return tableTableJoin(t, other, joiner, joinOuter, opts)
}

func tableTableJoin[K, V, VO, VR any](t KTable[K, V], other KTable[K, VO], joiner func(V, VO) VR, mode joinMode, opts []TableOption) KTable[K, VR] {
	b := t.b
	o := collectTableOptions(opts)
	m, given, merr := materializedAs[K, VR](o)
	// Kafka Streams names the store before the processors.
	var store string
	if given {
		store = b.newStoreName(tableMergePrefix, m.name)
	}
	merge := b.newName(tableMergePrefix, o.named())
	thisName, otherName := o.name+"-join-this", o.name+"-join-other"
	if o.name == "" {
		thisName, otherName = b.t.GeneratedName(tableJoinThisPrefix), b.t.GeneratedName(tableJoinOtherPrefix)
	}
	if merr != nil {
		b.t.Fail(merge, merr)
	}
	if joiner == nil {
		b.t.Fail(merge, errNilJoiner)
	}
	if other.b != b {
		b.t.Fail(merge, fmt.Errorf("table %s %w", other.node, errOtherBuilder))
	}
	reversed := func(vo VO, v V) VR { return joiner(v, vo) }
	thisMeta, otherMeta := t.meta, other.meta
	b.t.AddProcessor(thisName, func() processor.Untyped {
		return &tableJoinSide[K, V, VO, VR]{mode: mode, other: otherMeta, joiner: joiner}
	}, t.node)
	b.t.AddProcessor(otherName, func() processor.Untyped {
		return &tableJoinSide[K, VO, V, VR]{mode: mode.mirrored(), other: thisMeta, joiner: reversed}
	}, other.node)
	meta := &tableMeta{store: store}
	if sup, ok := versionedSupplier(m); ok && store != "" {
		meta.versioned, meta.retention = true, sup.HistoryRetention()
	}
	if store == "" {
		meta.view = joinView[K](thisMeta, otherMeta, mode, joiner)
	}
	ks, vs := orSerde(m.keySerde, t.keySerde), m.valueSerde
	sb, serdes := resultStore(store, ks, vs, m)
	b.t.AddProcessor(merge, func() processor.Untyped {
		return &tableMerge[K, VR]{meta: meta, serdes: serdes}
	}, thisName, otherName)
	// Each side looks up the other, as Kafka Streams connects them.
	connectLookup(thisName, other)
	connectLookup(otherName, t)
	if sb != nil {
		b.t.AddStateStore(sb, merge)
	}
	b.t.Copartition(merge, append(slices.Clone(t.sources), other.sources...)...)
	return KTable[K, VR]{b: b, node: merge, keySerde: ks, valueSerde: vs, meta: meta, sources: mergeSources(t.sources, other.sources)}
}

// tableJoinSide is one side of a table-table join (Kafka Streams'
// KTableKTableInnerJoin, LeftJoin, RightJoin and OuterJoin processors): it
// joins each change of its table with the other table's current value.
// V1 is this side's value type, V2 the other's.
type tableJoinSide[K, V1, V2, VR any] struct {
	mode   joinMode
	other  *tableMeta
	joiner func(V1, V2) VR
	ctx    processor.Context[any, any]
	get    lookup
}

func (p *tableJoinSide[K, V1, V2, VR]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	get, err := openLookup[K, V2](ctx, p.other)
	if err != nil {
		return fmt.Errorf("open table lookup: %w", err)
	}
	p.get = get
	return nil
}

func (p *tableJoinSide[K, V1, V2, VR]) Process(rec processor.Erased) error {
	c, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	if c.stale {
		// An out-of-order update of a versioned table changes no latest
		// value, so no row of the join (Kafka Streams' table-table join
		// processors under versioned semantics, KIP-914).
		return nil
	}
	if rec.Key == nil {
		// Equal keys join; a null key equals nothing.
		droppedNullKey(p.ctx)
		return nil
	}
	other, otherTS, err := p.get(rec.Key)
	if err != nil {
		return fmt.Errorf("look up other table: %w", err)
	}
	// Without the other side's value, an inner join (or the right side of
	// a left join) has no row; the others have nothing to say when this
	// side had and has no value either.
	if other == nil && (p.mode.needsOther() || (c.New == nil && c.Old == nil)) {
		return nil
	}
	ts := rec.Timestamp
	if other != nil {
		ts = max(ts, otherTS)
	}
	newValue, err := p.join(c.New, other)
	if err != nil {
		return err
	}
	oldValue, err := p.join(c.Old, other)
	if err != nil {
		return err
	}
	p.ctx.Forward(processor.Erased{Key: rec.Key, Value: change{New: newValue, Old: oldValue}, Timestamp: ts, Headers: rec.Headers})
	return nil
}

// join is the row for this side's value v (nil for none) and the other
// side's; nil when the join has no row for them.
func (p *tableJoinSide[K, V1, V2, VR]) join(v, other any) (any, error) {
	if v == nil && (other == nil || !p.mode.keepsOther()) {
		return nil, nil
	}
	return joinValues(p.joiner, v, other)
}

func (p *tableJoinSide[K, V1, V2, VR]) Close() error { return nil }

// joinValues applies joiner to erased values, nil standing for the zero
// value of a missing side.
func joinValues[V1, V2, VR any](joiner func(V1, V2) VR, a, b any) (any, error) {
	x, err := processor.As[V1](a)
	if err != nil {
		return nil, fmt.Errorf("join value: %w", err)
	}
	y, err := processor.As[V2](b)
	if err != nil {
		return nil, fmt.Errorf("join value: %w", err)
	}
	return orNull(joiner(x, y)), nil
}

// tableMerge merges the two sides of a table-table join into the result
// table, writing it to its store when it is materialized. It forwards the
// changes the sides computed, as Kafka Streams' KTableKTableJoinMerger does.
type tableMerge[K, V any] struct {
	meta   *tableMeta
	serdes []any
	ctx    processor.Context[any, any]
	// store is the result's store, when it is materialized.
	store resultTable[K, V]
}

func (p *tableMerge[K, V]) Init(ctx processor.Context[any, any]) error {
	p.ctx = ctx
	s, err := openResult[K, V](ctx, p.meta, p.serdes)
	p.store = s
	return err
}

func (p *tableMerge[K, V]) Process(rec processor.Erased) error {
	c, err := asChange(rec.Value)
	if err != nil {
		return err
	}
	if p.store.on() {
		k, err := processor.As[K](rec.Key)
		if err != nil {
			return fmt.Errorf("record key: %w", err)
		}
		_, latest, put, err := p.store.write(k, c.New, rec.Timestamp)
		if err != nil {
			return err
		}
		if !put {
			countDropped(p.ctx, metrics.ReasonExpiredVersion)
			return nil
		}
		// Kafka Streams' KTableKTableJoinMerger forwards what its store's
		// put says.
		c.stale = !latest
		rec.Value = c
	}
	p.ctx.Forward(rec)
	return nil
}

func (p *tableMerge[K, V]) Close() error { return nil }

// joinView looks up a table-table join's result from its two sides, as
// Kafka Streams' KTableKTable*JoinValueGetter does: the row the join would
// hold, with the larger of the two sides' timestamps.
func joinView[K, V, VO, VR any](this, other *tableMeta, mode joinMode, joiner func(V, VO) VR) *tableView {
	return &tableView{
		parents: []*tableMeta{this, other},
		open: func(ctx processor.Context[any, any]) (lookup, error) {
			getThis, err := openLookup[K, V](ctx, this)
			if err != nil {
				return nil, err
			}
			getOther, err := openLookup[K, VO](ctx, other)
			if err != nil {
				return nil, err
			}
			return func(key any) (any, int64, error) {
				v, ts, err := getThis(key)
				if err != nil || (v == nil && mode != joinOuter) {
					return nil, 0, err
				}
				vo, otherTS, err := getOther(key)
				if err != nil || (vo == nil && (v == nil || mode == joinInner)) {
					return nil, 0, err
				}
				switch {
				case v == nil:
					ts = otherTS
				case vo != nil:
					ts = max(ts, otherTS)
				}
				r, err := joinValues(joiner, v, vo)
				if err != nil || r == nil {
					return nil, 0, err
				}
				return r, ts, nil
			}, nil
		},
	}
}
