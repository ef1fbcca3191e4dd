package assign

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Task is one partition of one sub-topology.
type Task struct {
	Subtopology int
	Partition   int32
}

func (t Task) String() string {
	return strconv.Itoa(t.Subtopology) + "_" + strconv.Itoa(int(t.Partition))
}

// ParseTask reads a task's name, "<sub>_<partition>".
func ParseTask(s string) (Task, error) {
	sub, part, ok := strings.Cut(s, "_")
	if !ok {
		return Task{}, fmt.Errorf("task %q: not <sub-topology>_<partition>", s)
	}
	st, err := strconv.Atoi(sub)
	if err != nil || st < 0 {
		return Task{}, fmt.Errorf("task %q: sub-topology %q is not a number", s, sub)
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 {
		return Task{}, fmt.Errorf("task %q: partition %q is not a number", s, part)
	}
	return Task{Subtopology: st, Partition: int32(p)}, nil
}

func compareTasks(a, b Task) int {
	return cmp.Or(cmp.Compare(a.Subtopology, b.Subtopology), cmp.Compare(a.Partition, b.Partition))
}

// Group is what the leader knows of the application when it plans.
type Group struct {
	// Partitions are the partition counts of the topics the members
	// read.
	Partitions map[string]int32
	// Subtopologies maps each source topic to its sub-topology. A topic
	// read by the members but missing here is a sub-topology of its own
	// (its tasks get no standbys: no store of ours is known to need
	// them).
	Subtopologies map[string]int
	// OneActive puts every active task on one member.
	OneActive bool
	// Standbys is num.standby.replicas.
	Standbys int
	// Ends are the end offsets of each stateful task's changelog
	// partitions, summed; nil when unknown (no warm-ups then). A member
	// whose Offsets for a task are within AcceptableLag of it is caught
	// up (acceptable.recovery.lag).
	Ends          map[Task]int64
	AcceptableLag int64
	// MaxWarmups bounds the tasks warming up at once
	// (max.warmup.replicas).
	MaxWarmups int
	// RackTags are the client tags standbys are spread over
	// (rack.aware.assignment.tags, KIP-708): a task's standbys go where
	// the values of these tags differ from its owner's and its other
	// standbys' on as many tags as can differ.
	RackTags []string
}

// Member is one member of the group as its subscription describes it.
type Member struct {
	ID      string
	Process string
	// Generation is the group generation Owned was assigned in.
	Generation int32
	// Owned are the partitions the member reads now.
	Owned map[string][]int32
	// Standbys are the standby tasks the member keeps now.
	Standbys []Task
	// KeepsState says the member keeps standbys and warm-ups; Offsets
	// are, per task it holds state of, the sum of the changelog offsets
	// that state is complete up to.
	KeepsState bool
	Offsets    map[Task]int64
	// Tags are the member's client tags (client.tag.<name>), say its
	// zone or its cluster; a tag it lacks differs from no one's.
	Tags map[string]string
}

// Assignment is one member's part of a plan.
type Assignment struct {
	// Partitions are the partitions of Active, by topic.
	Partitions map[string][]int32
	Active     []Task
	Standby    []Task
	// Warmup are the standbys warming up a task planned to move to the
	// member: it moves once the member has caught up (KIP-441).
	Warmup []Task
}

// taskSet is the tasks of a group: each task's partitions by topic.
type taskSet struct {
	tasks []Task
	parts map[Task][]topicPartition
	of    map[topicPartition]Task
	subs  []int
}

type topicPartition struct {
	topic     string
	partition int32
}

func tasksOf(g Group) taskSet {
	ts := taskSet{parts: map[Task][]topicPartition{}, of: map[topicPartition]Task{}}
	// Topics of no known sub-topology get numbers after the known ones,
	// in name order, so every member's leader numbers them alike.
	next := 0
	for _, s := range g.Subtopologies {
		next = max(next, s+1)
	}
	sub := maps.Clone(g.Subtopologies)
	if sub == nil {
		sub = map[string]int{}
	}
	for _, t := range slices.Sorted(maps.Keys(g.Partitions)) {
		if _, ok := sub[t]; !ok {
			sub[t] = next
			next++
		}
	}
	subs := map[int]bool{}
	for _, t := range slices.Sorted(maps.Keys(g.Partitions)) {
		s := sub[t]
		for p := range g.Partitions[t] {
			task := Task{Subtopology: s, Partition: p}
			if _, ok := ts.parts[task]; !ok {
				ts.tasks = append(ts.tasks, task)
			}
			tp := topicPartition{t, p}
			ts.parts[task] = append(ts.parts[task], tp)
			ts.of[tp] = task
		}
		subs[s] = true
	}
	slices.SortFunc(ts.tasks, compareTasks)
	ts.subs = slices.Sorted(maps.Keys(subs))
	return ts
}

// claims finds, for every partition, the members whose claim to own it
// counts: those claiming it at the highest generation any member claims
// it at (KIP-792: a member that missed rebalances may rejoin still
// claiming a partition another member was given since).
func claims(members []Member) map[topicPartition][]int {
	best := map[topicPartition]int32{}
	for _, m := range members {
		for t, ps := range m.Owned {
			for _, p := range ps {
				tp := topicPartition{t, p}
				if g, ok := best[tp]; !ok || m.Generation > g {
					best[tp] = m.Generation
				}
			}
		}
	}
	out := map[topicPartition][]int{}
	for i, m := range members {
		for t, ps := range m.Owned {
			for _, p := range ps {
				tp := topicPartition{t, p}
				if m.Generation == best[tp] {
					out[tp] = append(out[tp], i)
				}
			}
		}
	}
	return out
}

// Plan decides, for members sorted as the coordinator lists them, who
// runs which task and who keeps which standby. The result has an entry
// for every member.
//
// A task whose active owner changes is withheld from its new owner while
// another member still claims any of its partitions: the claimant gives
// it up on this assignment and rejoins, and the next round hands it over
// (the new owner keeps a standby of it meanwhile when standbys are on).
func Plan(g Group, members []Member) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	if len(members) == 0 {
		return out
	}
	ts := tasksOf(g)
	claimed := claims(members)

	// The previous owner of a task: the member claiming most of its
	// partitions, the first in order on a tie.
	prev := map[Task]int{}
	for _, task := range ts.tasks {
		count := map[int]int{}
		for _, tp := range ts.parts[task] {
			for _, i := range claimed[tp] {
				count[i]++
			}
		}
		best, bestN := -1, 0
		for i := range members {
			if count[i] > bestN {
				best, bestN = i, count[i]
			}
		}
		if best >= 0 {
			prev[task] = best
		}
	}

	active := planActive(g, ts, prev, standbyHolders(members), len(members))
	warmups := planWarmups(g, ts, members, prev, active)

	// Withhold what moves while another member still claims it.
	withheld := map[Task]bool{}
	for _, task := range ts.tasks {
		to := active[task]
		for _, tp := range ts.parts[task] {
			for _, i := range claimed[tp] {
				if i != to {
					withheld[task] = true
				}
			}
		}
	}

	standby := planStandbys(g, ts, members, active, prev)
	for task, to := range warmups {
		if !slices.Contains(standby[task], to) {
			standby[task] = append(standby[task], to)
		}
	}
	if g.Standbys > 0 {
		for task := range withheld {
			to := active[task]
			if !slices.Contains(standby[task], to) {
				standby[task] = append(standby[task], to)
			}
		}
	}

	for i, m := range members {
		a := Assignment{Partitions: map[string][]int32{}}
		for _, task := range ts.tasks {
			if active[task] == i && !withheld[task] {
				a.Active = append(a.Active, task)
				for _, tp := range ts.parts[task] {
					a.Partitions[tp.topic] = append(a.Partitions[tp.topic], tp.partition)
				}
			}
			if slices.Contains(standby[task], i) {
				a.Standby = append(a.Standby, task)
			}
			if to, ok := warmups[task]; ok && to == i {
				a.Warmup = append(a.Warmup, task)
			}
		}
		for t := range a.Partitions {
			slices.Sort(a.Partitions[t])
		}
		out[m.ID] = a
	}
	return out
}

