// Package broker runs an embedded, in-process Kafka broker: franz-go's kfake
// cluster listening on TCP and speaking the Kafka protocol, so that any
// client (franz-go, librdkafka's kcat, the Java client) can produce to it and
// consume from it. It lets `stoatctl broker` and `stoatctl run` work on a
// machine with no Kafka cluster, and it is what the engine's tests run
// against.
//
// Terms:
//   - A broker here is the whole embedded cluster: one listener per node
//     (NumBrokers, default one), all in this process. Addr is the first
//     node's host:port, which is all a client needs to bootstrap.
//   - A seed topic is a topic Start creates when it does not exist yet. An
//     existing topic, restored from the data directory, is left as it is,
//     even when the seed asks for another partition count (Kafka's
//     create-if-not-exists); Topics reports what the broker actually has.
//   - Auto-creation (Options.AutoCreateTopics, off by default) is Kafka's
//     auto.create.topics.enable: a topic a client names in a metadata
//     request, asking for it to be created, is created with one partition.
//     kfake does not check such a name as CreateTopics does, so a name
//     Kafka would refuse (a '/', or one colliding with another in '.' and
//     '_') is created all the same.
//   - The data directory is where kfake persists everything a restart must
//     find again: topics and their configs, record segments, committed
//     offsets and group state, producer ids and transaction state. Without
//     one, the broker keeps everything in memory and loses it on Close.
//     Segments are written through the OS page cache and synced on Close
//     (Kafka's own default); Options.SyncWrites syncs every batch, so that
//     acknowledged records survive a machine crash as well as a process
//     kill. One broker at a time may use a data directory: Start takes a
//     lock on it, because kfake itself does not guard against a second
//     writer. A broker killed with a transaction open leaves it without
//     an end marker, which kfake does not write when it reloads the log;
//     Start writes the abort marker before it serves anyone, or
//     read_committed consumers would never see that transactional id's
//     later transactions (docs/decisions/0003).
//   - A commit intent is the broker's own record, in the data directory,
//     that a producer asked to commit a transaction, with the offsets the
//     transaction carries, written before kfake starts on it. kfake
//     writes a commit's markers partition by partition and its offsets
//     after them, so a kill in between leaves it half done; an intent not
//     followed by the producer's next request is such a commit, and Start
//     finishes it: it copies the records kfake reloaded as aborted into a
//     repair transaction of its own, with the offsets the groups lack
//     (docs/decisions/0012).
//   - A broker child is an in-memory broker in a process of its own: the
//     program that wants one starts itself again (StartChild), and that
//     process, seeing ChildEnv set (IsChild), serves a broker on a free
//     port and prints its address (ServeChild). The benchmarks measure
//     against one, so that the broker's CPU and heap are not counted as
//     the measured client's (docs/decisions/0019).
//
// What kfake leaves out compared with a real broker matters little for
// development: no real replication (each partition is stored once, whatever
// the replication factor a topic asks for), no throttling, no tiered
// storage.
package broker
