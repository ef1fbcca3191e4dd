// Package tui is `stoatctl watch watermarks`: a terminal view of a running
// engine's event time that says why windows are not closing, and the same
// verdicts for scripts.
//
// It has two layers. The analysis layer (analysis.go, runbook.go,
// metrics.go) is pure: a Tracker takes successive polls of the REST API
// (GET /watermarks, /info, /metrics, package inspect) with the time each was
// taken and returns a Verdict; it has no goroutines, no I/O and no clock of
// its own, so every rule is tested by feeding it samples. The terminal layer
// (model.go, view.go) is a bubbletea program over it: it polls in bubbletea
// commands, reads the time from an injected Clock, and renders a Verdict.
//
// Terms:
//   - global watermark: the minimum over the registered, non-idle input
//     partitions' watermarks; windows close against it.
//   - pinning partition: the non-idle partition whose watermark (or preview
//     watermark, where it shows one) equals the global watermark. Every
//     window is waiting for it; the other partitions do not matter until it
//     moves.
//   - lag: the poll's wall-clock time minus a watermark.
//   - skew: a partition's watermark minus the global watermark; zero for the
//     pinning partition, large when one partition is far behind the rest.
//   - stall: a partition's watermark did not move for at least the stall
//     threshold (Options.StallAfter; with zero, across every poll of the
//     observation; `watch --once` passes --stall-after, as the view does).
//     How long it has stood still is the server's sinceAdvanceMs where it
//     sends one (by the engine's clock; for a partition that never had a
//     record, since the engine registered it), else its lastAdvanceMs,
//     else measured here by comparing polls (and then only a
//     lower bound until a move is seen). An idle partition is never stalled
//     (it no longer counts), nor is one showing a preview watermark (the
//     preview counts instead).
//   - quiet: a partition that delivered no record within the stall
//     threshold: the server's lastRecordMs says when records last arrived,
//     else a change of its last event time between polls does; live is
//     the opposite, records still arriving.
//   - preview: a partition whose next record is stamped ahead of the others
//     and waits behind them; its preview watermark counts meanwhile.
//
// The six runbook branches (the testing-and-operating-event-time runbook,
// applied to the pinning partition of a stalled watermark; Branch):
//   - idle-eligible: the partition went quiet and its idleness timeout has
//     not elapsed yet (or idleness is off for it, timeout 0): wait, or lower
//     that source's idleness timeout.
//   - old-timestamps: the partition is live but its records carry old event
//     times (a producer's clock, a replay): no watermark setting fixes it;
//     find the producer or wait out the catch-up.
//   - alignment: a watermark-alignment group holds dispatch while a
//     lagging member has nothing buffered: size the allowed drift, or give
//     that source a shorter idleness timeout.
//   - future-timestamp: the partition's next record is stamped in the future
//     and waits behind older records: fix the producer's clock or the
//     timestamp unit.
//   - no-event-time: the engine decided the topology has no event time, so
//     there was never a watermark to stall: check the topology.
//   - upstream-tasks: the partition is a repartition topic's, whose
//     watermark the tasks writing the topic tell in markers, and some have
//     not told (their instance is down or starting) or hold it back: find
//     the instance that runs them.
package tui
