package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// advertised is what the broker tells clients it speaks: Apache Kafka
// 4.4's request versions (kfake's own default), less
// DescribeTopicPartitions. kfake answers that request without the
// eligible leader replicas Kafka 4.4 always sends, and Java's admin
// client, which Kafka Streams describes its internal topics with, fails
// on the missing list; told the broker lacks the request, it describes
// topics with Metadata instead, as against brokers before 3.8.
func advertised() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.DescribeTopicPartitions.Int16(), -1)
	return v
}

// Topic creation as Apache Kafka answers it.
//
// Since version 5 a CreateTopics response lists the new topic's configs,
// each with its source. kfake leaves every source at its zero value, -1,
// which no Kafka source is: Java's admin client refuses the whole
// response ("id should be positive, id: -1"), so no Kafka Streams
// application could create its changelog and repartition topics on this
// broker. The hook below answers the plain creates (a count of
// partitions, the default replication, config values) itself, through
// kfake's own topic creation, and reports the configs the topic was
// given with the source Kafka reports for them, DYNAMIC_TOPIC_CONFIG.
// Everything else (validate-only requests, manual replica assignments, a
// replication factor other than the default, a request naming a topic
// twice, requests before version 5) goes to kfake as it is, with its
// checks and answers.

// installCreateTopics adds the hook to c, whose nodes number brokers. It
// is one for every request key, which kfake runs only after the hooks for
// the request's own key: a test that injects its own answer to
// CreateTopics (a refusal, say) still gets to give it.
func installCreateTopics(c *kfake.Cluster, brokers int) {
	c.Control(func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req, ok := kreq.(*kmsg.CreateTopicsRequest)
		if !ok || !plainCreate(req, brokers) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, createOne(c, rt))
		}
		return resp, nil, true
	})
}

// plainCreate reports whether the hook answers req: every topic asks for
// a number of partitions (or the default) and the default replication,
// with a value for each config, in a request that can list configs.
func plainCreate(req *kmsg.CreateTopicsRequest, brokers int) bool {
	if req.Version < 5 || req.ValidateOnly {
		return false
	}
	// kfake creates with min(3, nodes) replicas, Kafka's default here.
	defaultRF := int16(min(3, brokers))
	seen := map[string]bool{}
	for _, rt := range req.Topics {
		if seen[rt.Topic] || len(rt.ReplicaAssignment) > 0 || rt.NumPartitions == 0 ||
			rt.ReplicationFactor != -1 && rt.ReplicationFactor != defaultRF {
			return false
		}
		seen[rt.Topic] = true
		for _, rc := range rt.Configs {
			if rc.Value == nil {
				return false
			}
		}
	}
	return true
}

// createOne creates one topic through kfake and answers for it.
func createOne(c *kfake.Cluster, rt kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = rt.Topic
	configs := make(map[string]string, len(rt.Configs))
	for _, rc := range rt.Configs {
		configs[rc.Name] = *rc.Value
	}
	if err := c.CreateTopic(rt.Topic, rt.NumPartitions, configs); err != nil {
		st.ErrorCode = kerr.UnknownServerError.Code
		var ke *kerr.Error
		if errors.As(err, &ke) {
			st.ErrorCode = ke.Code
		}
		msg := err.Error()
		st.ErrorMessage = &msg
		return st
	}
	info := c.TopicInfo(rt.Topic)
	if info == nil { // deleted again in between
		st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return st
	}
	st.TopicID = info.TopicID
	st.NumPartitions = int32(len(c.PartitionInfos(rt.Topic)))
	st.ReplicationFactor = int16(info.NumReplicas)
	for _, rc := range rt.Configs {
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		cfg.Name = rc.Name
		cfg.Value = rc.Value
		cfg.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		st.Configs = append(st.Configs, cfg)
	}
	return st
}
