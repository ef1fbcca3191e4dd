package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
)

// TestClientSettingsRefusals: a producer or consumer key the engine cannot
// honour as given is refused, naming the key and why.
func TestClientSettingsRefusals(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string
		want   string // "" accepted
	}{
		{"defaults", map[string]string{}, ""},
		{"every codec", map[string]string{"compression.type": "zstd", "producer.compression.type": "gzip"}, ""},
		{"bad codec", map[string]string{"producer.compression.type": "brotli"}, `config compression.type: "brotli" is not one of none, gzip, snappy, lz4, zstd`},
		{"acks all", map[string]string{"acks": "-1"}, ""},
		{"acks 1 under exactly-once", map[string]string{"producer.acks": "1"}, "config acks: 1 is refused under exactly_once_v2"},
		{"acks 1 under at-least-once", map[string]string{"acks": "1", "processing.guarantee": "at_least_once"}, ""},
		{"no idempotence under exactly-once", map[string]string{"enable.idempotence": "false"}, "config enable.idempotence: false is refused under exactly_once_v2"},
		{"max.request.size too small", map[string]string{"max.request.size": "10"}, "config max.request.size: 10 is below the least value, 1024"},
		{"linger", map[string]string{"producer.linger.ms": "100"}, ""},
		{"read_uncommitted under exactly-once", map[string]string{"consumer.isolation.level": "read_uncommitted"}, "config isolation.level: read_uncommitted is refused under exactly_once_v2"},
		{"auto commit", map[string]string{"enable.auto.commit": "true"}, "config enable.auto.commit: true is refused"},
		{"fetch sizes", map[string]string{"main.consumer.fetch.max.bytes": "1048576", "consumer.max.partition.fetch.bytes": "65536", "fetch.min.bytes": "1", "fetch.max.wait.ms": "50"}, ""},
		{"fetch size not a number", map[string]string{"restore.consumer.fetch.max.bytes": "lots"}, `config fetch.max.bytes: "lots" is not an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.New(tc.values)
			var err error
			if _, err = ProducerOptions(cfg); err == nil {
				for _, cl := range []config.Client{config.MainConsumer, config.RestoreConsumer, config.GlobalConsumer} {
					if _, err = ConsumerOptions(cfg, cl); err != nil {
						break
					}
				}
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMaxRequestBytes(t *testing.T) {
	for values, want := range map[string]int{"": DefaultMaxRequestSize, "max.request.size=2000000": 2000000, "producer.max.request.size=5000000": 5000000} {
		m := map[string]string{}
		if k, v, ok := strings.Cut(values, "="); ok {
			m[k] = v
		}
		got, err := MaxRequestBytes(config.New(m))
		if err != nil || got != want {
			t.Errorf("MaxRequestBytes(%s) = %d, %v; want %d", values, got, err, want)
		}
	}
}

func TestApplyTopicSettings(t *testing.T) {
	specs := []TopicSpec{{Name: "app-s-changelog", Partitions: 2, ReplicationFactor: -1, Configs: map[string]string{CleanupPolicy: PolicyCompact}}}
	got, err := ApplyTopicSettings(config.New(map[string]string{"replication.factor": "3", "topic.min.insync.replicas": "2", "topic.cleanup.policy": "delete"}), specs)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ReplicationFactor != 3 || got[0].Configs["min.insync.replicas"] != "2" || got[0].Configs[CleanupPolicy] != PolicyCompact {
		t.Errorf("got %+v: want replication 3, min.insync.replicas 2 and the changelog's own cleanup.policy", got[0])
	}
	if specs[0].ReplicationFactor != -1 || len(specs[0].Configs) != 1 {
		t.Errorf("the specs given were changed: %+v", specs[0])
	}
	for _, bad := range []string{"0", "-2", "x", "40000"} {
		if _, err := ApplyTopicSettings(config.New(map[string]string{"replication.factor": bad}), specs); err == nil || !strings.Contains(err.Error(), "config replication.factor") {
			t.Errorf("replication.factor=%s: err = %v", bad, err)
		}
	}
}

// TestLargeMaxRequestSize: a max.request.size above franz-go's 100 MiB
// write limit raises that limit too, or franz-go refuses the client.
func TestLargeMaxRequestSize(t *testing.T) {
	for _, size := range []string{"1048576", "104857600", "209715200"} {
		opts, err := ProducerOptions(config.New(map[string]string{"max.request.size": size}))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
		if err != nil {
			t.Fatalf("max.request.size=%s: %v", size, err)
		}
		cl.Close()
	}
}

func TestCompressionCodec(t *testing.T) {
	for _, name := range []string{"", "none", "gzip", "snappy", "lz4", "zstd", " LZ4 "} {
		if _, err := CompressionCodec(name); err != nil {
			t.Errorf("compression %q: %v", name, err)
		}
	}
	if _, err := CompressionCodec("brotli"); err == nil || !strings.Contains(err.Error(), `"brotli"`) {
		t.Errorf("compression brotli: %v, want an error naming it", err)
	}
}
