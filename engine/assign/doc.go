// Package assign decides which member of the application's consumer group
// runs which task, and which members keep a standby copy of it: the
// group's partition assignor, run by the group leader, as Kafka Streams'
// StreamsPartitionAssignor is.
//
// Terms:
//   - A task is one partition of one sub-topology, named "<sub>_<partition>"
//     as Kafka Streams names it (0_3). Its partitions are partition p of
//     every source topic of the sub-topology. They are assigned together,
//     to one member, or not at all: a join or a merge reads them side by
//     side, and a task with half its inputs would produce wrong results.
//   - A member is one instance of the application in the group (one
//     Kafka client per instance). Its subscription carries its process id
//     and the standby tasks it keeps, so the leader can keep them where
//     they are.
//   - The active owner of a task processes it. A standby of a task tails
//     its changelog partitions into local state so that it can take the
//     task over with little to restore (num.standby.replicas). A standby is
//     never on the member that owns the task.
//   - Rack awareness (KIP-708): members may carry client tags
//     (client.tag.<name>: a zone, a cluster). With
//     rack.aware.assignment.tags, a task's standbys go to members whose
//     values of those tags differ from its owner's and its other
//     standbys' on as many tags as can differ, and to any other member
//     when none differs. Tags place standbys only, not active tasks.
//   - Sticky: a task stays with the member that owned it while that member
//     has room for it under an even spread. Cooperative: a task that moves
//     is first given up by its old owner and only given to its new owner
//     in the next round (KIP-429), so no partition is read by two members
//     at once; the new owner keeps a standby of it meanwhile.
//   - One active: topologies that cannot be split across instances yet
//     (an in-memory re-key, windows closed on the application's event time)
//     run every task on one member; the others keep standbys, and one of
//     them takes everything over when that member leaves.
//
// Plan is the decision, a pure function of the group; Balancer is the
// franz-go group balancer that carries it on the wire.
package assign
