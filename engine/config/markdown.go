package config

import (
	"fmt"
	"strings"
)

// Markdown is docs/configuration.md, generated from the catalogue; the
// test TestConfigurationDoc fails when the file is stale, and
// go test ./engine/config -run TestConfigurationDoc -update rewrites it.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Configuration keys

<!-- Generated from engine/config/catalog.go; do not edit. Regenerate with
     go test ./engine/config -run TestConfigurationDoc -update -->

Every key stoatctl reads, from the topology file's ` + "`config:`" + ` block, a ` + "`-c`" + `
file, ` + "`-X KEY=VALUE`" + `, a fixture's ` + "`driver: config:`" + ` block, or the map given to
` + "`engine.New`" + ` and ` + "`testdriver.New`" + `. ` + "`stoatctl config list`" + ` prints the same
table, ` + "`stoatctl config describe KEY`" + ` one key in full, and ` + "`stoatctl config check FILE`" + `
what a configuration file's keys do, key by key.

` + "`stoatctl run`" + `, ` + "`stoatctl replay`" + ` and ` + "`stoatctl topology validate`" + ` check the
configuration before they start anything:

- a key not listed here is a **warning** naming the closest known key
  ("did you mean num.stream.threads?"); under ` + "`--strict`" + ` it is an error
  and the command exits 2. Kafka Streams' internal keys (such as
  ` + "`__emit.interval.ms.kstreams.windowed.aggregation__`" + `) are unknown here too.
- a value that does not parse for its key's type, or is out of range, is an
  **error** (exit 2 when it came from ` + "`-X`" + `, else 1).
- a key marked *no effect* is accepted, for Kafka Streams compatibility or
  ahead of the feature, and reported as a **note**.

Warnings, errors and notes go to stderr, one line each, naming the key and
where it was set: ` + "`flag -X`" + `, ` + "`FILE:LINE`" + ` of a ` + "`-c`" + ` file, the topology
file's or the fixture's line. A Go program gets the same warning for an
unknown key in the engine's log when ` + "`Engine.Run`" + ` starts (` + "`engine.WithConfigChecked`" + `
turns it off for a caller that reported the keys itself, as ` + "`stoatctl run`" + ` does).

Types: ` + "`duration-ms`" + ` is an integer number of milliseconds; ` + "`list`" + ` is
comma-separated; an ` + "`enum`" + ` takes one of the values listed (some also
take Kafka Streams' class names, listed under the key's notes). An empty
value counts as unset.

| Key | Type | Default | Read by | Description |
|---|---|---|---|---|
`)
	for _, k := range catalogue {
		def := "—"
		if k.Default != "" {
			def = "`" + k.Default + "`"
		}
		desc := k.Description
		if k.NoOp {
			desc += " *(no effect)*"
		}
		if k.AliasOf != "" {
			desc += " *(alias of `" + k.AliasOf + "`)*"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Name, k.TypeText(), def, k.ReadByText(), desc)
	}
	b.WriteString(clientSections)
	b.WriteString("\n## Notes\n\n")
	for _, k := range catalogue {
		if k.Note == "" && len(k.Aliases) == 0 && !k.HasMin {
			continue
		}
		fmt.Fprintf(&b, "- `%s`:", k.Name)
		var parts []string
		if k.Note != "" {
			parts = append(parts, " "+k.Note+".")
		}
		if k.HasMin {
			parts = append(parts, fmt.Sprintf(" At least %s.", formatMin(k.Min)))
		}
		if len(k.Aliases) > 0 {
			parts = append(parts, " Also accepted: "+aliasText(k)+".")
		}
		b.WriteString(strings.Join(parts, "") + "\n")
	}
	return b.String()
}

// aliasText lists an enum's aliases as "`alias` (value)", sorted.
func aliasText(k Key) string {
	var parts []string
	for _, a := range k.AliasNames() {
		parts = append(parts, fmt.Sprintf("`%s` (%s)", a, k.Aliases[a]))
	}
	return strings.Join(parts, ", ")
}

// clientSections are the docs of the Kafka clients' keys: prefixes,
// providers, secrets, and connecting to a secured cluster.
const clientSections = `
## Kafka client keys

Every command that talks to Kafka (` + "`run`" + `, ` + "`migrate`" + `, ` + "`topic`" + `, ` + "`replay record`" + `)
connects with the same keys: ` + "`run`" + ` and ` + "`migrate`" + ` from the topology file, ` + "`-c FILE`" + `
and ` + "`-X`" + `; ` + "`topic`" + ` from ` + "`--command-config FILE`" + ` and ` + "`-X`" + `; ` + "`replay record`" + ` from
` + "`-c FILE`" + ` and ` + "`-X`" + `. Each also reads the environment, between the file and ` + "`-X`" + `:
` + "`STOATCTL_`" + ` and the key upper-cased, dots as underscores and hyphens as two
(` + "`STOATCTL_SASL_JAAS_CONFIG`" + `, ` + "`STOATCTL_PRODUCER_COMPRESSION_TYPE`" + `,
` + "`STOATCTL_STOATFLOW_COMMIT__BARRIER_INTERVAL__MS`" + `). A file whose name ends in ` + "`.properties`" + ` is read as a Java
properties file (` + "`key=value`" + `, ` + "`key: value`" + `, ` + "`#`" + ` and ` + "`!`" + ` comments, backslash
continuations and escapes), so a Kafka Streams application's file works as it
is; any other file is YAML. ` + "`stoatctl config check FILE`" + ` says key by key what is
honoured, what has no effect, what is refused and why, and what is unknown.