// planActive gives every task an owner: everything to one member under
// OneActive, else an even spread keeping tasks with their previous owners
// where the spread allows (so planning what it planned changes nothing).
// The tasks that must move or are new go to the least loaded members,
// among them to those running fewest of the task's sub-topology, and
// among those to one that keeps a standby of it (copies: member indexes
// by task), which takes it over restoring a tail, not the changelog.
func planActive(g Group, ts taskSet, prev map[Task]int, copies map[Task]map[int]bool, n int) map[Task]int {
	active := make(map[Task]int, len(ts.tasks))
	if g.OneActive {
		// The member that owned most tasks keeps them all.
		count := make([]int, n)
		for _, i := range prev {
			count[i]++
		}
		one := 0
		for i := range n {
			if count[i] > count[one] {
				one = i
			}
		}
		for _, task := range ts.tasks {
			active[task] = one
		}
		return active
	}
	// An even spread: every member runs floor tasks, extra of them one
	// more.
	floor, extra := len(ts.tasks)/n, len(ts.tasks)%n
	load := make([]int, n)
	subLoad := make([]map[int]int, n)
	for i := range subLoad {
		subLoad[i] = map[int]int{}
	}
	give := func(task Task, i int) {
		active[task] = i
		load[i]++
		subLoad[i][task.Subtopology]++
	}
	// A member keeps its tasks in turns over the sub-topologies (its first
	// of each, then its second of each...), so that what it keeps when it
	// must give some up is spread over them too.
	rank := map[Task]int{}
	seen := map[int]map[int]int{} // member, sub-topology: tasks ranked
	for _, task := range ts.tasks {
		if i, ok := prev[task]; ok {
			if seen[i] == nil {
				seen[i] = map[int]int{}
			}
			rank[task] = seen[i][task.Subtopology]
			seen[i][task.Subtopology]++
		}
	}
	kept := slices.Clone(ts.tasks)
	slices.SortStableFunc(kept, func(a, b Task) int { return cmp.Compare(rank[a], rank[b]) })
	for _, task := range kept {
		i, ok := prev[task]
		if !ok {
			continue
		}
		switch {
		case load[i] < floor:
		case load[i] == floor && extra > 0:
			extra--
		default:
			continue
		}
		give(task, i)
	}
	// A task that moves goes first to a member keeping a standby of it,
	// while the spread has room there: that member takes it over
	// restoring a tail, not the changelog.
	for _, task := range ts.tasks {
		if _, ok := active[task]; ok || len(copies[task]) == 0 {
			continue
		}
		for _, i := range slices.Sorted(maps.Keys(copies[task])) {
			if i >= n {
				continue
			}
			if load[i] == floor && extra > 0 {
				extra--
			} else if load[i] >= floor {
				continue
			}
			give(task, i)
			break
		}
	}
	for _, task := range ts.tasks {
		if _, ok := active[task]; ok {
			continue
		}
		best := 0
		for i := 1; i < n; i++ {
			if c := cmp.Or(cmp.Compare(load[i], load[best]), cmp.Compare(subLoad[i][task.Subtopology], subLoad[best][task.Subtopology]),
				-cmp.Compare(b2i(copies[task][i]), b2i(copies[task][best]))); c < 0 {
				best = i
			}
		}
		give(task, best)
	}
	return active
}

