package assign

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the randomised rounds (0: from the clock)")

// group is a simulated consumer group: members that hold what their last
// assignment gave them, rebalancing as franz-go's cooperative consumer
// does (a member that lost partitions rejoins at once).
type group struct {
	t       *testing.T
	g       Group
	members []Member
	gen     int32
}

func (sg *group) join(id, process string) {
	sg.members = append(sg.members, Member{ID: id, Process: process, Generation: -1, Owned: map[string][]int32{}})
	slices.SortFunc(sg.members, func(a, b Member) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
}

// leave drops a member as a crash does: what it owned is owned by nobody.
func (sg *group) leave(id string) {
	sg.members = slices.DeleteFunc(sg.members, func(m Member) bool { return m.ID == id })
}

// round runs one rebalance and reports whether any member lost
// partitions (and so rejoins). It checks what must hold at every round.
func (sg *group) round() (revoked bool) {
	t := sg.t
	t.Helper()
	sg.gen++
	plan := Plan(sg.g, sg.members)
	ts := tasksOf(sg.g)
	for i, m := range sg.members {
		a, ok := plan[m.ID]
		if !ok {
			t.Fatalf("generation %d: member %s has no assignment", sg.gen, m.ID)
		}
		// A partition given to m is owned by no other member now.
		for top, ps := range a.Partitions {
			for _, p := range ps {
				for j, o := range sg.members {
					if j != i && slices.Contains(o.Owned[top], p) {
						t.Fatalf("generation %d: %s-%d given to %s while %s still reads it", sg.gen, top, p, m.ID, o.ID)
					}
				}
			}
		}
		// A task is given whole or not at all.
		for _, task := range ts.tasks {
			n := 0
			for _, tp := range ts.parts[task] {
				if slices.Contains(a.Partitions[tp.topic], tp.partition) {
					n++
				}
			}
			if n != 0 && n != len(ts.parts[task]) {
				t.Fatalf("generation %d: %s has %d of the %d partitions of task %s", sg.gen, m.ID, n, len(ts.parts[task]), task)
			}
		}
		if slices.ContainsFunc(a.Standby, func(s Task) bool { return slices.Contains(a.Active, s) }) {
			t.Fatalf("generation %d: %s keeps a standby of a task it runs: %v %v", sg.gen, m.ID, a.Active, a.Standby)
		}
	}
	for i := range sg.members {
		m := &sg.members[i]
		a := plan[m.ID]
		for top, ps := range m.Owned {
			for _, p := range ps {
				if !slices.Contains(a.Partitions[top], p) {
					revoked = true
				}
			}
		}
		m.Owned = a.Partitions
		m.Standbys = a.Standby
		m.Generation = sg.gen
	}
	return revoked
}

// settle runs rounds until nobody revokes, at most three.
func (sg *group) settle() map[string]Assignment {
	sg.t.Helper()
	for range 3 {
		if !sg.round() {
			plan := Plan(sg.g, sg.members)
			sg.checkSettled(plan)
			return plan
		}
	}
	sg.t.Fatalf("generation %d: still revoking after three rounds", sg.gen)
	return nil
}

func (sg *group) checkSettled(plan map[string]Assignment) {
	t := sg.t
	t.Helper()
	ts := tasksOf(sg.g)
	owner := map[Task]string{}
	load := map[string]int{}
	for _, m := range sg.members {
		for _, task := range plan[m.ID].Active {
			if o, dup := owner[task]; dup {
				t.Fatalf("task %s on %s and %s", task, o, m.ID)
			}
			owner[task] = m.ID
			load[m.ID]++
		}
	}
	for _, task := range ts.tasks {
		if _, ok := owner[task]; !ok {
			t.Fatalf("generation %d: task %s runs nowhere after the group settled", sg.gen, task)
		}
	}
	if sg.g.OneActive {
		if len(load) != 1 {
			t.Fatalf("one active: tasks on %d members: %v", len(load), load)
		}
	} else {
		lo, hi := len(ts.tasks), 0
		for _, m := range sg.members {
			lo, hi = min(lo, load[m.ID]), max(hi, load[m.ID])
		}
		if hi-lo > 1 {
			t.Fatalf("uneven: %v", load)
		}
	}
	processes := map[string]bool{}
	for _, m := range sg.members {
		processes[processOf(m)] = true
	}
	want := min(sg.g.Standbys, len(processes)-1)
	for _, task := range ts.tasks {
		var on []string
		for _, m := range sg.members {
			if slices.Contains(plan[m.ID].Standby, task) {
				on = append(on, m.ID)
			}
		}
		if len(on) != want {
			t.Fatalf("task %s has standbys on %v, want %d", task, on, want)
		}
		// Rack awareness: when a member of another process is in
		// another zone than the owner, a standby is in another zone.
		if len(sg.g.RackTags) == 0 || want == 0 {
			continue
		}
		zone := map[string]string{}
		for _, m := range sg.members {
			zone[m.ID] = m.Tags["zone"]
		}
		elsewhere := slices.ContainsFunc(sg.members, func(m Member) bool {
			o := sg.members[slices.IndexFunc(sg.members, func(m Member) bool { return m.ID == owner[task] })]
			return processOf(m) != processOf(o) && zone[m.ID] != zone[o.ID]
		})
		if elsewhere && !slices.ContainsFunc(on, func(id string) bool { return zone[id] != zone[owner[task]] }) {
			t.Fatalf("task %s runs in zone %s and its standbys %v are there too, though other zones have members", task, zone[owner[task]], on)
		}
	}
}

func TestPlanKeepsTasksWhole(t *testing.T) {
	// A stream-table join: orders and customers, four partitions each,
	// in sub-topology 0; a count over clicks in sub-topology 1.
	g := Group{
		Partitions:    map[string]int32{"orders": 4, "customers": 4, "clicks": 2},
		Subtopologies: map[string]int{"orders": 0, "customers": 0, "clicks": 1},
	}
	sg := &group{t: t, g: g}
	sg.join("a", "pa")
	plan := sg.settle()
	if got := len(plan["a"].Active); got != 6 {
		t.Fatalf("one member runs %d tasks, want 6", got)
	}
	sg.join("b", "pb")
	plan = sg.settle()
	for _, id := range []string{"a", "b"} {
		a := plan[id]
		if !slices.Equal(a.Partitions["orders"], a.Partitions["customers"]) {
			t.Fatalf("%s reads orders %v but customers %v", id, a.Partitions["orders"], a.Partitions["customers"])
		}
		if len(a.Partitions["orders"]) != 2 || len(a.Partitions["clicks"]) != 1 {
			t.Fatalf("%s: %v, want two of sub-topology 0 and one of 1", id, a.Partitions)
		}
	}
}

// TestPlanAfterPartitionsSplitByAnotherAssignor starts from what
// cooperative-sticky may leave: the two partitions of one task on two
// members. Neither gets the task until both gave their part up.
func TestPlanAfterPartitionsSplitByAnotherAssignor(t *testing.T) {
	g := Group{Partitions: map[string]int32{"l": 1, "r": 1}, Subtopologies: map[string]int{"l": 0, "r": 0}}
	members := []Member{
		{ID: "a", Generation: 5, Owned: map[string][]int32{"l": {0}}},
		{ID: "b", Generation: 5, Owned: map[string][]int32{"r": {0}}},
	}
	plan := Plan(g, members)
	for _, id := range []string{"a", "b"} {
		if len(plan[id].Partitions) != 0 {
			t.Fatalf("%s given %v while the task is split", id, plan[id].Partitions)
		}
	}
	members[0].Owned, members[1].Owned = nil, nil
	members[0].Generation, members[1].Generation = 6, 6
	plan = Plan(g, members)
	if len(plan["a"].Active)+len(plan["b"].Active) != 1 {
		t.Fatalf("after both gave up: %v", plan)
	}
}

// TestPlanStaleClaim: a member that missed rebalances claims a partition
// at an old generation; the member claiming it at the newest counts.
func TestPlanStaleClaim(t *testing.T) {
	g := Group{Partitions: map[string]int32{"in": 2}}
	members := []Member{
		{ID: "a", Generation: 3, Owned: map[string][]int32{"in": {0, 1}}},
		{ID: "b", Generation: 7, Owned: map[string][]int32{"in": {1}}},
	}
	plan := Plan(g, members)
	if !slices.Equal(plan["b"].Partitions["in"], []int32{1}) || !slices.Equal(plan["a"].Partitions["in"], []int32{0}) {
		t.Fatalf("plan %v", plan)
	}
}

func TestPlanOneActive(t *testing.T) {
	g := Group{Partitions: map[string]int32{"in": 4, "app-x-repartition": 4}, Subtopologies: map[string]int{"in": 0, "app-x-repartition": 1}, OneActive: true, Standbys: 1}
	sg := &group{t: t, g: g}
	sg.join("b", "pb")
	sg.settle()
	sg.join("a", "pa") // sorts first, yet b keeps its tasks
	plan := sg.settle()
	if len(plan["b"].Active) != 8 || len(plan["a"].Standby) != 8 {
		t.Fatalf("plan %v", plan)
	}
	sg.leave("b")
	plan = sg.settle()
	if len(plan["a"].Active) != 8 {
		t.Fatalf("after b left: %v", plan)
	}
}

// TestPlanMovingTaskWarmsUp: with standbys on, the member a task moves
// to keeps a standby of it while the old owner gives it up.
func TestPlanMovingTaskWarmsUp(t *testing.T) {
	g := Group{Partitions: map[string]int32{"in": 2}, Standbys: 1}
	sg := &group{t: t, g: g}
	sg.join("a", "pa")
	sg.settle()
	sg.join("b", "pb")
	if !sg.round() {
		t.Fatal("a revoked nothing when b joined")
	}
	b := sg.members[slices.IndexFunc(sg.members, func(m Member) bool { return m.ID == "b" })]
	if len(b.Owned) != 0 || len(b.Standbys) != 2 {
		t.Fatalf("b after the first round: owns %v, standbys %v; want nothing and both tasks warming", b.Owned, b.Standbys)
	}
	sg.settle()
}

// TestPlanLeaversTasksGoToTheirStandbys: when a member leaves, each of
// its tasks goes to the member keeping its standby where the spread
// leaves a choice, so the take-over restores a tail, not the changelog.
func TestPlanLeaversTasksGoToTheirStandbys(t *testing.T) {
	for _, c := range []struct {
		parts   int32
		members []string
	}{{6, []string{"a", "b", "c"}}, {8, []string{"a", "b", "c", "d"}}, {12, []string{"a", "b", "c", "d"}}, {9, []string{"a", "b", "c"}}} {
		for _, leaver := range c.members {
			t.Run(fmt.Sprintf("%d/%d/%s", c.parts, len(c.members), leaver), func(t *testing.T) {
				g := Group{Partitions: map[string]int32{"in": c.parts}, Standbys: 1}
				sg := &group{t: t, g: g}
				for _, id := range c.members {
					sg.join(id, "p"+id)
					sg.settle()
				}
				plan := sg.settle()
				copyOf := map[Task]string{}
				for id, a := range plan {
					for _, task := range a.Standby {
						copyOf[task] = id
					}
				}
				left := plan[leaver].Active
				holders := map[string]bool{}
				for _, task := range left {
					holders[copyOf[task]] = true
				}
				sg.leave(leaver)
				after := sg.settle()
				onCopy := 0
				for _, task := range left {
					if slices.Contains(after[copyOf[task]].Active, task) {
						onCopy++
					}
				}
				// Two tasks with their copies on one member: the spread
				// gives that member one of them.
				if want := len(holders); onCopy < want {
					t.Fatalf("%s's tasks %v (copies %v) went to their copies %d times, want %d; after: %v", leaver, left, copyOf, onCopy, want, after)
				}
			})
		}
	}
}

func TestPlanRandomMembership(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for run := range 200 {
		g := Group{Partitions: map[string]int32{}, Subtopologies: map[string]int{}, Standbys: rng.IntN(3), OneActive: rng.IntN(4) == 0}
		subs := 1 + rng.IntN(3)
		for s := range subs {
			n := int32(1 + rng.IntN(8))
			for k := range 1 + rng.IntN(2) {
				top := fmt.Sprintf("s%d-t%d", s, k)
				g.Partitions[top] = n
				g.Subtopologies[top] = s
			}
		}
		if rng.IntN(2) == 0 {
			g.RackTags = []string{"zone"}
		}
		sg := &group{t: t, g: g}
		next := 0
		for range 12 {
			switch {
			case len(sg.members) == 0 || (len(sg.members) < 5 && rng.IntN(2) == 0):
				id := fmt.Sprintf("m%02d", rng.IntN(100)*100+next)
				sg.join(id, fmt.Sprintf("p%d", next))
				sg.members[slices.IndexFunc(sg.members, func(m Member) bool { return m.ID == id })].Tags = map[string]string{"zone": fmt.Sprintf("z%d", rng.IntN(3))}
				next++
			default:
				sg.leave(sg.members[rng.IntN(len(sg.members))].ID)
			}
			if len(sg.members) == 0 {
				continue
			}
			before := owners(sg)
			plan := sg.settle()
			// Sticky: of the tasks a surviving member ran, at most what
			// the even spread forces moves.
			moved := 0
			for task, id := range before {
				if slices.Contains(plan[id].Active, task) || !slices.ContainsFunc(sg.members, func(m Member) bool { return m.ID == id }) {
					continue
				}
				moved++
			}
			if limit := (len(tasksOf(g).tasks) + len(sg.members) - 1) / len(sg.members); !g.OneActive && moved > limit {
				t.Fatalf("run %d: %d tasks moved between surviving members, more than one member's share (%d)", run, moved, limit)
			}
		}
	}
}

func owners(sg *group) map[Task]string {
	ts := tasksOf(sg.g)
	out := map[Task]string{}
	for _, m := range sg.members {
		for _, task := range ts.tasks {
			tp := ts.parts[task][0]
			if slices.Contains(m.Owned[tp.topic], tp.partition) {
				out[task] = m.ID
			}
		}
	}
	return out
}

func TestParseTask(t *testing.T) {
	for _, s := range []string{"0_0", "3_17"} {
		task, err := ParseTask(s)
		if err != nil || task.String() != s {
			t.Fatalf("%s: %v %v", s, task, err)
		}
	}
	for _, s := range []string{"", "0", "a_1", "1_b", "-1_0", "0_-1", "0_99999999999"} {
		if _, err := ParseTask(s); err == nil {
			t.Fatalf("%q parsed", s)
		}
	}
}

// TestPlanWarmsUpBeforeMoving (KIP-441): a member joins a group whose
// tasks hold state. The spread would give it two of four tasks; it gets
// them as warm-ups while their owner keeps running them (all of them:
// MaxWarmups bounds the tasks of further members), and takes them over
// once its offsets are within the acceptable lag of the changelogs' ends.
func TestPlanWarmsUpBeforeMoving(t *testing.T) {
	ends := map[Task]int64{}
	for p := range int32(4) {
		ends[Task{0, p}] = 100_000
	}
	g := Group{Partitions: map[string]int32{"in": 4}, Subtopologies: map[string]int{"in": 0}, Ends: ends, AcceptableLag: 10_000, MaxWarmups: 1}
	sg := &group{t: t, g: g}
	sg.join("a", "pa")
	sg.settle()
	sg.members[0].KeepsState = true
	sg.join("b", "pb")
	b := func() *Member {
		return &sg.members[slices.IndexFunc(sg.members, func(m Member) bool { return m.ID == "b" })]
	}
	b().KeepsState = true
	if sg.round() {
		t.Fatal("a gave tasks up to a member that has not warmed them up")
	}
	plan := Plan(sg.g, sg.members)
	if len(plan["a"].Active) != 4 || len(plan["b"].Warmup) != 2 || len(plan["b"].Active) != 0 {
		t.Fatalf("while b warms up: a runs %v, b runs %v and warms %v; want 4, none, two", plan["a"].Active, plan["b"].Active, plan["b"].Warmup)
	}
	// A third member waits: two tasks warm already (MaxWarmups 1 was
	// spent by b, which may warm all of its own).
	sg.join("c", "pc")
	sg.members[slices.IndexFunc(sg.members, func(m Member) bool { return m.ID == "c" })].KeepsState = true
	sg.round()
	plan = Plan(sg.g, sg.members)
	if len(plan["c"].Warmup)+len(plan["c"].Active) != 0 || len(plan["a"].Active) != 4 {
		t.Fatalf("c: runs %v, warms %v; a runs %v", plan["c"].Active, plan["c"].Warmup, plan["a"].Active)
	}
	sg.leave("c")
	sg.round()
	plan = Plan(sg.g, sg.members)
	// b caught up with one task only: nothing moves; with both, both do.
	warm := plan["b"].Warmup
	b().Offsets = map[Task]int64{warm[0]: 95_000}
	if sg.round() {
		t.Fatal("a gave a task up while b had not caught up with all it warms")
	}
	b().Offsets = map[Task]int64{warm[0]: 95_000, warm[1]: 99_000}
	if !sg.round() {
		t.Fatal("a kept the tasks b caught up with")
	}
	sg.round()
	plan = Plan(sg.g, sg.members)
	if !slices.Contains(plan["b"].Active, warm[0]) || !slices.Contains(plan["b"].Active, warm[1]) {
		t.Fatalf("b runs %v after catching up with %v", plan["b"].Active, warm)
	}
	// Without state kept, nothing waits: the spread moves at once.
	g.Ends = nil
	sg = &group{t: t, g: g}
	sg.join("a", "pa")
	sg.settle()
	sg.join("b", "pb")
	if plan := sg.settle(); len(plan["b"].Active) != 2 {
		t.Fatalf("without end offsets b runs %v, want 2 tasks", plan["b"].Active)
	}
}

// TestPlanRackAwareStandbys (KIP-708): with rack.aware.assignment.tags, a
// task's standbys go to members whose values of those tags differ from
// its owner's and its other standbys' on as many tags as can differ, and
// to any other member when none does. Each row lists every task as
// "task owner>standbys" in the order they were placed.
func TestPlanRackAwareStandbys(t *testing.T) {
	type member struct {
		id, tags string // tags: name=value,name=value
		keeps    []Task // standbys it keeps now
	}
	// Kafka Streams' example of KIP-708: three zones in two clusters.
	zonesInClusters := []member{
		{id: "a", tags: "zone=1a,cluster=k1"}, {id: "b", tags: "zone=1b,cluster=k1"}, {id: "c", tags: "zone=1c,cluster=k1"},
		{id: "d", tags: "zone=1a,cluster=k2"}, {id: "e", tags: "zone=1b,cluster=k2"}, {id: "f", tags: "zone=1c,cluster=k2"},
	}
	for _, tc := range []struct {
		name      string
		members   []member
		rackTags  []string
		standbys  int
		tasks     int32
		oneActive bool
		want      string
	}{
		{name: "two standbys over zones and clusters", members: zonesInClusters, rackTags: []string{"zone", "cluster"}, standbys: 2, tasks: 4, oneActive: true,
			// The first differs on both tags; then every cluster is in
			// use and the second differs on the zone.
			want: "0_0 a>e,c 0_1 a>f,b 0_2 a>e,c 0_3 a>f,b"},
		{name: "without rack tags by load alone", members: zonesInClusters, standbys: 2, tasks: 4, oneActive: true,
			want: "0_0 a>b,c 0_1 a>d,e 0_2 a>f,b 0_3 a>c,d"},
		{name: "one standby in another zone, tasks spread", rackTags: []string{"zone"}, standbys: 1, tasks: 6,
			members: []member{{id: "a", tags: "zone=z1"}, {id: "b", tags: "zone=z1"}, {id: "c", tags: "zone=z2"}, {id: "d", tags: "zone=z2"}, {id: "e", tags: "zone=z3"}, {id: "f", tags: "zone=z3"}},
			want:    "0_0 a>c 0_1 b>d 0_2 c>a 0_3 d>b 0_4 e>a 0_5 f>b"},
		{name: "differing on most tags wins over fewer", rackTags: []string{"zone", "cluster"}, standbys: 1, tasks: 1, oneActive: true,
			members: []member{{id: "a", tags: "zone=1a,cluster=k1"}, {id: "b", tags: "zone=1a,cluster=k2"}, {id: "c", tags: "zone=1b,cluster=k1"}, {id: "d", tags: "zone=1b,cluster=k2"}},
			want:    "0_0 a>d"},
		{name: "differing on one tag wins over none", rackTags: []string{"zone", "cluster"}, standbys: 1, tasks: 1, oneActive: true,
			members: []member{{id: "a", tags: "zone=1a,cluster=k1"}, {id: "b", tags: "zone=1a,cluster=k1"}, {id: "c"}, {id: "d", tags: "zone=1a,cluster=k2"}},
			want:    "0_0 a>d"},
		{name: "one rack: any other member", rackTags: []string{"zone"}, standbys: 2, tasks: 2, oneActive: true,
			members: []member{{id: "a", tags: "zone=z1"}, {id: "b", tags: "zone=z1"}, {id: "c", tags: "zone=z1"}},
			want:    "0_0 a>b,c 0_1 a>b,c"},
		{name: "fewer racks than standbys", rackTags: []string{"zone"}, standbys: 2, tasks: 1, oneActive: true,
			members: []member{{id: "a", tags: "zone=z1"}, {id: "b", tags: "zone=z1"}, {id: "c", tags: "zone=z2"}},
			want:    "0_0 a>c,b"},
		{name: "another rack wins over the state kept", rackTags: []string{"zone"}, standbys: 1, tasks: 1, oneActive: true,
			members: []member{{id: "a", tags: "zone=z1"}, {id: "b", tags: "zone=z1", keeps: []Task{{0, 0}}}, {id: "c", tags: "zone=z2"}},
			want:    "0_0 a>c"},
		{name: "the state kept wins on one rack", rackTags: []string{"zone"}, standbys: 1, tasks: 1, oneActive: true,
			members: []member{{id: "a", tags: "zone=z1"}, {id: "b", tags: "zone=z2"}, {id: "c", tags: "zone=z2", keeps: []Task{{0, 0}}}},
			want:    "0_0 a>c"},
		{name: "tags not listed do not count", rackTags: []string{"zone"}, standbys: 1, tasks: 1, oneActive: true,
			members: []member{{id: "a", tags: "zone=z1,host=h1"}, {id: "b", tags: "zone=z1,host=h2"}, {id: "c", tags: "zone=z2,host=h1"}},
			want:    "0_0 a>c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Group{Partitions: map[string]int32{"in": tc.tasks}, Subtopologies: map[string]int{"in": 0},
				OneActive: tc.oneActive, Standbys: tc.standbys, RackTags: tc.rackTags}
			var members []Member
			for _, m := range tc.members {
				mem := Member{ID: m.id, Process: "p-" + m.id, Generation: -1, Standbys: m.keeps}
				for kv := range strings.SplitSeq(m.tags, ",") {
					if k, v, ok := strings.Cut(kv, "="); ok {
						if mem.Tags == nil {
							mem.Tags = map[string]string{}
						}
						mem.Tags[k] = v
					}
				}
				members = append(members, mem)
			}
			active := planActive(g, tasksOf(g), map[Task]int{}, nil, len(members))
			standby := planStandbys(g, tasksOf(g), members, active, map[Task]int{})
			var got []string
			for _, task := range tasksOf(g).tasks {
				var on []string
				for _, i := range standby[task] {
					on = append(on, members[i].ID)
				}
				got = append(got, fmt.Sprintf("%s %s>%s", task, members[active[task]].ID, strings.Join(on, ",")))
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("placed\n  %s\nwant\n  %s", s, tc.want)
			}
			// Plan places the same.
			plan := Plan(g, members)
			for task, on := range standby {
				for _, i := range on {
					if !slices.Contains(plan[members[i].ID].Standby, task) {
						t.Errorf("Plan does not give %s the standby of %s", members[i].ID, task)
					}
				}
			}
		})
	}
}
