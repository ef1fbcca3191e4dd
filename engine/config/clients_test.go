package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestForClient(t *testing.T) {
	c := New(map[string]string{
		"max.poll.records":                 "1",
		"consumer.max.poll.records":        "2",
		"main.consumer.max.poll.records":   "3",
		"compression.type":                 "gzip",
		"producer.compression.type":        "zstd",
		"admin.request.timeout.ms":         "9",
		"restore.consumer.fetch.max.bytes": "7",
		"topic.min.insync.replicas":        "2",
		ApplicationID:                      "app",
	})
	tests := []struct {
		client Client
		want   map[string]string
	}{
		{MainConsumer, map[string]string{"max.poll.records": "3", "compression.type": "gzip", "topic.min.insync.replicas": "2", ApplicationID: "app"}},
		{RestoreConsumer, map[string]string{"max.poll.records": "2", "compression.type": "gzip", "fetch.max.bytes": "7", "topic.min.insync.replicas": "2", ApplicationID: "app"}},
		{GlobalConsumer, map[string]string{"max.poll.records": "2", "compression.type": "gzip", "topic.min.insync.replicas": "2", ApplicationID: "app"}},
		{Consumer, map[string]string{"max.poll.records": "2", "compression.type": "gzip", "topic.min.insync.replicas": "2", ApplicationID: "app"}},
		{Producer, map[string]string{"max.poll.records": "1", "compression.type": "zstd", "topic.min.insync.replicas": "2", ApplicationID: "app"}},
		{Admin, map[string]string{"max.poll.records": "1", "compression.type": "gzip", "request.timeout.ms": "9", "topic.min.insync.replicas": "2", ApplicationID: "app"}},
	}
	for _, tc := range tests {
		got := map[string]string{}
		v := c.ForClient(tc.client)
		for _, k := range v.Keys() {
			got[k] = v.String(k)
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("ForClient(%s) = %v\nwant %v", tc.client, got, tc.want)
		}
	}
	if got := c.TopicConfigs(); !maps.Equal(got, map[string]string{"min.insync.replicas": "2"}) {
		t.Errorf("TopicConfigs = %v", got)
	}
}

func TestSecretAndRedact(t *testing.T) {
	for key, secret := range map[string]bool{
		"sasl.jaas.config": true, "producer.sasl.jaas.config": true, "ssl.keystore.password": true, "ssl.truststore.password": true,
		"ssl.key.password": true, "ssl.keystore.key": true, "sasl.oauthbearer.client.credentials.client.secret": true,
		"basic.auth.user.info": true, "my.plugin.password": true, "vault.secret.id": true,
		"ssl.keystore.location": false, "sasl.mechanism": false, "sasl.oauthbearer.client.credentials.client.id": false, ApplicationID: false,
	} {
		if Secret(key) != secret {
			t.Errorf("Secret(%s) = %v, want %v", key, !secret, secret)
		}
	}
	if got := Redact("sasl.jaas.config", `x required password="p";`); got != Hidden {
		t.Errorf("Redact(jaas) = %q", got)
	}
	if got := Redact("schema.registry.url", "https://u:pw@host"); strings.Contains(got, "pw") {
		t.Errorf("Redact(url) = %q", got)
	}
	if got := Redact(ApplicationID, "app"); got != "app" {
		t.Errorf("Redact(application.id) = %q", got)
	}
}