// planWarmups holds back the tasks the spread moves from a live owner to
// a member that keeps state and runs nothing, while that member has not
// caught up with their state, and makes the stateful ones its warm-ups
// (KIP-441): the old owner goes on running them, and they move in a later
// round, once the member reports offsets within g.AcceptableLag of the
// changelogs' ends, at the cost of a tail, not a restore. A member warms
// all its tasks or none: one that runs a task keeps no warm-up (its lanes
// own its databases). g.MaxWarmups bounds the tasks warming at once,
// except that one member always may, so that no member waits for ever.
// active is changed in place.
func planWarmups(g Group, ts taskSet, members []Member, prev, active map[Task]int) map[Task]int {
	out := map[Task]int{}
	if g.Ends == nil || g.OneActive {
		return out
	}
	for i, m := range members {
		if !m.KeepsState || len(m.Owned) > 0 {
			continue
		}
		var moving, behind []Task
		runs := false
		for _, task := range ts.tasks {
			if active[task] != i {
				continue
			}
			from, ok := prev[task]
			if !ok || from == i {
				runs = true // a free task: it runs it now
				continue
			}
			moving = append(moving, task)
			end, stateful := g.Ends[task]
			if off, ok := m.Offsets[task]; stateful && (!ok || end-off > g.AcceptableLag) {
				behind = append(behind, task)
			}
		}
		if runs || len(behind) == 0 {
			continue // caught up, or running something: it moves now
		}
		for _, task := range moving {
			active[task] = prev[task]
		}
		if len(out) == 0 || len(out)+len(behind) <= g.MaxWarmups {
			for _, task := range behind {
				out[task] = i
			}
		}
	}
	return out
}

