package cmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// The secured real-Kafka tier: stoatctl against Apache Kafka with
// SASL_SSL, mutual TLS and ACLs (scripts/kafka.sh start --secure).

// secureAdmin is a client of the secured broker as its super user.
func secureAdmin(t *testing.T, b *kafkatest.SecureBroker) *kgo.Client {
	t.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(b.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.SASLSSL), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(scram.Auth{User: "admin", Pass: b.Passwords["admin"]}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// secureProperties writes a client properties file for user on the
// SASL_SSL listener, its password from the environment (Kafka's
// EnvVarConfigProvider syntax), as a team keeps it out of the file.
func secureProperties(t *testing.T, b *kafkatest.SecureBroker, user string, extra ...string) string {
	t.Helper()
	env := "STOAT_SECURE_PW_" + strings.ToUpper(user)
	t.Setenv(env, b.Passwords[user])
	path := filepath.Join(t.TempDir(), user+".properties")
	props := "security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + b.CAFile() + "\n" +
		"sasl.mechanism=SCRAM-SHA-512\n" +
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
		"    username=\"" + user + "\" password=\"${env:" + env + "}\";\n" + strings.Join(extra, "")
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// grantWordCount gives User:app what word-count needs as application app.
func grantWordCount(t *testing.T, adm *kadm.Client, app string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:app").Topics("lines").Operations(kadm.OpDescribe, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:app").Topics("word-counts").Operations(kadm.OpDescribe, kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:app").Topics(app + "-").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Allow("User:app").Groups(app).Operations(kadm.OpDescribe, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:app").TransactionalIDs(app+"-").Operations(kadm.OpDescribe, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed),
	} {
		b.AllowHosts()
		rs, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("create ACL: %v", r.Err)
			}
		}
	}
}

