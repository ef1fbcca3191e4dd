// Package window defines event-time windows: the window definitions that
// windowed aggregations and stream-stream joins use, the Window and Windowed
// types that state stores and records carry, and the serdes for windowed
// keys. Semantics and byte layouts follow Kafka Streams, because migration
// reads Kafka Streams topics and changelogs.
//
// Terms:
//
//   - A window is a span of event time, Window{Start, End}, in milliseconds
//     since the epoch. Whether End is inside the window depends on the kind:
//     time windows (tumbling and hopping) are half-open, [Start, End);
//     sliding windows and session windows are closed, [Start, End], as in
//     Kafka Streams' TimeWindow (used for sliding windows with End = Start +
//     time difference) and SessionWindow.
//   - Tumbling windows are time windows whose advance equals their size:
//     every timestamp falls into exactly one. Hopping windows advance by less
//     than their size and overlap. Both are aligned to the epoch: window
//     starts are multiples of the advance, and never negative.
//   - A sliding window covers the records within a fixed time difference of
//     each other; its bounds follow the records, not the epoch.
//   - A session window groups a key's records separated by less than the
//     inactivity gap; sessions merge as records fill the gaps between them.
//   - Join windows bound how far apart in time two records may be for a
//     stream-stream join to pair them: before and after the left record.
//   - Stream time is the largest record timestamp a task has seen; the
//     frontier is the engine's generalisation of it across lanes. Either can
//     be the "now" of event time.
//   - Grace is how long after a window ends late records are still admitted.
//     A window's close time is the first stream time at which it is closed:
//     once stream time (or the frontier) is at or past CloseTime, the window
//     accepts no more records and its result is final. Every definition's
//     CloseTime follows this one rule.
//   - Retention is how long a store keeps windows; it is the store's
//     business (engine/state), but must cover size plus grace.
//   - A windowed key, Windowed[K], is a record key with the window it was
//     aggregated in, as windowed aggregations emit them.
//
// Definitions are plain values. Constructors take time.Duration and keep
// whole milliseconds (sub-millisecond parts are dropped, as Java's
// Duration.toMillis does for positive durations); they do not fail. Validate
// reports what is wrong with a definition, naming it, and callers (the DSL)
// validate before use; methods of an invalid definition return zero values
// rather than panicking.
//
// TimeWindowedSerde and SessionWindowedSerde write Kafka Streams' layouts
// for windowed keys: the inner key followed by the 8-byte big-endian window
// start (time windows), or by the 8-byte end and then the 8-byte start
// (session windows).
//
// This package imports no other engine package but serde, so engine/state
// can use Window and Windowed for its window and session stores.
package window