// standbyHolders are, per task, the indexes of the members keeping a
// standby of it.
func standbyHolders(members []Member) map[Task]map[int]bool {
	out := map[Task]map[int]bool{}
	for i, m := range members {
		for _, task := range m.Standbys {
			if out[task] == nil {
				out[task] = map[int]bool{}
			}
			out[task][i] = true
		}
	}
	return out
}

// planStandbys picks up to g.Standbys members for each task other than
// its owner and on other processes, preferring members on other racks
// (rackSpread), then members that keep it already (a standby, or its
// previous owner: both have its state), then the members with fewest
// standbys.
func planStandbys(g Group, ts taskSet, members []Member, active map[Task]int, prev map[Task]int) map[Task][]int {
	out := map[Task][]int{}
	if g.Standbys <= 0 {
		return out
	}
	keeps := standbyHolders(members)
	for task, i := range prev {
		if keeps[task] == nil {
			keeps[task] = map[int]bool{}
		}
		keeps[task][i] = true
	}
	load := make([]int, len(members))
	for _, task := range ts.tasks {
		owner := active[task]
		usedProcess := map[string]bool{processOf(members[owner]): true}
		racks := newRackSpread(g.RackTags)
		racks.use(members[owner])
		for range g.Standbys {
			best, bestSpread := -1, 0
			for i, m := range members {
				if i == owner || usedProcess[processOf(m)] || slices.Contains(out[task], i) {
					continue
				}
				spread := racks.differs(m)
				if best < 0 {
					best, bestSpread = i, spread
					continue
				}
				if c := cmp.Or(-cmp.Compare(spread, bestSpread), -cmp.Compare(b2i(keeps[task][i]), b2i(keeps[task][best])), cmp.Compare(load[i], load[best])); c < 0 {
					best, bestSpread = i, spread
				}
			}
			if best < 0 {
				break // fewer other processes than standbys wanted
			}
			out[task] = append(out[task], best)
			usedProcess[processOf(members[best])] = true
			racks.use(members[best])
			load[best]++
		}
	}
	return out
}

// rackSpread is what rack awareness (KIP-708) knows while it places one
// task's standbys: the values of each rack tag that the task's owner and
// the standbys placed so far have.
//
// Kafka Streams' rule is that a standby goes to a client whose values
// differ from the active's and the other standbys' on every tag that has
// a value left unused, and to the least loaded client when none does. A
// member here scores the tags on which its value is one nobody holding
// the task has (a tag whose values are all in use scores for no one, as
// Kafka Streams stops counting it), and the highest score wins: where no
// member differs on every tag, one that differs on most is still
// preferred to any other, rather than dropping the tags altogether.
type rackSpread struct {
	tags []string
	used map[string]map[string]bool
}

func newRackSpread(tags []string) *rackSpread {
	return &rackSpread{tags: tags, used: make(map[string]map[string]bool, len(tags))}
}

// use records that m holds the task.
func (r *rackSpread) use(m Member) {
	for _, k := range r.tags {
		v, ok := m.Tags[k]
		if !ok {
			continue
		}
		if r.used[k] == nil {
			r.used[k] = map[string]bool{}
		}
		r.used[k][v] = true
	}
}

// differs is the number of rack tags on which m's value is held by no
// member holding the task.
func (r *rackSpread) differs(m Member) int {
	n := 0
	for _, k := range r.tags {
		if v, ok := m.Tags[k]; ok && !r.used[k][v] {
			n++
		}
	}
	return n
}

// processOf is the process a member runs in; a member that did not say
// is a process of its own.
func processOf(m Member) string {
	if m.Process == "" {
		return "member " + m.ID
	}
	return m.Process
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
