package kafka_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
)

func startBroker(t *testing.T, seeds map[string]int32) *broker.Broker {
	t.Helper()
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: seeds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newClient(t *testing.T, cfg config.Config, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts, err := kafka.ClientOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestClientOptionsMapping(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]string
		// want maps an option to the value kgo reports for it.
		want map[string]any
	}{
		{
			name: "defaults: exactly-once",
			cfg:  map[string]string{"application.id": "shop", "bootstrap.servers": "k1:9092, k2:9093"},
			want: map[string]any{
				"SeedBrokers":         []string{"k1:9092", "k2:9093"},
				"ClientID":            "shop-0",
				"ConsumerGroup":       "shop",
				"TransactionalID":     "shop-0",
				"FetchIsolationLevel": int8(1), // read_committed
				"DisableAutoCommit":   true,
			},
		},
		{
			name: "at-least-once, client id, instance id ignored",
			cfg: map[string]string{"application.id": "shop", "bootstrap.servers": "[::1]:9092",
				"processing.guarantee": "at_least_once", "client.id": "shop-a", "stoatflow.instance.id": "a"},
			want: map[string]any{
				"SeedBrokers":         []string{"[::1]:9092"},
				"ClientID":            "shop-a",
				"TransactionalID":     "",
				"FetchIsolationLevel": int8(0), // read_uncommitted
				"DisableAutoCommit":   true,
			},
		},
		{
			name: "exactly-once with an instance id",
			cfg:  map[string]string{"application.id": "shop", "bootstrap.servers": "k:9092", "stoatflow.instance.id": "east-1"},
			want: map[string]any{"TransactionalID": "shop-east-1"},
		},
		{
			name: "transaction timeout: franz-go's 40 s unless set",
			cfg:  map[string]string{"application.id": "shop", "bootstrap.servers": "k:9092", "transaction.timeout.ms": "10000"},
			want: map[string]any{"TransactionTimeout": 10 * time.Second},
		},
		{
			name: "transaction timeout default",
			cfg:  map[string]string{"application.id": "shop", "bootstrap.servers": "k:9092"},
			want: map[string]any{"TransactionTimeout": 40 * time.Second},
		},
		{
			name: "retry backoff: Kafka's 100 ms, not franz-go's 5 s",
			cfg:  map[string]string{"application.id": "shop", "bootstrap.servers": "k:9092"},
			want: map[string]any{"MetadataMinAge": 100 * time.Millisecond},
		},
		{
			name: "retry backoff set",
			cfg:  map[string]string{"application.id": "shop", "bootstrap.servers": "k:9092", "retry.backoff.ms": "250"},
			want: map[string]any{"MetadataMinAge": 250 * time.Millisecond},
		},
	}
	opts := map[string]any{
		"SeedBrokers": kgo.SeedBrokers, "ClientID": kgo.ClientID, "ConsumerGroup": kgo.ConsumerGroup,
		"TransactionalID": kgo.TransactionalID, "FetchIsolationLevel": kgo.FetchIsolationLevel,
		"DisableAutoCommit": kgo.DisableAutoCommit, "TransactionTimeout": kgo.TransactionTimeout,
		"MetadataMinAge": kgo.MetadataMinAge,
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kopts, err := kafka.ClientOptions(config.New(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(kopts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for name, want := range tc.want {
				got := cl.OptValue(opts[name])
				if s, ok := want.([]string); ok {
					if g, _ := got.([]string); !slices.Equal(g, s) {
						t.Errorf("%s = %v, want %v", name, got, want)
					}
					continue
				}
				if got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestClientOptionsRefusals(t *testing.T) {
	ok := map[string]string{"application.id": "app", "bootstrap.servers": "localhost:9092"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for key, val := range ok {
			m[key] = val
		}
		if v == "<unset>" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"no bootstrap servers", with("bootstrap.servers", "<unset>"), "config bootstrap.servers: not set"},
		{"blank bootstrap servers", with("bootstrap.servers", "  "), "config bootstrap.servers: not set"},
		{"server without port", with("bootstrap.servers", "localhost:9092,kafka"), `config bootstrap.servers: "kafka" is not host:port`},
		{"empty server", with("bootstrap.servers", "localhost:9092,"), `config bootstrap.servers: "" is not host:port`},
		{"bad port", with("bootstrap.servers", "kafka:http"), `config bootstrap.servers: "kafka:http" has no valid port`},
		{"no application id", with("application.id", "<unset>"), "config application.id: not set"},
		{"application id unfit for topic names", with("application.id", "my app"), `config application.id: "my app" holds ' '`},
		{"unknown guarantee", with("processing.guarantee", "exactly_once"), `config processing.guarantee: "exactly_once" is not one of exactly_once_v2, at_least_once`},
		{"empty client id", with("client.id", ""), "config client.id: set but empty"},
		{"empty instance id", with("stoatflow.instance.id", " "), "config stoatflow.instance.id: set but empty"},
		{"transaction timeout too short", with("transaction.timeout.ms", "500"), "config transaction.timeout.ms: 500 is below the least value, 1000"},
		{"transaction timeout not a number", with("transaction.timeout.ms", "10s"), "transaction.timeout.ms"},
		{"retry backoff too short", with("retry.backoff.ms", "5"), "config retry.backoff.ms: 5 is below the least value, 10"},
		{"retry backoff not a number", with("retry.backoff.ms", "1s"), "retry.backoff.ms"},
		{"unknown reset", with("auto.offset.reset", "smallest"), `config auto.offset.reset: "smallest" is not one of earliest, latest, none`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kafka.ClientOptions(config.New(tc.cfg))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ClientOptions: err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestGuaranteesOverTCP runs the options against a broker: under
// exactly-once a transaction's records are seen only once it commits and
// never when it aborts; under at-least-once a consumer sees them all.
func TestGuaranteesOverTCP(t *testing.T) {
	b := startBroker(t, map[string]int32{"out": 1})
	eos := config.New(map[string]string{"application.id": "eos", "bootstrap.servers": b.Addr()})
	producer := newClient(t, eos, kgo.DefaultProduceTopic("out"))

	transact := func(commit bool, values ...string) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := producer.ProduceSync(t.Context(), kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := producer.EndTransaction(t.Context(), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	transact(false, "aborted-1", "aborted-2")
	transact(true, "committed")

	read := func(cfg config.Config, n int) []string {
		t.Helper()
		cl := newClient(t, cfg, kgo.ConsumeTopics("out"))
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		var got []string
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %q, then timed out waiting for %d records", got, n)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	if got := read(eos.With("application.id", "reader-eos"), 1); !slices.Equal(got, []string{"committed"}) {
		t.Errorf("read committed: %q, want only the committed record", got)
	}
	alo := eos.With("application.id", "reader-alo").With("processing.guarantee", "at_least_once")
	if got := read(alo, 3); !slices.Equal(got, []string{"aborted-1", "aborted-2", "committed"}) {
		t.Errorf("read uncommitted: %q, want the aborted records too", got)
	}
}
