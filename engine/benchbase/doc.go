// Package benchbase is the yardstick the engine's benchmarks measure
// themselves against: the same work done by a bare franz-go loop, run in
// the same process against the same kind of broker, so that a benchmark can report
// the engine's throughput as a ratio of the baseline's. Absolute figures on
// shared, noisy machines say little; a ratio taken in one run says how much
// the engine costs over the client underneath it.
//
// Terms:
//   - Load fills an input topic: n records with keys drawn from a fixed set
//     of distinct keys, so that a count or an aggregation has something to
//     group, and values of a given size, each naming its record's index so
//     that a test can tell every record apart in the output, padded with
//     pseudo-random letters so that compression does not make the data
//     unrealistically small.
//   - The baseline is a consume-transform-produce loop: read the input topic
//     as a consumer group, upper-case each value, write it with its key to
//     the output topic, and commit the input offsets. It stops once n
//     records were consumed and their offsets committed.
//   - Under exactly-once (EOS) the loop is a kgo.GroupTransactSession: it
//     reads committed records only, and writes its output and commits its
//     offsets in one transaction per commit interval. Under at-least-once
//     (ALOS) it is a plain consumer with an idempotent producer that
//     flushes the output and then commits the offsets, once per commit
//     interval.
//   - Throughput is records per second from the group assigning the input
//     partitions to the last commit. Connecting and joining the group,
//     which a benchmark of a million records should not be about, are
//     reported apart, as Startup.
//   - Quiet waits for a quiet machine (the CPUs mostly idle for a short
//     window) before a timed run, so that a run does not pay for the
//     garbage collection of the load or of the run before it. HeapInUse
//     samples the heap without stopping the world.
//   - CPU time is user plus system time: ProcessCPU is this process's
//     (getrusage), PIDCPU another process's, all its threads, from
//     /proc/<pid>/stat. On a two-core machine a run's rate is mostly the
//     CPU it and its broker spend per record, so benchmarks report both.
//   - RuntimeCPU is the Go runtime's own account of its CPU, settled at
//     the end of each GC cycle: its GCShare between two readings is the
//     share of the CPU the garbage collector took (a share only: the
//     runtime counts a P's time, not the operating system's CPU time).
package benchbase
