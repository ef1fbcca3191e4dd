// Package testdriver runs a topology single-threaded, without Kafka, for
// unit tests: the Go counterpart of Kafka Streams' TopologyTestDriver.
//
// The driver runs the very tasks the live engine runs (package task); only
// the clock and the scheduling differ. Records piped into an input topic are
// processed synchronously, depth first; records that cross an in-memory
// boundary, or that a sink writes back to a topic the topology reads, are
// queued and processed before the pipe returns. By default every pipe ends
// with stream-time punctuation and a commit (config
// test.driver.commit-per-pipe). Wall-clock time moves only when the test
// calls AdvanceWallClockTime.
//
// Event-time timers fire right after the watermark flush that reaches
// them, processing-time timers in AdvanceWallClockTime before its barrier;
// both are judged against the watermark of the last barrier. The driver has
// no threads, but it computes lanes: the timer lane checks judge splits
// over WithNumberOfLanes, else test.driver.number-of-lanes, else
// num.stream.threads, else 16, so a lane split fails the unit test rather
// than racing in production.
//
// Everything written is captured per topic, changelogs and boundary topics
// included, and read back through output topics; reading consumes.
package testdriver
