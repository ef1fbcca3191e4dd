package kafka

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
)

// Keys this package reads besides those engine/config names.
const (
	// ClientID is Kafka's client.id: the name the brokers log and
	// meter this client under.
	ClientID = "client.id"
	// AutoOffsetReset is where a source partition with no committed
	// offset starts, and where one whose offset fell out of the log
	// resumes: earliest (Kafka Streams' default), latest or none (fail).
	AutoOffsetReset = "auto.offset.reset"
	// InstanceID names this process among the running instances of an
	// application. It completes the transactional id under exactly-once,
	// so it must be unique among instances that run at once and should
	// stay the same across restarts of one instance: a restart then
	// fences its predecessor and aborts the transaction it left open at
	// once, instead of after the transaction timeout. The live engine
	// keeps a generated one in the application's state directory when it
	// is not set (engine/instance.go); this package's default, for clients
	// made outside the engine, is "0".
	InstanceID = "stoatflow.instance.id"
	// RetryBackoffMs is Kafka's retry.backoff.ms: here, franz-go's metadata
	// min age, the soonest a failed request's retry may refresh metadata.
	RetryBackoffMs = "retry.backoff.ms"
	// DefaultRetryBackoff is retry.backoff.ms's default, Kafka's clients'
	// 100 ms; every transactional producer of the module sets it (a
	// migration's batches, the benchmarks' bare loop) for the reason
	// ClientOptions does.
	DefaultRetryBackoff = 100 * time.Millisecond
	// TransactionTimeoutMs is Kafka's transaction.timeout.ms: how long the
	// transaction coordinator lets a transaction stay open before it
	// aborts it and fences the producer. Default franz-go's 40 s.
	TransactionTimeoutMs = "transaction.timeout.ms"
	// DefaultTransactionTimeout is transaction.timeout.ms when it is not
	// set: franz-go's.
	DefaultTransactionTimeout = 40 * time.Second
)

// Processing guarantees, the values of processing.guarantee.
const (
	ExactlyOnceV2 = "exactly_once_v2"
	AtLeastOnce   = "at_least_once"
)

// ClientOptions maps cfg to franz-go options for a client that consumes as
// the application's consumer group and produces its output:
//
//   - bootstrap.servers (required): the seed brokers, host:port[,host:port].
//   - application.id (required): the consumer group.
//   - client.id: the client id; default DefaultClientID(cfg).
//   - processing.guarantee: exactly_once_v2 (default) reads committed
//     records only and makes the producer transactional with
//     TransactionalID(cfg); at_least_once reads uncommitted records and
//     produces idempotently. (franz-go always fetches committed offsets
//     with require_stable, KIP-447, which exactly-once v2 relies on.)
//   - auto.offset.reset: earliest (default), latest or none.
//
// Whatever the guarantee, offsets are never auto-committed (the engine
// commits at barriers, as Kafka Streams forces enable.auto.commit=false)
// and the engine sets its own group balancer (engine/assign). Errors name the key at
// fault.
func ClientOptions(cfg config.Config) ([]kgo.Opt, error) {
	return ClientOptionsDial(cfg, nil)
}

// ClientOptionsDial is ClientOptions with the connections made over dial
// (conn.Options).
func ClientOptionsDial(cfg config.Config, dial conn.DialFunc) ([]kgo.Opt, error) {
	seeds, err := bootstrapServers(cfg)
	if err != nil {
		return nil, err
	}
	appID, err := applicationID(cfg)
	if err != nil {
		return nil, err
	}
	clientID := DefaultClientID(cfg)
	if cfg.IsSet(ClientID) {
		if clientID = strings.TrimSpace(cfg.String(ClientID)); clientID == "" {
			return nil, fmt.Errorf("config %s: set but empty", ClientID)
		}
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(appID),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
	}
	// One franz-go client is both the main consumer and the producer, so
	// the two must connect alike.
	consumer, producer := cfg.ForClient(config.MainConsumer), cfg.ForClient(config.Producer)
	if k := conn.Differ(consumer, producer); k != "" {
		return nil, fmt.Errorf("config %s differs between the main consumer and the producer (a main.consumer., consumer. or producer. prefix): stoatctl's engine consumes and produces through one client, which connects one way", k)
	}
	connOpts, err := conn.Options(consumer, dial)
	if err != nil {
		return nil, err
	}
	opts = append(opts, connOpts...)
	consumerOpts, err := ConsumerOptions(cfg, config.MainConsumer)
	if err != nil {
		return nil, err
	}
	opts = append(opts, consumerOpts...)

	// A produce retry waits for a metadata refresh, and franz-go's own
	// floor between refreshes is 5 s: one CONCURRENT_TRANSACTIONS right
	// after a commit (the broker still writing the markers) held an
	// epoch's commit for 4.8 s on Apache Kafka 4.4.
	backoff, err := cfg.BoundedInt(RetryBackoffMs, DefaultRetryBackoff.Milliseconds())
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.MetadataMinAge(time.Duration(backoff)*time.Millisecond))

	reset, err := resetOffsets(consumer)
	if err != nil {
		return nil, err
	}
	opts = append(opts, reset...)

	guarantee, err := cfg.OneOf(config.ProcessingGuarantee, ExactlyOnceV2, AtLeastOnce)
	if err != nil {
		return nil, err
	}
	prodOpts, err := ProducerOptions(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts, prodOpts...)
	if guarantee == ExactlyOnceV2 {
		txnID, err := TransactionalID(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts,
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.TransactionalID(txnID),
		)
		if producer.IsSet(TransactionTimeoutMs) {
			ms, err := producer.BoundedInt(TransactionTimeoutMs, 0)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.TransactionTimeout(time.Duration(ms)*time.Millisecond))
		}
	}
	return opts, nil
}