**Prefixes.** As in Kafka Streams, ` + "`consumer.`" + `, ` + "`main.consumer.`" + `, ` + "`restore.consumer.`" + `,
` + "`global.consumer.`" + `, ` + "`producer.`" + ` and ` + "`admin.`" + ` set a key for those clients only,
over the unprefixed key (` + "`main.consumer.`" + ` over ` + "`consumer.`" + ` over none). ` + "`topic.KEY`" + `
sets topic config KEY on every internal topic the application creates (a
changelog's own ` + "`cleanup.policy`" + ` wins). ` + "`client.tag.NAME`" + ` gives the instance
client tag NAME (` + "`client.tag.zone=eu-west-1a`" + `), which ` + "`rack.aware.assignment.tags`" + `
spreads standby tasks over. The engine's main consumer and its
producer are one franz-go client: a connection key (` + "`security.protocol`" + `, ` + "`ssl.*`" + `,
` + "`sasl.*`" + `) that differs between them is refused.

**Config providers.** ` + "`${file:/path/secrets.properties:password}`" + `, ` + "`${env:NAME}`" + ` and
` + "`${dir:/run/secrets:name}`" + ` in any value are resolved when the configuration is
loaded, as Kafka's FileConfigProvider, EnvVarConfigProvider and
DirectoryConfigProvider resolve them (` + "`config.providers`" + ` may declare them, as in
Kafka; undeclared, they are known as file, env and dir).

**Secrets.** The values of passwords, keys, ` + "`sasl.jaas.config`" + ` and client secrets
(every key marked secret below, and any unknown key whose name says password,
secret or credential) are never printed: the start's effective configuration,
` + "`config check`" + ` and error messages show ` + "`[hidden]`" + ` or name the key only.

**Failures.** A wrong password, a CA the client does not trust, an expired
certificate or a listener speaking another protocol fails the command at once
with the cause; a principal without an ACL the start needs (describe and read
the source topics, create the internal topics, write with the transactional
id, read as the group) fails with the resource and the operation named.

## Connecting to a secured cluster

The embedded broker (` + "`stoatctl run`" + ` without ` + "`-b`" + `, ` + "`stoatctl broker`" + `) speaks PLAINTEXT
only and listens on loopback; it is for development and is not meant to be
exposed. Real clusters take the keys below, in a properties file passed with
` + "`-c`" + ` (` + "`--command-config`" + ` for ` + "`topic`" + `).

Confluent Cloud (API key and secret):

` + "```properties" + `
bootstrap.servers=pkc-xxxxx.europe-west1.gcp.confluent.cloud:9092
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="${env:CC_API_KEY}" password="${env:CC_API_SECRET}";
replication.factor=3
` + "```" + `

Amazon MSK with IAM (credentials from ` + "`AWS_ACCESS_KEY_ID`" + `, ` + "`AWS_SECRET_ACCESS_KEY`" + `,
` + "`AWS_SESSION_TOKEN`" + `):

` + "```properties" + `
bootstrap.servers=b-1.mycluster.xxxxxx.kafka.eu-west-1.amazonaws.com:9098
security.protocol=SASL_SSL
sasl.mechanism=AWS_MSK_IAM
sasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required;
sasl.client.callback.handler.class=software.amazon.msk.auth.iam.IAMClientCallbackHandler
` + "```" + `

Amazon MSK with SCRAM:

` + "```properties" + `
bootstrap.servers=b-1.mycluster.xxxxxx.kafka.eu-west-1.amazonaws.com:9096
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="${file:/etc/stoat/secrets.properties:password}";
` + "```" + `

A self-run SASL_SSL cluster with its own CA and, for mutual TLS, a client
certificate:

` + "```properties" + `
bootstrap.servers=kafka-1.internal:9093
security.protocol=SASL_SSL
ssl.truststore.type=PKCS12
ssl.truststore.location=/etc/kafka/truststore.p12
ssl.truststore.password=${env:TRUSTSTORE_PASSWORD}
ssl.keystore.type=PKCS12
ssl.keystore.location=/etc/kafka/client.p12
ssl.keystore.password=${env:KEYSTORE_PASSWORD}
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="wordcount" password="${env:KAFKA_PASSWORD}";
` + "```" + `

OAUTHBEARER gets tokens from ` + "`sasl.oauthbearer.token.endpoint.url`" + ` with the client
credentials of the JAAS options ` + "`clientId`" + `, ` + "`clientSecret`" + ` and ` + "`scope`" + ` (or the
` + "`sasl.oauthbearer.client.credentials.*`" + ` keys), and refreshes each token after 80%
of its life; ` + "`extension_NAME`" + ` options are sent as SASL extensions. A login
module option stoatctl does not read (IAMLoginModule's ` + "`awsProfileName`" + ` or
` + "`awsRoleArn`" + `, an unsecured JWT's claims) is refused rather than ignored; SCRAM's
` + "`tokenauth=\"true\"`" + ` (delegation tokens) is read. GSSAPI (Kerberos) is not
supported.
`
