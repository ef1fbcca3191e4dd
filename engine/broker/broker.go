package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Defaults for Options.
const (
	DefaultHost = "127.0.0.1"
	DefaultPort = 9092
	// RandomPort as Options.Port asks the OS for free ports, as tests do.
	RandomPort = -1
)

// Options configure Start. The zero value is a one-node, in-memory broker on
// 127.0.0.1:9092 with no topics, which creates none on first use.
type Options struct {
	// Host is the address to listen on and the host clients are told to
	// connect to; default 127.0.0.1. A wildcard such as 0.0.0.0 listens on
	// every interface, but clients are then told to connect to the
	// wildcard, which works from this machine only.
	Host string
	// Port of the first node; node i listens on Port+i. 0 means
	// DefaultPort, RandomPort any free ports.
	Port int
	// NumBrokers is the number of nodes; default 1.
	NumBrokers int
	// DataDir, when set, makes the broker persist its state there and
	// reload it on Start. Empty keeps everything in memory.
	DataDir string
	// SyncWrites fsyncs every record batch written to DataDir.
	SyncWrites bool
	// SeedTopics are created when missing, with the given partition counts
	// (0 or less means one partition).
	SeedTopics map[string]int32
	// AutoCreateTopics makes the broker create a topic that a client's
	// metadata request names and asks to have created (Kafka's
	// auto.create.topics.enable), with one partition and a replication
	// factor of min(3, NumBrokers), as CreateTopics with the broker's
	// defaults would. Clients ask for it on their own terms: librdkafka's
	// producers (kcat -P) and Java's do by default, franz-go's only with
	// kgo.AllowAutoTopicCreation, admin requests never. Off by default, as
	// in the real-Kafka test tier (scripts/kafka.sh), so that a topic
	// someone forgot to create is an error; `stoatctl broker` turns it on.
	AutoCreateTopics bool
	// Logger receives kfake's own messages, at their levels (kfake logs
	// every request at debug). Nil discards them.
	Logger *slog.Logger
}

// Broker is a running embedded broker.
type Broker struct {
	cluster *kfake.Cluster
	addrs   []string
	unlock  func() error
	intents *intentLog // with a data directory

	closeOnce sync.Once
	closeErr  error
}

// Start starts a broker as opts describe and returns once it accepts
// connections and its seed topics exist. With a data directory it first
// ends, with abort markers, the transactions a broker killed on it left
// open (see recoverTxns), before it serves any client. ctx bounds the
// recovery and the seeding; cancelling it later has no effect: Close stops
// the broker.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	host := opts.Host
	if host == "" {
		host = DefaultHost
	}
	n := opts.NumBrokers
	if n == 0 {
		n = 1
	}
	if n < 0 {
		return nil, fmt.Errorf("start broker: %d nodes asked for, want at least one", n)
	}
	port := opts.Port
	switch {
	case port == 0:
		port = DefaultPort
	case port == RandomPort:
		port = 0
	case port < 0 || port+n-1 > 65535:
		return nil, fmt.Errorf("start broker: port %d is out of range (1-65535 for %d node(s))", opts.Port, n)
	}

	// With a data directory the listeners stay shut to the network until
	// recoverTxns has run; without one there is nothing to recover.
	var g gate
	if opts.DataDir == "" {
		g.open()
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(n),
		kfake.MaxVersions(advertised()),
		// kfake listens on 127.0.0.1 whatever the address it is handed;
		// listening ourselves puts the broker on Host, and the address
		// each node advertises is its listener's, so clients are sent
		// back to the same host.
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ln, err := net.Listen(network, net.JoinHostPort(host, p))
			if err != nil {
				return nil, err
			}
			return g.wrap(ln)
		}),
		// A topic created with the broker's default partition count
		// (CreateTopics with -1, a seed of 0) gets one partition, as
		// Kafka's num.partitions default has it; kfake's default is 10.
		kfake.DefaultNumPartitions(1),
		kfake.WithLogger(slogLogger{opts.Logger}),
	}
	if opts.AutoCreateTopics {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	if port != 0 {
		ports := make([]int, n)
		for i := range ports {
			ports[i] = port + i
		}
		kopts = append(kopts, kfake.Ports(ports...))
	}

	unlock := func() error { return nil }
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("start broker: data directory: %w", err)
		}
		var err error
		if unlock, err = lockDir(opts.DataDir); err != nil {
			return nil, fmt.Errorf("start broker: data directory %s: %w", opts.DataDir, err)
		}
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
		if opts.SyncWrites {
			kopts = append(kopts, kfake.SyncWrites())
		}
	}

	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		_ = unlock()
		where := net.JoinHostPort(host, strconv.Itoa(port))
		if opts.DataDir != "" {
			where += " with data directory " + opts.DataDir
		}
		return nil, fmt.Errorf("start broker on %s: %w", where, err)
	}
	b := &Broker{cluster: cluster, addrs: cluster.ListenAddrs(), unlock: unlock}
	installCreateTopics(cluster, n)
	if opts.DataDir != "" {
		// The hooks go in before the repair, whose own commit they log.
		if b.intents, err = openIntentLog(opts.DataDir, opts.SyncWrites); err != nil {
			g.open()
			b.Close()
			return nil, fmt.Errorf("start broker with data directory %s: %w", opts.DataDir, err)
		}
		b.intents.install(cluster)
		err := b.recover(ctx, &g, opts.Logger)
		g.open()
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("start broker with data directory %s: %w", opts.DataDir, err)
		}
	}
	// Seed topics are created through the protocol rather than with
	// kfake.SeedTopics, which kfake skips when it reloads a data
	// directory: a seed added on a later start would never appear.
	if err := b.seed(ctx, opts.SeedTopics); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Addr is the host:port of the first node: a bootstrap address.
