// Package interop is the Go side of the interop tooling: it finds and runs
// the Kafka Streams 4.4 runner built from this folder's Maven project
// (src/, a test tool that is never shipped), and it lists the topologies
// that exist twice, once as a Kafka Streams application in the runner and
// once as ours (topologies/*.yaml, or a Go example), with the input both
// are fed (testdata/*.jsonl).
//
// Terms:
//
//   - A mirror is one such pair: the same sources, sinks and store names,
//     the same semantics, so the same input must give the same output, or
//     an output that differs only where docs/event-time.md lists a
//     difference by design.
//   - The runner is dev.stoatflow.interop.Runner. "run" runs a mirror's
//     Kafka Streams application against a broker; "driver" runs it under
//     Kafka Streams' TopologyTestDriver on a JSON Lines input and prints
//     what its sinks wrote.
//
// The package's tests are the differential checks: Kafka Streams'
// TopologyTestDriver against stoatctl replay (on every run of the tests),
// and Kafka Streams against stoatctl run on a real Apache Kafka broker (in
// the real-Kafka tier, STOATCTL_TEST_KAFKA=real).
package interop
