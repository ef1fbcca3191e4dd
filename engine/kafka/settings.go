package kafka

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
)

// The producer's and consumers' keys a Kafka Streams application carries,
// each read through its client's prefixes (config.ForClient). Each is
// honoured, or refused with the reason; none is dropped unsaid (the
// catalogue marks those accepted without effect).
const (
	CompressionType        = "compression.type"
	MaxRequestSize         = "max.request.size"
	Acks                   = "acks"
	EnableIdempotence      = "enable.idempotence"
	LingerMs               = "linger.ms"
	FetchMaxBytes          = "fetch.max.bytes"
	MaxPartitionFetchBytes = "max.partition.fetch.bytes"
	FetchMinBytes          = "fetch.min.bytes"
	FetchMaxWaitMs         = "fetch.max.wait.ms"
	IsolationLevel         = "isolation.level"
	EnableAutoCommit       = "enable.auto.commit"
	ReplicationFactor      = "replication.factor"
	DefaultMaxRequestSize  = 1 << 20
	defaultLinger          = 10 * time.Millisecond
	defaultFetchMaxWait    = 200 * time.Millisecond
	franzBrokerWriteBytes  = 100 << 20 // franz-go's default BrokerMaxWriteBytes
)

// refuse is a key's refusal, as config check reports it.
func refuse(key, format string, args ...any) error {
	return config.Problem{Kind: config.Invalid, Key: key, Reason: fmt.Sprintf(format, args...)}
}

func exactlyOnce(cfg config.Config) bool {
	return strings.TrimSpace(cfg.String(config.ProcessingGuarantee)) != AtLeastOnce
}

// ConnOptions are the options that connect client cl as cfg's security
// keys say, under cl's prefixes: for clients made from the seeds alone.
func ConnOptions(cfg config.Config, cl config.Client, dial conn.DialFunc) ([]kgo.Opt, error) {
	return conn.Options(cfg.ForClient(cl), dial)
}

// MaxRequestBytes is max.request.size for the producer: the largest
// record batch it sends, and so the largest record.
func MaxRequestBytes(cfg config.Config) (int, error) {
	n, err := cfg.ForClient(config.Producer).BoundedInt(MaxRequestSize, DefaultMaxRequestSize)
	if err != nil {
		return 0, err
	}
	if n > 1<<31-1 {
		return 0, refuse(MaxRequestSize, "%d is above the largest batch Kafka takes, 2147483647", n)
	}
	return int(n), nil
}

// CompressionCodec is the codec of a compression.type value: none (also
// when empty), gzip, snappy, lz4 or zstd, any case; another is refused
// naming the key.
func CompressionCodec(name string) (kgo.CompressionCodec, error) {
	switch c := strings.ToLower(strings.TrimSpace(name)); c {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	default:
		return kgo.CompressionCodec{}, refuse(CompressionType, "%q is not one of none, gzip, snappy, lz4, zstd", c)
	}
}

// ProducerOptions are the producer's settings: compression.type (none,
// Kafka Streams' default, where franz-go's own would be snappy),
// max.request.size, acks and enable.idempotence (all and true under
// exactly-once, which writes transactionally), and linger.ms.
func ProducerOptions(cfg config.Config) ([]kgo.Opt, error) {
	p := cfg.ForClient(config.Producer)
	var opts []kgo.Opt
	codec, err := CompressionCodec(p.String(CompressionType))
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))

	size, err := MaxRequestBytes(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchMaxBytes(int32(size)))
	if size > franzBrokerWriteBytes-(1<<20) {
		opts = append(opts, kgo.BrokerMaxWriteBytes(int32(min(int64(size)+(1<<20), 1<<31-1))))
	}

	eos := exactlyOnce(cfg)
	idempotent := true
	if p.IsSet(EnableIdempotence) {
		if idempotent, err = p.Bool(EnableIdempotence, true); err != nil {
			return nil, err
		}
		if !idempotent && eos {
			return nil, refuse(EnableIdempotence, "false is refused under exactly_once_v2, whose transactions need an idempotent producer; set processing.guarantee=at_least_once to turn it off")
		}
	}
	switch a := strings.TrimSpace(p.String(Acks)); a {
	case "", "all", "-1":
	case "1", "0":
		if eos {
			return nil, refuse(Acks, "%s is refused under exactly_once_v2, whose transactions need acks=all", a)
		}
		idempotent = false
		if a == "1" {
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
		} else {
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
		}
	default:
		return nil, refuse(Acks, "%q is not one of all, -1, 1, 0", a)
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}

	linger, err := p.BoundedInt(LingerMs, defaultLinger.Milliseconds())
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerLinger(time.Duration(linger)*time.Millisecond))
	return opts, nil
}