func TestSecuredKafka(t *testing.T) {
	b := kafkatest.Secure(t)
	admin := secureAdmin(t, b)
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"lines", "word-counts"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			t.Fatal(err)
		}
	}
	app := "wc-secure"
	grantWordCount(t, adm, app)
	// A Kafka Streams application's keys, as its properties file has them
	// (replication.factor 1: the secured broker is one node).
	props := secureProperties(t, b, "app", "consumer.max.poll.records=500\n", "producer.compression.type=zstd\n",
		"replication.factor=1\n", "topic.min.insync.replicas=1\n")
	pw := b.Passwords["app"]

	t.Run("run word count exactly once", func(t *testing.T) {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "lines", Key: []byte("a"), Value: []byte("the cat the hat")},
			&kgo.Record{Topic: "lines", Key: []byte("b"), Value: []byte("The end")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		stateDir := t.TempDir()
		rctx, stop := context.WithCancel(context.Background())
		var stdout, stderr syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- RunContext(rctx, []string{"run", "-t", "word-count", "-b", b.SASLSSL, "-c", props, "-X", "application.id=" + app,
				"-X", "processing.guarantee=exactly_once_v2", "-X", "stoatflow.commit-barrier.interval-ms=100", "--http", "off", "--state-dir", stateDir}, &stdout, &stderr)
		}()
		counts := map[string]int64{}
		rd, err := kgo.NewClient(kgo.SeedBrokers(b.SASLSSL), kgo.DialTLSConfig(tlsTrusting(t, b)),
			kgo.SASL(scram.Auth{User: "admin", Pass: b.Passwords["admin"]}.AsSha512Mechanism()),
			kgo.ConsumeTopics("word-counts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) && (counts["the"] != 3 || counts["end"] != 1 || counts["cat"] != 1 || counts["hat"] != 1) {
			pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
			rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
				if len(r.Value) == 8 {
					counts[string(r.Key)] = int64(new(big.Int).SetBytes(r.Value).Uint64())
				}
			})
			pcancel()
		}
		stop()
		code := <-done
		if code != ExitOK {
			t.Fatalf("run exit %d; stderr:\n%s", code, stderr.String())
		}
		if counts["the"] != 3 || counts["end"] != 1 || counts["cat"] != 1 || counts["hat"] != 1 {
			t.Fatalf("counts %v; stderr:\n%s", counts, stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), pw) {
			t.Error("run printed the password")
		}
		if !strings.Contains(stderr.String(), "config consumer.max.poll.records has no effect") {
			t.Errorf("run does not say consumer.max.poll.records has no effect; stderr:\n%s", stderr.String())
		}
		if !strings.Contains(stderr.String(), "sasl.jaas.config=\"[hidden]") && !strings.Contains(stderr.String(), "sasl.jaas.config=[hidden]") {
			t.Errorf("the effective configuration does not show sasl.jaas.config hidden; stderr:\n%s", stderr.String())
		}
	})

	t.Run("topic read", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := Run([]string{"topic", "read", "-t", "lines", "-b", b.SASLSSL, "--command-config", props, "-o", "json"}, &stdout, &stderr)
		if code != ExitOK || !strings.Contains(stdout.String(), "the cat the hat") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
	})

	t.Run("replay record", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := Run([]string{"replay", "record", "-b", b.SASLSSL, "-c", props, "-t", "lines"}, &stdout, &stderr)
		if code != ExitOK || !strings.Contains(stdout.String(), "The end") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
	})

	t.Run("migrate", func(t *testing.T) {
		// A stopped Kafka Streams word count's state, moved over as the
		// super user (the cutover's ACLs are the application's to grant).
		fakeKafkaStreamsWordCount(t, b.SASLSSL, kgo.DialTLSConfig(tlsTrusting(t, b)),
			kgo.SASL(scram.Auth{User: "admin", Pass: b.Passwords["admin"]}.AsSha512Mechanism()))
		adminProps := secureProperties(t, b, "admin")
		var stdout, stderr bytes.Buffer
		code := Run([]string{"migrate", "--from-application-id", "ks", "--application-id", "ours", "-t", "../interop/topologies/word-count.yaml",
			"-b", b.SASLSSL, "-c", adminProps, "-y"}, &stdout, &stderr)
		if code != ExitOK || !strings.Contains(stdout.String(), "translated 60 records") || !strings.Contains(stdout.String(), "verified counts: 20 keys, 0 differences") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), b.Passwords["admin"]) {
			t.Error("migrate printed the password")
		}
	})

	t.Run("OAUTHBEARER", func(t *testing.T) {
		endpoint := tokenEndpoint(t, "stoat-client", "client-secret-789", "app")
		var stdout, stderr bytes.Buffer
		code := Run([]string{"topic", "read", "-t", "lines", "-b", b.SASLSSL, "-X", "security.protocol=SASL_SSL", "-X", "ssl.truststore.type=PEM",
			"-X", "ssl.truststore.location=" + b.CAFile(), "-X", "sasl.mechanism=OAUTHBEARER", "-X", "sasl.oauthbearer.token.endpoint.url=" + endpoint,
			"-X", `sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="stoat-client" clientSecret="client-secret-789" scope="kafka";`},
			&stdout, &stderr)
		if code != ExitOK || !strings.Contains(stdout.String(), "the cat the hat") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
		stdout.Reset()
		stderr.Reset()
		code = Run([]string{"topic", "list", "-b", b.SASLSSL, "-X", "security.protocol=SASL_SSL", "-X", "ssl.truststore.type=PEM",
			"-X", "ssl.truststore.location=" + b.CAFile(), "-X", "sasl.mechanism=OAUTHBEARER", "-X", "sasl.oauthbearer.token.endpoint.url=" + endpoint,
			"-X", `sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="stoat-client" clientSecret="wrong-secret-000";`},
			&stdout, &stderr)
		if code != ExitFailure || !strings.Contains(stderr.String(), "refused client stoat-client: HTTP 401") || strings.Contains(stderr.String(), "wrong-secret-000") {
			t.Fatalf("a wrong client secret: exit %d\nstderr: %s", code, stderr.String())
		}
	})

	t.Run("mutual TLS", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := Run([]string{"topic", "read", "-t", "lines", "-b", b.MTLS, "-X", "security.protocol=SSL", "-X", "ssl.truststore.type=PEM",
			"-X", "ssl.truststore.location=" + b.CAFile(), "-X", "ssl.keystore.type=PEM", "-X", "ssl.keystore.certificate.chain=" + readString(t, b.TLSFile("app.pem")),
			"-X", "ssl.keystore.key=" + readString(t, b.TLSFile("app.key"))}, &stdout, &stderr)
		if code != ExitOK || !strings.Contains(stdout.String(), "the cat the hat") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
		}
		if strings.Contains(stderr.String(), "PRIVATE KEY") {
			t.Errorf("stderr shows the key:\n%s", stderr.String())
		}
	})

	otherCA, expiredChain, expiredKey := badCertificates(t, b)
	for _, tc := range []struct {
		name   string
		args   []string
		cause  string
		secret string
	}{
		{"wrong password", []string{"topic", "list", "-b", b.SASLSSL, "--command-config", props, "-X",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="wrong-pw-123";`},
			"SASL authentication failed: the broker refused the credentials", "wrong-pw-123"},
		{"unknown CA", []string{"topic", "list", "-b", b.SASLSSL, "--command-config", props, "-X", "ssl.truststore.location=" + otherCA},
			"signed by a CA the client does not trust", pw},
		{"expired certificate", []string{"topic", "list", "-b", b.MTLS, "-X", "security.protocol=SSL", "-X", "ssl.truststore.type=PEM", "-X", "ssl.truststore.location=" + b.CAFile(),
			"-X", "ssl.keystore.type=PEM", "-X", "ssl.keystore.certificate.chain=" + expiredChain, "-X", "ssl.keystore.key=" + expiredKey},
			"TLS: the broker refused the handshake", "PRIVATE KEY"},
		{"missing ACL", []string{"topic", "read", "-t", "lines", "-b", b.SASLSSL, "--command-config", secureProperties(t, b, "noacl")},
			"not authorized to read topic lines", b.Passwords["noacl"]},
		{"run with a wrong password", []string{"run", "-t", "word-count", "-b", b.SASLSSL, "-c", props, "--http", "off", "-X",
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="wrong-pw-456";`},
			"SASL authentication failed: the broker refused the credentials", "wrong-pw-456"},
		{"run with an unknown CA", []string{"run", "-t", "word-count", "-b", b.SASLSSL, "-c", props, "--http", "off", "-X", "ssl.truststore.location=" + otherCA},
			"signed by a CA the client does not trust", pw},
		{"run without ACLs", []string{"run", "-t", "word-count", "-b", b.SASLSSL, "-c", secureProperties(t, b, "noacl"), "--http", "off"},
			"not authorized to describe topic lines", b.Passwords["noacl"]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := Run(tc.args, &stdout, &stderr)
			took := time.Since(start)
			if code != ExitFailure || !strings.Contains(stderr.String(), tc.cause) {
				t.Fatalf("exit %d, want 1 with %q\nstderr: %s", code, tc.cause, stderr.String())
			}
			if took > 10*time.Second {
				t.Errorf("failed after %s, want under 10 s", took)
			}
			if strings.Contains(stdout.String()+stderr.String(), tc.secret) {
				t.Errorf("the output shows a secret:\n%s", stderr.String())
			}
		})
	}
}

