package assign

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Protocol is the name of the group protocol: every member of a group
// must offer it, so an instance of a build that assigns partitions
// another way cannot join (the coordinator answers
// INCONSISTENT_GROUP_PROTOCOL) instead of running half a task.
const Protocol = "stoatflow-tasks"

// userDataVersion is the version of the subscription and assignment user
// data this build writes. A leader reads older versions and ignores the
// fields it does not know of newer ones. Version 2 added the
// subscription's tags; a member of version 1 has none.
const userDataVersion = 2

// Options configure a Balancer.
type Options struct {
	// Subtopologies, OneActive and Standbys are as in Group.
	Subtopologies map[string]int
	OneActive     bool
	Standbys      int
	// Process is this instance's id (stoatflow.instance.id).
	Process string
	// OnStandbys is called with the standby tasks of every assignment
	// this member receives, and those of them that are warm-ups, before
	// franz-go applies its partitions.
	OnStandbys func(standby, warmup []Task)
	// KeepsState says this member keeps standbys and warm-ups; TaskOffsets
	// are what its subscription reports of them (Member.Offsets).
	KeepsState  bool
	TaskOffsets func() map[Task]int64
	// EndOffsets gives the leader Group.Ends for the stateful tasks;
	// nil, or an error, plans without warm-ups.
	EndOffsets func() (map[Task]int64, error)
	// AcceptableLag, MaxWarmups and RackTags are as in Group.
	AcceptableLag int64
	MaxWarmups    int
	RackTags      []string
	// Tags are this instance's client tags (client.tag.<name>), which its
	// subscription carries for the leader's RackTags.
	Tags map[string]string
	// Log receives what the leader could not read of a member.
	Log *slog.Logger
}

// Balancer is the group balancer: a kgo.GroupBalancer of the cooperative
// kind whose leader plans with Plan.
type Balancer struct {
	o Options

	mu       sync.Mutex
	standbys []Task
}

// New returns a balancer for o.
func New(o Options) *Balancer {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Balancer{o: o}
}

var _ kgo.GroupBalancer = (*Balancer)(nil)

// ProtocolName is Protocol.
func (*Balancer) ProtocolName() string { return Protocol }

// IsCooperative is true: members keep what they are not asked to give up
// through a rebalance (KIP-429).
func (*Balancer) IsCooperative() bool { return true }

// Standbys are the standby tasks of the last assignment received.
func (b *Balancer) Standbys() []Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.standbys)
}

// subscription is the user data of a member's subscription.
type subscription struct {
	Version    int              `json:"version"`
	Process    string           `json:"process,omitempty"`
	Standbys   []string         `json:"standbys,omitempty"`
	KeepsState bool             `json:"keepsState,omitempty"`
	Offsets    map[string]int64 `json:"offsets,omitempty"`
	// Tags since version 2.
	Tags map[string]string `json:"tags,omitempty"`
}

// assignmentData is the user data of a member's assignment.
type assignmentData struct {
	Version int      `json:"version"`
	Active  []string `json:"active,omitempty"`
	Standby []string `json:"standby,omitempty"`
	Warmup  []string `json:"warmup,omitempty"`
}

// JoinGroupMetadata is the member's subscription: the consumer protocol's
// (so Kafka's tools can read it) with the process, the standbys kept,
// their offsets and the client tags as user data.
func (b *Balancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = interests
	meta.Generation = generation
	for _, t := range slices.Sorted(maps.Keys(current)) {
		owned := kmsg.NewConsumerMemberMetadataOwnedPartition()
		owned.Topic = t
		owned.Partitions = current[t]
		meta.OwnedPartitions = append(meta.OwnedPartitions, owned)
	}
	sub := subscription{Version: userDataVersion, Process: b.o.Process, KeepsState: b.o.KeepsState, Tags: b.o.Tags}
	for _, t := range b.Standbys() {
		sub.Standbys = append(sub.Standbys, t.String())
	}
	if b.o.TaskOffsets != nil {
		for t, off := range b.o.TaskOffsets() {
			if sub.Offsets == nil {
				sub.Offsets = map[string]int64{}
			}
			sub.Offsets[t.String()] = off
		}
	}
	meta.UserData, _ = json.Marshal(sub) // cannot fail: strings only
	return meta.AppendTo(nil)
}

