package processor

import (
	"errors"
	"time"
)

// Processor is a node of a topology. The runtime calls Init once before the
// first record, Process for every record in order, and Close at shutdown.
// Process runs on the lane that owns the record's key, so state keyed by the
// record's key needs no lock.
type Processor[KIn, VIn, KOut, VOut any] interface {
	Init(ctx Context[KOut, VOut]) error
	Process(rec Record[KIn, VIn]) error
	Close() error
}

// FixedKeyProcessor is a processor that may change values but never keys,
// so a key-dependent operation after it needs no re-key boundary.
type FixedKeyProcessor[K, VIn, VOut any] interface {
	Init(ctx FixedKeyContext[K, VOut]) error
	Process(rec Record[K, VIn]) error
	Close() error
}

// Base gives a processor no-op Init and Close; embed it when only Process
// matters. It keeps the context so Forward is at hand.
type Base[KOut, VOut any] struct {
	Ctx Context[KOut, VOut]
}

// Init keeps the context.
func (b *Base[KOut, VOut]) Init(ctx Context[KOut, VOut]) error { b.Ctx = ctx; return nil }

// Close does nothing.
func (b *Base[KOut, VOut]) Close() error { return nil }

// PunctuationType says which clock a punctuator follows.
type PunctuationType int

const (
	// StreamTime punctuators fire as processed records move stream time.
	StreamTime PunctuationType = iota
	// WallClockTime punctuators fire as the system (or test) clock moves.
	WallClockTime
)

func (t PunctuationType) String() string {
	if t == WallClockTime {
		return "WALL_CLOCK_TIME"
	}
	return "STREAM_TIME"
}

// Punctuator is called with the time (stream or wall clock) that fired it.
type Punctuator func(timestamp int64) error

// Cancellable stops a scheduled punctuator.
type Cancellable interface{ Cancel() }

// Context is what a processor sees of the runtime. Forward hands a record to
// the node's children synchronously: when Forward returns, the children (and
// their descendants) have processed it. A child's failure does not come back
// through Forward; the runtime records it and fails the record's processing
// once the calling Process returns, so a processor need not check every
// forward.
type Context[KOut, VOut any] interface {
	ApplicationID() string
	// TaskID names the task (sub-topology and partition or lane) running
	// the processor, e.g. "0_1".
	TaskID() string
	// NodeName is the name of the processor in the topology.
	NodeName() string
	// RecordMetadata is the origin of the record being processed; false in
	// a punctuator or for records without a source topic.
	RecordMetadata() (RecordMetadata, bool)
	// CurrentStreamTime is the largest record timestamp processed so far,
	// the record being processed included; -1 before the first record.
	CurrentStreamTime() int64
	// CurrentSystemTime is the wall clock in epoch milliseconds, which the
	// test driver moves only when told to.
	CurrentSystemTime() int64
	// Watermark is the event-time clock: no record with a lower timestamp
	// is still expected. In the test driver it is the largest timestamp
	// seen; in the engine the minimum over the sources' partitions.
	Watermark() int64
	// Floor is the watermark the current work is judged against for
	// lateness: a window whose close time is at or before the floor is
	// closed, and a record for it is dropped. It is not the live
	// watermark: records are judged against the watermark stamped on the
	// last commit barrier their lane crossed, so that a window's final
	// result never misses a record still queued on another lane.
	Floor() int64
	// IsLate reports whether the record being processed has a timestamp
	// below the watermark. Most late records still fall inside a window's
	// grace and are counted; this is for processors that want to treat
	// them differently.
	IsLate() bool
	Forward(rec Record[KOut, VOut])
	// ForwardTo forwards to one named child only; an unknown child is an
	// error at the end of Process, naming both nodes.
	ForwardTo(rec Record[KOut, VOut], child string)
	// StateStore returns a store connected to this processor. Assert it to
	// the typed interface (state.KeyValueStore[K, V], ...) or use the
	// generic helpers in this package.
	StateStore(name string) (any, error)
	// Schedule registers a punctuator. Stream-time punctuators are aligned
	// to 0 and fire as soon as stream time reaches their next multiple;
	// wall-clock ones first fire interval after scheduling.
	Schedule(interval time.Duration, typ PunctuationType, p Punctuator) (Cancellable, error)
	// Commit asks the runtime to commit soon; it may be ignored.
	Commit()
	// AppConfig is the application configuration as key-value strings.
	AppConfig() map[string]string
}

// WatermarkListener is implemented by processors that act when event time
// closes something: windowed aggregations emitting final results, suppress
// buffers releasing, stream-stream joins emitting the unmatched side. The
// runtime calls OnWatermark with the frontier, the watermark up to which
// every contributing record is processed (and, in the engine, committed);
// records forwarded from it are judged downstream against the previous
// frontier.
type WatermarkListener interface {
	OnWatermark(frontier int64) error
}

// CloseScheduler is implemented by a WatermarkListener that may be able
// to tell when its next final results can be due: NextClose(after) is the
// smallest close time greater than after at which one of its windows can
// close (math.MaxInt64 when none can), with known false when it cannot
// tell (sessions, sliding windows). It may name a close with nothing to
// emit, never miss one. The engine uses it for its cadence alone: a
// barrier that will make such a close the frontier comes sooner.
type CloseScheduler interface {
	NextClose(after int64) (close int64, known bool)
}

// BarrierListener is implemented by processors that act at a commit
// barrier, inside the epoch it closes (suppress until a barrier).
type BarrierListener interface {
	OnBarrier() error
}

// FixedKeyContext is the Context of a FixedKeyProcessor: it forwards records
// whose key is the input key.
type FixedKeyContext[K, VOut any] interface {
	Context[K, VOut]
}

// ErrStoreNotConnected is returned by StateStore for a store that exists but
// was not connected to the calling processor, or does not exist.
var ErrStoreNotConnected = errors.New("state store is not connected to this processor")

// ErrUnknownChild is reported when ForwardTo names a node that is not a
// child of the forwarding processor.
var ErrUnknownChild = errors.New("unknown child node")
