package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

func allow(res kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, ops ...kmsg.ACLOperation) []kfake.ACL {
	var out []kfake.ACL
	for _, op := range ops {
		out = append(out, kfake.ACL{Resource: res, Name: name, Pattern: pattern, Operation: op, Allow: true})
	}
	return out
}

// TestSecuredStart: the engine runs exactly-once on a SASL cluster with
// ACLs as a principal granted what it needs, and a principal without one
// of those ACLs gets, within 10 s, one error naming the operation and the
// resource, without the password.
func TestSecuredStart(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	const pw = "app-pw-4711"
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	topic, group, txn, cluster := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeCluster
	R, W, D, C := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate
	full := func(app string) map[string][]kfake.ACL {
		return map[string][]kfake.ACL{
			"in":      allow(topic, "in", lit, D, R),
			"out":     allow(topic, "out", lit, D, W),
			"group":   allow(group, app, lit, D, R),
			"txn":     allow(txn, app+"-", pre, D, W),
			"cluster": allow(cluster, "kafka-cluster", lit, D, C),
			"intern":  allow(topic, app+"-", pre, D, R, W, C),
		}
	}
	tests := []struct {
		name    string
		without string
		want    string
		extra   func(app string) []kfake.ACL
		alos    bool
	}{
		{"all granted", "", "", nil, false},
		{"no describe on the input", "in", "not authorized to describe topic in", nil, false},
		{"no transactional id", "txn", "not authorized to write transactional id secured-txn-", nil, false},
		{"no group", "group", "group secured-group", nil, false},
		{"describe but no read on the group", "group", "not authorized to read group secured-group",
			func(app string) []kfake.ACL { return allow(group, app, lit, D) }, false},
		{"no internal topics", "intern", "secured-intern-stoatflow-watermark-changelog", nil, false},
		{"no write on the output", "out", "not authorized to write topic out", nil, false},
		{"no write on the output, at least once", "out", "not authorized to write topic out", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := "secured-" + tc.without
			var acls []kfake.ACL
			for k, as := range full(app) {
				if k != tc.without {
					acls = append(acls, as...)
				}
			}
			if tc.extra != nil {
				acls = append(acls, tc.extra(app)...)
			}
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-512", "admin", "admin-pw"),
				kfake.User("SCRAM-SHA-512", "app", pw, acls...), kfake.SeedTopics(1, "in", "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			addr := c.ListenAddrs()[0]
			prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(saslAdmin()))
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "in", Key: []byte("k"), Value: []byte("a")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			conf := cfg(addr, app, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-512",
				"sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="`+pw+`";`)
			if tc.alos {
				conf["processing.guarantee"] = "at_least_once"
			}
			e := engine.New(inflate(), conf, engine.WithLogger(testLogger(t)))
			done := make(chan error, 1)
			rctx, stop := context.WithCancel(t.Context())
			defer stop()
			start := time.Now()
			go func() { done <- e.Run(rctx) }()
			if tc.want == "" {
				got := readCommittedAs(t, addr, "out", 1, 30*time.Second)
				stop()
				if err := <-done; err != nil {
					t.Fatalf("engine: %v", err)
				}
				if len(got) != 1 || got[0] != "a" {
					t.Fatalf("output %q, want [a]", got)
				}
				return
			}
			select {
			case err := <-done:
				if !errors.Is(err, conn.ErrAuthorization) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Run returned %v, want an authorization error saying %q", err, tc.want)
				}
				if strings.Contains(err.Error(), pw) {
					t.Errorf("the error shows the password: %v", err)
				}
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("failed after %s", took)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("Run still running 30s after a start without an ACL (state %v)", e.State())
			}
		})
	}
}

func readCommittedAs(t *testing.T, addr, topic string, want int, within time.Duration) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(saslAdmin()), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func saslAdmin() sasl.Mechanism {
	return scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism()
}
