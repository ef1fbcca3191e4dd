package assign

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBalancerRoundTrip runs the wire path: each member's subscription
// as JoinGroupMetadata writes it, the leader's plan, and each member
// reading its assignment back, standbys included.
func TestBalancerRoundTrip(t *testing.T) {
	subs := map[string]int{"orders": 0, "customers": 0}
	got := map[string][]Task{}
	mk := func(id string) *Balancer {
		return New(Options{Subtopologies: subs, Standbys: 1, Process: "p-" + id, OnStandbys: func(ts, _ []Task) { got[id] = ts },
			RackTags: []string{"zone"}, Tags: map[string]string{"zone": "z-" + id}})
	}
	a, b := mk("a"), mk("b")
	members := []kmsg.JoinGroupResponseMember{
		{MemberID: "a", ProtocolMetadata: a.JoinGroupMetadata([]string{"customers", "orders"}, nil, -1)},
		{MemberID: "b", ProtocolMetadata: b.JoinGroupMetadata([]string{"customers", "orders"}, nil, -1)},
	}
	mb, topics, err := a.MemberBalancer(members)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 2 {
		t.Fatalf("topics %v", topics)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"orders": 2, "customers": 2})
	if err != nil {
		t.Fatal(err)
	}
	byMember := map[string]map[string][]int32{}
	for _, sa := range into.IntoSyncAssignment() {
		bal := map[string]*Balancer{"a": a, "b": b}[sa.MemberID]
		parts, err := bal.ParseSyncAssignment(sa.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		byMember[sa.MemberID] = parts
	}
	for _, id := range []string{"a", "b"} {
		p := byMember[id]
		if len(p["orders"]) != 1 || !slices.Equal(p["orders"], p["customers"]) {
			t.Fatalf("%s: %v", id, p)
		}
		if len(got[id]) != 1 || got[id][0].Partition == p["orders"][0] {
			t.Fatalf("%s runs %v and keeps standbys %v", id, p, got[id])
		}
	}
	// The next subscription carries the standbys kept.
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(a.JoinGroupMetadata([]string{"orders"}, byMember["a"], 1)); err != nil {
		t.Fatal(err)
	}
	sub, err := decodeSubscription(meta.UserData)
	if err != nil || sub.Process != "p-a" || len(sub.Standbys) != 1 || meta.Generation != 1 || len(meta.OwnedPartitions) != 2 || sub.Tags["zone"] != "z-a" {
		t.Fatalf("subscription %+v %v, metadata %+v", sub, err, meta)
	}
}

// FuzzUserData: whatever a member sends, the leader's reading of it and
// a member's reading of its assignment return an error or a value, never
// a panic.
func FuzzUserData(f *testing.F) {
	f.Add([]byte(`{"version":1,"process":"x","standbys":["0_1"]}`))
	f.Add([]byte(`{"version":1,"active":["0_0"],"standby":["1_2"]}`))
	f.Add([]byte(`{"version":2,"process":"x","tags":{"zone":"eu-1a","cluster":"k1"}}`))
	f.Add([]byte(`{"version":2,"tags":{"zone":7}}`))
	f.Add([]byte(`{"version":0}`))
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := decodeSubscription(b); err == nil {
			for _, task := range s.Standbys {
				if _, err := ParseTask(task); err != nil {
					t.Fatalf("accepted %q", task)
				}
			}
		}
		_, _ = decodeAssignment(b)
		a := kmsg.NewConsumerMemberAssignment()
		a.UserData = b
		_, _ = New(Options{}).ParseSyncAssignment(a.AppendTo(nil))
	})
}

// TestBalancerPlacesStandbysByTags: the client tags travel in the
// subscriptions and the leader's rack.aware.assignment.tags place the
// standbys by them: of b, in the owner's zone, and c, in another, c keeps
// both tasks' standbys (by load alone each would keep one).
func TestBalancerPlacesStandbysByTags(t *testing.T) {
	zone := map[string]string{"a": "z1", "b": "z1", "c": "z2"}
	got := map[string][]Task{}
	bals := map[string]*Balancer{}
	var members []kmsg.JoinGroupResponseMember
	for _, id := range []string{"a", "b", "c"} {
		bals[id] = New(Options{Subtopologies: map[string]int{"in": 0}, OneActive: true, Standbys: 1, Process: "p-" + id,
			OnStandbys: func(ts, _ []Task) { got[id] = ts }, RackTags: []string{"zone"}, Tags: map[string]string{"zone": zone[id]}})
		members = append(members, kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: bals[id].JoinGroupMetadata([]string{"in"}, nil, -1)})
	}
	mb, _, err := bals["a"].MemberBalancer(members)
	if err != nil {
		t.Fatal(err)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"in": 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range into.IntoSyncAssignment() {
		if _, err := bals[sa.MemberID].ParseSyncAssignment(sa.MemberAssignment); err != nil {
			t.Fatal(err)
		}
	}
	if len(got["c"]) != 2 || len(got["b"]) != 0 {
		t.Fatalf("standbys: b keeps %v, c keeps %v; want none and both", got["b"], got["c"])
	}
}
