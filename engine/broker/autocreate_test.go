package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// TestAutoCreateTopics sends the metadata request a client sends before it
// produces to a topic, asking or not for the topic to be created, and
// checks what the broker then has: a new topic only when both the broker
// and the client allow it, with one partition, as Kafka's num.partitions
// default.
func TestAutoCreateTopics(t *testing.T) {
	tests := []struct {
		name         string
		brokerAllows bool
		clientAsks   bool
		nodes        int
		wantErr      error
		wantTopics   string
		wantReplicas int
	}{
		{"on, asked", true, true, 1, nil, "map[new-topic:1]", 1},
		{"on, asked, three nodes", true, true, 3, nil, "map[new-topic:1]", 3},
		{"on, not asked", true, false, 1, kerr.UnknownTopicOrPartition, "map[]", 0},
		{"off, asked", false, true, 1, kerr.UnknownTopicOrPartition, "map[]", 0},
		{"off (the zero value), not asked", false, false, 1, kerr.UnknownTopicOrPartition, "map[]", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := start(t, broker.Options{AutoCreateTopics: tc.brokerAllows, NumBrokers: tc.nodes})
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			req := kmsg.NewPtrMetadataRequest()
			req.AllowAutoTopicCreation = tc.clientAsks
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("new-topic")
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(t.Context(), cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 {
				t.Fatalf("metadata for new-topic: %d topics in the response, want 1", len(resp.Topics))
			}
			got := resp.Topics[0]
			if err := kerr.ErrorForCode(got.ErrorCode); err != tc.wantErr {
				t.Fatalf("metadata for new-topic: error %v, want %v", err, tc.wantErr)
			}
			if tc.wantReplicas > 0 && (len(got.Partitions) != 1 || len(got.Partitions[0].Replicas) != tc.wantReplicas) {
				t.Errorf("new-topic's partitions %+v, want one with %d replicas", got.Partitions, tc.wantReplicas)
			}
			topics, err := b.Topics(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(topics) != tc.wantTopics {
				t.Fatalf("Topics() = %v, want %s", topics, tc.wantTopics)
			}
		})
	}
}

// TestAutoCreatedTopicSurvivesRestart: a topic created on first use is a
// topic like any other in the data directory.
func TestAutoCreatedTopicSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	opts := broker.Options{Port: broker.RandomPort, DataDir: dir, AutoCreateTopics: true}
	b, err := broker.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("first-use"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	err = cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatalf("produce to first-use, a topic that does not exist yet: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	opts.AutoCreateTopics = false
	b = start(t, opts)
	if got := consume(t, b.Addr(), "first-use", 2); fmt.Sprint(got) != "[a b]" {
		t.Fatalf("after restart consumed %q, want [a b]", got)
	}
}
