package topics_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/topics"
)

// connect starts an embedded broker over TCP and returns an Admin on it.
func connect(t *testing.T, opts broker.Options) (*broker.Broker, *topics.Admin) {
	t.Helper()
	opts.Port = broker.RandomPort
	b, err := broker.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	a, err := topics.Connect(b.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return b, a
}

// summary is a topic as one comparable line.
func summary(tp topics.Topic) string {
	var leaders []string
	for _, p := range tp.Partitions {
		leaders = append(leaders, fmt.Sprintf("%d:%d%v", p.ID, p.Leader, p.Replicas))
	}
	return fmt.Sprintf("%s rf=%d %s", tp.Name, tp.ReplicationFactor, strings.Join(leaders, " "))
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name     string
		spec     topics.Spec
		dryRun   bool
		want     string // summary of what Create returns
		wantErr  error  // errors.Is, when not nil
		errText  string // in the message, when not empty
		existing bool   // whether the topic exists afterwards
	}{
		{name: "broker defaults", spec: topics.Spec{Name: "t", Partitions: topics.Default, ReplicationFactor: topics.Default},
			want: "t rf=1 0:0[0]", existing: true},
		{name: "three partitions", spec: topics.Spec{Name: "t", Partitions: 3, ReplicationFactor: 1},
			want: "t rf=1 0:0[0] 1:0[0] 2:0[0]", existing: true},
		{name: "configs", spec: topics.Spec{Name: "t", Partitions: 1, ReplicationFactor: -1, Configs: map[string]string{"retention.ms": "-1", "cleanup.policy": "compact"}},
			want: "t rf=1 0:0[0]", existing: true},
		{name: "dry run", spec: topics.Spec{Name: "t", Partitions: 2, ReplicationFactor: -1}, dryRun: true,
			want: "t rf=1 0:-1[] 1:-1[]"},
		{name: "already exists", spec: topics.Spec{Name: "seeded", Partitions: 1, ReplicationFactor: -1},
			wantErr: kerr.TopicAlreadyExists, errText: "create topic seeded on 127.0.0.1:", existing: true},
		{name: "replication factor above the node count", spec: topics.Spec{Name: "t", Partitions: 1, ReplicationFactor: 2},
			wantErr: kerr.InvalidReplicationFactor, errText: "create topic t on"},
		{name: "bad name", spec: topics.Spec{Name: "a/b", Partitions: 1, ReplicationFactor: -1},
			errText: `create: topic name "a/b"`},
		{name: "zero partitions", spec: topics.Spec{Name: "t", Partitions: 0, ReplicationFactor: -1},
			errText: "create topic t: partition count 0"},
		{name: "zero replication factor", spec: topics.Spec{Name: "t", Partitions: 1, ReplicationFactor: 0},
			errText: "create topic t: replication factor 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, a := connect(t, broker.Options{SeedTopics: map[string]int32{"seeded": 2}})
			got, err := a.Create(t.Context(), tc.spec, tc.dryRun)
			wantFail := tc.wantErr != nil || tc.errText != ""
			switch {
			case wantFail && err == nil:
				t.Fatalf("Create succeeded with %s, want an error", summary(got))
			case !wantFail && err != nil:
				t.Fatalf("Create: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Create: %v, want errors.Is %v", err, tc.wantErr)
			case tc.errText != "" && !strings.Contains(err.Error(), tc.errText):
				t.Fatalf("Create: %v, want it to contain %q", err, tc.errText)
			}
			if !wantFail && summary(got) != tc.want {
				t.Errorf("Create returned %s, want %s", summary(got), tc.want)
			}
			have, err := b.Topics(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := have[tc.spec.Name]; ok != tc.existing {
				t.Errorf("after Create the broker has topics %v: %s there is %v, want %v", have, tc.spec.Name, ok, tc.existing)
			}
		})
	}
}

func TestCreateKeepsConfigs(t *testing.T) {
	_, a := connect(t, broker.Options{})
	if _, err := a.Create(t.Context(), topics.Spec{Name: "c", Partitions: 1, ReplicationFactor: -1, Configs: map[string]string{"cleanup.policy": "compact"}}, false); err != nil {
		t.Fatal(err)
	}
	// Read the config back through a client of its own, as kcat or
	// the engine would see it.
	got, err := describeConfig(t, a.Addr(), "c", "cleanup.policy")
	if err != nil || got != "compact" {
		t.Fatalf("cleanup.policy of c = %q (%v), want compact", got, err)
	}
}

func TestList(t *testing.T) {
	tests := []struct {
		name     string
		opts     broker.Options
		internal bool
		names    []string
		want     []string
		wantErr  error
	}{
		{name: "empty", want: nil},
		{name: "sorted, with partitions", opts: broker.Options{SeedTopics: map[string]int32{"b": 2, "a": 1}},
			want: []string{"a rf=1 0:0[0]", "b rf=1 0:0[0] 1:0[0]"}},
		{name: "named", opts: broker.Options{SeedTopics: map[string]int32{"b": 2, "a": 1}}, names: []string{"b"},
			want: []string{"b rf=1 0:0[0] 1:0[0]"}},
		{name: "named, missing", opts: broker.Options{SeedTopics: map[string]int32{"a": 1}}, names: []string{"nope"},
			wantErr: kerr.UnknownTopicOrPartition},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, a := connect(t, tc.opts)
			got, err := a.List(t.Context(), tc.internal, tc.names...)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "list topics on 127.0.0.1:") {
					t.Fatalf("List: %v, want errors.Is %v, naming the broker", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sums []string
			for _, tp := range got {
				sums = append(sums, summary(tp))
			}
			if fmt.Sprint(sums) != fmt.Sprint(tc.want) {
				t.Fatalf("List = %q, want %q", sums, tc.want)
			}
		})
	}
}

func TestUnreachableBroker(t *testing.T) {
	a, err := topics.Connect([]string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := contextWithTimeout(t, 10)
	defer cancel()
	_, err = a.List(ctx, false)
	if err == nil || !strings.HasPrefix(err.Error(), "list topics on 127.0.0.1:1: ") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("List on a closed port: %v, want an error naming the address and the refused connection", err)
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		in      []string
		want    string
		wantErr string
	}{
		{nil, "map[]", ""},
		{[]string{"retention.ms=-1", "cleanup.policy=compact,delete"}, "map[cleanup.policy:compact,delete retention.ms:-1]", ""},
		{[]string{"a=x=y"}, "map[a:x=y]", ""},
		{[]string{"a="}, "map[a:]", ""},
		{[]string{"a=1", "a=1"}, "map[a:1]", ""},
		{[]string{"a=1", "a=2"}, "", `config a given twice, as "1" and "2"`},
		{[]string{"retention.ms"}, "", `config "retention.ms": want KEY=VALUE`},
		{[]string{"=1"}, "", `config "=1": want KEY=VALUE`},
	}
	for _, tc := range tests {
		got, err := topics.ParseConfig(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseConfig(%q) = %v, %v; want error %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("ParseConfig(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
