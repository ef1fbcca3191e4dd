// Package kafka is the engine's side of Kafka that is not record
// processing: how a configuration becomes franz-go client options (the
// producer's and consumers' settings under Kafka Streams' client prefixes
// here, the connection's TLS and SASL in engine/kafka/conn), which
// internal topics a topology needs and whether a cluster has them right,
// and the metadata committed with source offsets.
//
// Terms:
//   - An internal topic is a topic the application owns rather than reads
//     or writes for its users: today the changelog topic of every logged
//     state store, "<application.id>-<store>-changelog". A TopicSpec says
//     what one must look like; EnsureTopics creates the missing ones and
//     checks the existing ones.
//   - The cleanup policy of a changelog follows its store: "compact" for
//     key-value stores, whose changelog must keep the latest value of every
//     key forever; "compact,delete" for window and session stores, whose
//     old windows expire, with retention.ms the store's retention plus a
//     day (Kafka Streams' windowstore.changelog.additional.retention.ms).
//   - The transactional id of an instance under exactly-once is
//     "<application.id>-<stoatflow.instance.id>": unique among the
//     instances running at once, stable across one instance's restarts, so
//     that a restart fences its predecessor and aborts what it left open.
//   - Offset metadata is the string committed with each source partition's
//     offset. The engine writes Kafka Streams' TopicPartitionMetadata
//     format, so that Kafka Streams and stoatctl can take over each other's
//     consumer groups: base64 of a version byte (2), the partition time (the
//     largest record timestamp seen on the partition, big-endian int64) and
//     the processor metadata (named int64 values that processors keep across
//     restarts, such as an emit-final aggregation's last emitted window).
//   - The end of a partition, for a read-committed reader, is its last
//     stable offset (LSO): the first offset of its oldest open
//     transaction, or the high watermark when none is open. ReadToEnd
//     reads to it. A settled read (ReadToEndSettled) reads to the high
//     watermark instead, waiting for the transactions open below it to
//     end, because a transaction's commit markers reach its partitions one
//     at a time.
package kafka
