// Package migrate moves a Kafka Streams application's state, committed
// offsets and event time over to a stoatctl topology: `stoatctl migrate`.
//
// Terms:
//
//   - The source is the Kafka Streams application (--from-application-id),
//     read only through its internal topics and its consumer group on the
//     broker. The target is our application (--application-id) and its
//     topology (-t).
//
//   - A mapping pairs a source store, named by its changelog topic
//     "<source>-<store>-changelog", with a store of our topology, by name or
//     by --map KS_STORE=OUR_STORE. Every other internal topic of the source
//     is listed as unmapped, with the reason (a repartition topic, an empty
//     suppress buffer, a foreign-key join's subscription topic). A
//     foreign-key join's primary store, which Kafka Streams does not
//     have, is fed by the join's left table's store, a second copy.
//
//   - A kind is a store's byte layout: key-value (plain or timestamped),
//     versioned (key-value, every record a version at its timestamp),
//     window (key, 8-byte start, 4-byte sequence number) or session (key,
//     8-byte end, 8-byte start). Kafka Streams' changelogs and ours share the
//     layouts (engine/state/layout.go) and the placement: a task's changes
//     go to the task's partition. Ours also stamp each record with the lane
//     hash header (the murmur2 hash of the key that picks the lane within
//     the task). Translation is decoding (which checks the layout), copying
//     each partition to the same partition, and stamping.
//
//   - A plan is everything a run would do, computed by reading and writing
//     nothing but reads: per mapped store and source partition the record
//     count, per store the emit frontier, the watermark floor, and the
//     offsets to copy. --dry-run prints it; a real run executes it.
//
//   - The floor is our watermark stamp (engine: the last barrier stamp,
//     "<app>-stoatflow-watermark-changelog"), seeded from Kafka Streams'
//     stream time: the partition times in its committed offsets
//     (TopicPartitionMetadata), so a record Kafka Streams would have dropped
//     as late is dropped by us too.
//
//   - The emit frontier of an on-window-close store is the largest close
//     time already emitted ("<store>-emitfrontier"), seeded under
//     --emit-frontier from Kafka Streams' last emitted window close time in
//     the processor metadata (turned into our close time by our window
//     definition), else from the store's largest changelog timestamp. Unseeded, our first emission passes re-emit every
//     closed window of the store; the plan predicts how many.
//
//   - A problem is what refuses a plan before anything is written: a Kafka
//     Streams store mapped to no store of ours, a store of ours nothing
//     feeds, input topics that differ, windows or records that contradict
//     our store's definition or serdes (refuse.go, windowcheck.go). The
//     refusal (RefusalError) lists every problem; an override
//     (--skip-store, --new-store, --skip-input, --new-input) accepts one
//     by naming its subject, and the plan lists it with what it loses.
//
//   - A pending window is one Kafka Streams had closed (its close time at
//     or before its stream time) and not yet emitted when it stopped: it
//     looks for closed windows at most once a second. The seeded emit
//     frontier leaves it unemitted, so our engine emits it once.
//
//   - A marker is the record, in "<app>-stoatflow-migrate-markers", that a
//     source partition was translated completely; it commits in the same
//     transaction as the partition's last batch, so an interrupted run is
//     finished by running it again.
//
//   - The offline path (--from-state-dir, Options.StateDir) takes the
//     stores from the stopped Kafka Streams' state directory instead of the
//     changelogs (statedir.go has its layout): each store entry becomes the
//     changelog record that would rebuild it, and is translated and
//     verified as one. The stores are read with a RocksDB library loaded at
//     run time (Options.RocksDBLibrary; statedir_rocks.go says why).
//
// A stream-stream join's stores (both sides' window stores, and a left or
// outer join's shared store of unmatched records, JoinOuter) are translated
// like any other store, from their changelogs or the state directory
// (join.go): their state at the
// cutover is the emit frontier, since Kafka Streams deletes an unmatched
// record once its null-join is emitted, and emits a pair when the second
// of its records arrives. A null-join pending at the cutover (its window
// closed, Kafka Streams had not looked yet) is emitted once by our engine.
//
// The way back (Options.Direction = Reverse, reverse.go) runs the same
// plan backwards: a stopped application of ours goes to a Kafka Streams
// application id. Each store of ours goes to Kafka Streams' changelog of
// the store it maps to (our state, and a tombstone for every key only
// that changelog holds, so that Kafka Streams' restore ends on our state
// from wherever its checkpoint says), our group's offsets with their
// partition times to its group, and each emit frontier to the processor
// metadata Kafka Streams reads its last emitted window close time from.
// A store without a Kafka Streams layout is refused as on the way there.
//
// A foreign-key join's subscription store (fkjoin.go) is translated:
// each key's last SubscriptionWrapper, checked to be sent by the left
// key's current value (its Murmur3 hash), becomes our hash of that value
// (docs/decisions/0043).
//
// A stream-table join's grace buffer (gracebuffer.go) is translated: Kafka
// Streams' time-first key less its prefix byte, its BufferValue's headers
// and value.
//
// Kafka Streams' suppress buffers (changelog header v=3) are translated
// into our topology's suppress buffer of the same name (suppress.go), from
// their changelog also on the offline path (Kafka Streams keeps them in
// memory only); one holding records is refused when ours has no such
// buffer or does not tell the suppressed table's key layout.
//
// The shadow run (Shadow, shadow.go, compare.go; `stoatctl migrate
// shadow`) runs our topology beside a live Kafka Streams application and
// compares the outputs. Its terms:
//
//   - The shadow id is the application id of everything the shadow writes:
//     the seed's changelogs and group, the shadow inputs (copies of the
//     input, ShadowInputTopic) our engine reads and the shadow outputs
//     (ShadowOutputTopic) it writes. Kafka Streams' topics and group are
//     only read.
//
//   - The seed is a migration of Kafka Streams' state into the shadow id
//     while Kafka Streams runs, taken between two reads of its committed
//     offsets that must agree.
//
//   - An aligned point is a moment at which both sides have processed the
//     same input: Kafka Streams' committed offsets, read twice around a read
//     of its output, and our engine given the input up to them and waited
//     for. A key is compared there by its latest value on each side; a key
//     with records in Kafka Streams' repartition topics not yet aggregated
//     is deferred to a later point.
//
//   - A verdict is what a key's last comparison found (Verdict): matched, a
//     documented difference (window-not-emitted-yet), or unexpected.
package migrate
