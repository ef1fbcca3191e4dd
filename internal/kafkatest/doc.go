// Package kafkatest gives integration tests a Kafka broker to talk to, over
// TCP, and lets the same test run against two kinds of broker:
//
//   - the embedded broker (engine/broker, franz-go's kfake), the default: a
//     fresh one for every test, in the test's own process;
//   - a real Apache Kafka broker, when STOATCTL_TEST_KAFKA=real: one per test
//     binary, started on first use with scripts/kafka.sh (single node, KRaft,
//     from Maven Central's jars) and stopped when the binary exits, or the
//     broker at STOATCTL_TEST_BOOTSTRAP when that is set.
//
// A test that can meet both calls Start. A test that leans on the embedded
// broker (its control hooks, or its speed at a scale a real broker would
// take minutes over) calls EmbeddedOnly first and is skipped in the real
// tier. The real broker is shared by the tests of one binary, which run one
// at a time: Start clears it of what earlier tests left (topics and groups)
// before it creates the test's topics, so each test sees an empty cluster
// as it would with the embedded broker.
package kafkatest