func (b *Broker) Addr() string { return b.addrs[0] }

// Addrs are the host:ports of every node.
func (b *Broker) Addrs() []string { return slices.Clone(b.addrs) }

// Cluster is the kfake cluster underneath, for tests that inject faults
// through its control hooks.
func (b *Broker) Cluster() *kfake.Cluster { return b.cluster }

// Topics returns the partition count of every topic the broker has.
func (b *Broker) Topics(ctx context.Context) (map[string]int32, error) {
	adm, closeAdm, err := b.admin()
	if err != nil {
		return nil, err
	}
	defer closeAdm()
	details, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics on %s: %w", b.Addr(), err)
	}
	out := make(map[string]int32, len(details))
	for name, d := range details {
		if d.Err != nil {
			return nil, fmt.Errorf("list topics on %s: topic %s: %w", b.Addr(), name, d.Err)
		}
		out[name] = int32(len(d.Partitions))
	}
	return out, nil
}

// Close stops the broker: it stops listening, drops its connections and,
// with a data directory, writes its state there and releases the
// directory. It is safe to call more than once; the later calls return the
// first one's error.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.cluster.Close()
		var errs []error
		if b.intents != nil {
			errs = append(errs, b.intents.close())
		}
		errs = append(errs, b.unlock())
		if err := errors.Join(errs...); err != nil {
			b.closeErr = fmt.Errorf("close broker: %w", err)
		}
	})
	return b.closeErr
}

// recover runs recoverTxns through the gate, before the broker serves
// anyone else.
func (b *Broker) recover(ctx context.Context, g *gate, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	newClient := func(opts ...kgo.Opt) (*kgo.Client, error) {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addrs...), kgo.Dialer(g.dial)}, opts...)...)
		if err != nil {
			return nil, fmt.Errorf("connect to broker %s: %w", b.Addr(), err)
		}
		return cl, nil
	}
	cl, err := newClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	return recoverTxns(ctx, cl, b.intents, newClient, logger)
}

// admin is a kadm client on the broker, and its close function.
func (b *Broker) admin() (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addrs...))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to broker %s: %w", b.Addr(), err)
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// seedTimeout bounds seeding when ctx has no deadline: the broker is in
// this process, so only a bug makes it slow.
const seedTimeout = 30 * time.Second

func (b *Broker) seed(ctx context.Context, seeds map[string]int32) error {
	if len(seeds) == 0 {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, seedTimeout)
		defer cancel()
	}
	adm, closeAdm, err := b.admin()
	if err != nil {
		return err
	}
	defer closeAdm()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		p := seeds[name]
		if p <= 0 {
			p = -1 // the broker default, one partition
		}
		_, err := adm.CreateTopic(ctx, p, -1, nil, name)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create seed topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// slogLogger hands kfake's messages to a slog.Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	if s.l == nil {
		return
	}
	var l slog.Level
	switch level {
	case kfake.LogLevelError:
		l = slog.LevelError
	case kfake.LogLevelWarn:
		l = slog.LevelWarn
	case kfake.LogLevelInfo:
		l = slog.LevelInfo
	case kfake.LogLevelDebug:
		l = slog.LevelDebug
	default:
		return
	}
	// Formatting every request at debug is costly; skip it unless the
	// handler wants the level.
	if !s.l.Enabled(context.Background(), l) {
		return
	}
	s.l.Log(context.Background(), l, fmt.Sprintf(format, args...), "component", "kfake")
}
