package dsl

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"github.com/stoatflow/stoatctl/engine/metrics"
	"math"
	"slices"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// SessionWindowedKStream is a grouped stream windowed by session windows,
// ready for an aggregation, as Kafka Streams' SessionWindowedKStream.
// Results are tables keyed by the record key and its session, [first
// record, last record].
type SessionWindowedKStream[K, V any] struct {
	g    KGroupedStream[K, V]
	def  windowDef
	emit EmitStrategy
}

// WindowedBySession windows the grouped stream by sessions: a key's records
// less than the inactivity gap apart share one. An invalid definition fails
// the build, naming it.
func (g KGroupedStream[K, V]) WindowedBySession(w window.SessionWindows) SessionWindowedKStream[K, V] {
	return SessionWindowedKStream[K, V]{g: g, def: windowDef{kind: sessionWindowKind, session: w}}
}

// EmitStrategy sets when results are forwarded: OnWindowUpdate (the
// default: every merge and update, as a removal of the merged sessions and
// the new session) or OnWindowClose (each final session once).
func (s SessionWindowedKStream[K, V]) EmitStrategy(e EmitStrategy) SessionWindowedKStream[K, V] {
	s.emit = e
	return s
}

// CountSession counts the records of each key's sessions, Kafka Streams'
// SessionWindowedKStream.count (a function for the reason CountWindowed
// is).
func CountSession[K, V any](s SessionWindowedKStream[K, V], materialized ...Materialized[K, int64]) KTable[window.Windowed[K], int64] {
	m, given := firstMaterialized(materialized)
	if given && m.name == "" {
		// As for time windows, Kafka Streams burns a store name here.
		s.g.s.b.t.NextIndex()
	}
	merge := func(_ K, agg aggValue[int64], other int64) aggValue[int64] {
		return aggValue[int64]{v: agg.v + other, ok: true}
	}
	return windowedAggregate(s.g, s.def, s.emit, streamAggregatePrefix, m, orSerde(m.valueSerde, serde.Int64()), counting[K, V](), merge, nil)
}

// ReduceSession combines the values of each key's sessions with
// reducer(aggregate, value); merging sessions reduces their aggregates the
// same way, the earlier session's first. It is Kafka Streams'
// SessionWindowedKStream.reduce.
func ReduceSession[K, V any](s SessionWindowedKStream[K, V], reducer func(agg, value V) V, materialized ...Materialized[K, V]) KTable[window.Windowed[K], V] {
	m, _ := firstMaterialized(materialized)
	return windowedAggregate(s.g, s.def, s.emit, streamReducePrefix, m, orSerde(m.valueSerde, s.g.valueSerde), reducing[K](reducer), reducingMerge[K](reducer),
		nilFunc("reducer", reducer == nil))
}

// reducingMerge is Kafka Streams' mergerForAggregator of a reduce: the
// first session's aggregate as is, then reducer(aggregate, other).
func reducingMerge[K, V any](reducer func(agg, value V) V) func(K, aggValue[V], V) aggValue[V] {
	return func(_ K, agg aggValue[V], other V) aggValue[V] {
		if !agg.ok {
			return aggOf(other)
		}
		return aggOf(reducer(agg.v, other))
	}
}

// AggregateSession folds the values of each key's sessions into an
// aggregate that starts as initializer() and is updated by adder; merger
// combines the aggregates of sessions a record joins. It is Kafka Streams'
// SessionWindowedKStream.aggregate.
func AggregateSession[K, V, VA any](s SessionWindowedKStream[K, V], initializer func() VA, adder func(key K, value V, agg VA) VA, merger func(key K, agg, other VA) VA, materialized ...Materialized[K, VA]) KTable[window.Windowed[K], VA] {
	m, _ := firstMaterialized(materialized)
	return windowedAggregate(s.g, s.def, s.emit, streamAggregatePrefix, m, m.valueSerde, aggregating(initializer, adder), aggregatingMerge(merger),
		errors.Join(nilFunc("initializer", initializer == nil), nilFunc("aggregator", adder == nil), nilFunc("session merger", merger == nil)))
}

// aggregatingMerge adapts a user merger.
func aggregatingMerge[K, VA any](merger func(key K, agg, other VA) VA) func(K, aggValue[VA], VA) aggValue[VA] {
	return func(k K, agg aggValue[VA], other VA) aggValue[VA] { return aggOf(merger(k, agg.v, other)) }
}

// sessionEntry is a session read by the merge scan or the emit pass.
type sessionEntry[K, VA any] struct {
	session window.Windowed[K]
	agg     VA
	// keyBytes orders sessions closing together in the emit pass.
	keyBytes []byte
}

