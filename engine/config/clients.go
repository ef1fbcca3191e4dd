package config

import (
	"maps"
	"net/url"
	"strings"
)

// Client is one of the Kafka clients a Kafka Streams application
// configures apart with a key prefix: "consumer.max.poll.records" is
// max.poll.records for every consumer, "main.consumer.max.poll.records"
// for the main consumer only, and either wins over the unprefixed key for
// the clients it names.
type Client string

// The clients, as Kafka Streams names their prefixes.
const (
	// MainConsumer reads the source topics as the application's group.
	MainConsumer Client = "main.consumer"
	// RestoreConsumer reads changelogs back into state stores.
	RestoreConsumer Client = "restore.consumer"
	// GlobalConsumer reads the topics of global tables.
	GlobalConsumer Client = "global.consumer"
	// Consumer is any other consumer: a tool's reader (topic read, replay
	// record). It reads the consumer. prefix only.
	Consumer Client = "consumer"
	// Producer writes the output, changelogs and commits.
	Producer Client = "producer"
	// Admin creates and describes topics and groups.
	Admin Client = "admin"
)

// TopicPrefix prefixes the topic configs of the internal topics the
// application creates: topic.segment.bytes=... (Kafka Streams' topicPrefix).
const TopicPrefix = "topic."

// clientPrefixes are the client prefixes, longest first so that
// main.consumer. is found before consumer.
var clientPrefixes = []string{"restore.consumer.", "global.consumer.", "main.consumer.", "consumer.", "producer.", "admin."}

// SplitClientKey returns the client prefix of key ("consumer.", ...) and
// the key under it; "" and key for a key without one.
func SplitClientKey(key string) (prefix, base string) {
	for _, p := range clientPrefixes {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return p, key[len(p):]
		}
	}
	return "", key
}

// prefixes are the prefixes cl reads, the least specific first.
func (cl Client) prefixes() []string {
	switch cl {
	case MainConsumer, RestoreConsumer, GlobalConsumer:
		return []string{"consumer.", string(cl) + "."}
	}
	return []string{string(cl) + "."}
}

// family is the client kind a prefix configures: consumer for every
// consumer prefix.
func family(prefix string) Client {
	if strings.HasSuffix(prefix, "consumer.") {
		return Consumer
	}
	return Client(strings.TrimSuffix(prefix, "."))
}

// ForClient is the configuration client cl reads: the keys without a
// client prefix, and over them those of cl's prefixes with the prefix cut,
// the more specific prefix winning (main.consumer. over consumer. over
// none), as Kafka Streams builds each client's configuration. Keys of
// other clients' prefixes are left out.
func (c Config) ForClient(cl Client) Config {
	out := make(map[string]string, len(c.values))
	for k, v := range c.values {
		if p, _ := SplitClientKey(k); p == "" {
			out[k] = v
		}
	}
	for _, p := range cl.prefixes() {
		for k, v := range c.values {
			if strings.HasPrefix(k, p) && len(k) > len(p) {
				if q, _ := SplitClientKey(k); q == p {
					out[k[len(p):]] = v
				}
			}
		}
	}
	return Config{values: out}
}

// TopicConfigs are the topic. keys with the prefix cut: the topic configs
// of every internal topic.
func (c Config) TopicConfigs() map[string]string {
	out := map[string]string{}
	for k, v := range c.values {
		if strings.HasPrefix(k, TopicPrefix) && len(k) > len(TopicPrefix) {
			out[k[len(TopicPrefix):]] = v
		}
	}
	return out
}

// Secret says the value of key must not be shown: in logs, in config
// output, in error messages. It holds for the keys the catalogue marks
// Secret, under any client prefix, and by name for keys it does not know
// (a password, a secret, credentials), so that a plugin's key is hidden
// too.
func Secret(key string) bool {
	_, base := SplitClientKey(key)
	if k, ok := byKeyName[base]; ok {
		return k.Secret
	}
	lk := strings.ToLower(base)
	for _, word := range []string{"password", "secret", "credential", "user.info", "jaas"} {
		if strings.Contains(lk, word) {
			return true
		}
	}
	return false
}

// Hidden is what a secret value is shown as.
const Hidden = "[hidden]"

// Redact is value as it may be shown for key: Hidden for a secret, a URL
// with its password cut, else the value.
func Redact(key, value string) string {
	if Secret(key) {
		return Hidden
	}
	if strings.Contains(value, "@") {
		if u, err := url.Parse(value); err == nil && u.User != nil {
			return u.Redacted()
		}
	}
	return value
}

// RedactAll is values with every value Redact would hide hidden.
func RedactAll(values map[string]string) map[string]string {
	out := maps.Clone(values)
	for k, v := range out {
		out[k] = Redact(k, v)
	}
	return out
}