// ConsumerOptions are consumer cl's fetch settings (fetch.max.bytes,
// max.partition.fetch.bytes, fetch.min.bytes, fetch.max.wait.ms) and the
// checks of isolation.level and enable.auto.commit, which
// processing.guarantee and the engine's barriers decide.
func ConsumerOptions(cfg config.Config, cl config.Client) ([]kgo.Opt, error) {
	c := cfg.ForClient(cl)
	var opts []kgo.Opt
	for _, k := range []struct {
		key string
		opt func(int32) kgo.Opt
	}{{FetchMaxBytes, func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) }}, {MaxPartitionFetchBytes, func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) }},
		{FetchMinBytes, func(n int32) kgo.Opt { return kgo.FetchMinBytes(n) }}} {
		if !c.IsSet(k.key) {
			continue
		}
		n, err := c.BoundedInt(k.key, 0)
		if err != nil {
			return nil, err
		}
		if n > 1<<31-1 {
			return nil, refuse(k.key, "%d is above 2147483647", n)
		}
		opts = append(opts, k.opt(int32(n)))
	}
	wait, err := c.BoundedInt(FetchMaxWaitMs, defaultFetchMaxWait.Milliseconds())
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.FetchMaxWait(time.Duration(max(wait, 10))*time.Millisecond))
	switch lvl := strings.TrimSpace(c.String(IsolationLevel)); lvl {
	case "":
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	case "read_uncommitted":
		if exactlyOnce(cfg) {
			return nil, refuse(IsolationLevel, "read_uncommitted is refused under exactly_once_v2, which reads committed records only")
		}
	default:
		return nil, refuse(IsolationLevel, "%q is not read_committed or read_uncommitted", lvl)
	}
	if c.IsSet(EnableAutoCommit) {
		on, err := c.Bool(EnableAutoCommit, false)
		if err != nil {
			return nil, err
		}
		if on {
			return nil, refuse(EnableAutoCommit, "true is refused: the engine commits offsets at barriers, with the output they produced, as Kafka Streams forces false")
		}
	}
	return opts, nil
}

// ApplyTopicSettings gives the internal topics specs the application
// creates replication.factor and the topic. configs, as Kafka Streams
// does: a spec's own configs (a changelog's cleanup.policy, a store's
// logging configs) win over topic. ones.
func ApplyTopicSettings(cfg config.Config, specs []TopicSpec) ([]TopicSpec, error) {
	rf := int64(-1)
	if v := strings.TrimSpace(cfg.String(ReplicationFactor)); v != "" {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n == 0 || n < -1 {
			return nil, refuse(ReplicationFactor, "%q is not -1 (the broker's default.replication.factor) or a replica count of at least 1", v)
		}
		rf = n
	}
	extra := cfg.TopicConfigs()
	out := make([]TopicSpec, len(specs))
	for i, s := range specs {
		if s.ReplicationFactor == -1 {
			s.ReplicationFactor = int16(rf)
		}
		if len(extra) > 0 {
			merged := maps.Clone(extra)
			maps.Copy(merged, s.Configs)
			s.Configs = merged
		}
		out[i] = s
	}
	return out, nil
}