// sessionWindowAggregate is Kafka Streams' KStreamSessionWindowAggregate
// under the one late rule. A record merges with every session of its key
// within the gap of it, except closed ones: a closed session is final, so
// an on-time record in its gap starts a new session rather than reopening
// it (Flink's behaviour; Kafka Streams merges and retracts). The merged
// session is then judged: it is dropped, as late_session, when its close
// time (merged end + gap + grace) is at or before the floor. So a late
// record that bridges two open sessions is folded in, as in Kafka Streams.
type sessionWindowAggregate[K, V, VA any] struct {
	windowedNode[K, VA]
	agg    aggregation[K, V, VA]
	store  state.SessionStore[K, VA]
	merged []sessionEntry[K, VA]
}

func (p *sessionWindowAggregate[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	if err := p.init(ctx); err != nil {
		return err
	}
	s, err := storeOf[state.SessionStore[K, VA]](ctx, p.plan.store)
	p.store = s
	return err
}

// Process drops a record without a key; a null value is aggregated, as in
// Kafka Streams' session aggregation.
func (p *sessionWindowAggregate[K, V, VA]) Process(rec processor.Erased) error {
	k, v, ok, err := keyedRecord[K, V](p.ctx, rec, false)
	if !ok {
		return err
	}
	ts, def, floor := rec.Timestamp, p.plan.session, p.ctx.Floor()
	gap := def.Gap()
	latestStart := int64(math.MaxInt64)
	if ts <= math.MaxInt64-gap {
		latestStart = ts + gap
	}
	it, err := p.store.FindSessions(k, ts-gap, latestStart)
	if err != nil {
		return fmt.Errorf("find sessions: %w", err)
	}
	p.merged = p.merged[:0]
	agg := p.agg.init()
	merged := window.Window{Start: ts, End: ts}
	for it.Next() {
		s := it.Key()
		if window.Closed(def.CloseTime(s.Window.End), floor) {
			continue
		}
		val := it.Value()
		p.merged = append(p.merged, sessionEntry[K, VA]{session: s, agg: val})
		agg = p.plan.merge(k, agg, val)
		merged = window.Window{Start: min(merged.Start, s.Window.Start), End: max(merged.End, s.Window.End)}
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("find sessions: %w", err)
	}
	if c := def.CloseTime(merged.End); window.Closed(c, floor) {
		dropLate(p.ctx, metrics.ReasonLateSession, rec, merged, c)
		return nil
	}
	// A record equal to the only session it found overwrites it; otherwise
	// the sessions it merged are replaced by the merged one.
	if merged != (window.Window{Start: ts, End: ts}) {
		for _, e := range p.merged {
			if err := p.store.Remove(e.session); err != nil {
				return fmt.Errorf("remove merged session: %w", err)
			}
			p.forward(processor.Erased{Key: e.session, Value: change{Old: orNull(e.agg)}, Timestamp: e.session.Window.End, Headers: rec.Headers})
		}
	}
	newAgg := p.agg.add(k, v, agg)
	session := window.Windowed[K]{Key: k, Window: merged}
	if err := p.store.Put(session, newAgg); err != nil {
		return fmt.Errorf("write session aggregate: %w", err)
	}
	p.forward(processor.Erased{Key: session, Value: change{New: orNull(newAgg)}, Timestamp: merged.End, Headers: rec.Headers})
	return nil
}

// emitSessions forwards the final aggregate of every session closing in
// (after, upTo], each with its end as timestamp. Sessions close in end
// order, which is the store's time-first order; those ending together are
// forwarded in the order of their key bytes (then start), so that the
// order is close time, then key, as for the other window kinds.
func (p *windowedPlan[K, VA]) emitSessions(ctx processor.Context[any, any], s state.SessionStore[K, VA], after, upTo int64) error {
	lo, hi := p.startRange(after, upTo)
	if lo > hi {
		return nil
	}
	it, err := s.FindSessionsAll(lo, math.MaxInt64)
	if err != nil {
		return err
	}
	defer it.Close()
	var batch []sessionEntry[K, VA]
	flush := func() error {
		if len(batch) > 1 {
			for i := range batch {
				kb, err := p.keys.Serialize(p.store, batch[i].session.Key)
				if err != nil {
					return fmt.Errorf("serialize session key: %w", err)
				}
				batch[i].keyBytes = kb
			}
			slices.SortStableFunc(batch, func(a, b sessionEntry[K, VA]) int {
				if c := bytes.Compare(a.keyBytes, b.keyBytes); c != 0 {
					return c
				}
				return cmp.Compare(a.session.Window.Start, b.session.Window.Start)
			})
		}
		for _, e := range batch {
			if c := p.closeTime(e.session.Window); c <= after || c > upTo {
				continue
			}
			ctx.Forward(processor.Erased{Key: e.session, Value: change{New: orNull(e.agg)}, Timestamp: e.session.Window.End})
		}
		batch = batch[:0]
		return nil
	}
	for it.Next() {
		session := it.Key()
		if err := it.Err(); err != nil {
			return err
		}
		// Ordered by end: the first past the range ends the pass.
		if session.Window.End > hi {
			break
		}
		if len(batch) > 0 && batch[0].session.Window.End != session.Window.End {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, sessionEntry[K, VA]{session: session, agg: it.Value()})
	}
	if err := it.Err(); err != nil {
		return err
	}
	return flush()
}
