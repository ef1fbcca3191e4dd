package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

const ksProperties = `# a Kafka Streams application's properties, unchanged
application.id=wordcount
bootstrap.servers=kafka-1:9093
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="wc" password="hunter2-pw";
consumer.max.poll.records=500
producer.compression.type=zstd
replication.factor=3
num.stream.thread=2
`

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "streams.properties")
	if err := os.WriteFile(path, []byte(ksProperties), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		code  int
		lines []string
	}{
		{"a Kafka Streams file", []string{"config", "check", path}, ExitOK, []string{
			"consumer.max.poll.records  500            no effect  the engine takes what a fetch brings",
			"num.stream.thread          2              unknown    did you mean num.stream.threads?",
			"producer.compression.type  zstd           honoured",
			"replication.factor         3              honoured",
			"sasl.jaas.config           [hidden]       honoured",
		}},
		{"acks=1 under exactly-once", []string{"config", "check", path, "-X", "acks=1"}, ExitFailure, []string{
			"acks                       1              refused    1 is refused under exactly_once_v2, whose transactions need acks=all",
		}},
		{"acks=1 under at-least-once", []string{"config", "check", path, "-X", "acks=1", "-X", "processing.guarantee=at_least_once"}, ExitOK, []string{
			"acks                       1              honoured",
		}},
		{"producer's connection differs", []string{"config", "check", path, "-X", "producer.sasl.mechanism=PLAIN"}, ExitFailure, nil},
		{"a truststore that is not there", []string{"config", "check", path, "-X", "ssl.truststore.location=/nonexistent/trust.jks"}, ExitFailure, []string{
			"ssl.truststore.location    /nonexistent/trust.jks  refused    open /nonexistent/trust.jks: no such file or directory",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s\nstdout:\n%s", code, tc.code, stderr.String(), stdout.String())
			}
			for _, l := range tc.lines {
				if !strings.Contains(stdout.String(), l) {
					t.Errorf("stdout has no line %q:\n%s", l, stdout.String())
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), "hunter2") {
				t.Errorf("the password is shown:\n%s%s", stdout.String(), stderr.String())
			}
		})
	}
}

// TestTopicListSASL: topic list reaches a SASL cluster with a properties
// file whose password comes from the environment, and a wrong password
// fails fast without showing it.
func TestTopicListSASL(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "app", "right-pw-77"), kfake.SeedTopics(1, "words"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "client.properties")
	props := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="${env:STOAT_TEST_KAFKA_PW}";` + "\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pw string
		code     int
		env      bool
	}{{"right password", "right-pw-77", ExitOK, false}, {"wrong password", "wrong-pw-88", ExitFailure, false},
		{"from the environment", "right-pw-77", ExitOK, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("STOAT_TEST_KAFKA_PW", tc.pw)
			args := []string{"topic", "list", "-b", c.ListenAddrs()[0], "--timeout", "20s"}
			if tc.env {
				t.Setenv("STOATCTL_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
				t.Setenv("STOATCTL_SASL_MECHANISM", "SCRAM-SHA-512")
				t.Setenv("STOATCTL_SASL_JAAS_CONFIG", `org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="${env:STOAT_TEST_KAFKA_PW}";`)
			} else {
				args = append(args, "--command-config", path)
			}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := Run(args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s", took)
			}
			if tc.code == ExitOK && !strings.Contains(stdout.String(), "words") {
				t.Errorf("stdout: %s", stdout.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), tc.pw) {
				t.Errorf("the password is shown: %s%s", stdout.String(), stderr.String())
			}
		})
	}
}

// TestEnvironmentConfig: a STOATCTL_ variable sets its key, over a -c file
// and under -X; prefixed client keys have theirs too.
func TestEnvironmentConfig(t *testing.T) {
	for key, env := range map[string]string{
		"sasl.jaas.config":                     "STOATCTL_SASL_JAAS_CONFIG",
		"producer.compression.type":            "STOATCTL_PRODUCER_COMPRESSION_TYPE",
		"stoatflow.commit-barrier.interval-ms": "STOATCTL_STOATFLOW_COMMIT__BARRIER_INTERVAL__MS",
	} {
		if got := EnvName(key); got != env {
			t.Errorf("EnvName(%s) = %s, want %s", key, got, env)
		}
	}
	path := filepath.Join(t.TempDir(), "c.properties")
	if err := os.WriteFile(path, []byte("linger.ms=1\nacks=all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STOATCTL_LINGER_MS", "2")
	t.Setenv("STOATCTL_MAIN_CONSUMER_FETCH_MAX_BYTES", "4096")
	t.Setenv("STOATCTL_ACKS", "1")
	f := clientFlags{file: path, overrides: []string{"acks=-1"}}
	src, err := f.sources()
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"linger.ms": "2 environment STOATCTL_LINGER_MS", "acks": "-1 flag -X",
		"main.consumer.fetch.max.bytes": "4096 environment STOATCTL_MAIN_CONSUMER_FETCH_MAX_BYTES"} {
		if got := src.values[key] + " " + src.origin(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
}

// TestEffectiveConfigHidesSecrets: the start's log of the configuration
// shows every key, and no secret.
func TestEffectiveConfigHidesSecrets(t *testing.T) {
	src := newConfigSources()
	src.set("sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="pw-secret-1";`, "flag -X")
	src.set("producer.ssl.keystore.key", "-----BEGIN PRIVATE KEY-----\nkey-secret-2\n-----END PRIVATE KEY-----", "flag -X")
	src.set("ssl.truststore.password", "pw-secret-3", "flag -X")
	src.set("schema.registry.url", "https://user:pw-secret-4@registry:8081", "flag -X")
	src.set("sasl.oauthbearer.client.credentials.client.secret", "pw-secret-5", "flag -X")
	src.set("my.plugin.password", "pw-secret-6", "flag -X")
	var buf bytes.Buffer
	logEffectiveConfig(newLogger(&buf, "json", 0), src)
	out := buf.String()
	for _, s := range []string{"pw-secret", "key-secret"} {
		if strings.Contains(out, s) {
			t.Errorf("the log shows a secret (%s):\n%s", s, out)
		}
	}
	for _, k := range []string{`"sasl.jaas.config":"[hidden] (flag -X)"`, `"producer.ssl.keystore.key":"[hidden] (flag -X)"`, `"schema.registry.url":"https://user:xxxxx@registry:8081 (flag -X)"`} {
		if !strings.Contains(out, k) {
			t.Errorf("the log has no %s:\n%s", k, out)
		}
	}
}
