// Package lanes runs the live engine's lanes: one goroutine per lane,
// taking records and barrier markers from its producers, running the
// lane's task, and driving the barrier protocol (package barrier) at every
// marker. Package lane picks the lane of a key; this package is the lane
// at work. (It is a package of its own because package task, which the
// lanes run, lanes timers with package lane.)
//
// Terms:
//   - An item is what travels down a lane's queue: a record or a marker.
//     The dispatcher hands a lane records in batches of up to BatchSize
//     (Lane.Deliver); an upstream lane hands over one record at a time, as
//     its task forwards it across an in-memory boundary.
//   - A marker is a barrier (barrier.Barrier: epoch, stamp, final) as it
//     travels down a lane, behind the last record of its epoch. The
//     dispatcher sends one down every lane (Lane.Mark); a lane that
//     crossed a barrier sends its own down every lane it feeds.
//   - A producer is whoever hands a lane items; its producer slot is its
//     index at that lane: 0 the dispatcher, 1 and up the lanes of the
//     sub-topologies that feed this one (Group.Feed). A lane aligns the
//     markers of all its producers before it crosses a barrier.
//   - A group is the lanes of one sub-topology, and the groups it feeds.
//   - Credit is a budget of records between one producer and one
//     consumer: a producer takes it before it hands records over and waits
//     while there is none; the consumer gives it back as it is done with
//     them. Each lane has a budget per producer slot
//     (stoatflow.lane.queue-size), given back as it processes, so its
//     queue never fills and a producer that is ahead of the barrier waits
//     at its own end (docs/decisions/0008). The committer's budget of held
//     records (stoatflow.commit.held-records) is one too.
//   - A report is what a lane hands the committer (Sink): records of an
//     epoch as they pile up (every 512), and, when it crosses the barrier,
//     the epoch's last records with the largest event time it processed
//     per source partition (a final report). A report of an epoch after
//     the one being produced takes credit of the committer's budget first.
//   - The lane clock is what the lane's task sees of time: the global
//     watermark as stream time, the engine's wall clock, and for late
//     drops the lane's floor, or the floor a record is pinned to: barrier
//     work (an emission pass, a punctuator) forwards its records across a
//     boundary pinned to the floor it ran under, so that a result is not
//     late downstream by the frontier that emitted it.
//   - The environment (Env) is all a lane uses of the generation that
//     runs it: the watermark, the wall clock, the committer's sink, the
//     groups its boundaries lead to, a context that ends its waits, and
//     the tests' probe. A lane reports a failure by returning it from Run.
package lanes