func tlsTrusting(t *testing.T, b *kafkatest.SecureBroker) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(readString(t, b.CAFile())))
	return &tls.Config{RootCAs: pool}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// badCertificates makes a CA file the broker's certificate is not signed
// by, and an expired client certificate signed by the broker's CA.
func badCertificates(t *testing.T, b *kafkatest.SecureBroker) (otherCAFile, expiredChain, expiredKey string) {
	t.Helper()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "other-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	otherCAFile = filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(otherCAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	caBlock, _ := pem.Decode([]byte(readString(t, b.CAFile())))
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	keyBlock, _ := pem.Decode([]byte(readString(t, b.TLSFile("ca.key"))))
	caKey, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	ckey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ctmpl := &x509.Certificate{SerialNumber: big.NewInt(8), Subject: pkix.Name{CommonName: "app"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	cder, err := x509.CreateCertificate(rand.Reader, ctmpl, ca, &ckey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(ckey)
	return otherCAFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cder})), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
}

// tokenEndpoint serves OAuth 2 client-credentials tokens for id and
// secret: unsecured JWTs (alg none) naming sub, which the secured broker's
// default validator takes.
func tokenEndpoint(t *testing.T, id, secret, sub string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != id || p != secret || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		now := time.Now().Unix()
		enc := base64.RawURLEncoding
		claims := fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d,"scope":%q}`, sub, now, now+3600, r.FormValue("scope"))
		token := enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString([]byte(claims)) + "."
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, token)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/token"
}
