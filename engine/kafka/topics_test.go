package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"
)

type sink struct{ processor.Base[string, string] }

func (sink) Process(processor.Record[string, string]) error { return nil }

func sinkSupplier() processor.Supplier {
	return processor.Supply(func() processor.Processor[string, string, string, string] { return &sink{} })
}

// storesTopology has one store of every kind, one with its own topic
// config, one unlogged and one global, all under application id "shop".
func storesTopology(t *testing.T) *topology.Built {
	t.Helper()
	str := serde.String()
	mem := state.InMemory()
	day := 24 * time.Hour
	topo := topology.New().
		AddSource("src", topology.ConsumedWith(str, str).Spec(), "orders").
		AddProcessor("proc", sinkSupplier(), "src").
		AddStateStore(state.KeyValueStoreBuilder("counts", str, str, mem), "proc").
		AddStateStore(state.KeyValueStoreBuilder("tuned", str, str, mem).
			WithLoggingEnabled(map[string]string{"min.compaction.lag.ms": "60000"}), "proc").
		AddStateStore(state.KeyValueStoreBuilder("scratch", str, str, mem).WithLoggingDisabled(), "proc").
		AddStateStore(state.TimestampedWindowStoreBuilder("hourly", str, str, 2*day, time.Hour, false, mem), "proc").
		AddStateStore(state.SessionStoreBuilder("visits", str, str, time.Hour, mem), "proc").
		AddGlobalStore(state.KeyValueStoreBuilder("prices", str, str, mem).WithLoggingDisabled(),
			"prices-src", topology.ConsumedWith(str, str).Spec(), "prices", "prices-proc", sinkSupplier())
	b, err := topo.Build(config.New(map[string]string{config.ApplicationID: "shop"}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInternalTopics(t *testing.T) {
	specs := kafka.InternalTopics(storesTopology(t), 3)
	var got []string
	for _, s := range specs {
		got = append(got, fmt.Sprintf("%s store=%s partitions=%d rf=%d %v", s.Name, s.Store, s.Partitions, s.ReplicationFactor, s.Configs))
	}
	want := []string{
		"shop-counts-changelog store=counts partitions=3 rf=-1 map[cleanup.policy:compact message.timestamp.type:CreateTime]",
		// Two days of retention plus Kafka Streams' extra day.
		"shop-hourly-changelog store=hourly partitions=3 rf=-1 map[cleanup.policy:compact,delete message.timestamp.type:CreateTime retention.ms:259200000]",
		"shop-tuned-changelog store=tuned partitions=3 rf=-1 map[cleanup.policy:compact message.timestamp.type:CreateTime min.compaction.lag.ms:60000]",
		"shop-visits-changelog store=visits partitions=3 rf=-1 map[cleanup.policy:compact,delete message.timestamp.type:CreateTime retention.ms:90000000]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("InternalTopics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func admin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestEnsureTopicsCreatesThenAccepts(t *testing.T) {
	b := startBroker(t, nil)
	adm := admin(t, b.Addr())
	specs := kafka.InternalTopics(storesTopology(t), 2)
	if err := kafka.EnsureTopics(t.Context(), adm, specs, true); err != nil {
		t.Fatalf("first EnsureTopics: %v", err)
	}
	// What was created is what the specs say.
	details, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	configs, err := adm.DescribeTopicConfigs(t.Context(), details.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		d, ok := details[s.Name]
		if !ok {
			t.Errorf("%s was not created", s.Name)
			continue
		}
		if len(d.Partitions) != 2 {
			t.Errorf("%s has %d partitions, want 2", s.Name, len(d.Partitions))
		}
		rc, _ := configs.On(s.Name, nil)
		got := map[string]string{}
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		for k, v := range s.Configs {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", s.Name, k, got[k], v)
			}
		}
	}
	// A second run finds everything in place, with or without creation.
	for _, allow := range []bool{true, false} {
		if err := kafka.EnsureTopics(t.Context(), adm, specs, allow); err != nil {
			t.Fatalf("EnsureTopics on existing topics (allowCreate %v): %v", allow, err)
		}
	}
}

func TestEnsureTopicsReportsEveryProblem(t *testing.T) {
	b := startBroker(t, nil)
	adm := admin(t, b.Addr())
	specs := kafka.InternalTopics(storesTopology(t), 4)
	byName := map[string]kafka.TopicSpec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	create := func(name string, partitions int32, configs map[string]string) {
		t.Helper()
		ptrs := map[string]*string{}
		for k, v := range configs {
			ptrs[k] = kadm.StringPtr(v)
		}
		if _, err := adm.CreateTopic(t.Context(), partitions, -1, ptrs, name); err != nil {
			t.Fatal(err)
		}
	}
	// counts: wrong partition count and a deleting policy.
	create("shop-counts-changelog", 2, map[string]string{"cleanup.policy": "delete"})
	// hourly: the right policy spelled in the other order, a retention
	// shorter than the store's.
	create("shop-hourly-changelog", 4, map[string]string{"cleanup.policy": "delete,compact", "retention.ms": "3600000"})
	// tuned: as the spec says.
	create("shop-tuned-changelog", 4, byName["shop-tuned-changelog"].Configs)
	// visits: missing.

	err := kafka.EnsureTopics(t.Context(), adm, specs, false)
	var terr *kafka.TopicsError
	if !errors.As(err, &terr) {
		t.Fatalf("EnsureTopics: %v, want a *TopicsError", err)
	}
	want := `internal topics are not as the topology needs them:
  shop-counts-changelog: has 2 partitions, needs 4
  shop-counts-changelog: cleanup.policy is "delete", needs "compact"
  shop-hourly-changelog: retention.ms is 3600000, needs 259200000 or more
  shop-visits-changelog: missing, and creating topics is not allowed`
	if err.Error() != want {
		t.Fatalf("EnsureTopics error:\n%s\nwant:\n%s", err, want)
	}
	if !slices.Equal(terr.Missing, []string{"shop-visits-changelog"}) || len(terr.Mismatches) != 3 {
		t.Fatalf("TopicsError = %+v", terr)
	}

	// Allowed to create, it creates the missing topic but still refuses to
	// touch the ones that differ.
	err = kafka.EnsureTopics(t.Context(), adm, specs, true)
	if !errors.As(err, &terr) || len(terr.Missing) != 0 || len(terr.Mismatches) != 3 {
		t.Fatalf("EnsureTopics allowed to create: %v, want the three mismatches only", err)
	}
	// A new client: the first one's metadata cache may still hold the
	// topic as missing.
	details, err := admin(t, b.Addr()).ListTopics(t.Context(), "shop-visits-changelog")
	if err != nil || details["shop-visits-changelog"].Err != nil {
		t.Fatalf("shop-visits-changelog was not created: %v %v", err, details["shop-visits-changelog"].Err)
	}
}

func TestEnsureTopicsNothingToDo(t *testing.T) {
	if err := kafka.EnsureTopics(t.Context(), nil, nil, false); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureTopicsUnreachableCluster(t *testing.T) {
	b := startBroker(t, nil)
	adm := admin(t, b.Addr())
	b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err := kafka.EnsureTopics(ctx, adm, kafka.InternalTopics(storesTopology(t), 1), true)
	var terr *kafka.TopicsError
	if err == nil || errors.As(err, &terr) || !strings.Contains(err.Error(), "look up internal topics shop-counts-changelog") {
		t.Fatalf("EnsureTopics against a stopped broker: %v, want a lookup error naming the topics", err)
	}
}

func TestCheckTopicName(t *testing.T) {
	for _, ok := range []string{"orders", "a.b_c-D9", strings.Repeat("x", 249)} {
		if err := kafka.CheckTopicName(ok); err != nil {
			t.Errorf("CheckTopicName(%q) = %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                       "topic name is empty",
		".":                      `topic name "." is not allowed`,
		"..":                     `topic name ".." is not allowed`,
		strings.Repeat("x", 250): "is 250 characters long, more than 249",
		"no/slash":               `topic name "no/slash" holds '/'`,
		"café":                   `holds 'é'`,
	} {
		if err := kafka.CheckTopicName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckTopicName(%.30q) = %v, want %q", name, err, want)
		}
	}
}

// TestEnsureTopicsSeesTopicsCreatedElsewhere: another instance creates a
// changelog between two runs on one admin client. The second run must see
// it, though the client's metadata cache last saw it missing.
func TestEnsureTopicsSeesTopicsCreatedElsewhere(t *testing.T) {
	b := startBroker(t, nil)
	adm := admin(t, b.Addr())
	specs := kafka.InternalTopics(storesTopology(t), 1)
	var terr *kafka.TopicsError
	if err := kafka.EnsureTopics(t.Context(), adm, specs, false); !errors.As(err, &terr) || len(terr.Missing) != len(specs) {
		t.Fatalf("EnsureTopics on an empty cluster: %v, want every topic missing", err)
	}
	if err := kafka.EnsureTopics(t.Context(), admin(t, b.Addr()), specs, true); err != nil {
		t.Fatalf("the other instance: %v", err)
	}
	if err := kafka.EnsureTopics(t.Context(), adm, specs, false); err != nil {
		t.Fatalf("EnsureTopics after another instance created the topics: %v", err)
	}
}

// TestEnsureTopicsCreationRefused injects a broker refusal through kfake's
// control hook: the error names the topic and its store.
func TestEnsureTopicsCreationRefused(t *testing.T) {
	b := startBroker(t, nil)
	b.Cluster().ControlKey(int16(kmsg.CreateTopics), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		b.Cluster().KeepControl()
		req := kreq.(*kmsg.CreateTopicsRequest)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	err := kafka.EnsureTopics(t.Context(), admin(t, b.Addr()), kafka.InternalTopics(storesTopology(t), 1), true)
	if err == nil || !errors.Is(err, kerr.TopicAuthorizationFailed) ||
		!strings.Contains(err.Error(), "create internal topic shop-counts-changelog (changelog of store counts)") {
		t.Fatalf("EnsureTopics with creation refused: %v, want the authorization error naming the topic and store", err)
	}
}
