// Package config holds an application's configuration: Kafka Streams-style
// keys (application.id, default.key.serde, num.stream.threads, ...) and the
// engine's own stoatflow.* keys, as strings, with typed accessors that name
// the key at fault when a value does not parse.
//
// The catalogue (catalog.go) lists every key stoatctl reads: its type,
// default, description and the components that read it (processing core,
// live engine, Kafka client, test driver). Defaults derive from it, Check
// holds a configuration against it (an unknown key, with the closest known
// one; a value that does not parse for its type), and docs/configuration.md
// is generated from it.
//
// Terms of the Kafka clients' keys:
//   - A client prefix (consumer., main.consumer., restore.consumer.,
//     global.consumer., producer., admin.) sets a key for those clients
//     only, over the unprefixed key, the more specific prefix winning, as
//     Kafka Streams applies them; Config.ForClient is one client's view.
//     topic. prefixes the topic configs of the internal topics.
//   - A secret is a value never shown (passwords, keys, sasl.jaas.config,
//     client secrets): Secret says which keys hold one, Redact hides it.
//   - A config provider reference, ${file:PATH:KEY}, ${env:NAME} or
//     ${dir:DIR:FILE}, is replaced by what it names when a configuration is
//     loaded (ResolveProviders), as Kafka's FileConfigProvider,
//     EnvVarConfigProvider and DirectoryConfigProvider do.
//   - A -c file is YAML, or a Java properties file (ParseProperties) when
//     its name ends in .properties.
//
// Precedence (flag, -X, environment, file, default) is applied by the
// command layer; this package stores the merged result.
package config