// ParseSyncAssignment reads the member's assignment: its partitions for
// franz-go, its standbys for OnStandbys.
func (b *Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
		return nil, fmt.Errorf("assign: read the assignment: %w", err)
	}
	data, err := decodeAssignment(a.UserData)
	if err != nil {
		return nil, err
	}
	parse := func(ids []string) ([]Task, error) {
		out := make([]Task, 0, len(ids))
		for _, s := range ids {
			t, err := ParseTask(s)
			if err != nil {
				return nil, fmt.Errorf("assign: the assignment's standbys: %w", err)
			}
			out = append(out, t)
		}
		return out, nil
	}
	standbys, err := parse(data.Standby)
	if err != nil {
		return nil, err
	}
	warmups, err := parse(data.Warmup)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.standbys = standbys
	b.mu.Unlock()
	if b.o.OnStandbys != nil {
		b.o.OnStandbys(slices.Clone(standbys), warmups)
	}
	out := make(map[string][]int32, len(a.Topics))
	for _, t := range a.Topics {
		out[t.Topic] = t.Partitions
	}
	return out, nil
}

// errUserData is wrapped by what decoding user data refuses.
var errUserData = errors.New("user data")

func decodeSubscription(b []byte) (subscription, error) {
	var s subscription
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("assign: subscription %w: %w", errUserData, err)
	}
	if s.Version < 1 {
		return s, fmt.Errorf("assign: subscription %w: version %d", errUserData, s.Version)
	}
	for _, t := range s.Standbys {
		if _, err := ParseTask(t); err != nil {
			return s, fmt.Errorf("assign: subscription %w: %w", errUserData, err)
		}
	}
	for t := range s.Offsets {
		if _, err := ParseTask(t); err != nil {
			return s, fmt.Errorf("assign: subscription %w: offsets: %w", errUserData, err)
		}
	}
	return s, nil
}

func decodeAssignment(b []byte) (assignmentData, error) {
	var a assignmentData
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("assign: assignment %w: %w", errUserData, err)
	}
	if a.Version < 1 {
		return a, fmt.Errorf("assign: assignment %w: version %d", errUserData, a.Version)
	}
	return a, nil
}

// MemberBalancer reads the members' subscriptions for the leader.
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	return cb, cb.MemberTopics(), nil
}

// Balance plans the group and writes each member's assignment.
func (b *Balancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	var members []Member
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		mem := Member{ID: m.MemberID, Generation: meta.Generation, Owned: map[string][]int32{}}
		for _, o := range meta.OwnedPartitions {
			mem.Owned[o.Topic] = append(mem.Owned[o.Topic], o.Partitions...)
		}
		sub, err := decodeSubscription(meta.UserData)
		if err != nil {
			// A member we cannot read is planned as a process of its
			// own keeping no standby: it still gets its share.
			b.o.Log.Warn("group member's subscription unreadable; planned as a process keeping no standby", "member", m.MemberID, "err", err)
		}
		mem.Process, mem.KeepsState, mem.Tags = sub.Process, sub.KeepsState, sub.Tags
		for _, s := range sub.Standbys {
			if t, err := ParseTask(s); err == nil {
				mem.Standbys = append(mem.Standbys, t)
			}
		}
		for s, off := range sub.Offsets {
			if t, err := ParseTask(s); err == nil {
				if mem.Offsets == nil {
					mem.Offsets = map[Task]int64{}
				}
				mem.Offsets[t] = off
			}
		}
		members = append(members, mem)
	})
	g := Group{Partitions: topics, Subtopologies: b.o.Subtopologies, OneActive: b.o.OneActive, Standbys: b.o.Standbys,
		AcceptableLag: b.o.AcceptableLag, MaxWarmups: b.o.MaxWarmups, RackTags: b.o.RackTags}
	if b.o.EndOffsets != nil && !b.o.OneActive {
		ends, err := b.o.EndOffsets()
		if err != nil {
			// Planned as before warm-ups existed: a task moves now
			// and its new owner restores it.
			b.o.Log.Warn("changelog end offsets unknown; tasks move without warming up", "err", err)
		} else {
			g.Ends = ends
		}
	}
	plan := Plan(g, members)
	out := make(syncAssignments, 0, len(members))
	for _, m := range members {
		a := plan[m.ID]
		ka := kmsg.NewConsumerMemberAssignment()
		ka.Version = 1
		for _, t := range slices.Sorted(maps.Keys(a.Partitions)) {
			kt := kmsg.NewConsumerMemberAssignmentTopic()
			kt.Topic = t
			kt.Partitions = a.Partitions[t]
			ka.Topics = append(ka.Topics, kt)
		}
		data := assignmentData{Version: userDataVersion}
		for _, t := range a.Active {
			data.Active = append(data.Active, t.String())
		}
		for _, t := range a.Standby {
			data.Standby = append(data.Standby, t.String())
		}
		for _, t := range a.Warmup {
			data.Warmup = append(data.Warmup, t.String())
		}
		ka.UserData, _ = json.Marshal(data) // cannot fail: strings only
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = m.ID
		sa.MemberAssignment = ka.AppendTo(nil)
		out = append(out, sa)
	}
	return out
}

type syncAssignments []kmsg.SyncGroupRequestGroupAssignment

func (s syncAssignments) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return s }
