// Package lane picks the lane a key belongs to.
//
// Terms:
//   - A lane is StoatFlow's unit of parallel processing inside one
//     application instance: a virtual thread that processes the records of
//     its keys one at a time, in the order Kafka delivered them. Because a
//     key always lands on the same lane, state keyed by it needs no lock:
//     two events of one key never run at the same moment.
//   - Lane bytes are the bytes a record is laned by: in the first stage of a
//     topology the topic's raw key bytes, exactly as the producer wrote
//     them; behind an in-memory boundary the bytes the boundary's key serde
//     writes. A timer is laned by its key re-serialised with the timer key
//     serde, so a key's timers share its records' lane only when those two
//     byte strings hash alike.
//   - The lane hash of a changelog record is the Murmur2 of the lane bytes
//     of the record or timer that wrote it, in the HashHeader header:
//     restoration puts the record back on the lane its hash picks under
//     the lane count of the engine that restores it.
//   - The lane count is the number of lanes of a sub-topology. The test
//     driver, which has no threads, judges lanes over a reference count
//     (Configured) so that a test gives the same answer on every machine.
//
// For hashes the bytes with Kafka's murmur2, as the default partitioner
// does (toPositive(murmur2(key)) % n), so a key's lane is stable across
// machines, processes and languages, and matches the partition a Java
// producer would pick for the same count.
package lane