// TransactionalID is the transactional id of the application instance
// under exactly-once: "<application.id>-<stoatflow.instance.id>", as Kafka
// Streams' is "<application.id>-<process id>-<thread>". Every id of the
// application starts with "<application.id>-", so ACLs can grant them by
// prefix.
func TransactionalID(cfg config.Config) (string, error) {
	appID, err := applicationID(cfg)
	if err != nil {
		return "", err
	}
	instance := "0"
	if cfg.IsSet(InstanceID) {
		instance = strings.TrimSpace(cfg.String(InstanceID))
		if instance == "" {
			return "", fmt.Errorf("config %s: set but empty", InstanceID)
		}
	}
	return appID + "-" + instance, nil
}

// DefaultClientID is the client id when client.id is not set: the
// transactional id's form, "<application.id>-<stoatflow.instance.id>",
// so that the brokers' logs and the group's member list tell the
// instances apart, and a start can find a live member with its own
// instance id.
func DefaultClientID(cfg config.Config) string {
	id, err := TransactionalID(cfg)
	if err != nil {
		return strings.TrimSpace(cfg.String(config.ApplicationID))
	}
	return id
}

func bootstrapServers(cfg config.Config) ([]string, error) {
	raw := strings.TrimSpace(cfg.String(config.BootstrapServers))
	if raw == "" {
		return nil, fmt.Errorf("config %s: not set; want the brokers to connect to, host:port[,host:port...]", config.BootstrapServers)
	}
	var seeds []string
	for s := range strings.SplitSeq(raw, ",") {
		s = strings.TrimSpace(s)
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			return nil, fmt.Errorf("config %s: %q is not host:port", config.BootstrapServers, s)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("config %s: %q has no valid port (1-65535)", config.BootstrapServers, s)
		}
		seeds = append(seeds, s)
	}
	return seeds, nil
}

// applicationID is application.id, checked as the prefix of topic names
// it is: every internal topic starts with it.
func applicationID(cfg config.Config) (string, error) {
	id := strings.TrimSpace(cfg.String(config.ApplicationID))
	if id == "" {
		return "", fmt.Errorf("config %s: not set; it names the consumer group and prefixes internal topics", config.ApplicationID)
	}
	if i := strings.IndexFunc(id, func(r rune) bool { return !legalTopicRune(r) }); i >= 0 {
		r := []rune(id[i:])[0]
		return "", fmt.Errorf("config %s: %q holds %q, which a topic name cannot; legal are a-z A-Z 0-9 . _ -", config.ApplicationID, id, r)
	}
	return id, nil
}

func resetOffsets(cfg config.Config) ([]kgo.Opt, error) {
	reset := "earliest"
	if cfg.IsSet(AutoOffsetReset) {
		reset = strings.TrimSpace(cfg.String(AutoOffsetReset))
	}
	// kgo's own default resets to a minute back, which no Kafka client
	// does; set both the start and the reset offset explicitly.
	switch reset {
	case "earliest":
		start := kgo.NewOffset().AtStart()
		return []kgo.Opt{kgo.ConsumeStartOffset(start), kgo.ConsumeResetOffset(start)}, nil
	case "latest":
		end := kgo.NewOffset().AtEnd()
		return []kgo.Opt{kgo.ConsumeStartOffset(end), kgo.ConsumeResetOffset(end)}, nil
	case "none":
		return []kgo.Opt{kgo.ConsumeStartOffset(kgo.NewOffset().AtCommitted()), kgo.ConsumeResetOffset(kgo.NoResetOffset())}, nil
	}
	return nil, fmt.Errorf("config %s: %q is not one of earliest, latest, none", AutoOffsetReset, reset)
}
