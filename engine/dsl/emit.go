package dsl

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"time"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/window"
)

// EmitStrategy decides when a windowed aggregation forwards its results,
// as Kafka Streams' EmitStrategy.
//
// OnWindowUpdate, the default, forwards a change for every record, as the
// record updates its windows. OnWindowClose forwards nothing per record:
// each window's final result is forwarded once, when the frontier (the
// watermark up to which every contributing record is processed, see
// processor.WatermarkListener) passes the window's close time. The
// windows already emitted are remembered in a companion store,
// "<store>-emitfrontier", so that a restart neither emits a window twice
// nor skips one.
type EmitStrategy struct{ onClose bool }

// OnWindowUpdate forwards a window's aggregate every time a record changes
// it.
func OnWindowUpdate() EmitStrategy { return EmitStrategy{} }

// OnWindowClose forwards each window's final aggregate once, when it
// closes.
func OnWindowClose() EmitStrategy { return EmitStrategy{onClose: true} }

// String names the strategy as Kafka Streams' StrategyType does.
func (e EmitStrategy) String() string {
	if e.onClose {
		return "ON_WINDOW_CLOSE"
	}
	return "ON_WINDOW_UPDATE"
}

// emitFrontierSuffix names the companion store that holds an
// onWindowClose aggregation's emit frontier: "<store>-emitfrontier".
const emitFrontierSuffix = "-emitfrontier"

// noFrontier is the emit frontier of a store that has emitted nothing.
const noFrontier = math.MinInt64

// emitFrontierStore describes the companion store of an onWindowClose
// aggregation whose results live in store. It is an ordinary key-value
// store (one key, the aggregation store's name, holding the highest close
// time emitted), so that it rides the changelog, the epoch commit and the
// restoration of every other store: the frontier commits with the results
// it accounts for. It takes the aggregation's backend and logging choice,
// but not its changelog config, which is that of a windowed topic.
func emitFrontierStore[K, V any](store string, m Materialized[K, V]) state.StoreBuilder {
	supplier := m.supplier
	if supplier == nil {
		supplier = state.InMemory()
	}
	sb := state.KeyValueStoreBuilder(store+emitFrontierSuffix, serde.String(), serde.Int64(), supplier)
	if m.loggingSet && !m.logging {
		sb = sb.WithLoggingDisabled()
	}
	return sb
}

// windowCloser runs, for one windowed store, what a frontier makes due:
// under onWindowClose the emission of every window the frontier has closed,
// exactly once, followed by expiry on the emit frontier; under
// onWindowUpdate, expiry on the frontier itself (every result was already
// forwarded per record, and no record can still be admitted below it).
type windowCloser struct {
	store   string
	onClose bool
	// frontier is the companion store; nil under onWindowUpdate. It is read
	// on every pass rather than cached, so that a pass after an aborted
	// epoch sees the frontier that committed.
	frontier state.KeyValueStore[string, int64]
	// emit forwards, in close-time then key order, every window whose close
	// time lies in (after, upTo]; after is noFrontier for "all".
	emit func(after, upTo int64) error
	// expire drops what retention no longer covers at frontier.
	expire func(frontier int64) error
}

// onWatermark is the pass for frontier. An unset frontier runs none: the
// driver's is -1 and the engine's math.MinInt64 before the first stamps
// roll through, and event time is never negative (sources skip records
// whose time is).
func (c *windowCloser) onWatermark(frontier int64) error {
	if frontier < 0 {
		return nil
	}
	if !c.onClose {
		if err := c.expire(frontier); err != nil {
			return fmt.Errorf("expire state store %s at %d: %w", c.store, frontier, err)
		}
		return nil
	}
	after, found, err := c.frontier.Get(c.store)
	if err != nil {
		return fmt.Errorf("read emit frontier of state store %s: %w", c.store, err)
	}
	if !found {
		after = noFrontier
	}
	if frontier <= after {
		return nil
	}
	if err := c.emit(after, frontier); err != nil {
		return fmt.Errorf("emit windows of state store %s closing up to %d: %w", c.store, frontier, err)
	}
	// The frontier is written after the results it accounts for, in the
	// same epoch, so that both commit or neither does.
	if err := c.frontier.Put(c.store, frontier); err != nil {
		return fmt.Errorf("write emit frontier of state store %s: %w", c.store, err)
	}
	// Expire only now: expiry must never overtake a close not yet
	// emitted.
	if err := c.expire(frontier); err != nil {
		return fmt.Errorf("expire state store %s at %d: %w", c.store, frontier, err)
	}
	return nil
}

// dropLate counts a record (or one of its windows) dropped because the
// window closed at or before the floor, and logs it at debug level.
func dropLate(ctx processor.Context[any, any], reason string, rec processor.Erased, w window.Window, closeTime int64) {
	countDropped(ctx, reason)
	l := loggerOf(ctx)
	if !l.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := []any{"node", ctx.NodeName(), "reason", reason, "key", rec.Key, "timestamp", rec.Timestamp,
		"window_start", w.Start, "window_end", w.End, "close_time", closeTime, "floor", ctx.Floor()}
	// The source record, not an in-memory boundary's: the live engine
	// carries a boundary record's origin across.
	if src, ok := ctx.(interface {
		SourceRecord() (string, int32, int64, bool)
	}); ok {
		if topic, partition, offset, ok := src.SourceRecord(); ok {
			attrs = append(attrs, "topic", topic, "partition", partition, "offset", offset)
		}
	} else if md, ok := ctx.RecordMetadata(); ok {
		attrs = append(attrs, "topic", md.Topic, "partition", md.Partition, "offset", md.Offset)
	}
	l.Debug("skipping record for a closed window", attrs...)
}

// loggerOf is the runtime's logger when the context offers one, else
// slog's default.
func loggerOf(ctx processor.Context[any, any]) *slog.Logger {
	if c, ok := ctx.(interface{ Logger() *slog.Logger }); ok {
		if l := c.Logger(); l != nil {
			return l
		}
	}
	return slog.Default()
}

// storeOf returns the store called name as S, the typed interface of its
// kind.
func storeOf[S any](ctx processor.Context[any, any], name string) (S, error) {
	var zero S
	s, err := ctx.StateStore(name)
	if err != nil {
		return zero, err
	}
	typed, ok := s.(S)
	if !ok {
		return zero, fmt.Errorf("state store %s is a %T, not a %s", name, s, reflect.TypeFor[S]())
	}
	return typed, nil
}

// millisDuration converts a millisecond count to a Duration, saturating
// instead of wrapping for counts past the Duration range (a grace of
// years plus a size of years).
func millisDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
