package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// TestCreateTopicsAnswersAsKafka: a CreateTopics response lists the new
// topic's configs with a source Kafka knows (Java's admin client refuses
// kfake's -1), its partitions, replication and topic ID; the requests the
// hook leaves to kfake get kfake's answers.
func TestCreateTopicsAnswersAsKafka(t *testing.T) {
	b := start(t, broker.Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := func(name string, parts int32, rf int16, configs map[string]string) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for k, v := range configs {
			rc := kmsg.NewCreateTopicsRequestTopicConfig()
			rc.Name, rc.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, rc)
		}
		return rt
	}
	create := func(validateOnly bool, ts ...kmsg.CreateTopicsRequestTopic) []kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Topics, req.ValidateOnly, req.TimeoutMillis = ts, validateOnly, 10_000
		resp, err := req.RequestWith(t.Context(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics
	}
	describe := func(st kmsg.CreateTopicsResponseTopic) string {
		s := fmt.Sprintf("%s err=%v parts=%d rf=%d id=%v", st.Topic, kerr.ErrorForCode(st.ErrorCode), st.NumPartitions, st.ReplicationFactor, st.TopicID != [16]byte{})
		for _, c := range st.Configs {
			s += fmt.Sprintf(" %s=%s(source %d)", c.Name, *c.Value, c.Source)
		}
		return s
	}
	for _, tc := range []struct {
		name         string
		validateOnly bool
		topics       []kmsg.CreateTopicsRequestTopic
		want         []string
	}{
		{name: "a changelog, as Kafka Streams asks for it",
			topics: []kmsg.CreateTopicsRequestTopic{topic("app-counts-changelog", 3, -1, map[string]string{"cleanup.policy": "compact"})},
			want:   []string{"app-counts-changelog err=<nil> parts=3 rf=1 id=true cleanup.policy=compact(source 1)"}},
		{name: "the broker's default partitions",
			topics: []kmsg.CreateTopicsRequestTopic{topic("defaults", -1, 1, nil)},
			want:   []string{"defaults err=<nil> parts=1 rf=1 id=true"}},
		{name: "one that exists, one new",
			topics: []kmsg.CreateTopicsRequestTopic{topic("app-counts-changelog", 3, -1, nil), topic("fresh", 2, -1, nil)},
			want: []string{"app-counts-changelog err=" + kerr.TopicAlreadyExists.Error() + " parts=-1 rf=-1 id=false",
				"fresh err=<nil> parts=2 rf=1 id=true"}},
		{name: "validate only goes to kfake and creates nothing",
			validateOnly: true, topics: []kmsg.CreateTopicsRequestTopic{topic("validated", 2, -1, nil)},
			want: []string{"validated err=<nil> parts=2 rf=1 id=false"}},
		{name: "a replication factor past the nodes goes to kfake",
			topics: []kmsg.CreateTopicsRequestTopic{topic("too-many-replicas", 1, 3, nil)},
			want:   []string{"too-many-replicas err=" + kerr.InvalidReplicationFactor.Error() + " parts=-1 rf=-1 id=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := create(tc.validateOnly, tc.topics...)
			if len(got) != len(tc.want) {
				t.Fatalf("%d topics answered, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if d := describe(got[i]); d != tc.want[i] {
					t.Errorf("got  %s\nwant %s", d, tc.want[i])
				}
			}
		})
	}
	// Validated, not created.
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("validated")
	md.Topics = append(md.Topics, mt)
	resp, err := md.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("a validate-only create made the topic: %+v", resp.Topics)
	}
}
