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
	}{{"right password", "right-pw-77", ExitOK}, {"wrong password", "wrong-pw-88", ExitFailure}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("STOAT_TEST_KAFKA_PW", tc.pw)
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := Run([]string{"topic", "list", "-b", c.ListenAddrs()[0], "--command-config", path, "--timeout", "20s"}, &stdout, &stderr)
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