func TestCheckClientKeys(t *testing.T) {
	values := map[string]string{
		"consumer.max.poll.records":        "500",
		"main.consumer.session.timeout.ms": "x",
		"producer.compression.type":        "zstd",
		"consumer.compression.type":        "zstd",
		"producer.compresion.type":         "zstd",
		"topic.segment.bytes":              "1000",
		"config.providers":                 "file",
		"config.providers.file.class":      "org.apache.kafka.common.config.provider.FileConfigProvider",
		"security.protocol":                "SASL_SSL",
		"sasl.jaas.config":                 "secret stuff",
		"application.id":                   "app",
		"admin.num.stream.threads":         "2",
		"restore.consumer.fetch.max.bytes": "1000",
	}
	var got []string
	for _, p := range Check(values) {
		got = append(got, p.Level()+" "+p.String())
	}
	want := []string{
		"warning unknown configuration key admin.num.stream.threads; stoatctl config list shows the known keys",
		"note config consumer.compression.type has no effect: the consumer does not read compression.type, a key of the producer",
		"note config consumer.max.poll.records has no effect: the engine takes what a fetch brings, bounded by fetch.max.bytes, and holds lanes back with stoatflow.lane.queue-size",
		`error config main.consumer.session.timeout.ms: "x" is not an integer number of milliseconds`,
		"warning unknown configuration key producer.compresion.type; did you mean producer.compression.type?",
		"note config restore.consumer.fetch.max.bytes has no effect: the restore.consumer reads with fetches of its own (stoatflow.restore.fetch-max-bytes), not fetch.max.bytes",
	}
	// admin.num.stream.threads: num.stream.threads is not a client key.
	want[0] = "note config admin.num.stream.threads has no effect: num.stream.threads is not a Kafka client key; set it without the prefix admin."
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestResolveProviders(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(secrets, []byte("password=s3cr3t\nuser = bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STOAT_TEST_PW", "envpw")
	tests := []struct {
		name string
		in   map[string]string
		want map[string]string
		err  string
	}{
		{"file env dir by default", map[string]string{
			"sasl.jaas.config": `M required username="${file:` + secrets + `:user}" password="${file:` + secrets + `:password}";`,
			"a":                "${env:STOAT_TEST_PW}", "b": "${dir:" + dir + ":token}", "c": "plain"},
			map[string]string{"sasl.jaas.config": `M required username="bob" password="s3cr3t";`, "a": "envpw", "b": "tok", "c": "plain"}, ""},
		{"declared names", map[string]string{ConfigProviders: "secrets", "config.providers.secrets.class": fileProviderClass,
			"k": "${secrets:" + secrets + ":password}", "e": "${env:STOAT_TEST_PW}"},
			map[string]string{ConfigProviders: "secrets", "config.providers.secrets.class": fileProviderClass, "k": "s3cr3t", "e": "${env:STOAT_TEST_PW}"}, ""},
		{"missing key names the reference, not a value", map[string]string{"k": "${file:" + secrets + ":nope}"}, nil,
			"config k: ${file:" + secrets + ":nope}: " + secrets + " sets no key nope"},
		{"missing env", map[string]string{"k": "${env:STOAT_TEST_UNSET_VAR}"}, nil, "environment variable STOAT_TEST_UNSET_VAR is not set"},
		{"unknown class", map[string]string{ConfigProviders: "v", "config.providers.v.class": "com.example.Vault"}, nil, "com.example.Vault is not a provider stoatctl has"},
		{"undeclared class", map[string]string{ConfigProviders: "v"}, nil, "names provider v but config.providers.v.class is not set"},
		{"dir escapes", map[string]string{"k": "${dir:" + dir + ":../etc}"}, nil, "is not a file name in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveProviders(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "envpw") {
					t.Errorf("error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestSecuredClusterExamples: every properties example of "Connecting to
// a secured cluster" parses and passes the check: no unknown key, no bad
// value, nothing without effect.
func TestSecuredClusterExamples(t *testing.T) {
	blocks := strings.Split(clientSections, "```properties\n")[1:]
	if len(blocks) < 4 {
		t.Fatalf("%d examples, want the four of the docs", len(blocks))
	}
	for i, b := range blocks {
		text, _, _ := strings.Cut(b, "```")
		values, err := ParseProperties(fmt.Sprintf("example %d", i+1), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if values["security.protocol"] == "" || values["bootstrap.servers"] == "" {
			t.Errorf("example %d sets no security.protocol or bootstrap.servers", i+1)
		}
		for _, p := range Check(values) {
			t.Errorf("example %d: %s", i+1, p)
		}
	}
}
