// Package benchcompare is the comparison harness behind `make
// bench-compare`: it runs the same prepared input through three systems on
// one broker and reports their throughput, latency and memory side by side.
//
// Terms:
//   - A system is one way of doing the work: the bare loop (the franz-go
//     exactly-once consume-transform-produce loop of engine/benchbase, the
//     ceiling of the broker path: no engine can beat the client under it),
//     stoatctl (the live engine, in this process), and Kafka Streams 4.4 (the
//     interop runner, a JVM of its own), with its record cache as it ships
//     (10 MB) and, for the stateful topologies, with the cache off.
//   - A topology is one job, written once per system: map (upper-case each
//     value), count (per key), window-update and window-close (one-minute
//     tumbling counts emitted on every update, and once on window close),
//     join (an inner stream-stream join within a second). The bare loop only
//     maps; its rate is the ceiling every topology is divided by.
//   - A round runs every topology through every system once, one after the
//     other; rounds interleave the systems, so that a machine that slows
//     down in the middle of a run slows all of them alike. A sample is one
//     system's rate in one round; a summary is the median and the range of
//     a system's samples; a ratio is taken per round (this system's rate
//     over the ceiling's, or over Kafka Streams', in the same round) and then
//     summarised the same way.
//   - Throughput is input records over the time from the group assigning the
//     input (Kafka Streams: its RUNNING state) to the last input offset
//     committed, under exactly_once_v2 on every system.
//   - Latency is from a record's produce to its read, read_committed, from
//     the output, at a given share of a system's measured maximum rate,
//     and at one rate offered to every system alike (SharedShare of the
//     slowest system's maximum), which is where their latencies compare.
//     Final-result latency is from the moment a window's close has been
//     passed on every input partition (the earliest the watermark can pass
//     it) to its result being readable, committed; it is given in commit
//     intervals.
//   - CPU per million records is the user and system CPU time a system
//     and its broker spent over a run, per million input records: on two
//     cores the pair keeps the machine busy, so it says why a rate is what
//     it is (cpu.go: benchbase.ProcessCPU for the systems in this
//     process, benchbase.PIDCPU for Kafka Streams' JVM and the brokers).
//   - Bytes per key is the heap the in-memory key-value store holds per key
//     after a garbage collection, for a count's entries.
package benchcompare
