// Package topics creates, lists and reads the topics of a Kafka cluster,
// any cluster that speaks the protocol (Apache Kafka, the embedded broker of
// engine/broker), through franz-go's kadm. It is what `stoatctl topic`
// runs; the command only parses flags and prints.
//
// Terms:
//   - A Spec is a topic to create: its name, partition count, replication
//     factor and topic-level configs (Kafka's retention.ms,
//     cleanup.policy, ...). A partition count or replication factor of
//     Default leaves the choice to the broker (num.partitions,
//     default.replication.factor).
//   - A Topic is a topic as the cluster describes it: name, its
//     partitions with their leaders and replicas, and the replication
//     factor, which is the replica count of its first partition (Kafka
//     keeps one per partition; they differ only after a reassignment).
//   - An Admin is one connection to a cluster, named by its bootstrap
//     servers; every error it returns names the first of them and the
//     topic at fault.
//   - Reading is read-committed (records of aborted transactions and
//     transaction markers are never shown), from an offset on every
//     partition, to the end offsets listed when the read starts: a read
//     ends, it does not follow.
package topics
